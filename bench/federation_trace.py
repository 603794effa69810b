"""The remote requests of cold federated queries, one by one: ``bench_federation.py``'s setup (three
remotes adding ``--delay`` per request, the same local document and query), each request's start
and end (milliseconds from the query's first request) and URL, and per remote when its
second-wave requests went out against its own first-wave answers. A tool, not a benchmark:
``python bench/federation_trace.py [--runs 3] [--messages 50] [--delay 0.05] [--quiet]``
(``--smoke``: 3 messages, one run).

Waves as ``bench_federation.py`` counts them (a request one wave later than those that had come
back when it was sent). Per remote, ``own answers → wave 2``: from the last answer of its first
wave to the first request of its second — what a remote's dependent loads waited for besides
the gateway's own work (negative: none of its answers was needed). The first cold query of the
process pays one-time costs (connections, imports): with ``--runs`` above 1 it is traced but left
out of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_federation as bench  # noqa: E402

Span = tuple[float, float, str]


def waits(spans: list[Span], wave: list[int], roots: dict[str, str]) -> dict[str, float]:
    """Per remote with two waves: its first second-wave request's start less its last first-wave
    answer's end (seconds)."""
    out = {}
    for rid, root in roots.items():
        first = [end for (_, end, url), w in zip(spans, wave, strict=True) if w == 1 and url.startswith(root)]
        second = [start for (start, _, url), w in zip(spans, wave, strict=True) if w == 2 and url.startswith(root)]
        if first and second:
            out[rid] = min(second) - max(first)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.05, help="seconds each remote adds to every request")
    parser.add_argument("--runs", type=int, default=3, help="cold queries traced")
    parser.add_argument("--messages", type=int, default=50, help="referring messages in all (spread over the remotes)")
    parser.add_argument("--quiet", action="store_true", help="per query its summary only, not every request")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.messages = 1, 3
    tmp = Path(tempfile.mkdtemp(prefix="xreg-fed-trace-"))
    colds: list[float] = []
    own: list[float] = []
    async with bench.federated(tmp, args.messages, args.delay, 3) as fed:
        roots = fed.roots
        for run in range(args.runs):
            await fed.app.state.federation.backend.clear()
            recording = bench.Waves()
            try:
                elapsed, _, _ = await bench.run_query(fed.client)
            finally:
                recording.close()
            spans, wave = recording.numbered()
            waited = waits(spans, wave, roots)
            if run or args.runs == 1:
                colds.append(elapsed)
                own += waited.values()
            zero = spans[0][0] if spans else 0.0
            print(f"cold query {run + 1}: {elapsed * 1000:.1f} ms, {len(spans)} requests, {max(wave, default=0)} "
                  "waves; own answers → wave 2: "
                  + (", ".join(f"{rid} {w * 1000:+.1f} ms" for rid, w in waited.items()) or "none"))
            if not args.quiet:
                for (start, end, url), w in zip(spans, wave, strict=True):
                    rid = next((r for r, root in roots.items() if url.startswith(root)), "?")
                    path = url[len(roots.get(rid, "")):]
                    print(f"  {(start - zero) * 1000:7.1f} {(end - zero) * 1000:7.1f}  wave {w}  "
                          f"{rid:8} {path[:110]}")
    trips = fed.trips
    trip = statistics.median(trips)
    wait = statistics.median(own) if own else 0.0
    print(f"summary: cold query {statistics.median(colds) * 1000:.1f} ms = {statistics.median(colds) / trip:.1f}× a "
          f"round trip ({trip * 1000:.1f} ms); a remote's wave 2 went out {wait * 1000:+.1f} ms after its own "
          f"first-wave answers (median), {wait / trip:.2f}× a round trip")


if __name__ == "__main__":
    asyncio.run(main())
