"""Soak test: does the served gateway's memory stay flat under a long mixed load?

Two gateways, each ``xreg-gateway serve`` in a process of its own on 127.0.0.1: the *remote*,
holding the contoso ERP sample, and the gateway under test, holding the other samples and
federating the remote (``registries:``, a short cache TTL so remote reads keep reaching it).
This process drives the gateway under test with a fixed number of concurrent clients, each
picking in turn: GraphQL reads of the local registry, HTTP API reads, writes (updates of a fixed
set of groups, so the registry does not grow), ``validateMessage`` calls, federated reads of the
remote, and refused requests (a wrong bearer token, a malformed query, an entity that does not
exist, a query whose first field fails). Every ``--sample`` seconds it reads the server's RSS
(``/proc/<pid>/status``); at the end it prints the first and last RSS, the least-squares slope
of RSS over the samples after the warm-up with its standard error, the slopes of the first and
the second half of those samples (growth that levels off shows as a smaller second half), a
verdict — ``flat`` when the slope is below 1 MB per 10 minutes or within two standard errors of
zero, ``growing`` otherwise — the requests made by kind and status, and how many "never awaited"
warnings the server logged.

``--probe`` runs the gateway under test under a probe (signal handlers in the served process,
nothing in the gateway's code): at the end of the warm-up and at the end of the load it records
the RSS, SQLite's own allocations (``sqlite3_memory_used``: its page caches), glibc's heap
(``mallinfo2``: bytes in use, bytes free but kept) and pymalloc's (bytes in blocks in use, arenas),
and prints how each figure moved and the RSS once ``malloc_trim`` has handed free pages back.
``--trace`` adds ``tracemalloc`` from the warm-up on (it slows the server several times, and its
own bookkeeping counts in the heap) and the Python allocations made since the warm-up and still
alive, largest first, by traceback. ``--trim`` has the probe call ``malloc_trim`` before each
sample, so the RSS sampled leaves out the free pages glibc keeps. RSS growth that shows in
none of the bytes in use but in the bytes free and kept is allocator fragmentation, not a leak.
The environment reaches the served processes (``MALLOC_ARENA_MAX=2 python bench/bench_soak.py``).

Usage: python bench/bench_soak.py [--smoke] [--duration 1200] [--sample 10] [--warmup 60]
       [--concurrency 4] [--probe | --trace | --trim]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from gateway.auth import hash_key  # noqa: E402

SAMPLES = REPO / "samples"
REMOTE_DOCUMENT = "contoso-erp-jsons07.xreg.json"
KEY = "soak-writer-" + "k" * 32
GROUPS = [f"soak-{i}" for i in range(20)]

LOCAL_READ = """{ registry { messagegroups(first: 20) { totalCount nodes { xid name
  messages(first: 20) { nodes { xid name envelope dataschemaformat } } } } } }"""
REMOTE_READ = """{ registry(id: "remote") { messagegroups(first: 20) { nodes { xid name
  messages(first: 10) { nodes { xid name dataschemaformat } } } } } }"""
MESSAGES = "{ registry { messages(first: 50) { nodes { xid } } } }"
VALIDATE = """query($xid: String!, $data: JSON!) { validateMessage(xid: $xid, data: $data) {
  valid validated reason violations { path message } } }"""
#: A root field failing before the others start (a non-null field: ``data`` is null).
FAILING_FIRST = """{ nodes(ids: ["x"]) { id } registry { name messagegroups(first: 5) { nodes { xid } } } }"""
UPSERT = """mutation($id: String!, $name: String!) { updateGroup(groupType: "endpoints", groupId: $id,
  attributes: {name: $name, usage: ["producer"]}, replace: true) { revision } }"""
CREATE = """mutation($id: String!) { createGroup(groupType: "endpoints", groupId: $id,
  attributes: {name: "soak", usage: ["producer"]}) { revision } }"""
#: A slope below this many MB per 10 minutes is called flat whatever its noise.
FLAT_MB_PER_10_MIN = 1.0

#: Run in the served process with ``--trace`` (``python -c PROBE serve …``): SIGUSR1 marks the
#: baseline and starts tracing Python's allocations (the diff is what was allocated since and is
#: still alive), SIGUSR2 writes the figures' change and the top allocation diffs to ``SOAK_PROBE_OUT``
#: (JSON) and then trims the heap; SIGWINCH trims it (``--trim``). Diagnosis only: it starts the
#: same CLI as ``xreg-gateway``.
PROBE = r"""
import ctypes, ctypes.util, gc, json, os, signal, sys, tracemalloc

libc = ctypes.CDLL("libc.so.6")
sqlite = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
sqlite.sqlite3_memory_used.restype = ctypes.c_int64


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


