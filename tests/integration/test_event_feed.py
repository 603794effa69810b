"""``adapters.events.EventFeed``: retained then live events, in order, without gap or duplicate;
commits of this process published at once (``notify``), those of another process found by polling
(the test releases each poll: no sleeps); a consumer too far behind gets ``SlowConsumer``. On both
backends ("another process": a second store on the same SQLite file / Mongo database)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from mongomock_motor import AsyncMongoMockClient

from adapters.events import EventFeed, EventStream, SlowConsumer
from xreg.events.record import EventPosition, RegistryEvent
from xreg.registry.changeset import Changeset
from xreg.registry.service import LocalRegistry
from xreg.storage.base import Store
from xreg.storage.errors import EventsGone
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

#: A guard against a hang, never an ordering device: every wait below ends on its condition.
GUARD_SECONDS = 30


class Ticks:
    """The feed's wait between polls, released one poll at a time by the test."""

    def __init__(self) -> None:
        self.waiting = 0
        self._release = asyncio.Queue[None]()

    async def __call__(self, seconds: float) -> None:
        self.waiting += 1
        try:
            await self._release.get()
        finally:
            self.waiting -= 1

    def release(self) -> None:
        self._release.put_nowait(None)


async def turns_until(condition: Callable[[], bool], limit: int = 10_000) -> None:
    """Let the event loop run until ``condition`` holds (counted turns, no clock)."""
    for _ in range(limit):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition did not come true")


@pytest.fixture(params=["sqlite", "mongomock"])
async def stores(request, tmp_path: Path) -> AsyncIterator[tuple[Callable[[], Store], str]]:
    """A factory of stores over one database (each: "a process"), and the backend's name."""
    if request.param == "sqlite":
        yield (lambda: SQLiteStore(tmp_path / "feed.db")), "sqlite"
    else:
        client, name = AsyncMongoMockClient(), f"feed_{uuid.uuid4().hex[:8]}"
        yield (lambda: MongoStore(client=client, database=name)), "mongomock"


@contextlib.asynccontextmanager
async def process(stores, ticks: Ticks | None = None) -> AsyncIterator[tuple[LocalRegistry, EventFeed]]:
    """One "process": a registry and its feed, told of the registry's commits."""
    make, _ = stores
    registry = LocalRegistry(make(), registry_id="test")
    async with registry:
        feed = EventFeed(registry.store, poll_interval=1.0, page_size=3, tick=ticks or Ticks())
        registry.commit_listeners.append(feed.notify)
        try:
            yield registry, feed
        finally:
            await feed.close()


async def group(registry: LocalRegistry, gid: str, **attrs) -> None:
    async def build(cs: Changeset) -> None:
        await cs.put_group("messagegroups", gid, attrs)

    await registry.write(build, subject=f"/messagegroups/{gid}", note="test")


async def take(stream: EventStream, n: int) -> list[RegistryEvent]:
    async with asyncio.timeout(GUARD_SECONDS):
        return [await anext(stream) for _ in range(n)]


async def test_retained_then_live_events_in_order(stores) -> None:
    async with process(stores) as (registry, feed):
        for i in range(3):
            await group(registry, f"g{i}")  # 6 events: more than a page (3)
        async with feed.follow(None) as stream:
            retained = await take(stream, 6)
            await group(registry, "live")  # published at once: the test releases no poll
            live = await take(stream, 2)
        everything = await registry.store.events_after(None, limit=100)
        assert [*retained, *live] == everything
        assert [e.subject for e in live] == ["/", "/messagegroups/live"]


async def test_following_from_a_position_and_with_filters(stores) -> None:
    async with process(stores) as (registry, feed):
        await group(registry, "a")
        first = (await registry.store.events_after(None, limit=1))[0]
        async with feed.follow(first.position, types=["io.xregistry.group.created"]) as created, \
                feed.follow(None, subject="/messagegroups/b") as about_b:
            await group(registry, "b")
            await group(registry, "b", name="B")
            assert [e.subject for e in await take(created, 2)] == ["/messagegroups/a", "/messagegroups/b"]
            assert [e.type for e in await take(about_b, 2)] == ["io.xregistry.group.created",
                                                                "io.xregistry.group.updated"]


async def test_commits_of_another_process_are_found_by_polling(stores) -> None:
    ticks = Ticks()
    async with process(stores, ticks) as (_, feed), process(stores) as (other, _):
        async with feed.follow(None) as stream:
            await turns_until(lambda: ticks.waiting == 1)  # the reader waits for its next poll
            await group(other, "elsewhere")  # no notify reaches this feed
            reads = feed.reads
            pending = asyncio.ensure_future(take(stream, 2))
            for _ in range(100):  # the stream waits: nothing tells the feed yet
                await asyncio.sleep(0)
            assert not pending.done() and feed.reads == reads
            ticks.release()  # the poll: the store's revision moved
            assert [e.subject for e in await pending] == ["/", "/messagegroups/elsewhere"]


async def test_no_gap_or_duplicate_while_commits_race_the_catch_up(stores) -> None:
    async with process(stores) as (registry, feed):
        for i in range(4):
            await group(registry, f"early{i}")
        start = (await registry.store.events_after(None, limit=3))[-1].position

        async def writer() -> None:
            for i in range(5):
                await group(registry, f"late{i}")

        async with feed.follow(start) as stream:
            writing = asyncio.ensure_future(writer())
            got = await take(stream, 8 - 3 + 10)
            await writing
        assert got == await registry.store.events_after(start, limit=100)
        assert [e.position for e in got] == sorted({e.position for e in got})


