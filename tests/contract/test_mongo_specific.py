"""MongoStore-specific checks: indexes, the generated queries, the no-transaction path, the
Python fallbacks (containers in a sort, paths dot notation cannot name) and, against a live
server (``XREG_TEST_MONGODB_URL``), transactions."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import replace

import pytest
from pymongo.errors import OperationFailure

from tests.contract.conftest import live_mongo_store
from tests.support.recording import Recorded
from xreg.storage.errors import Conflict
from xreg.storage.records import Query, Write
from xreg.storage.semantics import Condition, Cursor, Sort, cursor_for
from xreg.storage.sqlite import SQLiteStore

mongo = pytest.importorskip("xreg.storage.mongo")
from mongomock_motor import AsyncMongoMockClient  # noqa: E402

MESSAGES = "messagegroups/messages"


def msg(gid: str, mid: str, doc: dict | None = None, **kw) -> Write:
    return Write(f"/messagegroups/{gid}/messages/{mid}", "resource", MESSAGES, {"messageid": mid, **(doc or {})}, **kw)


@pytest.fixture
async def store():
    async with mongo.MongoStore(client=AsyncMongoMockClient(), database="xreg_specific") as s:
        yield s


@pytest.fixture
async def live_store():
    async with live_mongo_store("xreg_specific") as s:
        yield s


async def test_indexes_exist_after_open(store):
    info = await store.states.index_information()
    assert info["states_current"]["unique"] and store.partial_index
    assert info["states_current"]["partialFilterExpression"] == {"rev_to": None}
    assert [k for k, _ in info["states_live"]["key"]] == ["live", "ctype", "xkey"]
    assert [k for k, _ in info["states_history"]["key"]] == ["xkey", "rev_from"]
    assert [k for k, _ in info["states_rev"]["key"]] == ["rev_from"]
    assert [k for k, _ in info["states_asof"]["key"]] == ["ctype", "xkey", "rev_from"]
    await store.open()  # idempotent


async def test_unique_current_index_falls_back_when_partial_indexes_are_refused():
    s = mongo.MongoStore(client=AsyncMongoMockClient(), database="xreg_nopartial")
    create_index = s.states.create_index

    async def refuse_partial(keys, **kw):
        if "partialFilterExpression" in kw:
            raise OperationFailure("partial indexes are not supported")
        return await create_index(keys, **kw)

    s.states.create_index = refuse_partial
    async with s:
        info = await s.states.index_information()
        assert not s.partial_index and info["states_current"]["unique"]
        assert [k for k, _ in info["states_current"]["key"]] == ["xkey", "rev_to"]
        r1 = await s.commit([msg("g", "a", {"v": 1})])
        r2 = await s.commit([msg("g", "a", {"v": 2}, expect=r1)])
        r3 = await s.commit([Write("/messagegroups/g/messages/a", "resource", MESSAGES, None, expect=r2)])
        await s.commit([msg("g", "a", {"v": 4}, expect=None)])
        assert (await s.get("/messagegroups/g/messages/a")).doc["v"] == 4
        assert (await s.get("/messagegroups/g/messages/a", as_of=r3)) is None
        assert await s.states.count_documents({}) == 4


async def test_explain_names_the_live_index_and_a_key_range(store):
    plan = json.loads(await store.explain(Query(MESSAGES, parent="/messagegroups/G", limit=5)))
    assert plan["hint"] == "states_live"
    assert plan["filter"]["live"] is True and plan["filter"]["ctype"] == MESSAGES
    assert plan["filter"]["xkey"] == {"$gt": "/messagegroups/g/", "$lt": "/messagegroups/g0"}
    assert plan["sort"] == [["xkey", 1]] and plan["limit"] == 6 and plan["exact"]
    # A cursor tightens the same range; paging backwards reverses the scan.
    cursor = Cursor("/messagegroups/g/messages/m042")
    plan = json.loads(await store.explain(Query(MESSAGES, parent="/messagegroups/g", limit=5, after=cursor)))
    assert plan["filter"]["xkey"] == {"$gt": cursor.key, "$lt": "/messagegroups/g0"}
    plan = json.loads(await store.explain(Query(MESSAGES, limit=5, before=cursor)))
    assert plan["filter"]["xkey"] == {"$lt": cursor.key} and plan["sort"] == [["xkey", -1]]
    # As-of pages use their own index; a sort goes by the folded attribute, then the key.
    plan = json.loads(await store.explain(Query(MESSAGES, parent="/messagegroups/g", as_of=3, sort=Sort(("name",)))))
    assert plan["hint"] == "states_asof" and plan["sort"] == [["lc.name", 1], ["xkey", 1]]
    info = await store.states.index_information()
    assert [k for k, _ in info[plan["hint"]]["key"]] == ["ctype", "xkey", "rev_from"]


def test_conditions_compile_to_plain_operators():
    compile_ = mongo.compile_condition
    assert compile_(Condition(("name",), "eq", "Orders")) == ({"lc.name": {"$eq": "orders"}}, True)
    clause, exact = compile_(Condition(("meta", "epoch"), "gt", "2"))
    assert exact and clause == {"$and": [
        {"lc.meta": {"$not": {"$type": "array"}}},
        {"$or": [{"lc.meta.epoch": {"$gt": "2"}}, {"lc.meta.epoch": {"$gt": 2}}]}]}
    clause, exact = compile_(Condition(("name",), "ne", "a*b\\*", wildcard=True))
    assert exact and clause == {"$nor": [{"lc.name": {"$regex": r"^a.*b\*(?![\s\S])", "$options": "s"}}]}
    # Not expressible exactly: a superset, checked in Python.
    assert compile_(Condition(("labels", "*"), "eq", "x")) == ({"lc.labels": {"$type": "object"}}, False)
    assert compile_(Condition(("labels", "app.tier"), "ne", "x")) == ({}, False)
    assert compile_(Condition(("tags", "[*]"), "exists")) == ({"lc.tags": {"$type": "array"}}, False)


async def test_mongomock_needs_strict_types(store):
    # mongomock finds True for 1 (Python's ==); a real server does not (see the live test).
    assert store.strict_types
    await store.commit([msg("g", "a", {"n": 1}), msg("g", "b", {"n": True}), msg("g", "c", {"n": [True, 2]})])
    found = await store.list(Query(MESSAGES, any_of=((Condition(("n",), "eq", "1"),),)))
    assert [r.id for r in found.items] == ["a"]


async def test_commits_without_transactions_are_serialised(store):
    assert not store.transactions  # mongomock has no sessions: ordered writes under a lock
    insert_many = store.states.insert_many

    async def slow_insert(*args, **kw):  # let other commits run in the middle of this one
        await asyncio.sleep(0)
        return await insert_many(*args, **kw)

    store.states.insert_many = slow_insert
    r0 = await store.commit([msg("g", "a", {"v": 0})])

    async def bump(i: int) -> int:
        for _ in range(50):
            cur = await store.get("/messagegroups/g/messages/a")
            try:
                return await store.commit([msg("g", "a", {"v": cur.doc["v"] + 1}, expect=cur.revision),
                                           msg("g", f"m{i}")])
            except Conflict:
                await asyncio.sleep(0)
        raise AssertionError("never committed")

    revs = await asyncio.gather(*(bump(i) for i in range(10)))
    assert sorted(revs) == list(range(r0 + 1, r0 + 11))
    assert (await store.get("/messagegroups/g/messages/a")).doc["v"] == 10
    assert await store.count(Query(MESSAGES)) == 11
    # A conflict anywhere in a batch writes nothing and uses up no revision.
    with pytest.raises(Conflict):
        await store.commit([msg("g", "new"), msg("g", "a", expect=r0)])
    assert await store.current_revision() == r0 + 10
    assert await store.get("/messagegroups/g/messages/new") is None
    assert await store.states.count_documents({"xkey": "/messagegroups/g/messages/a", "rev_to": None}) == 1


VALUES = [None, 1, 2.5, "b", "B", "a", True, False, [1, 2], ["a"], [], {"x": 1}, {"a": "z"}, {}, "[1]", "{}"]


@pytest.mark.parametrize("path", [("rank",), ("labels", "app.tier")], ids=["containers", "dotted-key"])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
async def test_orders_in_python_like_sqlite(store, tmp_path, path, descending):
    """Sorted pages the database cannot order exactly (containers among the values, a key
    holding a dot) come out as SQLite's, page by page in both directions, filtered or not."""
    rnd = random.Random(7)
    writes = []
    for i in range(30):
        value = rnd.choice(VALUES)
        doc = {"rank": value} if path == ("rank",) else {"labels": {"app.tier": value}}
        writes.append(msg("g", f"m{i:02d}" if i % 2 else f"M{i:02d}", doc | {"i": i}))
    async with SQLiteStore(tmp_path / "ref.db") as ref:
        for s in (store, ref):
            await s.commit(writes)
        sort = Sort(path, descending)
        for any_of in ((), ((Condition(("i",), "ge", "5"),),)):
            query = Query(MESSAGES, sort=sort, limit=4, any_of=any_of)
            want = [r.key for r in (await ref.list(replace(query, limit=None))).items]
            assert [r.key for r in (await store.list(replace(query, limit=None))).items] == want
            got, cursor = [], None
            while True:
                page, expected = await store.list(replace(query, after=cursor)), await ref.list(replace(query, after=cursor))
                assert ([r.key for r in page.items], page.has_next, page.has_prev) == (
                    [r.key for r in expected.items], expected.has_next, expected.has_prev)
                got += [r.key for r in page.items]
                if not page.has_next:
                    break
                cursor = cursor_for(page.items[-1], sort)
            assert got == want
            cursor = cursor_for((await store.get(want[-1])), sort)
            page, expected = await store.list(replace(query, before=cursor)), await ref.list(replace(query, before=cursor))
            assert ([r.key for r in page.items], page.has_next, page.has_prev) == (
                [r.key for r in expected.items], expected.has_next, expected.has_prev)


