"""What keeps ``/healthz`` fast under load (bench/bench_load.py measures the latency): the
revision it answers never waits behind a busy store, and a GraphQL request's loaded entities are
freed when it ends instead of by a full garbage collection. Real SQLite stores, the real app."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.http.support import SEED, asgi_client, make_settings, running
from tests.support.clock import ManualClock
from xreg.storage import base
from xreg.storage.records import Write
from xreg.storage.sqlite import SQLiteStore

#: Event-loop turns a probe gets to answer a read that cannot come (it waits, or gives up at once).
TURNS = 20


@contextlib.asynccontextmanager
async def busy_store(store: SQLiteStore) -> AsyncIterator[None]:
    """The store busy with other reads until the block ends: every reader connection taken (no
    read of the revision gets in meanwhile)."""
    done = asyncio.Event()
    taken = [asyncio.Event() for _ in range(max(1, len(store._all_readers)))]

    async def read(mine: asyncio.Event) -> None:
        async with store._reading():
            mine.set()
            await done.wait()

    readers = [asyncio.ensure_future(read(mine)) for mine in taken]
    for mine in taken:
        await mine.wait()
    try:
        yield
    finally:
        done.set()
        await asyncio.gather(*readers)


async def turns(n: int = TURNS) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def eventually_current(store: SQLiteStore, revision: int) -> bool:
    """Whether probes come to answer ``revision``: the read a probe starts lands for a later one."""
    for _ in range(TURNS):
        if await store.probe_revision(busy=True) == revision:
            return True
        await asyncio.sleep(0)
    return False


def group(gid: str) -> Write:
    return Write(f"/messagegroups/{gid}", "group", "messagegroups", {"messagegroupid": gid})


async def test_probe_answers_the_last_revision_while_the_store_is_busy(tmp_path: Path) -> None:
    served, other = SQLiteStore(tmp_path / "r.db"), SQLiteStore(tmp_path / "r.db")
    await served.open()
    await other.open()
    try:
        assert await served.commit([group("a")]) == 1
        assert await served.probe_revision() == 1
        assert await other.commit([group("b")]) == 2  # another process writes
        async with busy_store(served):
            assert await served.probe_revision() == 1  # not waiting for the store: the last one known
        assert await eventually_current(served, 2)  # free again: the current revision
    finally:
        await other.close()
        await served.close()


async def test_probe_waits_for_a_store_silent_for_too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The liveness probe still needs the store to answer: once the last revision read is older
    than ``PROBE_STALE_SECONDS`` the probe waits for a fresh one."""
    clock = ManualClock()
    served, other = SQLiteStore(tmp_path / "r.db"), SQLiteStore(tmp_path / "r.db")
    served.monotonic = clock.clock.monotonic
    await served.open()
    await other.open()
    try:
        await served.commit([group("a")])
        await other.commit([group("b")])
        monkeypatch.setattr(base, "PROBE_WAIT_SECONDS", 0.0)  # a probe that does not wait gives up at once
        async with busy_store(served):
            clock.advance(base.PROBE_STALE_SECONDS)
            fresh = asyncio.ensure_future(served.probe_revision())
            await turns()
            assert fresh.done() and fresh.result() == 1  # as old as allowed: answered at once
            clock.advance(0.001)
            stale = asyncio.ensure_future(served.probe_revision())
            await turns()
            assert not stale.done()  # too old: waits for the store
        assert await stale == 2  # and answers what the store answered
    finally:
        await other.close()
        await served.close()


async def test_a_busy_process_probe_never_waits(tmp_path: Path) -> None:
    """With requests at work (``busy``), the probe answers the last revision known at once — the
    store is free here, yet the other process's commit shows only in a later probe."""
    served, other = SQLiteStore(tmp_path / "r.db"), SQLiteStore(tmp_path / "r.db")
    await served.open()
    await other.open()
    try:
        assert await served.commit([group("a")]) == 1
        assert await other.commit([group("b")]) == 2
        assert await served.probe_revision(busy=True) == 1
        assert await eventually_current(served, 2)
    finally:
        await other.close()
        await served.close()


async def test_probe_knows_what_this_process_committed(tmp_path: Path) -> None:
    served = SQLiteStore(tmp_path / "r.db")
    await served.open()
    try:
        await served.probe_revision()
        assert await served.commit([group("a")]) == 1
        async with busy_store(served):
            assert await served.probe_revision() == 1  # the commit, not the revision read before it
    finally:
        await served.close()


QUERY = """{ registry { messagegroups { nodes { messages { nodes { xid name envelope effective } } } } } }"""


async def test_a_graphql_request_frees_what_it_loaded_when_it_ends(tmp_path: Path) -> None:
    """With the cyclic collector off, no entity the request loaded is left once it answered: its
    loaders (which refer to each other, so only a collection frees them) no longer hold any."""
    async with running(make_settings(tmp_path)) as app:
        async with asgi_client(app) as client:
            assert (await client.post("/registry", json=SEED)).status_code == 200
            assert (await client.post("/graphql", json={"query": QUERY})).status_code == 200  # warm
            gc.collect()
            gc.disable()
            try:
                response = await client.post("/graphql", json={"query": QUERY})
                assert response.status_code == 200 and "errors" not in response.json()
                assert response.json()["data"]["registry"]["messagegroups"]["nodes"]
                left = [o.xid for o in gc.get_objects() if type(o).__name__ == "StoredEntity"]
                assert left == []
            finally:
                gc.enable()
