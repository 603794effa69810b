"""How the stores answer indexed filters and counts: SQLite's query plans, the queries and
index specs MongoDB receives (no live server: asserted as generated), databases made before the
read index opened and migrated in place, and SQLite reads that never wait for its writer."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

from mongomock_motor import AsyncMongoMockClient

from tests.support.recording import Recorded
from xreg.storage import indexed, mongo, sqlite_index
from xreg.storage.records import Query, Write
from xreg.storage.semantics import Condition, Cursor
from xreg.storage.sqlite import SQLiteStore

MESSAGES = "messagegroups/messages"
OLD_DB = Path(__file__).resolve().parents[1] / "data" / "stores" / "sqlite-7dfa1bc.db"
#: A bound on a read that must not wait for the held write: reached only when it does (a hang).
HANG = 60


def messages(n: int, rare_every: int = 50) -> list[Write]:
    return [Write(f"/messagegroups/g{i % 10}/messages/m{i:04d}", "resource", MESSAGES,
                  {"default": {"messageid": f"m{i:04d}", "protocol": "NATS" if i % rare_every == 3 else "KAFKA",
                               "labels": {"team": f"t{i % 3}"}, "n": i}}) for i in range(n)]


def protocol(value: str, **kw) -> Condition:
    return Condition(("default", "protocol"), "eq", value, **kw)


# -- SQLite -------------------------------------------------------------------------------------


async def test_sqlite_reads_an_indexed_filter_from_the_index_in_key_order(tmp_path):
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.commit(messages(2000))
        rare = Query(MESSAGES, any_of=((protocol("nats"),),), limit=10, after=Cursor("/messagegroups/g3"))
        plan = await store.explain(rare)
        assert "SEARCH d USING PRIMARY KEY" in plan and "SCAN states" not in plan, plan
        assert "TEMP B-TREE" not in plan, plan  # the index range is in key order: no sort
        page = await store.list(rare)
        assert [r.key for r in page.items] == sorted(
            w.key for w in messages(2000) if w.doc["default"]["protocol"] == "NATS" and w.key > "/messagegroups/g3")[:10]
        # Of two indexed conditions, the one with fewer entries drives; the other is a lookup by seq.
        both = Query(MESSAGES, any_of=((Condition(("default", "labels", "team"), "eq", "t1"), protocol("nats")),))
        plan = await store.explain(both)
        assert "SEARCH d USING PRIMARY KEY" in plan and "SCAN states" not in plan, plan
        assert "USING PRIMARY KEY (path=? AND v=? AND akey=?)" in plan, plan  # a seek, not a scan
        assert await store.count(both) == sum(1 for i in range(2000) if i % 50 == 3 and i % 3 == 1)
        # A wildcard reads its text range, each state once.
        wild = Query(MESSAGES, any_of=((protocol("na*", wildcard=True),),), limit=5)
        assert "SCAN states" not in await store.explain(wild)
        assert await store.count(wild) == 40
        # As-of reads and other conditions still read the states.
        assert "states_asof" in await store.explain(Query(MESSAGES, any_of=((protocol("nats"),),), as_of=1))


async def test_sqlite_finds_cross_references_under_a_parent_by_one_index_range(tmp_path):
    async with SQLiteStore(tmp_path / "s.db") as store:
        writes = messages(500)
        for w in writes[::7]:
            w.doc["meta"] = {"xref": "/messagegroups/g0/messages/m0000"}
        await store.commit(writes)
        sources = Query(MESSAGES, parent="/messagegroups/g3", any_of=((Condition(("meta", "xref"), "exists"),),))
        plan = await store.explain(sources)
        assert "SEARCH d USING PRIMARY KEY (path=? AND v=? AND akey>? AND akey<?)" in plan, plan
        assert "TEMP B-TREE" not in plan and "SCAN states" not in plan, plan
        want = [w.key for w in writes[::7] if w.key.startswith("/messagegroups/g3/")]
        assert [r.key for r in (await store.list(sources)).items] == want
        # A store whose read index is of the layout before (no presence entries) rebuilds it when opened.
        await store.db.execute("DELETE FROM attrs")
        await store.db.execute("UPDATE meta SET value = 1 WHERE key = 'read_index'")
    async with SQLiteStore(tmp_path / "s.db") as store:
        assert [r.key for r in (await store.list(sources)).items] == want
        assert await store.count(sources) == len(want)


def _varied(i: int, ctype: str = MESSAGES) -> Write:
    """Documents whose entries take every way into ``attrs``: a value shared by hundreds (whole
    statements of rows), values of one state each, 1 and 1.0, booleans, presence, lists."""
    return Write(f"/messagegroups/g{i % 3}/{ctype.split('/')[-1]}/m{i:04d}", "resource", ctype,
                 {"default": {"protocol": "KAFKA", "messageid": f"m{i:04d}", "orderid": 1 if i % 2 else 1.0,
                              "deprecated": i % 3 == 0, "labels": {"team": f"t{i % 4}"}, "usage": ["a", "B", i]}})


async def _attrs_match_the_live_states(store: SQLiteStore) -> int:
    found = await store.db.execute_fetchall(
        "SELECT p.path, a.v, typeof(a.v), p.ctype, a.akey, a.aseq FROM attrs a JOIN attr_paths p ON p.id = a.path")
    live = await store.db.execute_fetchall("SELECT seq, xkey, ctype, doc FROM states WHERE live = 1")
    expected = {(text, sqlite_index.stored(v), type(sqlite_index.stored(v)).__name__, ctype, key, seq)
                for seq, key, ctype, doc in live for text, v in indexed.entry_texts(json.loads(doc))}
    kinds = {"text": "str", "integer": "int", "real": "float", "blob": "bytes"}
    assert {(t, v, kinds[k], c, key, seq) for t, v, k, c, key, seq in found} == expected
    return len(found)


async def test_sqlite_index_rows_are_the_entries_of_the_live_states(tmp_path):
    """Large commits insert ``attrs`` a statement of rows at a time: every entry of every live
    state is there, with its type, and nothing else, across updates and deletions."""
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.commit([_varied(i) for i in range(450)] + [_varied(i, "schemagroups/schemas") for i in range(7)])
        assert await _attrs_match_the_live_states(store) == 457 * 10
        await store.commit([replace(_varied(i), doc={"default": {"protocol": "AMQP", "orderid": 2.5}})
                            for i in range(0, 450, 2)] + [Write(_varied(i).xid, "resource", MESSAGES, None)
                                                          for i in range(1, 200, 2)])
        assert await _attrs_match_the_live_states(store) == 225 * 2 + 125 * 10 + 7 * 10
        # A closed state's rows, a hundred at a time: a seek of the primary key per row, no scan.
        plan = await store.db.execute_fetchall("EXPLAIN QUERY PLAN " + sqlite_index._DELETE_RUN,
                                               [1, "kafka"] + ["/k", 1] * sqlite_index.RUN)
        assert next(iter(plan))[3] == "SEARCH attrs USING PRIMARY KEY (path=? AND v=? AND akey=?)"


async def test_sqlite_unfiltered_counts_come_from_the_counters(tmp_path):
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.commit(messages(300))
        assert await store.count(Query(MESSAGES)) == 300
        assert await store.count(Query(MESSAGES, parent="/messagegroups/g3")) == 30
        # The answer is the counter (a changed counter changes it): no state is read.
        await store.db.execute("UPDATE counts SET n = n + 1000 WHERE parent = '/messagegroups/g3'")
        assert await store.count(Query(MESSAGES, parent="/messagegroups/g3")) == 1030
        assert await store.count(Query(MESSAGES)) == 1300


async def test_a_database_made_before_the_read_index_opens_and_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(OLD_DB, path)
    async with SQLiteStore(path) as store:
        assert await store.current_revision() == 3
        assert await store.count(Query(MESSAGES)) == 39
        assert await store.count(Query(MESSAGES, parent="/messagegroups/g1")) == 20
        assert await store.count(Query("messagegroups", any_of=((Condition(("protocol",), "eq", "kafka"),),))) == 1
        mqtt = Query(MESSAGES, any_of=((protocol("mqtt"),),))
        assert "SEARCH d USING PRIMARY KEY" in await store.explain(mqtt)
        assert [r.key for r in (await store.list(mqtt)).items] == [
            "/messagegroups/g1/messages/m00", "/messagegroups/g1/messages/m10", "/messagegroups/g2/messages/m00",
            "/messagegroups/g2/messages/m10"]
        amqp = Query(MESSAGES, any_of=((protocol("amqp"),),))
        assert [r.key for r in (await store.list(amqp)).items] == ["/messagegroups/g1/messages/m01"]
        assert await store.count(replace_as_of(amqp, 2)) == 0  # as-of reads: the history as it was
        rev = await store.commit([Write("/messagegroups/g2/messages/m19", "resource", MESSAGES,
                                        {"default": {"messageid": "m19", "protocol": "AMQP"}})])
        assert rev == 4 and await store.count(amqp) == 2 and await store.count(Query(MESSAGES)) == 40
    async with SQLiteStore(path) as store:  # opened again: nothing to migrate, the same answers
        assert await store.count(amqp) == 2 and await store.count(Query(MESSAGES)) == 40


#: The read index as layout 2 kept it (the collection type in every row).
_LAYOUT_2 = (
    "CREATE TABLE attr_paths (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE)",
    "CREATE TABLE attrs (path INTEGER NOT NULL, v, actype TEXT NOT NULL, akey TEXT NOT NULL, "
    "aseq INTEGER NOT NULL, PRIMARY KEY (path, v, actype, akey, aseq)) WITHOUT ROWID",
)


async def test_a_database_of_read_index_layout_2_is_rebuilt_once(tmp_path):
    path = tmp_path / "s.db"
    async with SQLiteStore(path) as store:
        await store.commit(messages(100))
    raw = sqlite3.connect(path)
    with raw:  # as a store of layout 2 left it
        raw.execute("DROP TABLE attrs")
        raw.execute("DROP TABLE attr_paths")
        for create in _LAYOUT_2:
            raw.execute(create)
        raw.execute("""INSERT INTO attr_paths(id, path) VALUES (1, '["default","protocol"]')""")
        raw.execute("INSERT INTO attrs VALUES (1, 'nats', ?, '/messagegroups/g3/messages/m0003', 4)", (MESSAGES,))
        raw.execute("UPDATE meta SET value = 2 WHERE key = 'read_index'")
    raw.close()
    nats = Query(MESSAGES, any_of=((protocol("nats"),),))
    async with SQLiteStore(path) as store:
        assert [r[1] for r in await store.db.execute_fetchall("PRAGMA table_info(attrs)")] == ["path", "v", "akey",
                                                                                             "aseq"]
        assert list(await store.db.execute_fetchall("SELECT value FROM meta WHERE key = 'read_index'")) == [(3,)]
        assert await _attrs_match_the_live_states(store) == 100 * 4
        assert [r.key for r in (await store.list(nats)).items] == [
            "/messagegroups/g3/messages/m0003", "/messagegroups/g3/messages/m0053"]
        assert "SEARCH d USING PRIMARY KEY (path=? AND v=?)" in await store.explain(nats)
        await store.db.execute("DELETE FROM attrs WHERE akey = '/messagegroups/g3/messages/m0053'")
    async with SQLiteStore(path) as store:  # opened again: not rebuilt (the row deleted above stays gone)
        assert await store.count(nats) == 1


def replace_as_of(query: Query, as_of: int) -> Query:
    return replace(query, as_of=as_of)


async def test_sqlite_reads_complete_while_a_write_is_held_open(tmp_path):
    """A commit's transaction is held open (on an event) while pages, counts, point reads and
    the health probe's revision read run to completion: readers never wait for the writer, and
    see the last committed state until the write commits."""
    async with SQLiteStore(tmp_path / "s.db") as store:
        before = await store.commit(messages(200))
        release, entered = asyncio.Event(), asyncio.Event()

        async def held_write() -> None:
            async with store._transaction() as db:  # what a commit holds while it writes
                await db.execute("INSERT INTO revisions(at, note) VALUES (0, 'held')")
                await db.executemany("UPDATE states SET live = 0 WHERE seq = ?", [(n,) for n in range(1, 100)])
                entered.set()
                await release.wait()

        writer = asyncio.create_task(held_write())
        await entered.wait()
        async with asyncio.timeout(HANG):
            page = await store.list(Query(MESSAGES, parent="/messagegroups/g1", limit=5))
            count = await store.count(Query(MESSAGES, any_of=((protocol("nats"),),)))
            got = await store.get("/messagegroups/g0/messages/m0000")
            revision = await store.probe_revision()
            current = await store.current_revision()
        assert not writer.done()  # the write was open all along
        assert len(page.items) == 5 and count == 4 and got is not None
        assert revision == current == before  # the snapshot: nothing of the open write
        release.set()
        await writer
        assert await store.current_revision() == before + 1


# -- MongoDB (the queries and index specs a server receives) ------------------------------------


async def _mongo() -> mongo.MongoStore:
    store = mongo.MongoStore(client=AsyncMongoMockClient(), database="xreg_indexed")
    await store.open()
    return store


async def test_mongo_creates_the_attribute_index_and_counters():
    store = await _mongo()
    info = await store.states.index_information()
    assert info[mongo.ATTRS_INDEX]["key"] == mongo.ATTRS_KEYS == [("ix.p", 1), ("ix.v", 1), ("ctype", 1), ("xkey", 1)]
    assert info[mongo.ATTRS_INDEX]["partialFilterExpression"] == {"live": True}
    assert (await store.counts.index_information())["counts_parent"]["unique"]
    await store.commit(messages(20))
    raw = await store.states.find_one({"xkey": "/messagegroups/g3/messages/m0003"})
    assert {"p": '["default","protocol"]', "v": "nats"} in raw["ix"]
    assert {"p": '["default","labels"]'} in raw["ix"]  # an object: present
    assert {"p": '["default","labels","team"]', "v": "t0"} in raw["ix"]
    assert not any(e["p"] == '["default","n"]' for e in raw["ix"])  # not a typed attribute
    await store.commit([Write(raw["xid"], "resource", MESSAGES, None)])
    closed = await store.states.find_one({"xkey": raw["xkey"], "live": False})
    assert closed["ix"] == []  # superseded: out of the index
    assert await store.count(Query(MESSAGES)) == 19
    assert {(d["parent"], d["n"]) for d in await store.counts.find({}).to_list(None)} >= {("/messagegroups/g3", 1)}


async def test_mongo_queries_drive_by_the_attribute_index():
    store = await _mongo()
    await store.commit(messages(100))
    plan = json.loads(await store.explain(
        Query(MESSAGES, any_of=((protocol("NATS"),),), limit=10, after=Cursor("/messagegroups/g1"))))
    assert plan["hint"] == "states_attrs" and plan["sort"] == [["xkey", 1]]
    assert plan["filter"]["live"] is True and plan["filter"]["ctype"] == MESSAGES
    assert plan["filter"]["xkey"] == {"$gt": "/messagegroups/g1"}
    assert plan["filter"]["$and"][0] == {"ix": {"$elemMatch": {"p": '["default","protocol"]', "v": "nats"}}}
    wild = json.loads(await store.explain(Query(MESSAGES, any_of=((protocol("na*", wildcard=True),),))))
    assert wild["filter"]["$and"][0]["ix"]["$elemMatch"]["v"] == {"$regex": "^na.*(?![\\s\\S])", "$options": "s"}
    number = json.loads(await store.explain(Query(MESSAGES, any_of=((protocol("5"),),))))
    assert number["filter"]["$and"][0]["ix"]["$elemMatch"]["v"] == {"$in": ["5", 5]}
    present = json.loads(await store.explain(
        Query(MESSAGES, any_of=((Condition(("default", "labels", "team"), "exists"),),))))
    assert present["filter"]["$and"][0] == {"ix": {"$elemMatch": {"p": '["default","labels","team"]'}}}
    # A cross-reference is kept by its presence alone: a null value bounds the index range.
    sources = json.loads(await store.explain(Query(MESSAGES, any_of=((Condition(("meta", "xref"), "exists"),),))))
    assert sources["hint"] == "states_attrs"
    assert sources["filter"]["$and"][0] == {"ix": {"$elemMatch": {"p": '["meta","xref"]', "v": None}}}
    as_of = json.loads(await store.explain(Query(MESSAGES, any_of=((protocol("nats"),),), as_of=1)))
    assert as_of["hint"] == "states_asof" and "ix" not in str(as_of["filter"])
    assert await store.count(Query(MESSAGES, any_of=((protocol("nats"),),))) == 2


async def test_mongo_commit_moves_the_counters_in_a_few_round_trips():
    store = await _mongo()
    recorded = Recorded(store.counts)
    store.counts, calls = recorded, recorded.log
    await store.commit(messages(300))  # 10 new parents: one read, one insert
    assert [name for name, _ in calls] == ["find", "insert_many"]
    assert len(calls[1][1][0]) == 10
    calls.clear()
    more = [Write(f"/messagegroups/g{i % 12}/messages/n{i:04d}", "resource", MESSAGES, {"default": {}})
            for i in range(24)]  # 2 more in each of g0..g9, 2 in each of two new parents
    gone = [Write(w.xid, "resource", MESSAGES, None) for w in messages(300)[:5]]  # g0..g4 lose one
    await store.commit(more + gone)
    assert sorted(name for name, _ in calls) == ["find", "insert_many", "update_many", "update_many"]
    moves = {args[1]["$inc"]["n"]: sorted(args[0]["parent"]["$in"]) for name, args in calls if name == "update_many"}
    assert moves == {2: [f"/messagegroups/g{g}" for g in range(5, 10)], 1: [f"/messagegroups/g{g}" for g in range(5)]}
    assert await store.count(Query(MESSAGES)) == 319
    assert await store.count(Query(MESSAGES, parent="/messagegroups/g0")) == 31
    assert await store.count(Query(MESSAGES, parent="/messagegroups/g7")) == 32
    assert await store.count(Query(MESSAGES, parent="/messagegroups/g11")) == 2


async def test_a_mongo_database_made_before_the_read_index_is_migrated():
    client = AsyncMongoMockClient()
    store = mongo.MongoStore(client=client, database="xreg_old")
    await store.open()
    await store.commit(messages(30))
    # As the code before the read index left it: no ix, no counts, no version.
    await store.states.update_many({}, {"$unset": {"ix": ""}})
    await store.counts.delete_many({})
    await store.meta.delete_one({"_id": "read_index"})
    again = mongo.MongoStore(client=client, database="xreg_old")
    await again.open()
    assert await again.count(Query(MESSAGES)) == 30
    assert await again.count(Query(MESSAGES, parent="/messagegroups/g2")) == 3
    assert [r.key for r in (await again.list(Query(MESSAGES, any_of=((protocol("nats"),),)))).items] == [
        "/messagegroups/g3/messages/m0003"]


async def test_mongo_first_page_by_relevance_is_limited_by_the_server():
    from xreg.storage.semantics import RANK, Sort

    store = await _mongo()
    plan = store.top_search(Query(MESSAGES, search=("order", "created"), sort=Sort(RANK), limit=20,
                                  any_of=((protocol("kafka"),),)))
    assert plan is not None
    assert plan["filter"]["$text"] == {"$search": '"order" "created"'}
    assert plan["sort"] == [("score", {"$meta": "textScore"}), ("xkey", 1)] and plan["limit"] == 21
    assert plan["projection"]["score"] == {"$meta": "textScore"}
    # Later pages (a cursor) and other orders read every hit, as before.
    assert store.top_search(Query(MESSAGES, search=("order",), sort=Sort(RANK), limit=20,
                                  after=Cursor("/x", -1.0))) is None
    assert store.top_search(Query(MESSAGES, search=("order",), limit=20)) is None
