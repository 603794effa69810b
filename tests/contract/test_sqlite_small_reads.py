"""SQLite: pages and counts over a parent with fewer than ``QUICK_KEYS`` live children run on
the event loop (no hop to the connection's thread), and answer as the same reads through the
thread do (a parent with ``QUICK_KEYS`` children)."""

from __future__ import annotations

from xreg.storage.records import Query, Write
from xreg.storage.semantics import Condition, Cursor, Sort
from xreg.storage.sqlite import QUICK_KEYS, SQLiteStore

MESSAGES = "messagegroups/messages"
SIZES = {"/messagegroups/small": QUICK_KEYS - 1, "/messagegroups/large": QUICK_KEYS}


async def _reads(store: SQLiteStore, parent: str) -> tuple[list, int]:
    """Pages (key order, sorted, after a cursor, filtered by an indexed and a plain condition)
    and counts of ``parent``'s messages, as keys and numbers, and the thread hops they took."""
    hops = store.stats.thread_hops
    indexed = ((Condition(("messageid",), "eq", "m003"),), (Condition(("messageid",), "eq", "m007"),))
    plain = ((Condition(("n",), "ge", "10"), Condition(("n",), "lt", "20")),)
    answers: list = []
    for query in (Query(MESSAGES, parent=parent, limit=5),
                  Query(MESSAGES, parent=parent, limit=5, sort=Sort(("n",), True)),
                  Query(MESSAGES, parent=parent, limit=5, after=Cursor(f"{parent}/messages/m030")),
                  Query(MESSAGES, parent=parent, limit=5, any_of=indexed),
                  Query(MESSAGES, parent=parent, any_of=((Condition(("messageid",), "eq", "m003"),),)),
                  Query(MESSAGES, parent=parent, limit=5, any_of=plain)):
        page = await store.list(query)
        answers.append(([r.doc["n"] for r in page.items], page.has_next, page.has_prev, await store.count(query)))
    return answers, store.stats.thread_hops - hops


async def test_reads_of_a_few_children_stay_on_the_event_loop(tmp_path):
    async with SQLiteStore(tmp_path / "small.db") as store:
        await store.commit([Write(f"{parent}/messages/m{n:03d}", "resource", MESSAGES,
                                  {"messageid": f"m{n:03d}", "meta": {"epoch": 1}, "n": n})
                            for parent, size in SIZES.items() for n in range(size)])
        small, small_hops = await _reads(store, "/messagegroups/small")
        large, large_hops = await _reads(store, "/messagegroups/large")
        assert small_hops == 0
        assert large_hops >= 12  # each page and count through the thread
        expected = [([0, 1, 2, 3, 4], True, False), ([62, 61, 60, 59, 58], True, False),
                    ([31, 32, 33, 34, 35], True, True), ([3, 7], False, False), ([3], False, False),
                    ([10, 11, 12, 13, 14], True, False)]
        assert [a[:3] for a in small] == expected
        assert [a[3] for a in small] == [63, 63, 63, 2, 1, 10]
        assert [a[:3] for a in large] == [([63, 62, 61, 60, 59], True, False) if i == 1 else e
                                          for i, e in enumerate(expected)]
        assert [a[3] for a in large] == [64, 64, 64, 2, 1, 10]
        # across every group (no one parent): through the thread
        hops = store.stats.thread_hops
        assert await store.count(Query(MESSAGES, any_of=((Condition(("n",), "lt", "2"),),))) == 4
        assert store.stats.thread_hops > hops


async def test_a_wildcard_or_presence_filter_of_a_few_children_reads_through_the_thread(tmp_path):
    """Such a condition seeks no value of ``attrs``: driven by it, a read walks the attribute's
    entries of every group, however few children the parent has — never on the event loop."""
    async with SQLiteStore(tmp_path / "wild.db") as store:
        await store.commit([Write(f"{parent}/messages/m{n:03d}", "resource", MESSAGES,
                                  {"messageid": f"m{n:03d}", "meta": {"epoch": 1}, "n": n})
                            for parent, size in (("/messagegroups/big", 200), ("/messagegroups/tiny", 3))
                            for n in range(size)])
        parent = "/messagegroups/tiny"
        for cond in (Condition(("messageid",), "eq", "*0*", wildcard=True), Condition(("messageid",), "exists")):
            hops = store.stats.thread_hops
            query = Query(MESSAGES, parent=parent, limit=5, any_of=((cond,),))
            page = await store.list(query)
            assert [r.doc["n"] for r in page.items] == [0, 1, 2]
            assert await store.count(query) == 3
            assert store.stats.thread_hops - hops >= 2, cond
        # an exact value is a seek within the parent's range: on the loop
        hops = store.stats.thread_hops
        exact = Query(MESSAGES, parent=parent, any_of=((Condition(("messageid",), "eq", "m001"),),))
        assert [r.doc["n"] for r in (await store.list(exact)).items] == [1]
        assert store.stats.thread_hops == hops
