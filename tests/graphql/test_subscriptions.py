"""GraphQL subscriptions over the wire: ``graphql-transport-ws`` (the ``websockets`` client) and
GraphQL over SSE, distinct connections (``httpx-sse``), against the gateway under uvicorn on
127.0.0.1, with writes made through the xRegistry HTTP API.

A test that writes after subscribing waits until the gateway counts the subscription open
(``Subscriptions.until`` of the app's admission control: woken by each subscription opened or
closed, no polling), so the write is committed after the stream joined the feed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import websockets
from httpx_sse import aconnect_sse
from websockets.asyncio.client import ClientConnection, connect

from adapters.clock import Clock
from gateway.admission import Subscriptions
from gateway.app import create_app
from gateway.auth import JWT_LEEWAY_SECONDS, hash_key
from resolvers.schema import build_schema
from resolvers.streaming import Subscriber
from tests.support.live import LiveServer
from xreg.config import Settings

SUBSCRIPTION = """subscription Events($after: String, $types: [String!], $subject: String) {
  registryEvents(after: $after, types: $types, subject: $subject) {
    position id type subject time correlationId changed
    entity { __typename xid ... on SchemaGroup { schemagroupid } }
  }
}"""
BOUND = 30.0  # seconds a condition may take before the test fails (never reached when all is well)
KEY = "subscriber-key-0123456789"
WRITER = "writer-key-0123456789"
WRITE = {"Authorization": f"Bearer {WRITER}"}


def settings_for(tmp_path: Path, **changes: Any) -> Settings:
    keys = [{"name": "writer", "sha256": hash_key(WRITER), "scopes": ["read", "write"]}, *changes.pop("api_keys", [])]
    return Settings(data_dir=tmp_path, store_url="", config=None, api_keys=keys, **changes)


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[LiveServer]:
    async with LiveServer(create_app(settings_for(tmp_path))) as server:
        yield server


def ws_url(server: LiveServer) -> str:
    return server.url.replace("http://", "ws://") + "/graphql"


def subscriptions(server: LiveServer) -> Subscriptions:
    """The served app's count of open subscriptions."""
    return server.server.config.app.state.admission.subscriptions


async def until_open(server: LiveServer, transport: str, condition: Callable[[int], bool], what: str) -> None:
    """Wait until ``condition`` holds of the subscriptions open over ``transport`` (woken by the
    server as each opens or closes; the bound is never reached when all is well)."""
    try:
        await asyncio.wait_for(subscriptions(server).until(lambda s: condition(s.by_transport.get(transport, 0))),
                               BOUND)
    except TimeoutError:
        pytest.fail(f"not within {BOUND} s: {what}")


async def write_group(server: LiveServer, group: str, body: dict | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url, timeout=BOUND, headers=WRITE) as client:
        response = await client.put(f"/registry/schemagroups/{group}", json=body or {})
    assert response.status_code in (200, 201), response.text
    return response


async def ws_connect(server: LiveServer, payload: dict | None = None, **options: Any) -> ClientConnection:
    socket = await connect(ws_url(server), subprotocols=["graphql-transport-ws"], open_timeout=BOUND, **options)
    await socket.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
    return socket


async def receive(socket: ClientConnection) -> dict:
    return json.loads(await asyncio.wait_for(socket.recv(), BOUND))


async def ws_subscribe(server: LiveServer, socket: ClientConnection, op: str = "1", **variables: Any) -> None:
    """Subscribe on ``socket`` once acknowledged; return once the server counts it open."""
    assert (await receive(socket))["type"] == "connection_ack"
    before = subscriptions(server).by_transport.get("ws", 0)
    await socket.send(json.dumps({"id": op, "type": "subscribe",
                                  "payload": {"query": SUBSCRIPTION, "variables": variables}}))
    await until_open(server, "ws", lambda n: n > before, "the subscription is open")


async def ws_events(socket: ClientConnection, count: int) -> list[dict]:
    events = []
    while len(events) < count:
        message = await receive(socket)
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        events.append(message["payload"]["data"]["registryEvents"])
    return events


