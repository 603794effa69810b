"""The scores of broad SQLite searches (``xreg.storage.sqlite_rank``): FTS5's ``bm25`` formula
computed from the candidates' own text, with each word weighed from a bounded count of its rows;
narrow searches keep FTS5's ``bm25`` itself."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
from dataclasses import replace

import pytest

from xreg.storage import sqlite, sqlite_rank
from xreg.storage.records import Query, Write
from xreg.storage.semantics import RANK, Sort, cursor_for
from xreg.storage.sqlite import SQLiteStore

MESSAGES = "messagegroups/messages"

#: Titles and bodies with stems, case, accents, phrases, repeats and lengths that differ.
CORPUS = [
    ("Sensor", "records of the sensor reading"),
    ("thermometer", "Recording sensors: record, recorded, records"),
    ("Récord", "naïve sensor_value sensor's record-keeping"),
    ("pump", "a pump that runs, with no word of interest at all in a much longer body of text here"),
    ("sensor array", "record foo-bar foo bar bar-foo"),
    ("gauge", "sensor sensor sensor sensor record"),
    ("alarm", "sensor record alarm"),
    ("alarm alarm", "sensor record"),
    ("Foo-Bar", "record sensor"),
    ("misc", "RECORDS 42 sensor 7 Sensored"),
]


@pytest.fixture
def terms():
    t = sqlite_rank.Terms(sqlite_rank.TOKENIZE)
    yield t
    t.close()


def fts5(rows: list[tuple[str, str]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize = {sqlite_rank.TOKENIZE})")
    db.executemany("INSERT INTO t(rowid, title, body) VALUES (?, ?, ?)",
                   [(i + 1, a, b) for i, (a, b) in enumerate(rows)])
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    return db


def match(words: list[str]) -> str:
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


@pytest.mark.parametrize("words", [["record"], ["sensor", "record"], ["Records", "SENSOR"], ["foo-bar"],
                                   ["alarm", "sensor"], ["record", "foo-bar"], ["recorded"]])
def test_scores_are_fts5_bm25_given_its_statistics(terms, words):
    db = fts5(CORPUS)
    want = dict(db.execute("SELECT rowid, bm25(t, 4.0, 1.0) FROM t WHERE t MATCH ?", (match(words),)).fetchall())
    assert want
    rows = len(CORPUS)
    held = [db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match([w]),)).fetchone()[0] for w in words]
    mean = db.execute("SELECT count(*) FROM v").fetchone()[0] / rows
    candidates = db.execute("SELECT rowid, title, body FROM t WHERE t MATCH ?", (match(words),)).fetchall()
    got = dict(sqlite_rank.scores(terms, words, candidates, rows, held, mean))
    assert got.keys() == want.keys()
    for seq, score in want.items():
        assert math.isclose(got[seq], score, rel_tol=1e-9), (seq, got[seq], score)


def test_terms_are_fts5s_own(terms):
    assert terms.split(["Recording", "naïve", "foo-bar", "--"]) == [["record"], ["naiv"], ["foo", "bar"], []]
    assert terms.terms({"Records", "reading"}) == {"Records": "record", "reading": "read"}
    assert terms.terms({"Records"}) == {"Records": "record"}  # remembered


def test_a_word_in_more_rows_than_the_sample_is_weighed_by_its_share_of_the_newest():
    n = sqlite_rank.DF_SAMPLE
    assert sqlite_rank.holding(n - 1, 10, 10_000, 10_000) == n - 1  # all of them were counted
    # The newest `n` holding it span the newest 2n rows: half of the table holds it.
    assert sqlite_rank.holding(n, 10_000 - 2 * n + 1, 10_000, 10_000) == 5000
    assert sqlite_rank.holding(n, 10_000 - n + 1, 10_000, 10_000) == 10_000
    assert sqlite_rank.idf(100, 100) == 1e-6 and sqlite_rank.idf(100, 1) > sqlite_rank.idf(100, 10) > 0


def message(mid: str, title: str, body: str) -> Write:
    return Write(f"/messagegroups/g/messages/{mid}", "resource", MESSAGES, {"name": title}, text=(title, body))


def keys(page) -> list[str]:
    return [r.key.rsplit("/", 1)[-1] for r in page.items]


@pytest.fixture
async def store(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite, "RANKED_HITS", 5)
    monkeypatch.setattr(sqlite_rank, "DF_SAMPLE", 8)
    monkeypatch.setattr(sqlite_rank, "BM25_ROWS", 10)  # "sensor" is in more: scored here
    async with SQLiteStore(tmp_path / "s.db") as s:
        # "sensor" in every message, "alarm" in few: the older ones unranked, the 5 newest ranked.
        for i in range(24):
            await s.commit([message(f"m{i:02d}", "probe", "sensor reading")])
        await s.commit([message("a", "probe", "sensor alarm alarm"),  # the rare word twice
                        message("b", "probe", "sensor sensor sensor alarm"),  # the common word thrice
                        message("c", "sensor", "alarm"),  # the common word in the title
                        message("d", "probe", "alarm sensor, and a long body of other words"),
                        message("e", "probe", "sensor alarm")])
        yield s


def statements(store: SQLiteStore) -> list[str]:
    """The statements the store's connections run from now on."""
    seen: list[str] = []
    for _, raw in [*store._all_readers, (None, store._raw)]:
        assert raw is not None
        raw.set_trace_callback(seen.append)
    return seen


