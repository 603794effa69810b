"""Size and build time of ``GET /registry/openapi.json`` against the number of group types.

For each count ``n`` the model is the built-in groups plus ``n`` groups with one resource type
whose attributes refer to other entities (``tests/security/models.py``). The document is built
and encoded as the route does (``gateway.http_api.openapi.openapi_body``, bypassing its cache);
the script prints its bytes, the bytes each group adds since the previous count (constant: the
document is linear in the model) and the build time. Counts above ``XREG_MODEL_MAX_GROUPS`` can
be measured (the model is built here, not installed).

    .venv/bin/python bench/bench_openapi.py [--groups 10 100 300]
    .venv/bin/python bench/bench_openapi.py --smoke
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.http_api.openapi import openapi_document
from tests.http.support import make_settings
from tests.security.models import wide_model
from xreg.json_encoding import dumps
from xreg.model.modelsource import model_of_source


def measure(counts: list[int]) -> list[tuple[int, int, float]]:
    """``(groups, bytes, seconds)`` per count."""
    out = []
    with tempfile.TemporaryDirectory() as data:
        settings = make_settings(Path(data))
        for n in counts:
            model = model_of_source(wide_model(n))
            start = time.perf_counter()
            body = dumps(openapi_document(model, settings))
            out.append((n, len(body), time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[10, 100, 300], help="extra group types")
    parser.add_argument("--smoke", action="store_true", help="a quick run (2, 4, 8 groups)")
    args = parser.parse_args()
    counts = [2, 4, 8] if args.smoke else sorted(args.groups)
    previous: tuple[int, int] | None = None
    increments: list[float] = []
    print(f"{'groups':>7} {'bytes':>12} {'bytes/group added':>18} {'build (s)':>10}")
    for n, size, seconds in measure(counts):
        added = ""
        if previous and n > previous[0]:
            increments.append((size - previous[1]) / (n - previous[0]))
            added = f"{increments[-1]:18,.0f}"
        print(f"{n:7d} {size:12,d} {added:>18} {seconds:10.2f}")
        previous = (n, size)
    # Linear growth: the last step adds as many bytes per group as the first (a ratio of 1.00); quadratic
    # growth shows as a ratio that rises with the number of groups.
    if len(increments) >= 2:
        print(f"summary: bytes per added group, last step / first step {increments[-1] / increments[0]:.2f}×")
    else:
        print("summary: one step measured, no growth ratio 1.00×")


if __name__ == "__main__":
    main()
