"""Deferred re-materialisation (xreg.registry.rematerialise), on both backends: a write of a base
with more dependents than the inline limit commits the base alone with a work item; the worker,
run until idle, brings every dependent to what an inline write would have stored, in pages
through the one write path, with their events; it resumes after a crash, restarts when the base
is written again, and leaves the items alone while another process holds the lease."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest
from mongomock_motor import AsyncMongoMockClient

from tests.support.rematerialising import drained, running
from xreg.events import derive
from xreg.registry import changeset
from xreg.registry.materialise import SLICE, derived_of
from xreg.registry.rematerialise import Rematerialiser, stale_since
from xreg.registry.service import LocalRegistry
from xreg.registry.write_steps.unit import Unit
from xreg.storage.backup import backup, restore
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

G = "/messagegroups/g/messages/"
DEPENDENTS = 7


def document(description: str = "v1") -> dict:
    """A base, ``DEPENDENTS`` messages on it (one of them a base too), one declaring its own
    description, one message on nothing."""
    messages: dict = {"base": {"description": description, "documentation": "https://example.com/doc"},
                      "alone": {"description": "alone"},
                      "own": {"basemessageuri": G + "base", "description": "own"},
                      "leaf": {"basemessageuri": G + "d0", "envelope": "CloudEvents/1.0"}}
    messages.update({f"d{i}": {"basemessageuri": G + "base"} for i in range(DEPENDENTS - 2)})
    return {"messagegroups": {"g": {"messages": messages}}}


def edit(description: str) -> dict:
    return {"messagegroups": {"g": {"messages": {"base": {"description": description,
                                                          "documentation": "https://example.com/doc"}}}}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def new_store(kind: str, tmp_path, name: str):
    return (SQLiteStore(tmp_path / f"{name}.db") if kind == "sqlite"
            else MongoStore(client=AsyncMongoMockClient(), database=name))


@pytest.fixture(params=["sqlite", "mongomock"])
async def pair(request, tmp_path):
    """A registry that defers beyond 2 dependents, and one that never defers (the reference)."""
    def store(name: str):
        return (SQLiteStore(tmp_path / f"{name}.db") if request.param == "sqlite"
                else MongoStore(client=AsyncMongoMockClient(), database=name))

    async with LocalRegistry(store("deferring"), registry_id="test", rematerialise_inline=2) as deferring, \
            LocalRegistry(store("inline"), registry_id="test") as inline:
        yield deferring, inline


async def materialisations(registry: LocalRegistry) -> dict[str, dict]:
    out = {}
    for ctype in ("messagegroups/messages", "messagegroups/messages/versions"):
        async for rec in registry.iter_ctype(ctype):
            out[rec.key] = derived_of(rec.kind, rec.doc)
    return out


async def stale(registry: LocalRegistry) -> list[str]:
    found = []
    for ctype in ("messagegroups/messages", "messagegroups/messages/versions"):
        async for rec in registry.iter_ctype(ctype):
            if stale_since(rec, registry.rematerialising) is not None:
                found.append(rec.key)
    return sorted(found)


async def test_a_deferred_write_ends_where_an_inline_write_does(pair):
    deferring, inline = pair
    for reg in pair:
        await reg.apply_document(document())
    outcome = await deferring.apply_document(edit("v2"))
    await inline.apply_document(edit("v2"))
    # the commit holds the base alone, and the work item of each message written
    assert outcome.rematerialised == [] and sorted(outcome.deferred) == [G + "base", G + "base/versions/1"]
    assert set(deferring.rematerialising) == {G + "base", G + "base/versions/1"}
    waiting = await stale(deferring)
    assert waiting == sorted(f"{G}{n}{v}" for n in ("leaf", "own", *(f"d{i}" for i in range(DEPENDENTS - 2)))
                             for v in ("", "/versions/1"))
    d1 = await deferring.store.get(G + "d1")
    assert d1 is not None and derived_of(d1.kind, d1.doc)["attributes"]["description"] == "v1"  # not yet
    worker = Rematerialiser(deferring, batch=3)
    assert await worker.run_until_idle() > 0
    assert await materialisations(deferring) == await materialisations(inline)
    assert await deferring.store.rematerialisations() == [] and deferring.rematerialising == {}
    assert await stale(deferring) == []
    assert await worker.run_until_idle() == 0  # idle: nothing left


def count_reads(monkeypatch, registry: LocalRegistry) -> Counter[str]:
    """Counts the reads of the store's work items (``reads["items"]``)."""
    reads: Counter[str] = Counter()
    read = registry.store.rematerialisations

    async def counted():
        reads["items"] += 1
        return await read()

    monkeypatch.setattr(registry.store, "rematerialisations", counted)
    return reads


