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
of RSS over the samples after the warm-up and over the last half (MB per 10 minutes: growth
that levels off shows as a smaller slope in the last half), the requests made by kind and
status, and how many "never awaited" warnings the server logged.

Usage: python bench/bench_soak.py [--smoke] [--duration 1200] [--sample 10] [--warmup 60]
       [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli() -> list[str]:
    script = Path(sys.executable).with_name("xreg-gateway")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]


class Served:
    """``xreg-gateway serve`` on a data directory of its own, its log in a file."""

    def __init__(self, name: str, tmp: Path, documents: list[Path], env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / f"{name}.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("XREG_")}
        self.env.update(XREG_DATA_DIR=str(tmp / name), XREG_REGISTRY_ID=name, XREG_LOG_LEVEL="warning",
                        XREG_LOG_FORMAT="text", PYTHONWARNINGS="default", **env)
        subprocess.run([*cli(), "import", *map(str, documents)], env=self.env, check=True, capture_output=True)
        self.process: subprocess.Popen | None = None

    def start(self) -> Served:
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([*cli(), "serve", "--port", str(self.port)], env=self.env,
                                            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
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

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


@contextlib.contextmanager
def gateways(tmp: Path) -> Iterator[tuple[Served, Served]]:
    remote = Served("remote", tmp, [SAMPLES / REMOTE_DOCUMENT], {})
    local_docs = sorted(p for p in SAMPLES.glob("*.xreg.json") if p.name != REMOTE_DOCUMENT)
    try:
        remote.start()
        registries = [{"id": "remote", "kind": "xregistry", "url": remote.url + "/registry", "cache_ttl": 1,
                       "stale_while_revalidate": 1}]
        keys = [{"name": "soak", "sha256": hash_key(KEY), "scopes": ["read", "write"]}]
        local = Served("local", tmp, local_docs, {"XREG_REGISTRIES": json.dumps(registries),
                                                  "XREG_API_KEYS": json.dumps(keys)})
        try:
            yield remote, local.start()
        finally:
            local.stop()
    finally:
        remote.stop()


def slope_per_10_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(seconds, MB)`` points, in MB per 10 minutes."""
    n = len(points)
    if n < 2:
        return float("nan")
    mt = sum(t for t, _ in points) / n
    mr = sum(r for _, r in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (r - mr) for t, r in points) / var * 600 if var else float("nan")


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
        while time.monotonic() < until:
            await asyncio.sleep(min(args.sample, max(0.0, until - time.monotonic())))
            samples.append((time.monotonic() - start, local.rss_mb()))
            print(f"  {samples[-1][0]:7.0f} s  RSS {samples[-1][1]:7.1f} MB  requests {sum(done.values())}",
                  flush=True)
        await asyncio.gather(*clients)
    return samples, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="10 s, sampled every second (checks the script runs)")
    parser.add_argument("--duration", type=float, default=1200.0, help="seconds of load (default 20 minutes)")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds left out of the slope")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    if args.smoke:
        args.duration, args.sample, args.warmup = 10.0, 1.0, 2.0
    with tempfile.TemporaryDirectory(prefix="xreg-soak-") as tmp, gateways(Path(tmp)) as (_, local):
        print(f"gateway under test {local.url} (pid {local.process.pid if local.process else '?'}), "
              f"{args.duration:.0f} s, {args.concurrency} clients")
        samples, done = asyncio.run(drive(local, args))
        unawaited = local.log.read_text(errors="replace").count("was never awaited")
    steady = [(t, r) for t, r in samples if t >= args.warmup]
    print(f"RSS first {samples[0][1]:.1f} MB, after warm-up {steady[0][1] if steady else float('nan'):.1f} MB, "
          f"last {samples[-1][1]:.1f} MB, peak {max(r for _, r in samples):.1f} MB ({len(samples)} samples)")
    print(f"RSS slope after {args.warmup:.0f} s warm-up: {slope_per_10_min(steady):+.2f} MB per 10 minutes "
          f"(whole run {slope_per_10_min(samples):+.2f}, last half "
          f"{slope_per_10_min([p for p in samples if p[0] >= args.duration / 2]):+.2f})")
    print(f"requests: {sum(done.values())} in {args.duration:.0f} s")
    for (kind, status), n in sorted(done.items(), key=lambda x: (x[0][0], str(x[0][1]))):
        print(f"  {kind:16} {status!s:>22}  {n}")
    print(f"'never awaited' warnings in the server's log: {unawaited}")
    print(f"summary: RSS last / first {samples[-1][1] / samples[0][1]:.2f}×, "
          f"slope {slope_per_10_min(steady):+.2f} MB per 10 minutes, {unawaited} 'never awaited' warnings")
    if unawaited:
        sys.exit("coroutines were left un-awaited: see the server's log")


if __name__ == "__main__":
    main()
