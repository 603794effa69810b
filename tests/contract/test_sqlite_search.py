"""SQLite searches with more hits than it ranks (``sqlite.RANKED_HITS``): the newest hits ranked,
the older ones after them newest first, read from FTS5's rowid order, and every way of paging
through them agreeing with the full listing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from xreg.storage import sqlite
from xreg.storage.records import Query, Write
from xreg.storage.semantics import RANK, Condition, Sort, cursor_for
from xreg.storage.sqlite import SQLiteStore

MESSAGES = "messagegroups/messages"
RANKED = 6


def titled(mid: str, title: str, body: str, group: str = "g") -> Write:
    return Write(f"/messagegroups/{group}/messages/{mid}", "resource", MESSAGES, {"name": title, "n": int(mid[1:])},
                 text=(title, body))


@pytest.fixture
async def store(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite, "RANKED_HITS", RANKED)
    async with SQLiteStore(tmp_path / "s.db") as s:
        # One commit each, in this order: m00 the oldest. Relevance is unrelated to age: every
        # third holds the word in its title too.
        for i in range(20):
            await s.commit([titled(f"m{i:02d}", "sensor" if i % 3 == 0 else "reading", "sensor " * (1 + i % 4))])
        await s.commit([Write("/messagegroups/g", "group", "messagegroups", {"name": "sensor group"},
                              text=("sensor", "sensor"))])  # another collection: a hit, not a match
        yield s


def keys(page) -> list[str]:
    return [r.key.rsplit("/", 1)[-1] for r in page.items]


async def full(store: SQLiteStore, query: Query) -> list[str]:
    return keys(await store.list(replace(query, limit=None)))


async def test_the_newest_hits_are_ranked_and_the_older_follow_newest_first(store):
    query = Query(MESSAGES, search=("sensor",), sort=Sort(RANK))
    order = await full(store, query)
    # The hits are the 20 messages and the group (the newest stored state): the 6 newest are the
    # group and m15..m19, so m15..m19 are ranked (titles first), the others follow newest first.
    ranked = [f"m{i}" for i in range(15, 20)]
    assert sorted(order[:5]) == ranked
    assert order[5:] == [f"m{i:02d}" for i in range(14, -1, -1)]
    assert order[0] in ("m15", "m18")  # "sensor" in the title
    page = await store.list(replace(query, limit=None))
    assert all(r.rank is not None and r.rank < 0 for r in page.items[:5])
    assert all(r.rank is not None and r.rank > 0 for r in page.items[5:])
    assert await store.count(query) == 20


@pytest.mark.parametrize("size", [1, 2, 4, 5, 7, 20])
async def test_forward_and_backward_pages_agree_with_the_full_listing(store, size):
    for query in (Query(MESSAGES, search=("sensor",), sort=Sort(RANK)),
                  Query(MESSAGES, search=("sensor",), sort=Sort(RANK), parent="/messagegroups/g",
                        any_of=((Condition(("n",), "ge", "3"),),))):
        want = await full(store, query)
        seen, after, first = [], None, True
        while True:
            page = await store.list(replace(query, limit=size, after=after))
            assert page.has_prev == (not first)
            seen += keys(page)
            if not page.has_next:
                break
            after, first = cursor_for(page.items[-1], Sort(RANK)), False
        assert seen == want, size
        # Backwards from the end, by ``before`` cursors (the full listing's path).
        last = await store.list(replace(query, limit=None))
        before, back = cursor_for(last.items[-1], Sort(RANK)), [want[-1]]
        while True:
            page = await store.list(replace(query, limit=size, before=before))
            back = keys(page) + back
            if not page.has_prev:
                break
            before = cursor_for(page.items[0], Sort(RANK))
        assert back == want, size


async def test_a_search_with_fewer_hits_ranks_them_all(store):
    await store.commit([titled("x1", "gauge", "gauge gauge"), titled("x2", "other", "gauge")])
    order = await full(store, Query(MESSAGES, search=("gauge",), sort=Sort(RANK)))
    assert order == ["x1", "x2"]


async def test_older_hits_are_read_in_rowid_order_without_a_sort(store):
    plans = []
    real = store._all

    async def spy(sql, params=()):
        if sql.startswith("SELECT") and "search.rowid" in sql:
            plans.append(await real("EXPLAIN QUERY PLAN " + sql, params))
        return await real(sql, params)

    store._all = spy  # type: ignore[method-assign]
    page = await store.list(Query(MESSAGES, search=("sensor",), sort=Sort(RANK), limit=8))
    assert len(page.items) == 8 and plans
    for plan in plans:
        text = "\n".join(r[3] for r in plan)
        assert "TEMP B-TREE" not in text and "SCAN states" not in text, text