# -- graphql-transport-ws ---------------------------------------------------------------------------


async def test_a_write_over_http_reaches_a_websocket_subscriber(live: LiveServer):
    async with await ws_connect(live) as socket:
        await ws_subscribe(live, socket, types=["io.xregistry.group.created"])
        response = await write_group(live, "g1")
        [event] = await ws_events(socket, 1)
    assert event["type"] == "io.xregistry.group.created" and event["subject"] == "/schemagroups/g1"
    assert event["entity"] == {"__typename": "SchemaGroup", "xid": "/schemagroups/g1", "schemagroupid": "g1"}
    assert event["correlationId"] == response.headers.get("xRegistry-xregcorrelationid", event["correlationId"])
    assert event["position"].split(".")[0].isdigit() and event["id"].endswith(event["position"])
    await until_open(live, "ws", lambda n: n == 0, "the subscription is closed with its socket")


async def test_resuming_after_the_last_position_misses_nothing_and_repeats_nothing(live: LiveServer):
    async with await ws_connect(live) as socket:
        await ws_subscribe(live, socket, types=["io.xregistry.group.created"])
        for name in ("a1", "a2", "a3"):
            await write_group(live, name)
        first = await ws_events(socket, 1)  # then the client goes away with two events unread
    for name in ("a4", "a5"):
        await write_group(live, name)
    async with await ws_connect(live) as socket:
        await ws_subscribe(live, socket, after=first[-1]["position"], types=["io.xregistry.group.created"])
        await write_group(live, "a6")  # a marker: nothing may come between a5 and it
        rest = await ws_events(socket, 5)
    subjects = [e["subject"] for e in first + rest]
    assert subjects == [f"/schemagroups/a{n}" for n in range(1, 7)]
    positions = [tuple(map(int, e["position"].split("."))) for e in first + rest]
    assert positions == sorted(set(positions))


async def test_deleted_entities_resolve_to_null_and_filters_apply(live: LiveServer):
    await write_group(live, "d1")
    async with await ws_connect(live) as socket:
        await ws_subscribe(live, socket, subject="/schemagroups/d1")
        await write_group(live, "other")
        async with httpx.AsyncClient(base_url=live.url, timeout=BOUND, headers=WRITE) as client:
            assert (await client.delete("/registry/schemagroups/d1")).status_code == 204
        [event] = await ws_events(socket, 1)
    assert (event["type"], event["subject"], event["entity"]) == ("io.xregistry.group.deleted", "/schemagroups/d1",
                                                                  None)