async def test_a_broad_search_weighs_its_words_by_their_rows(store):
    query = Query(MESSAGES, search=("alarm", "sensor"), sort=Sort(RANK), limit=10)
    seen = statements(store)
    page = await store.list(query)
    # 5 messages hold both words (all ranked: as many as RANKED_HITS); "sensor", in every row,
    # weighs next to nothing, so the rare word decides: twice, then once in a short text.
    assert keys(page) == ["a", "c", "e", "b", "d"]
    assert all(r.rank is not None and r.rank < 0 for r in page.items)
    # No bm25 over the table (it would read every row holding "sensor"); each statement reading
    # the full-text index is bounded: a LIMIT, or the ranked rows' range.
    assert not any("bm25" in s for s in seen), seen
    for s in seen:
        if "MATCH" in s:
            assert "LIMIT" in s or "rowid >=" in s, s
    again = await store.list(query)
    assert [(r.key, r.rank) for r in again.items] == [(r.key, r.rank) for r in page.items]


async def test_a_broad_search_lists_its_ranked_hits_then_the_older_ones(store):
    query = Query(MESSAGES, search=("sensor",), sort=Sort(RANK))
    seen = statements(store)
    full = await store.list(query)
    ranked = [r for r in full.items if r.rank is not None and r.rank <= 0]
    # The 5 newest are ranked — "c" first, the word in its title —, the 24 others newest first.
    assert len(ranked) == 5 and keys(full)[0] == "c"
    assert keys(full)[5:] == [f"m{i:02d}" for i in range(23, -1, -1)]
    assert not any("bm25" in s for s in seen)
    # Pages of 3 forwards and backwards: the same order, no gaps, no repeats.
    forward, after = [], None
    while True:
        page = await store.list(replace(query, limit=3, after=after))
        forward += keys(page)
        if not page.has_next:
            break
        after = cursor_for(page.items[-1], Sort(RANK))
    backward, before = [keys(full)[-1]], cursor_for(full.items[-1], Sort(RANK))
    while True:
        page = await store.list(replace(query, limit=3, before=before))
        backward = keys(page) + backward
        if not page.has_prev:
            break
        before = cursor_for(page.items[0], Sort(RANK))
    assert forward == backward == keys(full)
    # A page among the older matches needs no scores: the ranked hits are not read.
    seen.clear()
    page = await store.list(replace(query, limit=3, after=cursor_for(full.items[10], Sort(RANK))))
    assert keys(page) == keys(full)[11:14] and page.has_prev
    assert not any("title, body" in s or "json_each" in s for s in seen), seen