async def test_a_consumer_too_far_behind_gets_slow_consumer(stores) -> None:
    async with process(stores) as (registry, feed):
        async with feed.follow(None, max_buffer=3) as stream:
            await turns_until(lambda: not stream._reading_retained)
            for i in range(2):
                await group(registry, f"g{i}")  # 4 live events, buffer 3
            await turns_until(lambda: stream._slow)
            with pytest.raises(SlowConsumer) as slow:
                await take(stream, 1)
            assert slow.value.last is None and "more than 3 events behind" in str(slow.value)
        # resuming from the last position handled loses nothing
        async with feed.follow(slow.value.last) as again:
            assert len(await take(again, 4)) == 4


async def test_pruned_events_are_gone_when_following(stores) -> None:
    async with process(stores) as (registry, feed):
        for i in range(3):
            await group(registry, f"g{i}")
        await registry.store.prune(keep_revisions=1)
        with pytest.raises(EventsGone):
            async with feed.follow(EventPosition(2, 0)):
                pass
        async with feed.follow(None) as stream:  # from the oldest retained
            assert [e.subject for e in await take(stream, 2)] == ["/", "/messagegroups/g1"]  # revision 3 kept


async def test_closing_the_feed_ends_its_streams(stores) -> None:
    async with process(stores) as (registry, feed):
        await group(registry, "a")
        async with feed.follow(None) as stream:
            await take(stream, 2)
            ending = asyncio.ensure_future(take(stream, 1))
            await turns_until(lambda: not stream._reading_retained)
            await feed.close()
            with pytest.raises(StopAsyncIteration):
                await ending


async def test_events_both_retained_and_live_are_yielded_once(stores) -> None:
    """Commits made while a stream still reads retained events reach it twice — from the store and
    from the live feed — and are yielded once."""
    async with process(stores) as (registry, feed):
        for i in range(4):
            await group(registry, f"early{i}")  # 8 retained events, pages of 3
        async with feed.follow(None) as stream:
            assert stream._reading_retained  # one page read so far
            reads = feed.reads
            for i in range(2):
                await group(registry, f"late{i}")
            await turns_until(lambda: feed.reads > reads and len(stream._live) == 4)
            got = await take(stream, 12)
            assert got == await registry.store.events_after(None, limit=100)
            extra = asyncio.ensure_future(anext(stream))
            for _ in range(100):
                await asyncio.sleep(0)
            assert not extra.done()  # nothing more: no duplicate is waiting
            extra.cancel()


async def test_take_gives_what_anext_would_without_waiting(stores) -> None:
    """``take``: the next event when ``anext`` would return it at once — retained ones, then live
    ones, once each (a live event already yielded from the store is skipped) — and ``None`` when
    ``anext`` would read the store or wait."""
    async with process(stores) as (registry, feed):
        for i in range(2):
            await group(registry, f"early{i}")  # 4 retained events, pages of 3
        async with feed.follow(None) as stream:
            got = [stream.take() for _ in range(3)]  # the first page
            assert stream.take() is None  # the next page is still to be read

            await group(registry, "late0")  # 2 live events, also in the next page
            await turns_until(lambda: len(stream._live) == 2)
            assert stream.take() is None
            got += await take(stream, 1)  # reads the next page
            got += [stream.take(), stream.take()]  # the page's live events, from the store
            assert stream.take() is None

            await group(registry, "late1")
            await turns_until(lambda: len(stream._live) == 4)
            got += await take(stream, 1)  # the last page: the stream goes live
            got.append(stream.take())
            assert stream.take() is None and not stream._live  # the live copies of what the pages gave: skipped

            await group(registry, "late2")
            await turns_until(lambda: bool(stream._live))
            got += [stream.take(), stream.take()]
            assert stream.take() is None
        assert got == await registry.store.events_after(None, limit=100)


async def test_take_leaves_a_slow_consumer_and_the_end_to_anext(stores) -> None:
    async with process(stores) as (registry, feed):
        async with feed.follow(None, max_buffer=1) as stream:
            await turns_until(lambda: not stream._reading_retained)
            await group(registry, "g")  # 2 live events, buffer 1
            await turns_until(lambda: stream._slow)
            assert stream.take() is None
            with pytest.raises(SlowConsumer):
                await take(stream, 1)
        async with feed.follow(None) as stream:
            await take(stream, 2)
            await feed.close()
            assert stream.take() is None
            with pytest.raises(StopAsyncIteration):
                await take(stream, 1)


async def test_an_event_is_handed_only_to_the_streams_that_ask_for_it(stores, monkeypatch) -> None:
    """Streams watching other entities are not looked at: a write's cost does not grow with the
    subscribers attached, only with those it is delivered to."""
    handed: list[str | None] = []
    push = EventStream._push

    def counting(stream: EventStream, event: RegistryEvent) -> None:
        handed.append(stream.subject)
        push(stream, event)

    monkeypatch.setattr(EventStream, "_push", counting)
    async with process(stores) as (registry, feed), contextlib.AsyncExitStack() as others:
        for n in range(50):
            await others.enter_async_context(feed.follow(None, subject=f"/schemagroups/s{n}"))
            await others.enter_async_context(feed.follow(None, subject="/schemagroups/*"))
        async with feed.follow(None, types=["io.xregistry.group.created"], subject="/messagegroups/*") as watching:
            await group(registry, "g1")
            assert [e.subject for e in await take(watching, 1)] == ["/messagegroups/g1"]
        assert handed == ["/messagegroups/*"]  # the registry's own "updated" event matched no stream either