libc.mallinfo2.restype = Mallinfo2
state = {}


def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024


def pymalloc():
    # sys._debugmallocstats writes to the C stderr: read it through a file
    with open(os.environ["SOAK_PROBE_OUT"] + ".stats", "w+") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        found = {}
        for line in f:
            name, _, value = line.rpartition("=")
            if line.startswith("#") and value.strip().replace(",", "").isdigit():
                found[name.strip("# ")] = int(value.strip().replace(",", ""))
    return found


def figures(traced=0):
    gc.collect()
    m, py = libc.mallinfo2(), pymalloc()
    return {"rss": rss(), "python since warm-up": traced,
            "sqlite": sqlite.sqlite3_memory_used(), "heap in use": m.uordblks + m.hblkhd,
            "heap free, kept": m.fordblks, "heap arenas": m.arena + m.hblkhd,
            "pymalloc in use": py.get("bytes in allocated blocks", 0),
            "pymalloc arenas": py.get("arenas allocated current", 0) * (1 << 20)}


def baseline(*_):
    state["figures"] = figures()
    frames = int(os.environ["SOAK_PROBE_FRAMES"])
    if frames:
        tracemalloc.start(frames)  # from here on: importing traced is slow
        state["snapshot"] = tracemalloc.take_snapshot()


def report(*_):
    gc.collect()
    stats, traced = [], 0
    if tracemalloc.is_tracing():
        snap, traced = tracemalloc.take_snapshot(), tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()  # pymalloc's figures are read with it off
        stats = snap.compare_to(state["snapshot"], "traceback")
    now = figures(traced)
    top = [{"size_diff": s.size_diff, "count_diff": s.count_diff, "size": s.size,
            "traceback": [f"{f.filename}:{f.lineno}" for f in s.traceback]} for s in stats[:15]]
    libc.malloc_trim(0)
    out = {"baseline": state["figures"], "end": now, "rss after malloc_trim": rss(), "top": top}
    with open(os.environ["SOAK_PROBE_OUT"] + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(os.environ["SOAK_PROBE_OUT"] + ".tmp", os.environ["SOAK_PROBE_OUT"])


signal.signal(signal.SIGWINCH, lambda *_: libc.malloc_trim(0))
signal.signal(signal.SIGUSR1, baseline)
signal.signal(signal.SIGUSR2, report)
from gateway.cli import main
sys.argv[0] = "xreg-gateway"
main()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli() -> list[str]:
    script = Path(sys.executable).with_name("xreg-gateway")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]


class Served:
    """``xreg-gateway serve`` on a data directory of its own, its log in a file."""

    def __init__(self, name: str, tmp: Path, documents: list[Path], env: dict[str, str], *,
                 probe: int | None = None) -> None:
        """``probe``: run under :data:`PROBE`, tracing that many frames of Python's allocations (0: none)."""
        self.port = free_port()
        self.probe = tmp / f"{name}.probe.json" if probe is not None else None
        self.frames = probe or 0
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / f"{name}.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("XREG_")}
        self.env.update(XREG_DATA_DIR=str(tmp / name), XREG_REGISTRY_ID=name, XREG_LOG_LEVEL="warning",
                        XREG_LOG_FORMAT="text", PYTHONWARNINGS="default", **env)
        subprocess.run([*cli(), "import", *map(str, documents)], env=self.env, check=True, capture_output=True)
        self.process: subprocess.Popen | None = None

    def start(self) -> Served:
        command = [sys.executable, "-c", PROBE] if self.probe else cli()
        env = {**self.env, "SOAK_PROBE_OUT": str(self.probe), "SOAK_PROBE_FRAMES": str(self.frames)} \
            if self.probe else self.env
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([*command, "serve", "--port", str(self.port)], env=env,
                                            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=2, trust_env=False).status_code == 200:
                    return self
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.url} exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"{self.url} did not start")

    def rss_mb(self) -> float:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def probed(self) -> dict:
        """Ask the probe for its report (SIGUSR2) and read it."""
        assert self.probe is not None
        self.signal(signal.SIGUSR2)
        deadline = time.monotonic() + 300
        while not self.probe.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the probe wrote no report")
            time.sleep(0.5)
        return json.loads(self.probe.read_text())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