async def test_a_narrow_search_keeps_fts5s_bm25(store, tmp_path):
    # Two messages hold both words, 8 rows hold either (not more than BM25_ROWS).
    query = Query(MESSAGES, search=("alarm", "long"), sort=Sort(RANK))
    await store.commit([message("f", "long alarm", "long")])
    seen = statements(store)
    page = await store.list(query)
    assert keys(page) == ["f", "d"] and any("bm25(search, 4.0, 1.0)" in s for s in seen)
    with sqlite3.connect(tmp_path / "s.db") as db:
        want = db.execute("SELECT bm25(search, 4.0, 1.0) FROM search WHERE search MATCH '\"alarm\" \"long\"' "
                          "ORDER BY 1").fetchall()
    assert [r.rank for r in page.items] == [w[0] for w in want]


async def test_a_narrow_search_with_a_word_in_many_rows_is_scored_without_bm25(store):
    # 3 hits (fewer than RANKED_HITS), but the rows holding the words (each word's counted up to
    # DF_SAMPLE, else estimated) total more than BM25_ROWS ("sensor" alone is in more): bm25 would
    # read every one of them; the hits are scored here instead, all of them ranked.
    await store.commit([message("f", "probe", "sensor other"), message("g", "probe", "sensor other other")])
    seen = statements(store)
    query = Query(MESSAGES, search=("sensor", "other"), sort=Sort(RANK), limit=10)
    page = await store.list(query)
    assert keys(page) == ["g", "f", "d"] and not page.has_next
    assert all(r.rank is not None and r.rank < 0 for r in page.items)
    assert not any("bm25" in s for s in seen), seen
    two = await store.list(replace(query, limit=2))
    rest = await store.list(replace(query, limit=2, after=cursor_for(two.items[-1], Sort(RANK))))
    assert keys(two) + keys(rest) == ["g", "f", "d"] and two.has_next and rest.has_prev and not rest.has_next


async def test_a_search_cancelled_while_scoring_hands_its_connection_back_once_scored(store, monkeypatch):
    started, release = threading.Event(), threading.Event()
    real = sqlite_rank.scores

    def slow(*args):
        started.set()
        release.wait()
        return real(*args)

    monkeypatch.setattr(sqlite_rank, "scores", slow)
    idle = store._idle.qsize()
    task = asyncio.create_task(store.list(Query(MESSAGES, search=("sensor",), sort=Sort(RANK), limit=3)))
    await asyncio.to_thread(started.wait)
    task.cancel()
    try:
        for _ in range(20):  # loop turns: the cancelled read still waits for the scoring thread
            await asyncio.sleep(0)
        assert not task.done() and store._idle.qsize() == idle - 1
    finally:
        release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store._idle.qsize() == idle
    monkeypatch.setattr(sqlite_rank, "scores", real)
    assert keys(await store.list(Query(MESSAGES, search=("sensor",), sort=Sort(RANK), limit=1))) == ["c"]


async def test_a_search_whose_words_are_in_few_rows_is_ranked_by_bm25(store, tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_rank, "BM25_ROWS", 100)  # reading every row of "sensor" is cheap
    seen = statements(store)
    page = await store.list(Query(MESSAGES, search=("sensor",), sort=Sort(RANK), limit=5))
    assert any("bm25(search, 4.0, 1.0)" in s and "rowid >=" in s for s in seen), seen
    assert not any("title, body" in s for s in seen)
    with sqlite3.connect(tmp_path / "s.db") as db:
        want = db.execute("SELECT bm25(search, 4.0, 1.0) FROM search WHERE search MATCH 'sensor' "
                          "AND rowid >= (SELECT rowid FROM search WHERE search MATCH 'sensor' "
                          "ORDER BY rowid DESC LIMIT 1 OFFSET 4) ORDER BY 1").fetchall()
    assert [r.rank for r in page.items] == [w[0] for w in want] and keys(page)[0] == "c"
