"""SQLite-specific checks: query plans on a large collection, and JSON keys a path cannot name."""

from __future__ import annotations

import time

from xreg.storage.records import Query, Write
from xreg.storage.semantics import Condition, Cursor, Sort, matches
from xreg.storage.sqlite import SQLiteStore

MESSAGES = "messagegroups/messages"
GROUPS, PER_GROUP, BATCH = 1000, 100, 10_000


def uses_live_index(plan: str) -> bool:
    return ("USING INDEX states_live" in plan or "USING COVERING INDEX states_live" in plan) and "SCAN states" not in plan


async def test_pages_of_100k_messages_use_the_live_index(tmp_path):
    async with SQLiteStore(tmp_path / "big.db") as store:
        started = time.perf_counter()
        batch: list[Write] = []
        for g in range(GROUPS):
            for m in range(PER_GROUP):
                batch.append(Write(f"/messagegroups/g{g:04d}/messages/m{m:03d}", "resource", MESSAGES,
                                   {"messageid": f"m{m:03d}", "meta": {"epoch": 1}, "n": m}))
                if len(batch) == BATCH:
                    await store.commit(batch)
                    batch = []
        inserted = time.perf_counter() - started
        assert await store.count(Query(MESSAGES)) == GROUPS * PER_GROUP

        cursor = Cursor("/messagegroups/g0500/messages/m042")
        for parent, first in ((None, "/messagegroups/g0500/messages/m043"),
                              ("/messagegroups/g0500", "/messagegroups/g0500/messages/m043")):
            query = Query(MESSAGES, parent=parent, limit=50, after=cursor)
            plan = await store.explain(query)
            assert uses_live_index(plan), plan
            page = await store.list(query)
            assert len(page.items) == 50 and page.items[0].key == first
            assert page.has_next and page.has_prev
            assert uses_live_index(await store.explain(Query(MESSAGES, parent=parent, limit=50, before=cursor)))

        # A parent range bounds the index search, with or without a cursor.
        plan = await store.explain(Query(MESSAGES, parent="/messagegroups/g0007", limit=50))
        assert uses_live_index(plan) and "xkey>? AND xkey<?" in plan, plan
        # A sort or conditions still narrow by the index (the sort itself needs a temp b-tree).
        plan = await store.explain(Query(MESSAGES, parent="/messagegroups/g0007", limit=50, sort=Sort(("n",)),
                                         any_of=((Condition(("n",), "gt", "5"),),)))
        assert uses_live_index(plan), plan
        page = await store.list(Query(MESSAGES, parent="/messagegroups/g0007", limit=3, sort=Sort(("n",), True),
                                      any_of=((Condition(("n",), "gt", "5"),),)))
        assert [r.doc["n"] for r in page.items] == [99, 98, 97]
        # Key lookups and as-of pages use their own indexes.
        plan = await store.explain(Query(MESSAGES, keys=("/messagegroups/g0001/messages/m001",)))
        assert "SCAN states" not in plan, plan
        plan = await store.explain(Query(MESSAGES, parent="/messagegroups/g0500", limit=50, after=cursor, as_of=3))
        assert "states_asof" in plan and "SCAN states" not in plan, plan
        print(f"\n100k messages inserted in {inserted:.1f}s")


async def test_keys_json_paths_cannot_name(tmp_path):
    """Keys holding ``"`` or ``\\`` are reached through ``xreg_member`` instead of a JSON path."""
    docs = {"a": {"l": {'q"k': "Yes", "b\\s": 2}}, "b": {"l": {'q"k': "no"}}, "c": {"l": ["x"]}}
    async with SQLiteStore(tmp_path / "keys.db") as store:
        await store.commit([Write(f"/g/{k}", "group", "g", d) for k, d in docs.items()])
        for cond in (Condition(("l", 'q"k'), "eq", "yes"), Condition(("l", "b\\s"), "ge", "2"),
                     Condition(("l", 'q"k'), "ne", "yes"), Condition(("l", 'q"k'), "exists")):
            want = sorted(f"/g/{k}" for k, d in docs.items() if matches(d, ((cond,),)))
            got = [r.key for r in (await store.list(Query("g", any_of=((cond,),)))).items]
            assert got == want, cond
        page = await store.list(Query("g", sort=Sort(("l", 'q"k'))))
        assert [r.key for r in page.items] == ["/g/c", "/g/b", "/g/a"]