def write_after_the_first_page(monkeypatch, registry, doc) -> list[str]:
    """Have ``doc`` written to ``registry`` once the worker's first page is recorded; the keys
    that write deferred (filled then)."""
    recorded = registry.store.rematerialised
    landed: list[str] = []

    async def recording(*args, **kwargs):
        ok = await recorded(*args, **kwargs)
        if not landed:
            landed.extend((await registry.apply_document(doc)).deferred)
        return ok

    monkeypatch.setattr(registry.store, "rematerialised", recording)
    return landed


async def test_a_round_that_drains_everything_known_reads_the_items_once(pair, monkeypatch):
    """No read of the store to learn that nothing is left: the round that worked off every item
    known ends the run; an item committed during it is worked off in the same run (one read more)."""
    deferring, inline = pair
    for reg in pair:
        await reg.apply_document(document())
        await reg.apply_document(edit("v2"))
    reads = count_reads(monkeypatch, deferring)
    assert await Rematerialiser(deferring, batch=3).run_until_idle() > 0
    assert reads["items"] == 1 and deferring.rematerialising == {}
    assert await materialisations(deferring) == await materialisations(inline)

    # a write of the base lands after the first page of the next round: its items are not missed
    for reg in pair:
        await reg.apply_document(edit("v3"))
    await inline.apply_document(edit("v4"))
    landed = write_after_the_first_page(monkeypatch, deferring, edit("v4"))
    reads.clear()
    assert await Rematerialiser(deferring, batch=3).run_until_idle() > 0
    assert landed and reads["items"] == 2  # the round's own, and one for the item that came meanwhile
    assert await materialisations(deferring) == await materialisations(inline)
    assert await deferring.store.rematerialisations() == [] and await stale(deferring) == []


async def test_the_running_worker_sleeps_right_after_the_round_that_drained_its_work(pair, monkeypatch):
    """The worker's own page commits do not wake it again: after a deferring write it reads the
    items once, works them off and waits (for the next deferring write, or the poll); a deferring
    write during the round is worked off in it and does not wake it once more."""
    deferring, inline = pair
    for reg in pair:
        await reg.apply_document(document())
    reads = count_reads(monkeypatch, deferring)
    worker = Rematerialiser(deferring, batch=3)
    async with running(worker):
        await worker.idle.wait()  # the first round: nothing pending
        assert reads["items"] == 1
        for reg in pair:
            await reg.apply_document(edit("v2"))
        assert deferring.rematerialising
        await drained(worker, deferring)
        for _ in range(20):  # counted loop turns: a woken worker would have read the items by now
            await asyncio.sleep(0)
        assert reads["items"] == 2  # one read for the write's round, none after it
        assert await materialisations(deferring) == await materialisations(inline)

        # a deferring write lands after the first page of the next round: the round takes it up
        # (one read more), and its wake is spent once that is done
        landed = write_after_the_first_page(monkeypatch, deferring, edit("v4"))
        await inline.apply_document(edit("v4"))
        reads.clear()
        await deferring.apply_document(edit("v3"))
        await drained(worker, deferring)
        for _ in range(20):
            await asyncio.sleep(0)
        assert landed and reads["items"] == 2
        assert await materialisations(deferring) == await materialisations(inline)


async def test_a_wake_asked_for_during_a_round_brings_one_more(pair, monkeypatch):
    """``wake()`` (look for other processes' work now) during a round that drains everything known
    is not spent by it: one more round reads the store."""
    deferring, _ = pair
    await deferring.apply_document(document())
    reads = count_reads(monkeypatch, deferring)
    worker = Rematerialiser(deferring, batch=3)
    recorded = deferring.store.rematerialised

    async def wake_meanwhile(*args, **kwargs):
        worker.wake()
        return await recorded(*args, **kwargs)

    monkeypatch.setattr(deferring.store, "rematerialised", wake_meanwhile)
    async with running(worker):
        await worker.idle.wait()
        await deferring.apply_document(edit("v2"))
        await drained(worker, deferring)
        for _ in range(20):  # counted loop turns: the round asked for reads the items at once
            await asyncio.sleep(0)
        assert reads["items"] == 3  # the first round, the write's, the one asked for


