"""Load benchmark: many concurrent heavy GraphQL queries against one gateway process, in one run
for each mode: admission control off and lists completed in one stretch (the baseline), admission
on with lists in one stretch and 4 GraphQL executions at once (``unpaced``: admission alone, as
before pacing), and the defaults (admission on, 2 at once, lists and large answers completed and
encoded in slices: ``resolvers/pacing.py``).

The gateway serves the 117-feed corpus from `xreg-gateway serve` in a process of its own on
127.0.0.1. This process fires ``--clients`` heavy queries at once (a page of 500 materialised
messages: about 15,000 in cost, under the default ceiling) while a probe asks ``/healthz``
every 50 ms from a process of its own. It prints, for each mode: the statuses, p50 / p99 latency
of the answered queries, answered queries per second and the server's CPU seconds per answered
query (throughput), whether every 503 carried ``Retry-After``, the server's peak RSS
(``VmHWM``) and the ``/healthz`` latencies under load.

``--smoke``: a sample of the corpus (3 feeds), 4 clients, the baseline and the defaults (``unpaced``
runs the same code with another environment), served through ``stall_trace.py`` (``--trace
100``) — every step, in seconds.

Usage: python bench/bench_load.py [--clients 200] [--modes off,unpaced,on] [--trace MS] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from tests.corpus import corpus_sample  # noqa: E402

CORPUS = REPO / "tests" / "data" / "xreg" / "rts__ALL-117-feeders-merged.xreg.json"
HEAVY = """{ registry { messages(first: 500) { totalCount nodes { xid messageid name description envelope protocol
  dataschemaformat dataschemauri basemessageuri createdat modifiedat labels { key value } effective
  declared { description envelope } } } } }"""
PROBE_EVERY = 0.05
#: The prober: GET /healthz every PROBE_EVERY seconds on one kept-alive connection, each
#: latency (seconds; inf when it failed) appended to a file.
PROBER = """
import http.client, sys, time
port, out, every = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
with open(out, "a") as f:
    while True:
        started = time.perf_counter()
        try:
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            response.read()
            took = time.perf_counter() - started if response.status == 200 else float("inf")
        except OSError:
            took = float("inf")
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        f.write(f"{time.time()} {took}\\n")
        f.flush()
        time.sleep(every)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: Environment of the gateway in each mode.
MODES = {
    "off": {"XREG_ADMISSION_ENABLED": "false", "XREG_GRAPHQL_PACING_SLICE_MS": "0"},
    # admission as it was before lists were paced: 4 GraphQL executions at once
    "unpaced": {"XREG_ADMISSION_ENABLED": "true", "XREG_GRAPHQL_PACING_SLICE_MS": "0",
                "XREG_ADMISSION_GRAPHQL_CONCURRENCY": "4"},
    "on": {"XREG_ADMISSION_ENABLED": "true"},
}
TITLES = {"off": "admission off", "unpaced": "unpaced, 4 at once", "on": "defaults (paced)"}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report_stalls(probe_lines: list[list[str]], trace: Path, burst_at: float, over: float) -> None:
    """Prints, for every probe of ``over`` seconds or more, what the server's trace shows in its time."""
    events = [line.split(" ", 3) for line in trace.read_text().splitlines()]
    print(f"trace: {sum(e[0] == 'gc' for e in events)} collections >= 1 ms, "
          f"{sum(e[0] == 'turn' for e in events)} loop turns >= 10 ms, "
          f"{sum(e[0] == 'poll' for e in events)} late wake-ups >= 10 ms", file=sys.stderr)
    for at, took in probe_lines:
        end, took_s = float(at), float(took)
        if took_s < over:
            continue
        start = end - took_s
        print(f"probe at {start - burst_at:+.3f} s took {1000 * took_s:.0f} ms:", file=sys.stderr)
        for kind, began, ms, rest in (e + [""] * (4 - len(e)) for e in events):
            b, e = float(began), float(began) + float(ms) / 1000
            if e > start - 0.005 and b < end + 0.005:
                print(f"    {kind:<5} {b - burst_at:+.3f} s {float(ms):7.1f} ms  {rest}", file=sys.stderr)


