"""Every backend keeps an instance id and carries its whole history through a backup.

The source store is the contract's ``store`` fixture (each backend); the target is a fresh store
of each embedded backend (``target``), so SQLite→SQLite, SQLite→mongomock, mongomock→SQLite and
mongomock→mongomock all run. A restored store must answer every read — current, as of each
revision, the change feed, searches, the reverse index — as the original does, keep its instance
id, horizon and revision counter, and refuse what it cannot take without changing anything.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mongomock_motor import AsyncMongoMockClient

from tests.contract.test_store_contract import GROUPS, MESSAGES, gone, group, message
from xreg.storage.backup import FORMAT, BackupError, backup, check_backup, restore
from xreg.storage.base import Store
from xreg.storage.errors import RevisionAhead, RevisionGone, StoreNotEmpty
from xreg.storage.mongo import MongoStore
from xreg.storage.records import Query, Write
from xreg.storage.semantics import RANK, Sort
from xreg.storage.sqlite import SQLiteStore

VERSIONS = "messagegroups/messages/versions"


@pytest.fixture(params=["sqlite", "mongomock"])
async def target(request, tmp_path: Path):
    """An opened, empty store of an embedded backend: where a backup is restored."""
    if request.param == "sqlite":
        async with SQLiteStore(tmp_path / "restored.db") as s:
            yield s
    else:
        async with MongoStore(client=AsyncMongoMockClient(), database=f"restored_{uuid.uuid4().hex[:8]}") as s:
            yield s


def linked(gid: str, mid: str, base: str | None, words: str, doc: dict | None = None) -> Write:
    """A message whose state links to ``base`` and is found by ``words``."""
    return message(gid, mid, {"description": words, **(doc or {})}, links=(base,) if base else (),
                   text=(mid, words))


async def build_history(store: Store) -> list[int]:
    """Five revisions of writes, updates, deletions, links and search texts; their numbers."""
    base = "/messagegroups/g/messages/base"
    revs = [await store.commit([Write("/", "registry", "", {"registryid": "r"}), group("g", {"name": "G"}),
                                linked("g", "base", None, "seismic base event")], note="create")]
    revs.append(await store.commit([linked("g", "quake", base, "earthquake report", {"v": 1}),
                                    linked("g", "storm", base, "storm warning"), group("h")], note="second"))
    revs.append(await store.commit([linked("g", "quake", base, "earthquakes reported", {"v": 2}),
                                    gone("/messagegroups/g/messages/storm")], note="update and delete"))
    revs.append(await store.commit([Write("/messagegroups/g/messages/quake/versions/1", "version", VERSIONS,
                                          {"versionid": "1"}), gone("/messagegroups/h", GROUPS, "group")]))
    revs.append(await store.commit([linked("g", "storm", None, "storm again", {"v": 5})], note="re-created"))
    return revs


async def reads(store: Store, revs: list[int]) -> dict:
    """Everything a reader can ask, at every revision still readable."""
    oldest = await store.oldest_revision()
    out: dict = {"current": await store.current_revision(), "oldest": oldest}
    for rev in [None, *revs]:
        if rev is not None and rev < oldest:
            continue
        out[rev] = {
            ctype: [(r.xid, r.doc, r.revision) for r in (await store.list(Query(ctype, as_of=rev))).items]
            for ctype in ("", GROUPS, MESSAGES, VERSIONS)}
        out[rev, "search"] = [r.xid for r in (await store.list(
            Query(MESSAGES, as_of=rev, search=("earthquake",), sort=Sort(RANK)))).items]
    for since in [0, *revs]:
        if since == 0 or since >= oldest:
            out["since", since] = [(c.record.xid, c.type, c.record.revision, c.record.doc)
                                   for c in await store.changes(since)]
    out["referrers"] = [r.xid for r in await store.referrers(["/messagegroups/g/messages/base"])]
    return out


async def test_instance_id_is_a_uuid_kept_by_the_store(store):
    first = store.instance_id
    assert uuid.UUID(first)
    await store.commit([group("g")])
    assert store.instance_id == first
    if isinstance(store, SQLiteStore):  # opened again: the same id
        await store.close()
        await store.open()
        assert store.instance_id == first


async def test_instance_ids_differ_between_stores(tmp_path: Path):
    async with SQLiteStore(tmp_path / "a.db") as a, SQLiteStore(tmp_path / "b.db") as b:
        assert a.instance_id != b.instance_id


async def test_a_store_made_before_instance_ids_gets_one_when_opened(tmp_path: Path):
    path = tmp_path / "old.db"
    async with SQLiteStore(path) as s:
        rev = await s.commit([group("g")])
        await s.db.execute("DELETE FROM meta WHERE key = 'instance'")
    async with SQLiteStore(path) as s:
        given = s.instance_id
        assert uuid.UUID(given) and await s.current_revision() == rev
    async with SQLiteStore(path) as s:
        assert s.instance_id == given


async def test_a_feed_since_a_revision_not_reached_is_refused(store):
    rev = await store.commit([group("g")])
    assert await store.changes(rev) == []
    with pytest.raises(RevisionAhead) as exc:
        await store.changes(rev + 1)
    assert (exc.value.revision, exc.value.current) == (rev + 1, rev)


async def test_backup_and_restore_keep_the_whole_history(store, target, tmp_path: Path):
    revs = await build_history(store)
    before = await reads(store, revs)
    info = await backup(store, tmp_path / "registry.backup.jsonl.gz")
    assert (info.instance_id, info.revision, info.states) == (store.instance_id, revs[-1], 11)
    assert info.revisions == len(revs)

    restored = await restore(target, tmp_path / "registry.backup.jsonl.gz")
    assert restored == info
    assert target.instance_id == store.instance_id
    assert await reads(target, revs) == before
    # the revision sequence continues, in both
    nxt = await target.commit([group("after")])
    assert nxt == revs[-1] + 1 == await store.commit([group("after")])
    assert await target.changes(revs[-1]) == await store.changes(revs[-1])
    # the reverse index follows the current states only (the restored deletion and re-creation included)
    await target.commit([linked("g", "storm", "/messagegroups/g/messages/base", "storm linked")])
    assert [r.xid for r in await target.referrers(["/messagegroups/g/messages/base"])] == [
        "/messagegroups/g/messages/quake", "/messagegroups/g/messages/storm"]


async def test_a_pruned_history_is_restored_with_its_horizon(store, target, tmp_path: Path):
    revs = await build_history(store)
    await store.prune(keep_revisions=2)
    before = await reads(store, revs)
    await backup(store, tmp_path / "pruned.jsonl")
    await restore(target, tmp_path / "pruned.jsonl")
    assert await target.oldest_revision() == revs[-1] - 2
    assert await reads(target, revs) == before
    with pytest.raises(RevisionGone):
        await target.get("/messagegroups/g", as_of=revs[0])


@contextlib.asynccontextmanager
async def _other_writer(store: Store) -> AsyncIterator[Store]:
    """A second store object on the same database: another writer, as another process would be.
    (A MongoStore needs no ``open`` to commit; mongomock cannot build the partial index again
    over existing history.)"""
    if isinstance(store, SQLiteStore):
        async with SQLiteStore(store.path) as other:
            yield other
        return
    assert isinstance(store, MongoStore)
    yield MongoStore(client=store._client, database=store._db.name)


async def test_commits_made_while_a_dump_reads_are_not_in_it(store, tmp_path: Path):
    revs = await build_history(store)
    quake = "/messagegroups/g/messages/quake"
    async with _other_writer(store) as writer, store.dump() as dump:
        assert (dump.revision, dump.instance_id) == (revs[-1], store.instance_id)
        later = await writer.commit([linked("g", "quake", None, "changed later", {"v": 9}), group("later")])
        seen = [r.rev async for r in dump.revisions()]
        states = [s async for s in dump.states()]
    assert later == revs[-1] + 1
    assert seen == revs
    assert max(s.rev_from for s in states) == revs[-1]
    current = {s.key: s for s in states if s.rev_to is None}
    assert current[quake].doc["v"] == 2 and "/messagegroups/later" not in current
    assert len(states) == 11


async def test_restore_refuses_a_store_that_is_not_empty(store, target, tmp_path: Path):
    await build_history(store)
    await backup(store, tmp_path / "b.jsonl")
    own = target.instance_id
    rev = await target.commit([group("mine")])
    with pytest.raises(BackupError, match="not empty"):
        await restore(target, tmp_path / "b.jsonl")
    assert (target.instance_id, await target.current_revision()) == (own, rev)
    assert [r.xid for r in (await target.list(Query(GROUPS))).items] == ["/messagegroups/mine"]
    with pytest.raises(StoreNotEmpty):
        await target.load(instance_id=str(uuid.uuid4()), revision=1, oldest=0, revisions=[], states=[])


def _lines(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _write(path: Path, lines: list, *, raw: str = "") -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + raw, encoding="utf-8")
    return path


def _defects(good: list[dict]) -> dict[str, tuple[list, str, str]]:
    """Broken copies of a good backup: (lines, extra raw text, what the error says)."""
    header, *body, end = good
    states = [i for i, x in enumerate(body) if x["type"] == "state"]
    bad_state = [dict(x) for x in body]
    bad_state[states[1]]["from"] = "three"
    late = [dict(x) for x in body]
    late[states[0]]["to"] = header["revision"] + 5
    return {
        "empty": ([], "", "empty"),
        "an export document": ([{"specversion": "1.0-rc4", "registryid": "r", "type": "x"}], "", "not a backup"),
        "a newer format version": ([{**header, "version": 4}, *body, end], "", "version 4 is not supported"),
        "a header without a UUID": ([{**header, "instanceid": "nope"}, *body, end], "", "not a UUID"),
        "oldest after revision": ([{**header, "oldest": header["revision"] + 1}, *body, end], "", "oldest"),
        "cut short": ([header, *body[:-2]], "", "cut short"),
        "cut mid-line": ([header, *body[:-1]], '{"type": "state", "xid": "/messagegroups/g", "ki', "not valid JSON"),
        "end counts that differ": ([header, *body[:-1], end], "", "end line counts"),
        "a line after the end": ([header, *body, end, body[0]], "", "after the end line"),
        "a bad state": ([header, *bad_state, end], "", f"line {states[1] + 2}: a state needs from"),
        "a state after the header's revision": ([header, *late, end], "", "after the header's"),
        "an unknown record": ([header, {"type": "mystery"}, *body, {**end}], "", "unknown record type"),
        "too deep": ([header, {"type": "state", "doc": json.loads("[" * 300 + "]" * 300)}, *body, end], "",
                     "nested more than"),
    }


async def test_a_defective_backup_is_refused_and_writes_nothing(store, target, tmp_path: Path):
    await build_history(store)
    await backup(store, tmp_path / "good.jsonl")
    good = _lines(tmp_path / "good.jsonl")
    assert good[0]["type"] == "header" and good[0]["format"] == FORMAT and good[-1]["type"] == "end"
    own = target.instance_id
    for name, (lines, raw, says) in _defects(good).items():
        path = _write(tmp_path / f"{name}.jsonl", lines, raw=raw)
        with pytest.raises(BackupError, match=says):
            check_backup(path)
        with pytest.raises(BackupError, match=says):
            await restore(target, path)
        assert (await target.current_revision(), target.instance_id) == (0, own), name
        assert await target.get("/messagegroups/g") is None, name
    # a gzip file cut short
    await backup(store, tmp_path / "good.jsonl.gz")
    data = (tmp_path / "good.jsonl.gz").read_bytes()
    (tmp_path / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(BackupError):
        await restore(target, tmp_path / "cut.jsonl.gz")
    assert await target.current_revision() == 0
    # and then the good one restores
    await restore(target, tmp_path / "good.jsonl.gz")
    assert target.instance_id == store.instance_id


async def test_a_backup_that_fails_while_loading_leaves_the_store_empty(store, target, tmp_path: Path):
    await build_history(store)
    await backup(store, tmp_path / "b.jsonl")
    good = _lines(tmp_path / "b.jsonl")
    header, *body, end = good
    current = [x for x in body if x["type"] == "state" and x["to"] is None]
    twice = [*body, current[0]]  # two current states of one entity: the store's unique index refuses
    path = _write(tmp_path / "twice.jsonl", [header, *twice, {**end, "states": end["states"] + 1}])
    own = target.instance_id
    with pytest.raises(BackupError, match="could not be loaded"):
        await restore(target, path)
    assert (await target.current_revision(), target.instance_id) == (0, own)
    assert await target.get("/messagegroups/g") is None and await target.oldest_revision() == 0
    await restore(target, tmp_path / "b.jsonl")
    assert await target.current_revision() == header["revision"]


# -- pending re-materialisation items ---------------------------------------------------------
BASE = "/messagegroups/g/messages/base"
QUAKE_V1 = "/messagegroups/g/messages/quake/versions/1"


async def pending(store: Store) -> list[tuple]:
    return [(i.key, i.revision, i.at, i.after) for i in await store.rematerialisations()]


async def test_pending_rematerialisations_are_carried_with_their_progress(store, target, tmp_path: Path):
    revs = await build_history(store)
    edited = await store.commit([linked("g", "base", None, "seismic base, edited")],
                                rematerialise=[BASE, QUAKE_V1])
    assert await store.rematerialised(BASE, edited, "/messagegroups/g/messages/quake", done=False)
    assert await store.rematerialise_lease("worker-of-the-source", 100.0, 4e9)  # held: never carried
    info = await backup(store, tmp_path / "pending.jsonl")
    assert info.rematerialise == 2
    lines = _lines(tmp_path / "pending.jsonl")
    assert [x["type"] for x in lines[1:len(revs) + 4]] == ["revision"] * (len(revs) + 1) + ["rematerialise"] * 2
    assert lines[-1]["rematerialise"] == 2
    restored = await restore(target, tmp_path / "pending.jsonl")
    assert restored == info
    assert await pending(target) == await pending(store) == [
        (BASE, edited, (await store.rematerialisations())[0].at, "/messagegroups/g/messages/quake"),
        (QUAKE_V1, edited, (await store.rematerialisations())[1].at, None)]
    assert await target.rematerialise_lease("worker-of-the-copy", 200.0, 230.0)  # the lease is free
    # the restored items work as the original's do: a later write of the base replaces its item
    later = await target.commit([linked("g", "base", None, "edited again")], rematerialise=[BASE])
    assert [(i.key, i.revision, i.after) for i in await target.rematerialisations()][-1] == (BASE, later, None)


async def test_a_dump_holds_the_items_pending_at_its_revision(store, tmp_path: Path):
    await build_history(store)
    edited = await store.commit([linked("g", "base", None, "edited")], rematerialise=[BASE])
    async with _other_writer(store) as writer, store.dump() as dump:
        await writer.commit([linked("g", "quake", None, "a base too")], rematerialise=["/messagegroups/g/messages/quake"])
        [states] = [[s async for s in dump.states()]]
    assert [(i.key, i.revision) for i in dump.rematerialisations] == [(BASE, edited)]
    assert max(s.rev_from for s in states) == edited


async def test_an_item_of_a_deleted_message_whose_history_was_pruned_is_restored(store, target, tmp_path: Path):
    """A message deleted with many dependents leaves an item; when its tombstone is pruned while the
    item waits, the backup holds an item naming no state — accepted since it predates the history."""
    await build_history(store)
    deleted = await store.commit([gone(BASE)], rematerialise=[BASE])
    for i in range(3):
        await store.commit([group(f"later{i}")])
    await store.prune(keep_revisions=1)
    assert await store.oldest_revision() > deleted
    await backup(store, tmp_path / "pruned.jsonl")
    assert BASE not in {x.get("xid", "").lower() for x in _lines(tmp_path / "pruned.jsonl")}
    await restore(target, tmp_path / "pruned.jsonl")
    assert [(i.key, i.revision) for i in await target.rematerialisations()] == [(BASE, deleted)]


async def test_a_backup_of_an_earlier_format_restores_with_no_pending_work(store, target, tmp_path: Path):
    """Versions 1 and 2 have no pending items: restored as holding none (no item is made up)."""
    await build_history(store)
    await backup(store, tmp_path / "now.jsonl")
    header, *body, end = _lines(tmp_path / "now.jsonl")
    assert header["version"] == 3 and "rematerialise" in end
    old_end = {k: v for k, v in end.items() if k != "rematerialise"}
    path = _write(tmp_path / "v2.jsonl", [{**header, "version": 2}, *body, old_end])
    info = await restore(target, path)
    assert (info.rematerialise, info.states) == (0, end["states"])
    assert await target.rematerialisations() == []
    assert await target.current_revision() == header["revision"]
