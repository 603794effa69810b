"""Scale benchmark: SQLite store reads at 1k / 10k / 100k (1M with --million) messages.

For each size, in one run (figures of a shared machine: compare the ratios, not the times):

- import: messages committed in batches of 10,000 (the store's commit with its read indexes),
  against ``executemany`` of the same documents into a plain sqlite3 table with one index;
- page: 50 messages of one group after a cursor; page with ``totalCount`` (the same page and its
  count); a registry-wide page filtered on the materialised ``protocol`` (broad: most messages
  match) and its count; a rare filter (5 messages match) and its count; a broad search
  (every message holds the word) by relevance, a page of it past the ranked hits, a search with
  one hit but that word too, and the broad search's count — each the median of ``--reps``;
- the baseline of each read: the same rows from a plain sqlite3 table ``plain(xkey PRIMARY KEY,
  grp, protocol, doc)`` with an index on ``(protocol, xkey)`` (the search: FTS5 on its own);
- health during a large write: ``Store.probe_revision`` (what ``/healthz`` answers with) and a
  page read, run again and again while a commit of 10,000 messages is under way: their median
  against the same with no write running, and how many completed during the commit — on the
  store's reader connections, and on a store that reads through its one writer connection (as
  before readers existed: the reads wait for the commit).

- base edit with N dependents: the same store opened as a registry (``LocalRegistry``, inline
  re-materialisation limit 100, the default), a base message and ``--dependents`` messages on it
  imported; the request time of a write of the base (its dependents left to the background
  worker, ``xreg.registry.rematerialise``), against a write of a message with no dependents; and,
  for the record, the same write with every dependent re-materialised in its commit (the path
  before the worker). Then ``/healthz during it``: the health probe (``Store.probe_revision``,
  what ``/healthz`` answers), every 5 ms while the worker re-materialises the dependents — each
  probe's latency counted from when it was due, so an event loop the worker holds counts — its
  median, 99th percentile and worst against the same with no worker running; and the longest the
  event loop was held meanwhile: the CPU time of its longest callback (a figure the machine's load
  does not stretch, unlike the probes' wall times), and the CPU time the whole process had
  during the worst probe (far below its wall time: the process was waiting for a core, not
  holding the loop). The dependents are checked current afterwards; for the record, the wall time
  the worker took to drain them (probes running), and the time to read them alone as it does
  (``Store.referrers`` in pages of its batch, each after the last key of the one before). The registry runs with the
  garbage collector as ``serve`` sets it after start-up (``gateway.gc_tuning``,
  ``XREG_GC_FREEZE`` / ``XREG_GC_GEN0_THRESHOLD``): without it, a full collection walks
  everything the bench loaded, which no served ``/healthz`` waits for.

``--smoke``: 1,000 messages, 3 repetitions, a write of 2,000 messages, 300 dependents. The last
line is the summary: each read's ratio to its baseline at the largest size.

Usage: python bench/bench_scale.py [--sizes 1000,10000,100000] [--million] [--reps 15] [--dependents 10000]
       [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gateway import gc_tuning  # noqa: E402
from xreg.config import Settings  # noqa: E402
from xreg.registry.rematerialise import BATCH as BATCH_OF_WORKER  # noqa: E402
from xreg.registry.rematerialise import Rematerialiser, stale_since  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.records import Query, Write  # noqa: E402
from xreg.storage.semantics import RANK, Condition, Cursor, Sort, cursor_for  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402

MESSAGES = "messagegroups/messages"
PER_GROUP = 100
BATCH = 10_000
RARE = 5
PROTOCOL = ("default", "@materialised", "attributes", "protocol")


def message(i: int) -> tuple[str, dict[str, Any], str]:
    """The key, document and protocol of message ``i`` (every 4th is AMQP, a few NATS)."""
    g, m = divmod(i, PER_GROUP)
    protocol = "NATS" if i % 20_011 == 7 and i // 20_011 < RARE else ("AMQP" if i % 4 == 0 else "KAFKA")
    attrs = {"messageid": f"m{m:03d}", "protocol": protocol, "envelope": "CloudEvents/1.0",
             "dataschemaformat": "Avro/1.11.0", "labels": {"team": f"t{i % 7}"},
             "description": f"record of reading {i}", "envelopemetadata": {"type": {"value": f"t.{i % 97}"}}}
    doc = {"meta": {"messageid": f"m{m:03d}", "epoch": 1},
           "default": {**attrs, "@materialised": {"attributes": attrs}}}
    return f"/messagegroups/g{g:05d}/messages/m{m:03d}", doc, protocol


def rare_count(n: int) -> int:
    return sum(1 for i in range(n) if i % 20_011 == 7 and i // 20_011 < RARE)


async def median(fn: Callable[[], Awaitable[Any]], reps: int) -> float:
    await fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def plain_median(fn: Callable[[], Any], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def build_plain(path: Path, n: int) -> tuple[sqlite3.Connection, float]:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE plain(xkey TEXT PRIMARY KEY, grp TEXT, protocol TEXT, doc TEXT)")
    db.execute("CREATE INDEX plain_protocol ON plain(protocol, xkey)")
    db.execute("CREATE INDEX plain_grp ON plain(grp)")
    db.execute("CREATE VIRTUAL TABLE plain_text USING fts5(body)")
    started = time.perf_counter()
    for lo in range(0, n, BATCH):
        rows = []
        for i in range(lo, min(n, lo + BATCH)):
            key, doc, protocol = message(i)
            rows.append((key, key.rsplit("/", 2)[0], protocol.lower(), json.dumps(doc)))
        db.execute("BEGIN")
        db.executemany("INSERT INTO plain VALUES (?, ?, ?, ?)", rows)
        db.executemany("INSERT INTO plain_text(rowid, body) VALUES (?, ?)",
                       [(lo + j + 1, json.loads(r[3])["default"]["description"]) for j, r in enumerate(rows)])
        db.execute("COMMIT")
    return db, time.perf_counter() - started


async def run_size(n: int, tmp: Path, reps: int, write: int = BATCH,
                   dependents: int = 10_000) -> dict[str, tuple[float, float]]:
    """``{figure: (ours ms, baseline ms)}`` at ``n`` messages."""
    out: dict[str, tuple[float, float]] = {}
    plain, plain_import = build_plain(tmp / f"plain{n}.db", n)
    async with SQLiteStore(tmp / f"store{n}.db") as store:
        started = time.perf_counter()
        for lo in range(0, n, BATCH):
            writes = []
            for i in range(lo, min(n, lo + BATCH)):
                key, doc, _ = message(i)
                writes.append(Write(key, "resource", MESSAGES, doc, text=(key.rsplit("/", 1)[-1],
                                                                          doc["default"]["description"])))
            await store.commit(writes)
        out["import"] = ((time.perf_counter() - started) * 1000, plain_import * 1000)

        groups = max(1, n // PER_GROUP)
        grp = f"/messagegroups/g{groups // 2:05d}"
        cursor = Cursor(f"{grp}/messages/m010")
        page_q = Query(MESSAGES, parent=grp, limit=51, after=cursor)
        out["page"] = (await median(lambda: store.list(page_q), reps),
                       plain_median(lambda: plain.execute(
                           "SELECT doc FROM plain WHERE xkey > ? AND xkey < ? ORDER BY xkey LIMIT 51",
                           (cursor.key, grp + "0")).fetchall(), reps))

        async def page_and_count(q: Query) -> None:
            await store.list(q)
            await store.count(q)

        out["page+totalCount"] = (await median(lambda: page_and_count(page_q), reps),
                                  plain_median(lambda: (plain.execute(
                                      "SELECT doc FROM plain WHERE xkey > ? AND xkey < ? ORDER BY xkey LIMIT 51",
                                      (cursor.key, grp + "0")).fetchall(), plain.execute(
                                      "SELECT count(*) FROM plain WHERE grp = ?", (grp,)).fetchall()), reps))

        def filtered(value: str) -> Query:
            return Query(MESSAGES, any_of=((Condition(PROTOCOL, "eq", value),),), limit=51)

        def plain_filtered(value: str) -> Callable[[], Any]:
            return lambda: plain.execute(
                "SELECT doc FROM plain WHERE protocol = ? ORDER BY xkey LIMIT 51", (value.lower(),)).fetchall()

        def plain_filtered_count(value: str) -> Callable[[], Any]:
            return lambda: plain.execute("SELECT count(*) FROM plain WHERE protocol = ?", (value.lower(),)).fetchall()

        out["broad filter page"] = (await median(lambda: store.list(filtered("kafka")), reps),
                                    plain_median(plain_filtered("kafka"), reps))
        out["broad filter count"] = (await median(lambda: store.count(filtered("kafka")), reps),
                                     plain_median(plain_filtered_count("kafka"), reps))
        rare = filtered("nats")
        assert len((await store.list(rare)).items) == rare_count(n) == await store.count(rare)
        out["rare filter page"] = (await median(lambda: store.list(rare), reps),
                                   plain_median(plain_filtered("nats"), reps))
        out["rare filter count"] = (await median(lambda: store.count(rare), reps),
                                    plain_median(plain_filtered_count("nats"), reps))
        search = Query(MESSAGES, search=("record",), sort=Sort(RANK), limit=51)
        out["broad search page"] = (await median(lambda: store.list(search), reps), plain_median(
            lambda: plain.execute("SELECT rowid FROM plain_text WHERE plain_text MATCH 'record' "
                                  "ORDER BY rank LIMIT 51").fetchall(), reps))
        # A page past the ranked hits (sqlite.RANKED_HITS): the older matches, newest first.
        deep = (await store.list(replace(search, limit=min(n, 1100)))).items[-1]
        past = replace(search, after=cursor_for(deep, Sort(RANK)))
        out["broad search, later page"] = (await median(lambda: store.list(past), reps), plain_median(
            lambda: plain.execute("SELECT rowid FROM plain_text WHERE plain_text MATCH 'record' AND rowid < ? "
                                  "ORDER BY rowid DESC LIMIT 51", (n - 1100,)).fetchall(), reps))
        # One hit, but one of its words in every message: FTS5's bm25 would weigh it by reading them all.
        narrow = replace(search, search=("record", str(n // 2)))
        assert len((await store.list(narrow)).items) == 1
        out["narrow search, a broad word"] = (await median(lambda: store.list(narrow), reps), plain_median(
            lambda: plain.execute("SELECT rowid FROM plain_text WHERE plain_text MATCH ? ORDER BY rank LIMIT 51",
                                  (f"record {n // 2}",)).fetchall(), reps))
        out["broad search count"] = (await median(lambda: store.count(search), reps), plain_median(
            lambda: plain.execute("SELECT count(*) FROM plain_text WHERE plain_text MATCH 'record'").fetchall(), reps))

        # Health during a large write: probe + page reads completed while one commit runs, on
        # the store's readers, against the same on a store that reads through its writer.
        out.update(await during_write(store, page_q, "readers", write))
    async with SQLiteStore(tmp / f"store{n}.db", readers=0) as shared:
        out.update(await during_write(shared, page_q, "one connection", write))
    plain.close()
    with serving_gc():
        out.update(await base_edit(tmp / f"store{n}.db", dependents, reps))
    return out


BASE = "/messagegroups/bases/messages/base"
INLINE = 100  # XREG_REMATERIALISE_INLINE's default
IMPORT_CHUNK = 2000


@contextlib.contextmanager
def loop_holds(out: list[float]) -> Iterator[None]:
    """Collects the CPU time (ms) of every event-loop callback run in the block: how long each held
    the loop, whatever else the machine runs."""
    run = asyncio.events.Handle._run

    def timed(handle: asyncio.Handle) -> None:
        cpu = time.thread_time()
        run(handle)
        out.append((time.thread_time() - cpu) * 1000)

    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        asyncio.events.Handle._run = run  # type: ignore[method-assign]


@contextlib.contextmanager
def serving_gc() -> Iterator[None]:
    """The garbage collector as ``serve`` sets it after start-up (what a served ``/healthz``
    lives with), for the block; as it was afterwards."""
    threshold = gc.get_threshold()
    settings = Settings()
    gc_tuning.tune(freeze=settings.gc_freeze, gen0_threshold=settings.gc_gen0_threshold)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def edit(name: str, i: int) -> dict[str, Any]:
    attrs = {"description": f"edit {i}", "documentation": "https://example.com/doc"}
    return {"messagegroups": {"bases": {"messages": {name: attrs}}}}


async def base_edit(path: Path, dependents: int, reps: int) -> dict[str, tuple[float, float]]:
    """The request time of a write of a base with ``dependents`` (deferred; inline, the old
    path) against one with none, and health probes while the worker catches up (see the doc)."""
    out: dict[str, tuple[float, float]] = {}
    async with LocalRegistry(SQLiteStore(path), registry_id="bench", rematerialise_inline=INLINE) as reg:
        await reg.apply_document({"messagegroups": {"bases": {"messages": {
            "base": edit("base", 0)["messagegroups"]["bases"]["messages"]["base"],
            "lone": {"description": "no dependents"}}}}})
        for lo in range(0, dependents, IMPORT_CHUNK):
            await reg.apply_document({"messagegroups": {f"deps{lo // IMPORT_CHUNK:03d}": {"messages": {
                f"d{i:07d}": {"basemessageuri": BASE} for i in range(lo, min(dependents, lo + IMPORT_CHUNK))}}}})
        step = iter(range(1, 1_000_000))

        async def write(name: str) -> None:
            await reg.apply_document(edit(name, next(step)))

        deferred = await median(lambda: write("base"), reps)
        out[f"base edit with {dependents:,} dependents"] = (deferred, await median(lambda: write("lone"), reps))
        reg.rematerialise_inline = None  # the old path: every dependent in the write's commit
        out[f"(base edit, {dependents:,} dependents inline: ms)"] = (await median(lambda: write("base"), 1), 1.0)
        reg.rematerialise_inline = INLINE
        await write("base")  # the last write: deferred again, for the worker to catch up with
        held_idle: list[float] = []
        held_busy: list[float] = []
        with loop_holds(held_idle):
            idle = await probes(reg, None)
        cpu: list[float] = []
        with loop_holds(held_busy):
            started = time.perf_counter()
            worker = asyncio.create_task(Rematerialiser(reg).run_until_idle())
            busy = await probes(reg, worker, cpu=cpu)
            done = await worker
            drained = (time.perf_counter() - started) * 1000
        out["/healthz during it, median"] = (statistics.median(busy), statistics.median(idle))
        out["/healthz during it, 99th percentile"] = (percentile(busy, 99), percentile(idle, 99))
        out["/healthz during it, worst"] = (max(busy), max(idle))
        out["event loop held during it, longest (CPU)"] = (max(held_busy), max(held_idle))
        out["(the process's CPU during the worst probe, ms)"] = (cpu[busy.index(max(busy))], 1.0)
        out["(probes during the re-materialisation)"] = (float(len(busy)), 1.0)
        out["(messages and versions re-materialised by the worker)"] = (float(done), 1.0)
        out[f"(the worker draining {dependents:,} dependents, ms)"] = (drained, 1.0)
        out[f"(its pages of referrers alone, {dependents:,} dependents, ms)"] = (await referrer_pages(reg), 1.0)
        stale = [r.key async for r in reg.iter_ctype("messagegroups/messages")
                 if stale_since(r, reg.rematerialising) is not None]
        assert not stale and not await reg.store.rematerialisations(), f"{len(stale)} dependents left stale"
    return out


async def referrer_pages(reg: LocalRegistry) -> float:
    """Milliseconds to read every dependent of the base as the worker does: ``Store.referrers``
    pages of the worker's batch in key order, each after the last key of the one before."""
    started, after, seen = time.perf_counter(), None, 0
    while True:
        page = await reg.store.referrers([BASE], after=after, limit=BATCH_OF_WORKER)
        seen += len(page)
        if len(page) < BATCH_OF_WORKER:
            break
        after = page[-1].key
    assert seen >= 1
    return (time.perf_counter() - started) * 1000


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


