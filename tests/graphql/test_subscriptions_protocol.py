"""The ``graphql-transport-ws`` protocol's rules (``PROTOCOL.md`` of graphql-ws) as the gateway's
WebSocket endpoint (``gateway/graphql_ws.py``) applies them, against the gateway under uvicorn on
127.0.0.1 with the ``websockets`` client: the close codes of each broken rule, ping / pong,
queries over the socket, a client's ``complete`` ending its subscription, and the handshake's
origin check.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from starlette.websockets import WebSocket
from websockets.asyncio.client import ClientConnection, connect

from gateway.app import create_app
from gateway.graphql_ws import origin_allowed
from tests.graphql.test_subscriptions import until_open
from tests.support.live import LiveServer
from xreg.config import Settings

BOUND = 30.0  # seconds a condition may take before the test fails (never reached when all is well)
SUBSCRIPTION = "subscription { registryEvents { position } }"


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[LiveServer]:
    async with LiveServer(create_app(Settings(data_dir=tmp_path, store_url="", config=None))) as server:
        yield server


def _url(server: LiveServer) -> str:
    return server.url.replace("http://", "ws://") + "/graphql"


async def _open(server: LiveServer, init: bool = True, **options: Any) -> ClientConnection:
    socket = await connect(_url(server), subprotocols=["graphql-transport-ws"], open_timeout=BOUND, **options)
    if init:
        await _send(socket, {"type": "connection_init"})
        assert (await _receive(socket)) == {"type": "connection_ack"}
    return socket


async def _send(socket: ClientConnection, message: Any) -> None:
    await socket.send(message if isinstance(message, str) else json.dumps(message))


async def _receive(socket: ClientConnection) -> dict:
    return json.loads(await asyncio.wait_for(socket.recv(), BOUND))


async def _closed_with(socket: ClientConnection) -> tuple[int, str]:
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            await asyncio.wait_for(socket.recv(), BOUND)
    assert closed.value.rcvd is not None, "closed without a close frame from the server"
    return closed.value.rcvd.code, closed.value.rcvd.reason


async def test_ping_is_answered_and_a_query_runs_over_the_socket(live: LiveServer):
    async with await _open(live) as socket:
        await _send(socket, {"type": "ping"})
        assert await _receive(socket) == {"type": "pong"}
        await _send(socket, {"type": "pong"})  # unasked pongs are allowed
        await _send(socket, {"id": "q", "type": "subscribe", "payload": {"query": "{ registry { registryid } }"}})
        answer, done = await _receive(socket), await _receive(socket)
    assert answer["type"] == "next" and answer["id"] == "q"
    assert answer["payload"]["data"]["registry"]["registryid"]
    assert done == {"id": "q", "type": "complete"}


async def test_a_clients_complete_ends_its_subscription_and_frees_the_id(live: LiveServer):
    async with await _open(live) as socket:
        await _send(socket, {"id": "s", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
        await until_open(live, "ws", lambda n: n == 1, "the subscription is open")
        await _send(socket, {"id": "s", "type": "complete"})
        await until_open(live, "ws", lambda n: n == 0, "the subscription is closed")
        await _send(socket, {"id": "s", "type": "subscribe", "payload": {"query": "{ registry { registryid } }"}})
        assert (await _receive(socket))["type"] == "next"  # the id may be used again


@pytest.mark.parametrize(("messages", "code", "reason"), [
    ([{"type": "connection_init"}], 4429, "Too many initialisation requests"),
    (["not json"], 4400, "WebSocket message must be valid JSON"),
    ([{"type": "bogus"}], 4400, "Unknown message type: bogus"),
    ([["connection_init"]], 4400, "Failed to parse message"),
    ([{"id": "1", "type": "subscribe", "payload": {"query": 1}}], 4400, "Invalid subscribe message"),
    ([{"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}},
      {"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}], 4409, "Subscriber for 1 already exists"),
    ([{"id": "1", "type": "subscribe", "payload": {"query": "query A { registry { registryid } }",
                                                   "operationName": "B"}}], 4400, 'Unknown operation named "B".'),
])
async def test_a_broken_rule_closes_the_socket_with_its_code(live: LiveServer, messages, code, reason):
    async with await _open(live) as socket:
        for message in messages:
            await _send(socket, message)
        assert await _closed_with(socket) == (code, reason)


async def test_subscribing_before_the_acknowledgement_is_unauthorized(live: LiveServer):
    async with await _open(live, init=False) as socket:
        await _send(socket, {"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
        assert await _closed_with(socket) == (4401, "Unauthorized")


async def test_binary_frames_and_missing_subprotocols_are_refused(live: LiveServer):
    async with await _open(live) as socket:
        await socket.send(b'{"type": "ping"}')
        assert await _closed_with(socket) == (4400, "WebSocket message type must be text")
    async with connect(_url(live), open_timeout=BOUND) as socket:  # no graphql-transport-ws offered
        assert await _closed_with(socket) == (4406, "Subprotocol not acceptable")


async def test_a_connection_without_init_is_closed_with_4408(tmp_path: Path):
    settings = Settings(data_dir=tmp_path, store_url="", config=None, subscription_init_seconds=0.05)
    async with LiveServer(create_app(settings)) as live:
        async with await _open(live, init=False) as socket:
            assert await _closed_with(socket) == (4408, "Connection initialisation timeout")


def _handshake(origin: str | None, host: str = "gw.example:8080", **headers: str) -> WebSocket:
    pairs = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin is not None else [])
    pairs += [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return WebSocket({"type": "websocket", "path": "/graphql", "headers": pairs}, _never, _never)


async def _never(*_: Any) -> Any:
    raise AssertionError("no I/O in an origin check")


@pytest.mark.parametrize(("origin", "allowed", "headers", "expected"), [
    (None, [], {}, True),  # not a browser
    ("http://GW.example:8080", [], {}, True),  # the page's own host and port
    ("https://gw.example:8080", [], {}, True),  # TLS ended at a proxy: the same host and port
    ("http://gw.example:9090", [], {}, False),  # another port is another origin
    ("http://app.example", [], {"sec_fetch_site": "same-origin"}, True),
    ("http://app.example", ["http://app.example"], {}, True),
    ("http://app.example:80", ["http://app.example"], {}, True),  # the default port written out
    ("http://evil.example", ["http://app.example"], {}, False),
    ("null", ["http://app.example"], {}, False),  # a sandboxed page
    ("http://anyone.example", ["*"], {}, True),
])
def test_the_handshakes_origin_is_the_pages_own_or_allowed(origin, allowed, headers, expected):
    assert origin_allowed(_handshake(origin, **headers), allowed) is expected
