"""Backup and restore with history, against `export` of the same registry measured in the same run.

The 117-feed corpus is imported into a fresh SQLite store, then ``--updates`` single-entity
updates add history. Then, each the best of ``--runs``:

* ``export``: ``LocalRegistry.export_document`` written as JSON (the current state only) — the baseline;
* ``backup`` / ``backup .gz``: every state, commit and the instance id as JSON lines;
* ``check``: reading and checking a backup without loading it;
* ``restore``: checking and loading it into a fresh SQLite store.

A second pass, under ``tracemalloc``, reports the peak Python memory of export, backup and
restore: a backup streams, an export builds the whole document.

``--smoke``: a sample of the corpus (3 feeds), 5 updates, one run — every step, in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.corpus import CORPUS_117, corpus_sample
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.registry.changeset import Changeset
from xreg.registry.service import LocalRegistry
from xreg.storage.backup import backup, check_backup, restore
from xreg.storage.sqlite import SQLiteStore


async def build(path: Path, updates: int, corpus: Path) -> LocalRegistry:
    registry = LocalRegistry(SQLiteStore(path), registry_id="bench")
    await registry.open()
    doc, _ = normalise(read_document(corpus), strict=False)
    await registry.apply_document(doc)
    groups = list(doc["messagegroups"])
    for i in range(updates):
        gid = groups[i % len(groups)]

        async def touch(cs: Changeset, gid: str = gid, i: int = i) -> None:
            await cs.put_group("messagegroups", gid, {"description": f"update {i}"}, patch=True)

        await registry.write(touch, subject=f"/messagegroups/{gid}", note=f"update {i}")
    return registry


async def best(runs: int, fn: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return min(times)


async def peak(fn: Callable[[], Awaitable[object]]) -> float:
    tracemalloc.start()
    try:
        await fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


async def main(updates: int, runs: int, smoke: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-backup-"))
    try:
        corpus = corpus_sample(work / "sample.json") if smoke else CORPUS_117
        registry = await build(work / "source.db", updates, corpus)
        store = registry.store
        states = sum([1 async for _ in _states(store)])
        targets = iter(range(10**6))

        async def export() -> None:
            doc = await registry.export_document()
            (work / "export.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")

        async def restore_fresh() -> None:
            async with SQLiteStore(work / f"restored-{next(targets)}.db") as target:
                await restore(target, work / "b.jsonl")

        async def check() -> None:
            check_backup(work / "b.jsonl")

        rows = {
            "export": await best(runs, export),
            "backup": await best(runs, lambda: backup(store, work / "b.jsonl")),
            "backup .gz": await best(runs, lambda: backup(store, work / "b.jsonl.gz")),
            "check": await best(runs, check),
            "restore": await best(runs, restore_fresh),
        }
        sizes = {"export": (work / "export.json").stat().st_size, "backup": (work / "b.jsonl").stat().st_size,
                 "backup .gz": (work / "b.jsonl.gz").stat().st_size}
        memory = {"export": await peak(export), "backup": await peak(lambda: backup(store, work / "b.jsonl")),
                  "restore": await peak(restore_fresh)}
        print(f"revisions {await store.current_revision()}, states {states} (history included)")
        print(f"{'':14}{'time (s)':>10}{'x export':>10}{'MiB file':>10}{'peak MiB':>10}")
        for name, seconds in rows.items():
            size = f"{sizes[name] / 2**20:10.2f}" if name in sizes else " " * 10
            mem = f"{memory[name]:10.1f}" if name in memory else ""
            print(f"{name:14}{seconds:10.3f}{seconds / rows['export']:10.2f}{size}{mem}")
        print(f"summary: backup {rows['backup'] / rows['export']:.2f}× export's time, restore "
              f"{rows['restore'] / rows['export']:.2f}× (peak memory: backup {memory['backup']:.1f} MiB, "
              f"export {memory['export']:.1f} MiB)")
        await registry.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _states(store: SQLiteStore):
    async with store.dump() as dump:
        async for state in dump.states():
            yield state


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=500, help="single-entity updates after the import")
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs")
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.updates, args.runs = 5, 1
    asyncio.run(main(args.updates, args.runs, args.smoke))
