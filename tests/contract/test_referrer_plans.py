"""How the stores read a page of referrers (the reverse index of links a re-materialising worker
drains): SQLite's query plan and the work a page takes whatever the number of referrers, a
database of the earlier links layout upgraded in place; the find() and index MongoDB receives
(no live server: asserted as generated, and run on mongomock)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from mongomock_motor import AsyncMongoMockClient

from tests.contract.test_store_contract import message
from xreg.storage import mongo, sqlite_links
from xreg.storage.records import Write
from xreg.storage.sqlite import SQLiteStore

BASE = "/messagegroups/bases/messages/base"
OTHER = "/messagegroups/bases/messages/other"
OLD_DB = Path(__file__).resolve().parents[1] / "data" / "stores" / "sqlite-7dfa1bc.db"


def dependents(n: int, base: str = BASE, group: str = "deps") -> list[Write]:
    return [message(group, f"d{i:05d}", {"basemessageuri": base}, links=(base,)) for i in range(n)]


def _plan(path: Path, targets: int) -> list[str]:
    with sqlite3.connect(path) as raw:
        rows = raw.execute("EXPLAIN QUERY PLAN " + sqlite_links.ordered_page(targets, True, 16),
                           [BASE, OTHER, "/x"][:targets] + ["/messagegroups/deps/messages/d00100"]).fetchall()
    return [r[3] for r in rows]


def _steps(path: Path, after: str, targets: list[str]) -> tuple[list[str], int]:
    """A page of 16 after ``after`` as the store reads it, and the virtual machine steps it took
    (counted by SQLite's progress handler: a measure of the rows visited, not of time)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    with sqlite3.connect(path) as raw:
        raw.set_progress_handler(count, 10)
        rows = raw.execute(sqlite_links.ordered_page(len(targets), True, 16), [*targets, after]).fetchall()
    return sorted(r[0].lower() for r in rows), steps[0]


async def test_sqlite_reads_a_page_of_referrers_from_the_index_in_key_order(tmp_path):
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.commit([message("bases", "base"), message("bases", "other"), *dependents(300),
                            *dependents(50, OTHER, "more")])
    for targets in (1, 2, 3):
        plan = _plan(tmp_path / "s.db", targets)
        assert plan.count("SEARCH links USING PRIMARY KEY (target=? AND xkey>?)") == targets, plan
        assert "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)" in plan, plan
        assert not any("TEMP B-TREE" in line or line.startswith("SCAN links") for line in plan), plan
        assert (targets > 1) == ("MERGE (UNION)" in plan), plan


async def test_sqlite_a_page_of_referrers_costs_the_page_not_the_referrers(tmp_path):
    """The same page after the same key, with 200 and with 4,000 referrers (and as many more of
    another target read with it): about the same work (the old plan read them all, and sorted)."""
    work = {}
    for n in (200, 4000):
        path = tmp_path / f"s{n}.db"
        async with SQLiteStore(path) as store:
            await store.commit([message("bases", "base"), *dependents(n), *dependents(n, OTHER, "more")])
        after = "/messagegroups/deps/messages/d00100"
        keys, work[n] = _steps(path, after, [BASE, OTHER])
        assert keys == [f"/messagegroups/deps/messages/d{i:05d}" for i in range(101, 117)]
    assert work[4000] < 1.5 * work[200], work


#: The links table as layout 1 kept it (no referring key).
_LINKS_1 = ("CREATE TABLE links (seq INTEGER NOT NULL, target TEXT NOT NULL, PRIMARY KEY (target, seq)) WITHOUT ROWID",
            "CREATE INDEX links_seq ON links(seq)")


async def test_a_database_of_links_layout_1_is_upgraded_once(tmp_path):
    path = tmp_path / "s.db"
    async with SQLiteStore(path) as store:
        await store.commit([message("bases", "base"), *dependents(40), *dependents(5, OTHER, "more")])
        await store.commit([message("deps", "d00003", {"name": "unlinked"}),
                            Write("/messagegroups/deps/messages/d00004", "resource", "messagegroups/messages", None),
                            message("deps", "d00005", {"name": "again"}, links=(BASE, OTHER))])
    raw = sqlite3.connect(path)
    with raw:  # as a store of layout 1 left it: the rows of the current states, no key
        rows = raw.execute("SELECT seq, target FROM links").fetchall()
        raw.execute("DROP TABLE links")
        for create in _LINKS_1:
            raw.execute(create)
        raw.executemany("INSERT INTO links(seq, target) VALUES (?, ?)", rows)
    raw.close()
    want = [f"/messagegroups/deps/messages/d{i:05d}" for i in range(40) if i not in (3, 4)]
    async with SQLiteStore(path) as store:
        columns = [r[1] for r in await store.db.execute_fetchall("PRAGMA table_info(links)")]
        assert columns == ["target", "xkey", "seq"]
        assert [r.key for r in await store.referrers([BASE], after=want[9], limit=5)] == want[10:15]
        assert [r.key for r in await store.referrers([BASE, OTHER])] == [*want, *(
            f"/messagegroups/more/messages/d{i:05d}" for i in range(5))]
        assert [r.key for r in await store.referrers([OTHER], limit=2)] == [
            "/messagegroups/deps/messages/d00005", "/messagegroups/more/messages/d00000"]
        # writes after the upgrade keep the new rows
        await store.commit([message("deps", "d00006", {"name": "unlinked"})])
        assert "/messagegroups/deps/messages/d00006" not in [r.key for r in await store.referrers([BASE])]
        await store.db.execute("DELETE FROM links WHERE xkey = '/messagegroups/deps/messages/d00007'")
    assert _plan(path, 2).count("SEARCH links USING PRIMARY KEY (target=? AND xkey>?)") == 2
    async with SQLiteStore(path) as store:  # opened again: not rebuilt (the row deleted above stays gone)
        assert len(await store.referrers([BASE])) == len(want) - 2


async def test_the_database_of_an_old_version_gets_the_new_links_layout(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(OLD_DB, path)
    async with SQLiteStore(path) as store:
        columns = [r[1] for r in await store.db.execute_fetchall("PRAGMA table_info(links)")]
        assert columns == ["target", "xkey", "seq"]
        assert await store.current_revision() == 3


# -- MongoDB ------------------------------------------------------------------------------------


async def test_mongo_reads_a_page_of_referrers_by_its_index_in_key_order():
    store = mongo.MongoStore(client=AsyncMongoMockClient(), database="xreg_referrers")
    await store.open()
    index = (await store.states.index_information())[mongo.REFERRERS_INDEX]
    assert index["key"] == [("links", 1), ("xkey", 1)] == mongo.REFERRERS_KEYS
    plan = store.referrers_plan([BASE, OTHER], after="/messagegroups/deps/messages/D00100", limit=16, ordered=True)
    # each target one point of the index's first field, the key a range of its second, sorted by
    # it: the server merges the ranges in key order and stops at the limit
    assert plan == {"filter": {"links": {"$in": [BASE, OTHER]}, "live": True,
                               "xkey": {"$gt": "/messagegroups/deps/messages/d00100"}},
                    "sort": [("xkey", 1)], "limit": 16, "hint": mongo.REFERRERS_INDEX}
    assert plan["filter"]["live"] == mongo.ATTRS_PARTIAL["live"]  # the partial index serves it
    assert [k for k, _ in mongo.REFERRERS_KEYS] == ["links", plan["sort"][0][0]]
    loose = store.referrers_plan([BASE], after=None, limit=5, ordered=False)
    assert loose["sort"] is None and loose["limit"] == 5 and "xkey" not in loose["filter"]
    # what referrers() sends: that plan, a find() per 64 targets at most
    sent: list[tuple] = []
    find = store._find

    def spy(flt, sort=None, limit=None, hint=None):
        sent.append((flt, sort, limit, hint))
        return find(flt, sort, limit, hint)

    store._find = spy  # type: ignore[method-assign]
    await store.commit([message("bases", "base"), *dependents(30)])
    targets = [BASE, *(f"/messagegroups/bases/messages/b{i:03d}" for i in range(99))]
    page = await store.referrers(targets, after="/messagegroups/deps/messages/d00010", limit=3)
    assert [r.key for r in page] == [f"/messagegroups/deps/messages/d{i:05d}" for i in (11, 12, 13)]
    assert [len(flt["links"]["$in"]) for flt, *_ in sent] == [mongo.REFERRERS_CHUNK, 100 - mongo.REFERRERS_CHUNK]
    assert all((sort, limit, hint) == ([("xkey", 1)], 3, mongo.REFERRERS_INDEX) for _, sort, limit, hint in sent)


async def test_a_mongo_database_with_the_old_links_index_gets_the_new_one():
    client = AsyncMongoMockClient()
    store = mongo.MongoStore(client=client, database="xreg_old_links")
    await store.open()
    await store.commit([message("bases", "base"), *dependents(12)])
    await store.states.drop_index(mongo.REFERRERS_INDEX)
    await store.states.create_index([("links", 1)], name="states_links")  # as an earlier version left it
    again = mongo.MongoStore(client=client, database="xreg_old_links")
    await again.open()
    indexes = await again.states.index_information()
    assert "states_links" not in indexes and indexes[mongo.REFERRERS_INDEX]["key"] == mongo.REFERRERS_KEYS
    assert [r.id for r in await again.referrers([BASE], after="/messagegroups/deps/messages/d00009")] == [
        "d00010", "d00011"]