@contextlib.contextmanager
def gateways(tmp: Path, *, probe: int | None = None) -> Iterator[tuple[Served, Served]]:
    remote = Served("remote", tmp, [SAMPLES / REMOTE_DOCUMENT], {})
    local_docs = sorted(p for p in SAMPLES.glob("*.xreg.json") if p.name != REMOTE_DOCUMENT)
    try:
        remote.start()
        registries = [{"id": "remote", "kind": "xregistry", "url": remote.url + "/registry", "cache_ttl": 1,
                       "stale_while_revalidate": 1}]
        keys = [{"name": "soak", "sha256": hash_key(KEY), "scopes": ["read", "write"]}]
        local = Served("local", tmp, local_docs, {"XREG_REGISTRIES": json.dumps(registries),
                                                  "XREG_API_KEYS": json.dumps(keys)}, probe=probe)
        try:
            yield remote, local.start()
        finally:
            local.stop()
    finally:
        remote.stop()


def slope_per_10_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(seconds, MB)`` points, in MB per 10 minutes."""
    return fit(points)[0]


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares slope of ``(seconds, MB)`` points and its standard error, in MB per 10
    minutes (NaN where there are too few points). The samples are not independent (RSS moves in
    steps), so the error is a floor on the noise, not a bound: the halves' slopes are the check."""
    n = len(points)
    if n < 2:
        return float("nan"), float("nan")
    mt = sum(t for t, _ in points) / n
    mr = sum(r for _, r in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if not var:
        return float("nan"), float("nan")
    slope = sum((t - mt) * (r - mr) for t, r in points) / var
    if n < 3:
        return slope * 600, float("nan")
    residual = sum((r - mr - slope * (t - mt)) ** 2 for t, r in points)
    return slope * 600, math.sqrt(residual / (n - 2) / var) * 600


def verdict(slope: float, error: float) -> str:
    """``flat`` when the slope is below the threshold or within two standard errors of zero."""
    if math.isnan(slope):
        return "unknown"
    return "flat" if slope < FLAT_MB_PER_10_MIN or abs(slope) <= 2 * error else "growing"


async def client_loop(c: httpx.AsyncClient, until: float, xids: list[str], done: Counter, rng: random.Random) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    while time.monotonic() < until:
        kind = rng.choice(["graphql read", "graphql read", "http read", "write", "validateMessage",
                           "federated read", "federated read", "refused"])
        try:
            if kind == "graphql read":
                r = await c.post("/graphql", json={"query": LOCAL_READ})
            elif kind == "http read":
                r = await c.get("/registry/messagegroups", params={"inline": "messages"})
            elif kind == "write":
                gid = rng.choice(GROUPS)
                r = await c.post("/graphql", headers=auth, json={"query": UPSERT, "variables": {
                    "id": gid, "name": f"soak {rng.random()}"}})
            elif kind == "validateMessage":
                r = await c.post("/graphql", json={"query": VALIDATE, "variables": {
                    "xid": rng.choice(xids), "data": {"id": rng.randint(0, 9), "name": "x" * rng.randint(0, 40)}}})
            elif kind == "federated read":
                r = await c.post("/graphql", json={"query": REMOTE_READ})
            else:
                r = await rng.choice([
                    lambda: c.post("/graphql", headers={"Authorization": "Bearer wrong-" + "x" * 30},
                                   json={"query": LOCAL_READ}),
                    lambda: c.post("/graphql", json={"query": "{ registry { messagegroups(first: 2) { nodes { "}),
                    lambda: c.get("/registry/messagegroups/nope/messages/nothing"),
                    lambda: c.post("/graphql", json={"query": VALIDATE, "variables": {
                        "xid": "/messagegroups/nope/messages/nothing", "data": {}}}),
                    lambda: c.post("/graphql", json={"query": FAILING_FIRST}),
                ])()
            done[kind, r.status_code] += 1
        except httpx.HTTPError as exc:
            done[kind, type(exc).__name__] += 1


async def drive(local: Served, args: argparse.Namespace) -> tuple[list[tuple[float, float]], Counter]:
    """Load the gateway for ``args.duration`` seconds, sampling its RSS; with a probe, mark the
    probe's baseline at the end of the warm-up."""
    done: Counter = Counter()
    async with httpx.AsyncClient(base_url=local.url, timeout=60, trust_env=False,
                                 limits=httpx.Limits(max_connections=args.concurrency)) as c:
        auth = {"Authorization": f"Bearer {KEY}"}
        for gid in GROUPS:  # the groups the writes update
            await c.post("/graphql", headers=auth, json={"query": CREATE, "variables": {"id": gid}})
        found = (await c.post("/graphql", json={"query": MESSAGES})).json()
        xids = [n["xid"] for n in found["data"]["registry"]["messages"]["nodes"]]
        start = time.monotonic()
        until = start + args.duration
        rng = random.Random(7)
        clients = [asyncio.create_task(client_loop(c, until, xids, done, random.Random(rng.random())))
                   for _ in range(args.concurrency)]
        samples = [(0.0, local.rss_mb())]
        marked = local.probe is None
        while time.monotonic() < until:
            await asyncio.sleep(min(args.sample, max(0.0, until - time.monotonic())))
            if not marked and time.monotonic() - start >= args.warmup:
                local.signal(signal.SIGUSR1)
                marked = True
            if args.trim:  # free pages handed back first: what stays is memory in use (or pinned)
                local.signal(signal.SIGWINCH)
                await asyncio.sleep(1)
            samples.append((time.monotonic() - start, local.rss_mb()))
            print(f"  {samples[-1][0]:7.0f} s  RSS {samples[-1][1]:7.1f} MB  requests {sum(done.values())}",
                  flush=True)
        await asyncio.gather(*clients)
    return samples, done


def print_probe(report: dict) -> None:
    """The probe's figures, baseline to end, and the Python allocations that grew most."""
    mb = 1024 * 1024
    print("memory at the end of the warm-up -> at the end (MB):")
    for name, before in report["baseline"].items():
        after = report["end"][name]
        print(f"  {name:21} {before / mb:8.2f} -> {after / mb:8.2f}  ({(after - before) / mb:+.2f})")
    print(f"  RSS after malloc_trim {report['rss after malloc_trim'] / mb:.2f}")
    if not report["top"]:
        return
    print("Python allocations that grew most (size diff, count diff, innermost frames first):")
    for stat in report["top"][:12]:
        frames = " <- ".join(f.replace(str(REPO) + "/", "") for f in reversed(stat["traceback"][-4:]))
        print(f"  {stat['size_diff'] / 1024:+9.1f} kB {stat['count_diff']:+7d}  {frames}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="10 s, sampled every second (checks the script runs)")
    parser.add_argument("--duration", type=float, default=1200.0, help="seconds of load (default 20 minutes)")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds left out of the slope")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--probe", action="store_true",
                        help="diagnose: heap figures inside the served gateway (see above)")
    parser.add_argument("--trace", action="store_true", help="diagnose: --probe, and tracemalloc from the warm-up on")
    parser.add_argument("--trim", action="store_true", help="diagnose: --probe, and malloc_trim before each sample")
    args = parser.parse_args()
    if args.smoke:
        args.duration, args.sample, args.warmup = 10.0, 1.0, 2.0
    report = None
    with tempfile.TemporaryDirectory(prefix="xreg-soak-") as tmp, \
            gateways(Path(tmp), probe=8 if args.trace else 0 if args.probe or args.trim else None) as (_, local):
        mode = ", traced" if args.trace else ", trimmed" if args.trim else ", probed" if args.probe else ""
        print(f"gateway under test {local.url} (pid {local.process.pid if local.process else '?'}), "
              f"{args.duration:.0f} s, {args.concurrency} clients{mode}")
        samples, done = asyncio.run(drive(local, args))
        if local.probe is not None:
            report = local.probed()
        unawaited = local.log.read_text(errors="replace").count("was never awaited")
    steady = [(t, r) for t, r in samples if t >= args.warmup]
    slope, error = fit(steady)
    half = len(steady) // 2
    first_half, second_half = slope_per_10_min(steady[:half + 1]), slope_per_10_min(steady[half:])
    flat = verdict(slope, error)
    print(f"RSS first {samples[0][1]:.1f} MB, after warm-up {steady[0][1] if steady else float('nan'):.1f} MB, "
          f"last {samples[-1][1]:.1f} MB, peak {max(r for _, r in samples):.1f} MB ({len(samples)} samples)")
    print(f"RSS slope after {args.warmup:.0f} s warm-up: {slope:+.2f} ± {error:.2f} MB per 10 minutes "
          f"(first half {first_half:+.2f}, second half {second_half:+.2f}; whole run "
          f"{slope_per_10_min(samples):+.2f}): {flat} (flat: below {FLAT_MB_PER_10_MIN:g} MB per 10 minutes "
          f"or within two standard errors of zero)")
    if report is not None:
        print_probe(report)
    print(f"requests: {sum(done.values())} in {args.duration:.0f} s")
    for (kind, status), n in sorted(done.items(), key=lambda x: (x[0][0], str(x[0][1]))):
        print(f"  {kind:16} {status!s:>22}  {n}")
    print(f"'never awaited' warnings in the server's log: {unawaited}")
    print(f"summary: RSS last / first {samples[-1][1] / samples[0][1]:.2f}×, "
          f"slope {slope:+.2f} ± {error:.2f} MB per 10 minutes, {flat}, {unawaited} 'never awaited' warnings")
    if unawaited:
        sys.exit("coroutines were left un-awaited: see the server's log")


if __name__ == "__main__":
    main()