async def test_only_a_commit_that_defers_work_wakes_the_worker(pair, monkeypatch):
    """While another process holds the lease the items stay pending here; a commit of this process
    that defers nothing does not send the worker for them again (a read and a refused lease each
    time), one that defers work does."""
    deferring, _ = pair
    await deferring.apply_document(document())
    await deferring.apply_document(edit("v2"))
    clock = Clock()
    assert await deferring.store.rematerialise_lease("elsewhere", clock.now, clock.now + 30)
    reads = count_reads(monkeypatch, deferring)
    released = asyncio.Event()  # the worker gave its (refused) lease back: the round is over
    lease = deferring.store.rematerialise_lease

    async def spied(holder: str, now: float, until: float) -> bool:
        taken = await lease(holder, now, until)
        if until <= now:
            released.set()
        return taken

    monkeypatch.setattr(deferring.store, "rematerialise_lease", spied)
    worker = Rematerialiser(deferring, clock=clock, holder="here")
    async with running(worker):
        await released.wait()
        released.clear()
        assert reads["items"] == 1
        await deferring.apply_document({"messagegroups": {"g": {"messages": {"alone": {"description": "b"}}}}})
        for _ in range(20):  # counted loop turns: a woken worker would have read the items by now
            await asyncio.sleep(0)
        assert reads["items"] == 1 and not released.is_set()
        assert (await deferring.apply_document(edit("v3"))).deferred
        await released.wait()
        assert reads["items"] == 2


async def test_the_worker_reports_each_dependent_updated_in_its_own_interactions(pair):
    deferring, _ = pair
    await deferring.apply_document(document())
    outcome = await deferring.apply_document(edit("v2"))
    assert {e.subject for e in outcome.events} == {G + "base", G + "base/versions/1"}
    since = await deferring.store.current_revision()
    await Rematerialiser(deferring, batch=4).run_until_idle()
    events = await deferring.store.events_after(None, limit=1000)
    later = [e for e in events if e.position.revision > since]
    subjects = sorted(e.subject for e in later)
    # "own" declares its description: nothing it shows changed, so no event
    expected = sorted(f"{G}{n}{v}" for n in ("leaf", *(f"d{i}" for i in range(DEPENDENTS - 2)))
                      for v in ("", "/versions/1"))
    assert subjects == expected
    assert {e.type for e in later} == {"io.xregistry.resource.updated", "io.xregistry.version.updated"}
    assert all(e.changed == ("description",) for e in later)
    assert outcome.correlation_id not in {e.correlation_id for e in later}  # interactions of their own


async def test_the_worker_resumes_after_a_crash_without_redoing_what_it_recorded(pair):
    deferring, inline = pair
    for reg in pair:
        await reg.apply_document(document())
        await reg.apply_document(edit("v2"))
    clock = Clock()
    crashing = Rematerialiser(deferring, batch=2, clock=clock, holder="first")
    pages = 0
    write = deferring.write

    async def crash_after_two_pages(*args, **kwargs):
        nonlocal pages
        pages += 1
        if pages > 2:
            raise RuntimeError("the process died")
        return await write(*args, **kwargs)

    deferring.write = crash_after_two_pages  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await crashing.run_until_idle()
    del deferring.write
    progressed = [i for i in await deferring.store.rematerialisations() if i.after is not None]
    assert progressed  # the pages done are recorded
    assert await stale(deferring)
    rest = Rematerialiser(deferring, batch=2, clock=clock, holder="second")
    redone = await rest.run_until_idle()
    assert await materialisations(deferring) == await materialisations(inline)
    assert await deferring.store.rematerialisations() == []
    # 7 dependents, resource and version each, "own" unchanged (it declares the description): 12
    # changed, 4 of them in the two pages recorded before the crash, which were not done again
    assert redone == 12 - 4


async def test_writing_the_base_again_restarts_its_work(pair):
    deferring, inline = pair
    for reg in pair:
        await reg.apply_document(document())
        await reg.apply_document(edit("v2"))
    worker = Rematerialiser(deferring, batch=2)
    [item, *_] = await deferring.store.rematerialisations()
    await worker._page(item, None)  # one page done against v2
    await deferring.apply_document(edit("v3"))
    await inline.apply_document(edit("v3"))
    await worker.run_until_idle()
    assert await materialisations(deferring) == await materialisations(inline)
    assert await stale(deferring) == []


async def test_another_holder_of_the_lease_keeps_the_worker_away(pair):
    deferring, _ = pair
    await deferring.apply_document(document())
    await deferring.apply_document(edit("v2"))
    clock = Clock()
    assert await deferring.store.rematerialise_lease("elsewhere", clock.now, clock.now + 30)
    worker = Rematerialiser(deferring, clock=clock, holder="here", lease_seconds=30)
    assert await worker.run_until_idle() == 0
    assert len(await deferring.store.rematerialisations()) == 2 and await stale(deferring)
    clock.now += 31  # the other process died: its lease expires
    assert await worker.run_until_idle() > 0
    assert await stale(deferring) == []


async def test_few_dependents_stay_in_the_writes_own_commit(pair):
    deferring, _ = pair
    await deferring.apply_document({"messagegroups": {"g": {"messages": {
        "base": {"description": "v1"}, "one": {"basemessageuri": G + "base"}}}}})
    outcome = await deferring.apply_document({"messagegroups": {"g": {"messages": {"base": {"description": "v2"}}}}})
    assert outcome.deferred == [] and sorted(outcome.rematerialised) == [G + "one", G + "one/versions/1"]
    assert await deferring.store.rematerialisations() == []