async def run_mode(data_dir: Path, mode: str, clients: int, trace: float | None = None) -> dict[str, Any]:
    port = free_port()
    env = {**os.environ, "XREG_DATA_DIR": str(data_dir), **MODES[mode], "XREG_LOG_LEVEL": "warning"}
    trace_log = data_dir / f"trace-{port}.txt"
    command = ([str(REPO / "bench" / "stall_trace.py"), str(trace_log)] if trace is not None else ["-m", "gateway.cli"])
    server = subprocess.Popen([sys.executable, *command, "serve", "--port", str(port)], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=600,
                                     limits=httpx.Limits(max_connections=clients + 10)) as client:
            while True:  # until it serves (a busy machine starts it slowly) or exits
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None:
                    raise SystemExit(f"the gateway ({mode}) did not start")
                await asyncio.sleep(0.1)
            warm = await client.post("/graphql", json={"query": HEAVY})
            assert warm.status_code == 200 and "errors" not in warm.json(), warm.text[:300]
            rss_idle = peak_rss_mb(server.pid)
            probe_log = data_dir / f"probes-{port}.txt"
            # the probe runs in a process of its own, so this process's own load does not show in it
            prober = subprocess.Popen([sys.executable, "-c", PROBER, str(port), str(probe_log), str(PROBE_EVERY)])

            async def query() -> tuple[int, float, bool]:
                started = time.perf_counter()
                try:
                    response = await client.post("/graphql", json={"query": HEAVY})
                except httpx.TransportError:  # the connection dropped: counted as "other"
                    return 0, time.perf_counter() - started, False
                return response.status_code, time.perf_counter() - started, "retry-after" in response.headers

            await asyncio.sleep(0.5)
            started, cpu_before, burst_at = time.perf_counter(), cpu_seconds(server.pid), time.time()
            results = await asyncio.gather(*(query() for _ in range(clients)))
            elapsed, cpu = time.perf_counter() - started, cpu_seconds(server.pid) - cpu_before
            prober.terminate()
            prober.wait(30)
            lines = [line.split() for line in probe_log.read_text().splitlines()]
            probes = [float(took) for _, took in lines]
            if os.environ.get("BENCH_PROBE_LOG"):
                for at, took in lines:
                    print(f"probe {float(at) - burst_at:+.3f} s {1000 * float(took):.1f} ms", file=sys.stderr)
            if trace is not None:
                report_stalls(lines, trace_log, burst_at, trace)
    finally:
        rss_peak = peak_rss_mb(server.pid)
        server.terminate()
        server.wait(30)
    ok = [t for status, t, _ in results if status == 200]
    busy = [(t, retry) for status, t, retry in results if status == 503]
    return {
        "mode": TITLES[mode], "clients": clients, "wall (s)": elapsed,
        "200": len(ok), "503": len(busy), "other (dropped: 0)": sum(1 for s, _, _ in results if s not in (200, 503)),
        "503 with Retry-After": sum(1 for _, r in busy if r),
        "p50 answered (s)": pct(ok, 0.5), "p99 answered (s)": pct(ok, 0.99),
        "answered / s": len(ok) / elapsed, "CPU s / answered": cpu / len(ok) if ok else float("nan"),
        "p50 503 (s)": pct([t for t, _ in busy], 0.5),
        "RSS idle (MB)": rss_idle, "RSS peak (MB)": rss_peak,
        "healthz p50 (ms)": 1000 * pct(probes, 0.5), "healthz p99 (ms)": 1000 * pct(probes, 0.99),
        "healthz max (ms)": 1000 * max(probes, default=float("nan")), "healthz probes": len(probes),
        "healthz > 100 ms": sum(1 for t in probes if t > 0.1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--modes", default="off,unpaced,on", help="modes to run, in order (off,unpaced,on)")
    parser.add_argument("--trace", type=float, metavar="MS", default=None,
                        help="serve through bench/stall_trace.py and print, for each probe of MS milliseconds or "
                             "more, the garbage collections, long loop turns and late wake-ups in its time (stderr)")
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.modes, args.trace = 4, "off,on", 100.0
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="xreg-bench-load-") as tmp:
        data = Path(tmp)
        corpus = corpus_sample(data / "sample.json") if args.smoke else CORPUS
        subprocess.run([sys.executable, "-m", "gateway.cli", "import", str(corpus)], cwd=REPO, check=True,
                       env={**os.environ, "XREG_DATA_DIR": str(data)}, stdout=subprocess.DEVNULL)
        modes = [m.strip() for m in args.modes.split(",")]
        over = None if args.trace is None else args.trace / 1000
        rows = [asyncio.run(run_mode(data, mode, args.clients, over)) for mode in modes]
    keys = list(rows[0])
    print(f"heavy query: a page of 500 materialised messages, {args.clients} at once; "
          f"/healthz every {PROBE_EVERY * 1000:.0f} ms; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, {os.cpu_count()} CPUs")
    for key in keys:
        cells = [f"{r[key]:.3f}" if isinstance(r[key], float) else str(r[key]) for r in rows]
        print(f"{key:<24}" + "".join(f"{c:>20}" for c in cells))
    first, last = rows[0], rows[-1]
    print(f"summary: {last['mode']} against {first['mode']}: answered / s "
          f"{last['answered / s'] / first['answered / s']:.2f}×, "
          f"/healthz p99 {last['healthz p99 (ms)'] / first['healthz p99 (ms)']:.2f}×")


if __name__ == "__main__":
    main()
