"""``gateway.ws_fanout``: one task sends the results of every live WebSocket subscription, on the
application's real event feed, schema and store (writes through the HTTP API). The connections
are ASGI ``send`` callables: one takes every frame at once, one is "paused" (its send waits until
the test lets it go on), as uvicorn's is while a client does not read. Every wait ends on its
condition (asyncio.Events set by the sends), never on a delay."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import WebSocketRoute
from strawberry.types.graphql import OperationType

from adapters.events import SlowConsumer
from adapters.request import RequestSources
from gateway.app import create_app
from gateway.graphql_ws import GraphQLWebSocket
from gateway.ws_fanout import SLICE, Fanout, Member, _eager
from resolvers.streaming import ResponseStream, StreamedResult, Subscriber, open_stream
from tests.http.support import asgi_client, make_settings

GUARD = 30.0  # a bound against a hang, never an ordering device
SUBSCRIPTION = 'subscription { registryEvents(types: ["io.xregistry.group.created"]) { subject } }'


class Connection:
    """An ASGI ``send``: collects the frames; ``pause()`` makes the next send wait for ``resume()``."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self._gate: asyncio.Event | None = None
        self._paused = False

    def pause(self) -> None:
        self._paused, self._gate = True, asyncio.Event()

    def resume(self) -> None:
        self._paused = False
        if self._gate is not None:
            self._gate.set()

    async def __call__(self, message: dict[str, Any]) -> None:
        self.frames.append(json.loads(message["text"]))
        self.arrived.set()
        if self._paused and self._gate is not None:
            await self._gate.wait()

    async def until(self, count: int) -> None:
        async def wait() -> None:
            while len(self.frames) < count:
                self.arrived.clear()
                await self.arrived.wait()
        await asyncio.wait_for(wait(), GUARD)

    def subjects(self) -> list[str]:
        return [f["payload"]["data"]["registryEvents"]["subject"] for f in self.frames]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, GraphQLWebSocket]]:
    app = create_app(make_settings(tmp_path, subscription_buffer=2))
    view = next(r.app for r in app.routes if isinstance(r, WebSocketRoute) and r.path == "/graphql")
    async with app.router.lifespan_context(app):
        yield app, view


async def subscribe(view: GraphQLWebSocket) -> ResponseStream:
    reads = RequestSources(view.served)  # as the view gives each connection
    subscriber = Subscriber(settings=view.settings, sources=reads.sources, events=view.events, auth=view.auth,
                            rules=reads.references, webhooks=view.webhooks)
    opened = await open_stream(view.schema, None, SUBSCRIPTION, None, subscriber, None, (OperationType.SUBSCRIPTION,))
    assert isinstance(opened, ResponseStream) and opened.caught_up
    return opened


def member(stream: ResponseStream, send: Connection, op: str) -> Member:
    return Member(stream, send, '{"id":"' + op + '","type":"next","payload":', False, lambda: False)


async def write(app: Any, *names: str) -> None:
    async with asgi_client(app) as client:
        for name in names:
            assert (await client.put(f"/registry/schemagroups/{name}", json={})).status_code in (200, 201)


async def test_a_paused_connection_holds_back_only_itself(served):
    app, view = served
    fanout, fast, paused = Fanout(), Connection(), Connection()
    one, two = await subscribe(view), await subscribe(view)
    runs = [asyncio.create_task(fanout.run(member(one, fast, "a"))),
            asyncio.create_task(fanout.run(member(two, paused, "b")))]
    paused.pause()  # its first frame is taken, then its connection stops taking frames
    await write(app, "g1", "g2")
    await fast.until(2)
    assert fast.subjects() == ["/schemagroups/g1", "/schemagroups/g2"] and [f["id"] for f in fast.frames] == ["a", "a"]
    assert paused.subjects() == ["/schemagroups/g1"]  # g2 waits in its stream's buffer
    paused.resume()
    await paused.until(2)
    assert paused.subjects() == ["/schemagroups/g1", "/schemagroups/g2"] and paused.frames[1]["id"] == "b"
    for stream in (one, two):
        await stream.aclose()
    assert await asyncio.wait_for(asyncio.gather(*runs), GUARD) == [None, None]
    assert fanout.members == 0