async def test_a_worker_stopped_mid_round_stops_even_when_its_lease_cannot_be_given_back(tmp_path, monkeypatch):
    """Cancelling the worker (the app shutting down) ends it although giving the lease back fails
    on the way out: that failure is logged, never mistaken for a failed round to retry."""
    async with LocalRegistry(SQLiteStore(tmp_path / "r.db")) as registry:
        worker = Rematerialiser(registry)
        parked = asyncio.Event()

        async def waits_forever():
            parked.set()
            await asyncio.Event().wait()

        async def refuses(*_):
            raise RuntimeError("the store is going away")

        monkeypatch.setattr(registry.store, "rematerialisations", waits_forever)
        monkeypatch.setattr(registry.store, "rematerialise_lease", refuses)
        task = asyncio.ensure_future(worker.run(3600.0))
        await parked.wait()
        task.cancel()
        for _ in range(20):  # counted loop turns: nothing left to wait for but the unwinding
            if task.done():
                break
            await asyncio.sleep(0)
        assert task.done() and task.cancelled()


@pytest.mark.parametrize("into", ["sqlite", "mongomock"])
async def test_a_backup_taken_while_work_is_pending_is_restored_to_finish_it(pair, tmp_path, into):
    """Backed up mid-way (one page done), restored elsewhere: the copy shows the same dependents
    stale, and its worker ends where the original's does — and where an inline write does."""
    deferring, inline = pair
    for reg in pair:
        await reg.apply_document(document())
        await reg.apply_document(edit("v2"))
    [item, *_] = await deferring.store.rematerialisations()
    page, _ = await Rematerialiser(deferring, batch=2)._page(item, None)
    assert await deferring.store.rematerialised(item.key, item.revision, page[-1].key, done=False)
    waiting = await stale(deferring)
    info = await backup(deferring.store, tmp_path / "pending.jsonl.gz")
    assert info.rematerialise == 2
    target = new_store(into, tmp_path, "restored")
    await target.open()
    await restore(target, tmp_path / "pending.jsonl.gz")
    async with LocalRegistry(target, registry_id="test", rematerialise_inline=2) as copy:  # open: used as it is
        assert await copy.store.rematerialisations() == await deferring.store.rematerialisations()
        assert waiting and await stale(copy) == waiting  # the stale flag, until the worker is done
        assert await Rematerialiser(copy, batch=3).run_until_idle() > 0
        await Rematerialiser(deferring, batch=3).run_until_idle()
        assert await materialisations(copy) == await materialisations(deferring) == await materialisations(inline)
        assert await stale(copy) == [] and await copy.store.rematerialisations() == []


async def test_a_page_hands_the_event_loop_back_every_slice(pair, monkeypatch):
    """What the worker does per dependent on the event loop (take it up, derive it, build its
    write and its event; decode it) comes in slices of at most ``SLICE`` between two
    turns of the loop, counted by a task that counts its turns: a page of 70 dependents (140
    records, two pages) never holds the loop for all of them (health probes run between); a page
    of records is decoded off the loop on either backend."""
    deferring, _ = pair
    many = 70
    messages = {f"m{i:02d}": {"basemessageuri": G + "base"} for i in range(many)}
    await deferring.apply_document({"messagegroups": {"g": {"messages": {"base": {"description": "v1"},
                                                                         **messages}}}})
    await deferring.apply_document({"messagegroups": {"g": {"messages": {"base": {"description": "v2"}}}}})
    assert len(deferring.rematerialising) == 2
    turns = 0
    on_loop: dict[str, Counter[int]] = {}

    def counted(name: str, fn):
        on_loop[name] = Counter()

        def call(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():
                on_loop[name][turns] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(Unit, "remember", counted("take up", Unit.remember))
    monkeypatch.setattr(Unit, "set_derived", counted("derive", Unit.set_derived))
    monkeypatch.setattr(changeset, "_write", counted("build the write", changeset._write))
    monkeypatch.setattr(derive, "_updated", counted("derive the event", derive._updated))
    store_type = type(deferring.store)
    monkeypatch.setattr(store_type, "_record", staticmethod(counted("decode", store_type._record)))

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.ensure_future(count_turns())
    try:
        assert await Rematerialiser(deferring, batch=100).run_until_idle() == 2 * many
    finally:
        counter.cancel()
    assert sum(on_loop["derive"].values()) >= 2 * many  # derived on the loop, in slices
    most = {name: max(counts.values(), default=0) for name, counts in on_loop.items()}
    assert max(most.values()) <= SLICE, most
    assert await stale(deferring) == []
