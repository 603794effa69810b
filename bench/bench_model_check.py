"""What GraphQL operations pay for seeing another process's model change (issue 14).

Before an operation executes, ``resolvers.current_model.CurrentModel`` checks the local
registry's model like the xRegistry HTTP API does: a read of the registry entity at most once
per ``MODEL_MAX_AGE`` (1 s). This script runs the same small GraphQL operation (a page of ten
groups over ASGI, so the operation itself is cheap and the check's share as large as it gets) with
the check as shipped, with a read before every operation (``MODEL_MAX_AGE`` 0, the cost the age
avoids) and without reads (an age no run reaches: the baseline), interleaved in rounds so that a
busy machine slows all three alike; it prints the median milliseconds per operation and the
ratios against the baseline.

    .venv/bin/python bench/bench_model_check.py [--ops 300] [--rounds 8] [--smoke]

``--smoke``: 5 operations, 2 rounds — every step, in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import resolvers.current_model as current_model
from tests.http.support import SEED, asgi_client, make_settings, running

QUERY = {"query": "{ registry { messagegroups(first: 10) { nodes { xid name } } } }"}
MODES = {"baseline (no reads)": 1e9, "shipped (1 s)": 1.0, "every operation": 0.0}


async def measure(ops: int, rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as data:
        async with running(make_settings(Path(data))) as app, asgi_client(app) as client:
            assert (await client.post("/registry", json=SEED)).status_code == 200
            for r in range(rounds):
                order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
                for mode in order:
                    current_model.MODEL_MAX_AGE = MODES[mode]
                    start = time.perf_counter()
                    for _ in range(ops):
                        response = await client.post("/graphql", json=QUERY)
                        assert response.status_code == 200 and "errors" not in response.json()
                    times[mode].append((time.perf_counter() - start) / ops * 1e3)
    return {mode: statistics.median(values) for mode, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=300, help="operations per mode and round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.ops, args.rounds = 5, 2
    result = asyncio.run(measure(args.ops, args.rounds))
    base = result["baseline (no reads)"]
    for mode, ms in result.items():
        print(f"{mode:22s} {ms:7.3f} ms/op   {ms / base:5.3f}x baseline")
    print(f"summary: the check as shipped {result['shipped (1 s)'] / base:.3f}× the baseline's time per operation, "
          f"a read before every operation {result['every operation'] / base:.3f}×")


if __name__ == "__main__":
    main()
