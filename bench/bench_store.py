"""Store benchmark: import of the 117-feed corpus, and keyset page reads at 100,000 entities.

Prints figures for SQLite and MongoDB (mongomock-motor, an in-process imitation — its numbers
say nothing about a real server; they show the code path works at this size), each against a
baseline measured in the same run:

- import: entities/s through the engine (normalise + validate + commit), against committing the
  same number of prepared writes straight into the store (the engine's overhead as a ratio);
- page read: median / p99 latency of reading 50 entities after a random keyset cursor among
  100,000, against reading the whole collection (what a scan costs), plus the query plan;
- point reads (SQLite): median wall and CPU time of ``get_many`` of one key, run on the event
  loop (the store's quick reads), against the same reads handed to the connection's thread.

mongomock checks unique indexes and evaluates every find by scanning all documents in Python,
so loading grows quadratically (10,000 entities take minutes, 100,000 would take hours): it
runs at ``--mongomock-entities`` (10,000) and its figures only show that the generated queries
work; the plan it prints is the query a real server receives.

``--smoke``: a sample of the corpus (3 feeds), 1,000 entities (mongomock: 200), 10 page reads —
every step, in seconds.

Usage: python bench/bench_store.py [--entities 100000] [--mongomock-entities 10000] [--pages 200]
       [--backends sqlite,mongomock] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.corpus import corpus_sample  # noqa: E402
from xreg.documents.normalise import normalise  # noqa: E402
from xreg.documents.reader import read_document  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.base import Store  # noqa: E402
from xreg.storage.records import Query, Write  # noqa: E402
from xreg.storage.semantics import Cursor  # noqa: E402

CORPUS = REPO / "tests" / "data" / "xreg" / "rts__ALL-117-feeders-merged.xreg.json"


def make_store(backend: str, tmp: Path, name: str) -> Store:
    if backend == "sqlite":
        from xreg.storage.sqlite import SQLiteStore

        return SQLiteStore(tmp / f"{name}.db")
    from mongomock_motor import AsyncMongoMockClient

    from xreg.storage.mongo import MongoStore

    return MongoStore(client=AsyncMongoMockClient(), database=name)


async def bench_import(backend: str, tmp: Path, corpus: Path = CORPUS) -> dict:
    raw = read_document(corpus)
    t0 = time.perf_counter()
    doc, _ = normalise(raw)
    t_norm = time.perf_counter() - t0
    registry = LocalRegistry(make_store(backend, tmp, "import"), registry_id="bench")
    await registry.open()
    t0 = time.perf_counter()
    outcome = await registry.apply_document(doc)
    t_import = time.perf_counter() - t0
    writes = len(outcome.created)
    await registry.close()

    # baseline: the same number of ready-made writes committed straight into a fresh store
    store = make_store(backend, tmp, "baseline")
    await store.open()
    batch = [Write(xid=f"/messagegroups/g{i // 50}/messages/m{i}", kind="resource",
                   ctype="messagegroups/messages", doc={"meta": {"epoch": 1}, "default": {"n": i}}, expect=None)
             for i in range(writes)]
    t0 = time.perf_counter()
    await store.commit(batch)
    t_raw = time.perf_counter() - t0
    await store.close()
    return {"entities": writes, "normalise_s": t_norm, "import_s": t_import,
            "entities_per_s": writes / t_import, "raw_commit_s": t_raw,
            "engine_overhead_x": t_import / t_raw}


async def bench_pages(backend: str, tmp: Path, n: int, pages: int) -> dict:
    store = make_store(backend, tmp, "pages")
    await store.open()
    ctype = "messagegroups/messages"
    t0 = time.perf_counter()
    for start in range(0, n, 10_000):
        await store.commit([
            Write(xid=f"/messagegroups/g{i % 1000:04d}/messages/m{i:06d}", kind="resource", ctype=ctype,
                  doc={"meta": {"epoch": 1}, "default": {"protocol": "KAFKA" if i % 3 else "AMQP/1.0"}}, expect=None)
            for i in range(start, min(n, start + 10_000))
        ])
    t_load = time.perf_counter() - t0
    rng = random.Random(7)
    keys = [f"/messagegroups/g{rng.randrange(1000):04d}/messages/m{rng.randrange(n):06d}" for _ in range(pages)]

    async def timed(query: Query) -> float:
        s = time.perf_counter()
        page = await store.list(query)
        assert len(page.items) <= 50
        return time.perf_counter() - s

    global_lat = [await timed(Query(ctype=ctype, limit=50, after=Cursor(key=k))) for k in keys]
    parent_lat = [await timed(Query(ctype=ctype, parent=k.rsplit("/", 2)[0], limit=50,
                                    after=Cursor(key=k.rsplit("/", 2)[0].lower() + "/messages/m0"))) for k in keys]
    scans = []
    for _ in range(3):
        s = time.perf_counter()
        everything = await store.list(Query(ctype=ctype))
        scans.append(time.perf_counter() - s)
        assert len(everything.items) == n
    plan = await store.explain(Query(ctype=ctype, limit=50, after=Cursor(key=keys[0])))
    existing = [f"/messagegroups/g{i % 1000:04d}/messages/m{i:06d}" for i in (rng.randrange(n) for _ in range(pages))]
    points = await bench_point_reads(store, existing) if backend == "sqlite" else {}
    await store.close()
    p50 = statistics.median(global_lat)
    return {**points, "entities": n, "load_s": t_load, "page_p50_ms": p50 * 1e3,
            "page_p99_ms": sorted(global_lat)[int(0.99 * (len(global_lat) - 1))] * 1e3,
            "parent_page_p50_ms": statistics.median(parent_lat) * 1e3,
            "full_read_ms": statistics.median(scans) * 1e3,
            "full_read_over_page_x": statistics.median(scans) / p50, "plan": plan}


async def bench_point_reads(store: Store, keys: list[str]) -> dict:
    """``get_many`` of one key: on the event loop (quick reads) against through the connection's
    thread (``QUICK_KEYS`` set to 0 sends every read there), interleaved, same keys."""
    from xreg.storage import sqlite

    quick_keys = sqlite.QUICK_KEYS
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    try:
        for _ in range(5):
            for quick in (True, False):
                sqlite.QUICK_KEYS = quick_keys if quick else 0
                for k in keys:
                    w, c = time.perf_counter(), time.process_time()
                    assert len(await store.get_many([k])) == 1
                    cpu[quick].append(time.process_time() - c)
                    wall[quick].append(time.perf_counter() - w)
    finally:
        sqlite.QUICK_KEYS = quick_keys
    us = {q: (statistics.median(wall[q]) * 1e6, statistics.fmean(cpu[q]) * 1e6) for q in (True, False)}
    return {"point_loop_us": us[True][0], "point_thread_us": us[False][0],
            "point_loop_cpu_us": us[True][1], "point_thread_cpu_us": us[False][1],
            "point_thread_over_loop_x": us[False][0] / us[True][0]}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--pages", type=int, default=200, help="page reads per backend (mongomock: a tenth)")
    ap.add_argument("--mongomock-entities", type=int, default=10_000)
    ap.add_argument("--backends", default="sqlite,mongomock")
    ap.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = ap.parse_args()
    if args.smoke:
        args.entities, args.mongomock_entities, args.pages = 1000, 200, 10
    results = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for backend in args.backends.split(","):
            # mongomock scans every document on each find: fewer page reads keep the run short
            pages = args.pages if backend == "sqlite" else max(5, args.pages // 10)
            n = args.entities if backend == "sqlite" else args.mongomock_entities
            print(f"{backend}: import ...", file=sys.stderr, flush=True)
            imported = await bench_import(backend, tmp, corpus_sample(tmp / "sample.json") if args.smoke else CORPUS)
            print(f"{backend}: {n} entities, {pages} page reads ...", file=sys.stderr, flush=True)
            results[backend] = {"import": imported, "pages": await bench_pages(backend, tmp, n, pages)}
    print(f"{'':26}" + "".join(f"{b:>18}" for b in results))
    rows = [
        ("import entities", "import", "entities", "{:.0f}"),
        ("normalise (s)", "import", "normalise_s", "{:.3f}"),
        ("import (s)", "import", "import_s", "{:.2f}"),
        ("import entities/s", "import", "entities_per_s", "{:.0f}"),
        ("raw commit same (s)", "import", "raw_commit_s", "{:.2f}"),
        ("engine overhead (x raw)", "import", "engine_overhead_x", "{:.1f}"),
        ("page entities", "pages", "entities", "{:.0f}"),
        ("load (s)", "pages", "load_s", "{:.1f}"),
        ("page of 50 p50 (ms)", "pages", "page_p50_ms", "{:.2f}"),
        ("page of 50 p99 (ms)", "pages", "page_p99_ms", "{:.2f}"),
        ("page in parent p50 (ms)", "pages", "parent_page_p50_ms", "{:.2f}"),
        ("full read (ms)", "pages", "full_read_ms", "{:.0f}"),
        ("full read / page (x)", "pages", "full_read_over_page_x", "{:.0f}"),
        ("point read, loop (us)", "pages", "point_loop_us", "{:.0f}"),
        ("point read, thread (us)", "pages", "point_thread_us", "{:.0f}"),
        ("  cpu, loop (us)", "pages", "point_loop_cpu_us", "{:.0f}"),
        ("  cpu, thread (us)", "pages", "point_thread_cpu_us", "{:.0f}"),
        ("point thread / loop (x)", "pages", "point_thread_over_loop_x", "{:.1f}"),
    ]
    for label, part, key, fmt in rows:
        print(f"{label:26}" + "".join(f"{fmt.format(r[part][key]) if key in r[part] else '-':>18}"
                                      for r in results.values()))
    for backend, r in results.items():
        print(f"\n{backend} page query plan:\n{r['pages']['plan']}")
    print("\n" + json.dumps({b: {k: {kk: vv for kk, vv in v.items() if kk != 'plan'} for k, v in r.items()}
                             for b, r in results.items()}))
    print("summary: " + "; ".join(f"{b}: import {r['import']['engine_overhead_x']:.1f}× a raw commit, full read "
                                  f"{r['pages']['full_read_over_page_x']:.1f}× a page of 50"
                                  for b, r in results.items()))


if __name__ == "__main__":
    asyncio.run(main())
