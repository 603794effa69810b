"""The event log of a store (``Store.commit(events=…)``, ``Store.events_after``): positions,
filters served by an index, pruning, backups — on every backend (``store``) and restored across
backends (``target``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mongomock_motor import AsyncMongoMockClient

from xreg.events.record import EventDraft, EventPosition
from xreg.storage.backup import backup, restore
from xreg.storage.base import Store
from xreg.storage.errors import EventsGone
from xreg.storage.mongo import MongoStore
from xreg.storage.records import Write
from xreg.storage.sqlite import SQLiteStore

T0 = "2026-01-01T00:00:00.000000Z"


@pytest.fixture(params=["sqlite", "mongomock"])
async def target(request, tmp_path: Path):
    """An empty store of an embedded backend, where a backup is restored."""
    if request.param == "sqlite":
        async with SQLiteStore(tmp_path / "restored.db") as s:
            yield s
    else:
        async with MongoStore(client=AsyncMongoMockClient(), database=f"restored_{uuid.uuid4().hex[:8]}") as s:
            yield s


def group(gid: str, doc: dict | None = None) -> Write:
    return Write(f"/dirs/{gid}", "group", "dirs", doc)


def draft(type_: str, subject: str, correlation: str, changed: tuple[str, ...] | None = None) -> EventDraft:
    return EventDraft(f"io.xregistry.{type_}", subject, T0, correlation, changed)


async def fill(store: Store) -> list[int]:
    """Three commits with events (one per group written, the registry updated first)."""
    revs = []
    for i, gids in enumerate((["a", "b"], ["c"], ["A2"])):
        events = [draft("registry.updated", "/", f"c{i}", ("dirs", "dirscount", "epoch", "modifiedat"))]
        events += [draft("group.created", f"/dirs/{g}", f"c{i}") for g in gids]
        revs.append(await store.commit([group(g, {"dirid": g}) for g in gids], note=str(i), events=events))
    return revs


async def test_events_are_stored_at_the_commits_revision_in_order(store: Store) -> None:
    revs = await fill(store)
    events = await store.events_after(None, limit=100)
    assert [str(e.position) for e in events] == [f"{revs[0]}.0", f"{revs[0]}.1", f"{revs[0]}.2",
                                                 f"{revs[1]}.0", f"{revs[1]}.1", f"{revs[2]}.0", f"{revs[2]}.1"]
    assert [e.subject for e in events] == ["/", "/dirs/a", "/dirs/b", "/", "/dirs/c", "/", "/dirs/A2"]
    assert events[0].changed == ("dirs", "dirscount", "epoch", "modifiedat") and events[1].changed is None
    assert len({e.id for e in events}) == 7 and all(e.id.startswith(store.instance_id) for e in events)
    assert {e.correlation_id for e in events if e.position.revision == revs[1]} == {"c1"}
    # an empty batch commits nothing, whatever events come with it
    assert await store.commit([], events=[draft("group.created", "/dirs/x", "c")]) == revs[-1]
    assert len(await store.events_after(None, limit=100)) == 7


async def test_events_after_pages_and_filters(store: Store) -> None:
    revs = await fill(store)
    first = await store.events_after(None, limit=2)
    rest = await store.events_after(first[-1].position, limit=100)
    assert len(first) == 2 and len(rest) == 5 and rest[0].position > first[-1].position
    assert await store.events_after(EventPosition.end_of(revs[-1]), limit=10) == []
    assert [e.subject for e in await store.events_after(EventPosition(revs[0], 1), limit=100,
                                                        types=["io.xregistry.group.created"])] == [
        "/dirs/b", "/dirs/c", "/dirs/A2"]
    assert [e.subject for e in await store.events_after(None, limit=100, subject="/dirs/a2")] == ["/dirs/A2"]
    assert [e.subject for e in await store.events_after(None, limit=100, subject="/dirs/*")] == [
        "/dirs/a", "/dirs/b", "/dirs/c", "/dirs/A2"]
    assert [e.subject for e in await store.events_after(None, limit=100, subject="/dirs/a*")] == [
        "/dirs/a", "/dirs/A2"]
    assert [str(e.position) for e in await store.events_after(None, limit=100, subject="/")] == [
        f"{r}.0" for r in revs]
    assert len(await store.events_after(None, limit=100, subject="*")) == 7
    assert await store.events_after(None, limit=100, types=["io.xregistry.group.deleted"]) == []


async def test_event_reads_use_the_indexes(tmp_path: Path) -> None:
    """SQLite's plan for each filter names an index (position order without a sort step)."""
    async with SQLiteStore(tmp_path / "plan.db") as store:
        db = store.db
        plans = {}
        for name, (where, params) in {
            "after": ("WHERE (rev, idx) > (?, ?)", [1, 0]),
            "type": ("WHERE type IN (?) AND (rev, idx) > (?, ?)", ["io.xregistry.group.created", 1, 0]),
            "subject": ("WHERE skey = ? AND (rev, idx) > (?, ?)", ["/dirs/a", 1, 0]),
        }.items():
            rows = await db.execute_fetchall(
                f"EXPLAIN QUERY PLAN SELECT * FROM events {where} ORDER BY rev, idx LIMIT 10", params)
            plans[name] = " ".join(r[3] for r in rows)
        assert "PRIMARY KEY" in plans["after"] and "TEMP B-TREE" not in plans["after"]
        assert "events_type" in plans["type"]
        assert "events_subject" in plans["subject"] and "TEMP B-TREE" not in plans["subject"]


async def test_pruning_drops_the_events_of_pruned_revisions(store: Store) -> None:
    revs = await fill(store)
    before = await store.events_after(None, limit=100)
    await store.prune(keep_revisions=1)  # horizon: the last revision but one
    kept = await store.events_after(None, limit=100)
    horizon = await store.oldest_revision()
    assert kept == [e for e in before if e.position.revision >= horizon] and kept
    dropped_last = max(e.position for e in before if e.position.revision < horizon)
    with pytest.raises(EventsGone) as gone:
        await store.events_after(EventPosition(revs[0], 0), limit=10)
    assert gone.value.horizon == dropped_last and gone.value.after == EventPosition(revs[0], 0)
    # a reader that had everything up to the last event pruned loses nothing: not gone
    assert await store.events_after(dropped_last, limit=100) == kept


async def test_backup_and_restore_carry_the_events(store: Store, target: Store, tmp_path: Path) -> None:
    await fill(store)
    await store.prune(keep_revisions=1)
    kept = await store.events_after(None, limit=100)
    info = await backup(store, tmp_path / "b.jsonl")
    assert info.events == len(kept)
    await restore(target, tmp_path / "b.jsonl")
    assert await target.events_after(None, limit=100) == kept
    with pytest.raises(EventsGone):  # the horizon came along
        await target.events_after(EventPosition(1, 0), limit=10)
    rev = await target.commit([group("z", {"dirid": "z"})], events=[draft("group.created", "/dirs/z", "cz")])
    [new] = await target.events_after(kept[-1].position, limit=10)
    assert new.position == EventPosition(rev, 0) and new.id == f"{store.instance_id}.{rev}.0"