async def test_a_paused_connection_whose_buffer_overflows_ends_as_a_slow_consumer(served):
    app, view = served
    fanout, fast, paused = Fanout(), Connection(), Connection()
    one, two = await subscribe(view), await subscribe(view)
    slow = asyncio.create_task(fanout.run(member(two, paused, "b")))
    steady = asyncio.create_task(fanout.run(member(one, fast, "a")))
    paused.pause()
    await write(app, "s1", "s2", "s3", "s4")  # 1 sent, 2 buffered (subscription_buffer), then too many
    await fast.until(4)
    ended = await asyncio.wait_for(slow, GUARD)
    assert isinstance(ended, SlowConsumer) and ended.max_buffer == 2
    assert paused.subjects() == ["/schemagroups/s1"]
    await one.aclose()
    assert await asyncio.wait_for(steady, GUARD) is None
    paused.resume()
    await two.aclose()


async def test_the_fan_out_lets_the_loop_run_between_slices(served):
    app, view = served
    fanout, connections = Fanout(), [Connection() for _ in range(SLICE + 1)]
    streams = [await subscribe(view) for _ in connections]
    runs = [asyncio.create_task(fanout.run(member(s, c, str(n))))
            for n, (s, c) in enumerate(zip(streams, connections, strict=True))]
    during: list[int] = []

    async def other_work() -> None:  # notes how far the fan-out got at each of its turns
        while not all(c.frames for c in connections):
            during.append(sum(len(c.frames) for c in connections))
            await asyncio.sleep(0)

    counting = asyncio.create_task(other_work())
    await write(app, "fan")
    await asyncio.wait_for(counting, GUARD)
    assert all(c.subjects() == ["/schemagroups/fan"] for c in connections)
    assert any(0 < sent < len(connections) for sent in during)  # it ran while the fan-out was under way
    for stream in streams:
        await stream.aclose()
    await asyncio.wait_for(asyncio.gather(*runs), GUARD)


async def test_eager_start_finishes_a_send_that_need_not_wait_and_hands_over_one_that_must():
    done: list[str] = []

    async def at_once() -> None:
        done.append("at once")

    gate = asyncio.get_running_loop().create_future()

    async def waits() -> None:
        await gate
        done.append("after waiting")

    async def fails() -> None:
        raise OSError("gone")

    assert _eager(at_once()) is None and done == ["at once"]
    task = _eager(waits())
    assert task is not None and done == ["at once"]
    gate.set_result(None)
    await asyncio.wait_for(task, GUARD)
    assert done == ["at once", "after waiting"]
    with pytest.raises(OSError):
        _eager(fails())


async def test_take_hands_over_a_result_another_subscriber_ran_without_a_coroutine(served):
    app, view = served
    one, two = await subscribe(view), await subscribe(view)
    assert one.take() is None  # nothing committed yet
    shared = view.schema.shared_results
    before = shared.executions
    await write(app, "t1")
    for stream in (one, two):
        await asyncio.wait_for(_ready(stream), GUARD)
    first = one.take()
    assert first is not None and not isinstance(first, StreamedResult)  # the event's execution, to await
    ran = await first
    second = two.take()
    assert isinstance(second, StreamedResult) and second is ran  # the same result, at hand
    assert shared.executions == before + 1
    assert json.loads(ran.payload(False)) == {"data": {"registryEvents": {"subject": "/schemagroups/t1"}}}
    assert one.take() is None and two.take() is None
    for stream in (one, two):
        await stream.aclose()


async def _ready(stream: ResponseStream) -> None:
    while not stream.ready():
        await asyncio.sleep(0)
