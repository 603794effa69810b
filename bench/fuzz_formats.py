"""The large fuzz of the bounded evaluator (``xreg.formats.evaluator``): random and hostile
schema documents and payloads of every format (``tests/security/hostile.py``), each case run as
a schema validation, a payload validation and a compatibility check. Prints the counts: cases,
answers, refusals by kind, crashes (any exception other than the evaluator's own refusal: must
be 0; the script exits 1 otherwise), and the workers cut off at their bound.

Usage: python bench/fuzz_formats.py [--cases 10000] [--smoke] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests.security.hostile import Case, cases, evaluate_case  # noqa: E402
from xreg.formats import Evaluator, Limits  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases to generate (default 10,000)")
    parser.add_argument("--smoke", action="store_true", help="200 cases: a quick check that it runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    total = 200 if args.smoke else args.cases
    evaluator = Evaluator(Limits(wall_seconds=2.0, max_document_bytes=64 * 1024, max_payload_bytes=64 * 1024))
    counts: Counter[str] = Counter()
    crashes: list[str] = []
    failures: Counter[str] = Counter()  # what the libraries gave up on ("failed" refusals), by exception

    @seed(args.seed)
    @settings(max_examples=total, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=cases(max_leaves=40, max_subject=40))
    def run(case: Case) -> None:
        counts["cases"] += 1
        try:
            refused = asyncio.run(evaluate_case(evaluator, case, failures))
        except Exception:  # counted and shown, never raised: the run goes on
            crashes.append(f"{case!r}\n{traceback.format_exc()}")
            return
        counts["evaluations"] += 3
        counts["answers"] += 3 - len(refused)
        for kind in refused:
            counts[f"refused:{kind}"] += 1

    try:
        run()
    finally:
        evaluator.close()
    refusals = sum(v for k, v in counts.items() if k.startswith("refused:"))
    print(f"cases {counts['cases']}  evaluations {counts['evaluations']}  answers {counts['answers']}  "
          f"refusals {refusals}  crashes {len(crashes)}  workers cut off {evaluator.kills}")
    for key in sorted(k for k in counts if k.startswith("refused:")):
        print(f"  {key:<20} {counts[key]}")
    for detail, n in failures.most_common(10):
        print(f"  failed {n:>5} × {detail}")
    for crash in crashes[:5]:
        print(crash)
    answered = counts["answers"] / counts["evaluations"] if counts["evaluations"] else 0.0
    print(f"summary: {counts['cases']} cases, answered / evaluated {answered:.2f}×, {refusals} refusals, "
          f"{len(crashes)} crashes, {evaluator.kills} workers cut off")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