async def test_refusals_are_the_operations_error_messages(live: LiveServer):
    async with await ws_connect(live) as socket:
        assert (await receive(socket))["type"] == "connection_ack"
        await socket.send(json.dumps({"id": "bad", "type": "subscribe",
                                      "payload": {"query": "subscription { registryEvents { nope } }"}}))
        invalid = await receive(socket)
        await socket.send(json.dumps({"id": "pos", "type": "subscribe",
                                      "payload": {"query": SUBSCRIPTION, "variables": {"after": "x.y"}}}))
        position = await receive(socket)
    assert invalid["type"] == "error" and invalid["payload"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert position["type"] == "error" and position["payload"][0]["extensions"]["code"] == "bad_request"



async def test_a_refused_stream_answers_strawberrys_pre_execution_error(tmp_path: Path):
    """``GatewaySchema.stream`` (strawberry's transports): a refusal is one ``PreExecutionError``,
    which they answer with an error message rather than a result."""
    settings = settings_for(tmp_path)
    stream = await build_schema(settings).stream("subscription { registryEvents { nope } }",
                                                 context_value=Subscriber(settings=settings, sources={}, events=None))
    results = [result async for result in stream]
    assert [type(result).__name__ for result in results] == ["PreExecutionError"]
    assert results[0].data is None and "nope" in results[0].errors[0].message  # type: ignore[index]

async def test_a_slow_consumer_is_closed_with_4413_and_the_position_to_resume_from(tmp_path: Path):
    async with LiveServer(create_app(settings_for(tmp_path, subscription_buffer=2))) as live:
        async with await ws_connect(live) as socket:
            await ws_subscribe(live, socket)
            # one write, more events at once than the subscriber's buffer holds
            await write_group(live, "burst", {"schemas": {f"s{n}": {"format": "JsonSchema/draft-07"} for n in range(4)}})
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await receive(socket)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4413
    assert closed.value.rcvd.reason.startswith("Slow consumer")


async def test_credentials_are_required_when_reads_need_them(tmp_path: Path):
    settings = settings_for(tmp_path, anonymous_read=False,
                            api_keys=[{"name": "reader", "sha256": hash_key(KEY), "scopes": ["read"]}])
    async with LiveServer(create_app(settings)) as live:
        async with await ws_connect(live) as socket:
            with pytest.raises(websockets.ConnectionClosed) as refused:
                await receive(socket)
        async with await ws_connect(live, {"Authorization": "Bearer wrong"}) as socket:
            with pytest.raises(websockets.ConnectionClosed) as bad:
                await receive(socket)
        async with await ws_connect(live, {"Authorization": f"Bearer {KEY}"}) as socket:
            await ws_subscribe(live, socket)
            async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
                sse = await client.post("/graphql", json={"query": SUBSCRIPTION},
                                        headers={"Accept": "text/event-stream"})
    assert refused.value.rcvd is not None and refused.value.rcvd.code == 4401
    assert "Authentication is required" in refused.value.rcvd.reason
    assert bad.value.rcvd is not None and bad.value.rcvd.code == 4401
    assert sse.status_code == 401 and sse.json()["errors"][0]["extensions"]["code"] == "unauthorized"


class TokenClock:
    """The gateway's clock, advanced by the test; its ``sleep`` (the expiry timer's wait) returns
    only when the test releases it."""

    def __init__(self) -> None:
        self.now = time.time()
        self.released = asyncio.Event()
        self.sleeping = 0

    def wall(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeping += 1
        await self.released.wait()
        self.released.clear()

    def clock(self) -> Clock:
        return Clock(wall=self.wall, sleep=self.sleep)


SECRET = "jwt-secret-for-subscription-tests-0123456789"


def token(expires: float) -> str:
    return jwt.encode({"sub": "reader", "scope": "read", "exp": int(expires)}, SECRET, algorithm="HS256")


@pytest.mark.parametrize("trigger", ["event", "timer"])
async def test_a_websocket_closes_with_4401_when_its_jwt_expires(tmp_path: Path, trigger: str):
    clock = TokenClock()
    expires = clock.now + 600
    settings = settings_for(tmp_path, jwt_secret=SECRET, anonymous_read=False)
    async with LiveServer(create_app(settings, clock=clock.clock())) as live:
        async with await ws_connect(live, {"Authorization": f"Bearer {token(expires)}"}) as socket:
            await ws_subscribe(live, socket, types=["io.xregistry.group.created"])
            await write_group(live, "while-valid")
            assert [e["subject"] for e in await ws_events(socket, 1)] == ["/schemagroups/while-valid"]
            clock.now = expires + JWT_LEEWAY_SECONDS - 1  # within the leeway: still valid
            await write_group(live, "in-leeway")
            assert [e["subject"] for e in await ws_events(socket, 1)] == ["/schemagroups/in-leeway"]
            clock.now = expires + JWT_LEEWAY_SECONDS + 1
            if trigger == "event":  # the next event finds the token expired
                await write_group(live, "after-expiry")
            else:  # the expiry timer's wait ends and finds it expired
                assert clock.sleeping >= 1
                clock.released.set()
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    message = await receive(socket)
                    assert message["type"] != "next", message  # nothing is delivered after expiry
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
    assert closed.value.rcvd.reason == "The bearer token has expired."


async def test_a_page_of_another_origin_is_refused_unless_cors_allows_it(tmp_path: Path):
    settings = settings_for(tmp_path, cors_origins=["http://app.example"])
    async with LiveServer(create_app(settings)) as live:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await ws_connect(live, origin="http://evil.example")
        async with await ws_connect(live, origin="http://app.example") as socket:
            assert (await receive(socket))["type"] == "connection_ack"
    assert refused.value.response.status_code == 403


# -- GraphQL over SSE ---------------------------------------------------------------------------


async def sse_events(live: LiveServer, count: int, write: Any = None, **variables: Any) -> tuple[list[dict], list]:
    """Subscribe over SSE, run ``write`` once the stream is open, read ``count`` ``next`` events."""
    found: list[dict] = []
    frames: list = []
    async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
        async with aconnect_sse(client, "POST", "/graphql",
                                json={"query": SUBSCRIPTION, "variables": variables}) as source:
            assert source.response.status_code == 200
            assert source.response.headers["content-type"].startswith("text/event-stream")
            if write is not None:
                await write()
            async for sse in source.aiter_sse():
                frames.append((sse.event, sse.data))
                if sse.event == "complete":
                    break
                found.append(json.loads(sse.data))
                if len(found) == count:
                    break
    return found, frames


async def test_a_write_over_http_reaches_an_sse_subscriber_and_resumes(live: LiveServer):
    async def two() -> None:
        await write_group(live, "s1")
        await write_group(live, "s2")

    first, _ = await sse_events(live, 1, two, types=["io.xregistry.group.created"])
    after = first[0]["data"]["registryEvents"]["position"]
    rest, _ = await sse_events(live, 2, lambda: write_group(live, "s3"), after=after,
                               types=["io.xregistry.group.created"])
    subjects = [r["data"]["registryEvents"]["subject"] for r in first + rest]
    assert subjects == ["/schemagroups/s1", "/schemagroups/s2", "/schemagroups/s3"]
    await until_open(live, "sse", lambda n: n == 0, "the streams are closed with their requests")


async def test_a_slow_sse_consumer_gets_an_error_event_then_complete(tmp_path: Path):
    async with LiveServer(create_app(settings_for(tmp_path, subscription_buffer=2))) as live:
        _, frames = await sse_events(live, 100, lambda: write_group(live, "burst", {"schemas": {n: {"format": "JsonSchema/draft-07"} for n in "ab"}}))
    assert [event for event, _ in frames[-2:]] == ["next", "complete"]
    [error] = json.loads(frames[-2][1])["errors"]
    assert error["extensions"]["code"] == "SLOW_CONSUMER" and error["message"].startswith("Slow consumer")


async def test_sse_refusals_are_json_with_their_status(live: LiveServer):
    async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
        invalid = await client.post("/graphql", json={"query": "subscription { nope }"},
                                    headers={"Accept": "text/event-stream"})
        plain = await client.post("/graphql", json={"query": SUBSCRIPTION})
        query = await client.post("/graphql", json={"query": "{ registry { registryid } }"},
                                  headers={"Accept": "text/event-stream"})
    assert invalid.status_code == 400
    assert invalid.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert plain.status_code == 400 and "text/event-stream" in plain.json()["errors"][0]["message"]
    assert query.status_code == 200 and query.headers["content-type"].startswith("text/event-stream")
    assert "event: next" in query.text and query.text.rstrip().endswith("event: complete\r\ndata:")


# -- the limits of queries apply ----------------------------------------------------------------


async def test_the_rate_limit_is_charged_each_subscription_and_refuses_over_it(tmp_path: Path):
    # SUBSCRIPTION costs 12 points (resolvers/cost.py): a bucket of 24 serves two, then refuses
    settings = settings_for(tmp_path, rate_limit_enabled=True, rate_limit_anonymous_rate=0.001,
                            rate_limit_anonymous_burst=24)
    async with LiveServer(create_app(settings)) as live:
        async with await ws_connect(live) as socket:
            assert (await receive(socket))["type"] == "connection_ack"
            for n in range(3):
                await socket.send(json.dumps({"id": str(n), "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
            refused = await receive(socket)  # the two accepted ones say nothing until an event comes
        async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
            sse = await client.post("/graphql", json={"query": SUBSCRIPTION}, headers={"Accept": "text/event-stream"})
    assert refused["id"] == "2" and refused["type"] == "error"
    assert refused["payload"][0]["extensions"]["code"] == "too_many_requests"
    assert sse.status_code == 429 and sse.json()["errors"][0]["extensions"]["code"] == "too_many_requests"


async def test_open_subscriptions_are_bounded_per_process(tmp_path: Path):
    async with LiveServer(create_app(settings_for(tmp_path, subscriptions_max=1))) as live:
        async with await ws_connect(live) as socket:
            await ws_subscribe(live, socket)
            await socket.send(json.dumps({"id": "2", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
            refused = await receive(socket)
            async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
                sse = await client.post("/graphql", json={"query": SUBSCRIPTION},
                                        headers={"Accept": "text/event-stream"})
    assert refused["type"] == "error" and refused["payload"][0]["extensions"]["code"] == "server_busy"
    assert sse.status_code == 503 and sse.json()["errors"][0]["extensions"]["code"] == "server_busy"


async def test_the_cost_ceiling_and_depth_limit_apply(tmp_path: Path):
    async with LiveServer(create_app(settings_for(tmp_path, graphql_max_cost=2, graphql_max_depth=2))) as live:
        async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
            costly = await client.post("/graphql", json={"query": SUBSCRIPTION}, headers={"Accept": "text/event-stream"})
        async with await ws_connect(live) as socket:
            assert (await receive(socket))["type"] == "connection_ack"
            await socket.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
            refused = await receive(socket)
    codes = {e["extensions"]["code"] for e in costly.json()["errors"]}
    assert costly.status_code == 400 and codes & {"QUERY_TOO_COSTLY", "QUERY_TOO_DEEP"}
    assert refused["type"] == "error" and refused["payload"][0]["extensions"]["code"] in codes


async def test_an_open_sse_stream_gives_its_admission_slot_back(tmp_path: Path):
    settings = settings_for(tmp_path, admission_graphql_concurrency=1, admission_queue_size=0)
    async with LiveServer(create_app(settings)) as live:
        async with httpx.AsyncClient(base_url=live.url, timeout=BOUND) as client:
            async with aconnect_sse(client, "POST", "/graphql", json={"query": SUBSCRIPTION}) as source:
                assert source.response.status_code == 200  # the stream is open …
                query = await client.post("/graphql", json={"query": "{ registry { registryid } }"})
    assert query.status_code == 200 and "errors" not in query.json()  # … and the one slot is free for a query


async def test_subscribers_running_one_operation_alike_share_each_events_execution(tmp_path: Path):
    settings = settings_for(tmp_path)
    results = build_schema(settings).shared_results  # the schema the application serves (one per limits)
    async with LiveServer(create_app(settings)) as live:
        async with await ws_connect(live) as one, await ws_connect(live) as two:
            await ws_subscribe(live, one, types=["io.xregistry.group.created"])
            await ws_subscribe(live, two, types=["io.xregistry.group.created"])
            executions = results.executions
            await write_group(live, "alike")
            events = await ws_events(one, 1) + await ws_events(two, 1)
            ran = results.executions - executions
    assert events[0] == events[1] and events[0]["subject"] == "/schemagroups/alike"
    assert ran == 1


async def test_a_position_whose_events_were_pruned_is_refused_with_events_gone(tmp_path: Path):
    app = create_app(settings_for(tmp_path))
    async with LiveServer(app) as live:
        async with await ws_connect(live) as socket:
            await ws_subscribe(live, socket, types=["io.xregistry.group.created"])
            for name in ("p1", "p2", "p3", "p4"):
                await write_group(live, name)
            first = (await ws_events(socket, 1))[0]["position"]
        await app.state.registry.store.prune(keep_revisions=1, keep_seconds=None)
        async with await ws_connect(live) as socket:
            assert (await receive(socket))["type"] == "connection_ack"
            await socket.send(json.dumps({"id": "1", "type": "subscribe",
                                          "payload": {"query": SUBSCRIPTION, "variables": {"after": first}}}))
            gone = await receive(socket)
    assert gone["type"] == "error" and gone["payload"][0]["extensions"]["code"] == "events_gone"