async def probes(reg: LocalRegistry, worker: asyncio.Task[int] | None, every: float = 0.005,
                 cpu: list[float] | None = None) -> list[float]:
    """Latencies (ms) of health probes due every ``every`` seconds, counted from when each was due,
    until ``worker`` ends (``None``: 400 probes); ``cpu`` collects the CPU time (ms) the process had
    from the end of the probe before to the end of each."""
    times: list[float] = []
    due, used = time.perf_counter(), time.process_time()
    while (worker is None and len(times) < 400) or (worker is not None and not worker.done()):
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        await reg.store.probe_revision()
        now, was = time.perf_counter(), used
        used = time.process_time()
        times.append((now - due) * 1000)
        if cpu is not None:
            cpu.append((used - was) * 1000)
        due = max(due + every, now)
    return times


async def during_write(store: SQLiteStore, page_q: Query, label: str, size: int) -> dict[str, tuple[float, float]]:
    """Median latency of a health probe + a page read while a commit of ``size`` messages runs (against
    the same with no write running), and how many completed during the commit."""

    async def probes(stop: asyncio.Event, times: list[float]) -> None:
        while not stop.is_set():
            t = time.perf_counter()
            await store.probe_revision()
            await store.list(page_q)
            times.append(time.perf_counter() - t)

    idle: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(probes(stop, idle))
    while len(idle) < 20:
        await asyncio.sleep(0.001)
    stop.set()
    await task
    busy: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(probes(stop, busy))
    await asyncio.sleep(0)
    tag = label.replace(" ", "")
    await store.commit([Write(f"/messagegroups/{tag}/messages/m{i:05d}", "resource", MESSAGES, message(i)[1])
                        for i in range(size)])
    stop.set()
    await task
    return {f"health+page during write ({label}), median": (statistics.median(busy) * 1000,
                                                             statistics.median(idle) * 1000),
            f"(reads completed during the write, {label})": (float(len(busy)), 1.0)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 messages (minutes, ~2 GB of disk)")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--dependents", type=int, default=10_000, help="messages on the base the edit writes")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    sizes = [1000] if args.smoke else [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    reps = 3 if args.smoke else args.reps
    results: dict[int, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            results[n] = await run_size(n, Path(tmp), reps, 2000 if args.smoke else BATCH,
                                        300 if args.smoke else args.dependents)
            print(f"\n{n:,} messages (ms: ours / baseline, ratio)")
            for name, (ours, baseline) in results[n].items():
                if name.startswith("("):
                    print(f"  {name:<52} {ours:.0f}")
                else:
                    print(f"  {name:<52} {ours:9.2f} / {baseline:9.2f}  {ours / baseline:6.1f}×")
    last = results[sizes[-1]]
    figures = ", ".join(f"{name} {ours / base:.1f}×" for name, (ours, base) in last.items() if not name.startswith("("))
    print(f"summary: at {sizes[-1]:,} messages, ours vs plain sqlite3: {figures}")


if __name__ == "__main__":
    asyncio.run(main())
