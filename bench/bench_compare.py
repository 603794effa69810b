"""This checkout's GraphQL executor against another checkout's, interleaved, on one machine.

Changes of a few per cent drown in a busy machine's drift when two versions are measured one
after the other. Here each checkout runs in a process of its own over the same SQLite copy of
the 117-feed corpus, and they take turns: one request of a query in one process, then in the
other (the order alternating), ``--pairs`` times. Each process times its GraphQL execution and
``bench_graphql.py``'s baseline (CPU time, in-process) and counts the Python function calls of
one execution (cProfile, pacing off: the count is the same on every run). Printed per checkout:
CPU medians, GraphQL's extra µs per field over the baseline, the ratio to the other checkout,
and the calls.

The other checkout only needs a ``bench/bench_graphql.py`` with ``QUERIES``, ``BASELINES``,
``REGISTRY_ID`` and ``prepare`` (every version since the executor work began), e.g. the
previous commit in a worktree:

    git worktree add --detach ../before HEAD~3
    .venv/bin/python bench/bench_compare.py --other ../before --pairs 100
    .venv/bin/python bench/bench_compare.py --other ../before --query "message + schema" --pairs 150

``--smoke``: this checkout against itself (unless ``--other`` is given) over a sample of the
corpus (3 feeds), 2 pairs — every step, in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: What each process runs, with its checkout first on ``sys.path`` (argv: checkout, database,
#: warm-up runs of each query).
WORKER = r'''
import asyncio, cProfile, pstats, sys, time
from pathlib import Path
repo, db, warmup = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
sys.path[:0] = [repo, repo + "/bench"]
import bench_graphql as bg
from adapters.local import LocalSource
from gateway import gc_tuning
from xreg.config import Settings
from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore
from resolvers.context import Context
from resolvers.schema import build_schema


async def main():
    settings = Settings(data_dir=db.parent, registry_id=bg.REGISTRY_ID)
    unpaced = Settings(data_dir=db.parent, registry_id=bg.REGISTRY_ID, graphql_pacing_slice_ms=0)
    schema = build_schema(settings)
    async with LocalRegistry(SQLiteStore(db), registry_id=bg.REGISTRY_ID,
                             base_url="http://127.0.0.1/registry") as registry:
        sources = {bg.REGISTRY_ID: LocalSource(registry)}
        gc_tuning.tune(freeze=settings.gc_freeze, gen0_threshold=settings.gc_gen0_threshold)
        for name in bg.QUERIES:  # warm-up
            for _ in range(warmup):
                context = Context(settings, sources, bg.REGISTRY_ID)
                result = await schema.execute(bg.QUERIES[name], context_value=context)
                assert not result.errors, result.errors
        print("ready", flush=True)
        for line in sys.stdin:
            command, _, name = line.strip().partition(" ")
            query = bg.QUERIES[name]
            if command == "calls":
                profile = cProfile.Profile()
                profile.enable()
                await schema.execute(query, context_value=Context(unpaced, sources, bg.REGISTRY_ID))
                profile.disable()
                stats = pstats.Stats(profile).stats
                print(sum(v[1] for k, v in stats.items() if k[0] != "~"), flush=True)
                continue
            started = time.process_time()
            result = await schema.execute(query, context_value=Context(settings, sources, bg.REGISTRY_ID))
            graphql = time.process_time() - started
            started = time.process_time()
            await bg.BASELINES[name](registry)
            baseline = time.process_time() - started
            print(graphql, baseline, bg._fields(result.data), flush=True)


asyncio.run(main())
'''


class Worker:
    """One checkout's process (started at once; :meth:`ready` waits for its warm-up)."""

    def __init__(self, checkout: Path, db: Path, warmup: int) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(checkout), str(db), str(warmup)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ})

    def ready(self) -> None:
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "ready"

    def ask(self, line: str) -> list[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().split()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", type=Path, help="the other checkout (a git worktree)")
    ap.add_argument("--query", default="endpoint page", help="a query of bench_graphql.py")
    ap.add_argument("--pairs", type=int, default=100, help="requests each, in turn")
    ap.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = ap.parse_args()
    if args.smoke:
        args.pairs, args.other = 2, args.other or REPO
    elif args.other is None:
        ap.error("--other is required")
    sys.path[:0] = [str(REPO), str(REPO / "bench")]
    import bench_graphql

    from tests.corpus import corpus_sample

    checkouts = {"this": REPO, "other": args.other.resolve()}
    with tempfile.TemporaryDirectory() as tmpdir:
        db = Path(tmpdir) / "registry.db"
        asyncio.run(bench_graphql.prepare(
            db, corpus_sample(Path(tmpdir) / "sample.json") if args.smoke else bench_graphql.CORPUS))
        workers = {name: Worker(path, db, 1 if args.smoke else 5) for name, path in checkouts.items()}
        try:
            for worker in workers.values():
                worker.ready()
            times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in workers}
            fields = 0
            for i in range(args.pairs):
                for name in (list(workers) if i % 2 == 0 else list(workers)[::-1]):
                    graphql, baseline, count = workers[name].ask(f"time {args.query}")
                    times[name][0].append(float(graphql))
                    times[name][1].append(float(baseline))
                    fields = int(count)
            calls = {name: int(worker.ask(f"calls {args.query}")[0]) for name, worker in workers.items()}
        finally:
            for worker in workers.values():
                worker.close()
    print(f"{args.query} ({fields} fields), {args.pairs} requests each in turn, load average {os.getloadavg()[0]:.1f}; "
          "CPU ms per request (median)")
    other = statistics.median(times["other"][0])
    for name, (graphql, baseline) in times.items():
        g, b = statistics.median(graphql), statistics.median(baseline)
        print(f"  {name:5s} {checkouts[name]}: graphql {g * 1e3:6.2f} ms  baseline {b * 1e3:6.2f} ms  "
              f"+{(g - b) * 1e6 / fields:5.1f} µs per field  {g / other:5.3f}× the other's  "
              f"{calls[name]:,} Python calls")
    print(f"summary: this checkout's GraphQL CPU per request {statistics.median(times['this'][0]) / other:.3f}× "
          "the other's")


if __name__ == "__main__":
    main()