# -- a live server --------------------------------------------------------------------------------


@pytest.mark.mongo_live
async def test_live_transaction_aborts_on_conflict(live_store):
    store = live_store
    if not store.transactions:
        pytest.skip("the server at XREG_TEST_MONGODB_URL is standalone: no transactions")
    assert not store.strict_types
    r1 = await store.commit([msg("g", "a", {"v": 1})])
    # The batch's revision is taken first in the transaction; the Conflict must roll it back.
    with pytest.raises(Conflict):
        await store.commit([msg("g", "b"), msg("g", "a", {"v": 2}, expect=r1 + 1)])
    assert await store.current_revision() == r1
    assert await store.revisions.count_documents({"_id": {"$gt": r1}}) == 0
    assert await store.get("/messagegroups/g/messages/b") is None
    assert (await store.get("/messagegroups/g/messages/a")).doc["v"] == 1
    # Concurrent committers conflict on the revision counter and are retried by the driver.
    revs = await asyncio.gather(*(store.commit([msg("g", f"c{i}")]) for i in range(8)))
    assert sorted(revs) == list(range(r1 + 1, r1 + 9))
    assert await store.count(Query(MESSAGES)) == 9


async def test_a_backward_page_ordered_in_python_keeps_every_row_before_the_cursor(store):
    # sorting on an attribute that holds objects makes the store order the page in Python;
    # a limit larger than the rows before the cursor must return all of them (not a few)
    await store.commit([msg("g", f"m{i}", {"shape": {"n": i}}) for i in range(5)])
    query = Query(MESSAGES, sort=Sort(("shape",)), limit=4)
    whole = await store.list(replace(query, limit=10))
    assert [r.id for r in whole.items] == [f"m{i}" for i in range(5)]
    before = cursor_for(whole.items[3], query.sort)
    page = await store.list(replace(query, before=before))
    assert [r.id for r in page.items] == ["m0", "m1", "m2"] and page.has_next and not page.has_prev


async def test_a_commit_records_its_work_items_in_a_few_round_trips_whatever_their_number(store):
    """The work items of a commit cost a bounded number of operations on ``rematerialise`` (a
    read of those there are, one insert of the new ones, one update of the others), not one or
    two per key; a replaced item keeps when it went stale."""
    store.rework = Recorded(store.rework)
    keys = [f"/messagegroups/g/messages/b{i:03d}" for i in range(300)]
    first = await store.commit([msg("g", "b000")], rematerialise=keys[:200])
    assert store.rework.calls == {"find": 1, "insert_many": 1}  # nothing there yet: a read, an insert
    before = {i.key: i for i in await store.rematerialisations()}
    store.rework.calls.clear()
    second = await store.commit([msg("g", "b001")], rematerialise=[k.upper() for k in keys[100:]])
    assert store.rework.calls == {"find": 1, "update_many": 1, "insert_many": 1}
    items = {i.key: i for i in await store.rematerialisations()}
    assert sorted(items) == keys
    assert all(items[k].revision == (first if k < keys[100] else second) and items[k].after is None for k in keys)
    assert all(items[k].at == before[k].at for k in keys[:200])  # replaced: stale since the first write
    assert all(items[k].at >= before[keys[0]].at for k in keys[200:])


class Racing(Recorded):
    """A collection on which, once a commit has read which work items there are, the worker
    finishes ``finished`` (deletes them) and another process records ``recorded`` (inserts
    them) — what a standalone server, without transactions, lets happen in between."""

    def __init__(self, inner, finished: list[str], recorded: list[str]) -> None:
        super().__init__(inner)
        self.finished, self.recorded = finished, recorded

    def find(self, *args, **kwargs):
        cursor = self.inner.find(*args, **kwargs)
        inner, finished, recorded = self.inner, self.finished, self.recorded

        class Then:
            async def to_list(self, length=None):
                docs = await cursor.to_list(length=length)
                if finished:
                    await inner.delete_many({"_id": {"$in": finished}})
                if recorded:
                    await inner.insert_many([{"_id": k, "rev": 0, "at": 0.0, "after": "x"} for k in recorded])
                return docs
        return Then()


async def test_no_work_item_is_lost_when_the_worker_or_another_process_races_a_commit(store):
    keys = [f"/messagegroups/g/messages/b{i:03d}" for i in range(6)]
    await store.commit([msg("g", "b000")], rematerialise=keys[:3])
    inner = store.rework
    # the worker finishes b001 between the commit's read and its update; another process records b004
    store.rework = Racing(inner, finished=[keys[1]], recorded=[keys[4]])
    rev = await store.commit([msg("g", "b001")], rematerialise=keys)
    store.rework = inner
    items = {i.key: i for i in await store.rematerialisations()}
    assert sorted(items) == keys
    assert all(items[k].revision == rev and items[k].after is None for k in keys)
