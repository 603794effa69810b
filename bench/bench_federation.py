"""Federation benchmark: one GraphQL query resolving references across three remote registries,
cold and warm cache, with the remote requests it made, against baselines measured in the same run.

Three remotes — gateways of our own, each in its own process on 127.0.0.1, serving real documents
(contoso ERP; Sparkplug B + inkjet + lightbulb; GTFS) and adding ``--delay`` to every request
to stand for the network — and the gateway under test (in this process, queried through ASGI).
Its local registry holds one message group per remote whose messages name a base message in
that remote (``basemessageuri`` as absolute URLs), a schema reference into the ERP remote, and an
endpoint referencing every remote message group. The query reads them all: endpoint → message
groups, messages → base message, effective definition, data schema.

The query asks for the pages it reads (one endpoint, three message groups, up to 100 messages
each), as a user's query would: its estimated cost (3,631) fits the gateway's default ceiling
(``XREG_GRAPHQL_MAX_COST``, 50,000). Some base messages of the real documents name a data schema
their own registry does not hold (``…/versions/v1.0:Payload`` in Sparkplug B): those come back as
``unresolved_reference`` errors beside the data, the same ones federated and local (checked);
any other error stops the run.

**Waves**: the remote requests of the last cold query, each placed one wave after the latest
wave among the requests that had ended when it started (so requests sent together share a
wave, and a request sent only once another came back is one wave later); the waiting between
waves is the time from the last answer of a wave to the first request of the next (gateway work,
and the executor's turns), and the gateway's CPU time in it (this process's: the remotes run in
their own). Unlike the times, the number of waves does not move with the load.

Baselines: **local** — the same query on a gateway whose own registry holds the three documents
and the same entities with relative references (no federation at all); **round trip** — one
plain GET of one entity from a remote (the network floor per remote request).

Usage: python bench/bench_federation.py [--delay 0.02] [--runs 7] [--messages 50] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from adapters import http_client  # noqa: E402
from gateway.app import create_app  # noqa: E402
from tests.corpus import XREG_DATA  # noqa: E402
from tests.federation.servers import GatewayServer  # noqa: E402
from xreg.config import Settings  # noqa: E402
from xreg.documents.normalise import normalise  # noqa: E402
from xreg.documents.reader import read_document  # noqa: E402

REMOTES = {
    "erp": ["contoso-erp-jsons07.xreg.json"],
    "iot": ["mqtt-sparkplugB.xreg.json", "inkjet-proto3.xreg.json", "lightbulb-avro.xreg.json"],
    "transit": ["rts__gtfs.xreg.json"],
}
SCHEMA = "/schemagroups/Contoso.ERP/schemas/Contoso.ERP.EmployeeData/versions/1"
QUERY = """{ registry {
  endpoints(first: 1) { nodes { xid messagegroups { registryid xid description } } }
  messagegroups(first: 3, filter: {raw: ["messagegroupid=fan-*"]}) { nodes { xid messages(first: 100) { nodes {
    xid basemessage { registryid xid protocol } effective
    dataschema { registryid schema { xid format } document } } } } } } }"""


def referring_document(
    bases: dict[str, list[str]], groups: dict[str, list[str]], root: dict[str, str],
) -> dict[str, Any]:
    """The local entities: per remote a group of messages based on that remote's messages, one
    message with a data schema in the ERP remote, an endpoint referencing every remote group.
    ``root`` gives each remote's root URL (``""``: the references are relative XIDs)."""
    doc: dict[str, Any] = {"messagegroups": {}, "endpoints": {"everything": {
        "usage": ["consumer"], "protocol": "HTTP",
        "messagegroups": [root[rid] + g for rid, gs in groups.items() for g in gs]}}}
    for rid, xids in bases.items():
        doc["messagegroups"][f"fan-{rid}"] = {"messages": {
            f"m{i:03d}": {"basemessageuri": root[rid] + x} for i, x in enumerate(xids)}}
    doc["messagegroups"]["fan-erp"]["messages"]["m000"].update(
        dataschemaformat="JsonSchema/draft-07", dataschemauri=root["erp"] + SCHEMA)
    return doc


class Waves:
    """Times and URLs of the remote requests sent while recording
    (``adapters.http_client.RemoteClient.get`` wrapped for the benchmark)."""

    def __init__(self) -> None:
        #: per request: its start, its end and its URL (with its query string, when it had one)
        self.spans: list[tuple[float, float, str]] = []
        #: the process's CPU time at each span's start and end (by span)
        self.cpu: dict[tuple[float, float], tuple[float, float]] = {}
        self._get = http_client.RemoteClient.get
        waves = self

        async def get(client: Any, url: str, *rest: Any, **options: Any) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return await waves._get(client, url, *rest, **options)
            finally:
                ended = time.perf_counter()
                params = options.get("params") or (rest[0] if rest else None) or []
                query = "&".join(f"{k}={v}" for k, v in params)
                waves.spans.append((started, ended, f"{url}?{query}"))
                waves.cpu[(started, ended)] = (cpu, time.process_time())

        http_client.RemoteClient.get = get  # type: ignore[method-assign,assignment]

    def close(self) -> None:
        http_client.RemoteClient.get = self._get  # type: ignore[method-assign]

    def numbered(self) -> tuple[list[tuple[float, float, str]], list[int]]:
        """The spans sorted by start, and each one's wave: one after the latest wave among the
        requests that had ended when it started."""
        spans = sorted(self.spans)
        wave: list[int] = []
        for start, _, _ in spans:
            before = [wave[i] for i, (_, end, _) in enumerate(spans[:len(wave)]) if end <= start]
            wave.append(max(before, default=0) + 1)
        return spans, wave

    def count(self) -> tuple[int, list[float], list[float]]:
        """The waves, the waits between them and the CPU time spent in those waits (seconds)."""
        spans, wave = self.numbered()
        gaps, cpu = [], []
        for k in range(1, max(wave, default=0)):
            ended = max((s for s, w in zip(spans, wave, strict=True) if w == k), key=lambda s: s[1])
            nxt = min((s for s, w in zip(spans, wave, strict=True) if w == k + 1), key=lambda s: s[0])
            gaps.append(max(nxt[0] - ended[1], 0.0))
            cpu.append(max(self.cpu[nxt[:2]][0] - self.cpu[ended[:2]][1], 0.0))
        return max(wave, default=0), gaps, cpu


async def referenced(c: httpx.AsyncClient, servers: dict[str, GatewayServer], messages: int,
                     delay: float) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per remote, the XIDs of the first of its messages (``messages`` spread over the remotes) for
    local ones to be based on, and of its message groups; then every remote adds ``delay``
    seconds to each request."""
    bases, groups = {}, {}
    share = [messages // 3 + (1 if i < messages % 3 else 0) for i in range(3)]
    for (rid, server), count in zip(servers.items(), share, strict=False):
        found = (await c.get(server.base_url + "/messagegroups", params={"inline": "messages"})).json()
        groups[rid] = [g["xid"] for g in found.values()]
        bases[rid] = [m["xid"] for g in found.values() for m in (g.get("messages") or {}).values()][:count]
    for server in servers.values():
        server.wrapper.reset()
        server.wrapper.add_delay(delay)
    return bases, groups


async def round_trips(c: httpx.AsyncClient, servers: dict[str, GatewayServer], runs: int) -> list[float]:
    """Seconds of each of ``runs`` plain GETs of one entity from the ERP remote."""
    trips = []
    for _ in range(runs):
        started = time.perf_counter()
        await c.get(servers["erp"].base_url + SCHEMA.rsplit("/versions", 1)[0] + "$details")
        trips.append(time.perf_counter() - started)
    return trips


async def gateway(tmp: Path, registries: list[dict], documents: list[dict]):
    settings = Settings(data_dir=tmp, registry_id="bench", base_url="http://gw.bench/registry",
                        config_watch_seconds=0, registries=registries)
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    for doc in documents:
        await app.state.registry.apply_document(doc)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.bench", timeout=60)
    return app, client, lifespan


@dataclass
class Federated:
    """The running set-up: the remotes, what the local document references in them (their root
    URLs by id), the round trips measured, and the gateway under test with its client."""

    servers: dict[str, GatewayServer]
    bases: dict[str, list[str]]
    groups: dict[str, list[str]]
    roots: dict[str, str]
    trips: list[float]
    app: Any
    client: httpx.AsyncClient


@contextlib.asynccontextmanager
async def federated(tmp: Path, messages: int, delay: float, trips: int) -> AsyncIterator[Federated]:
    """The three remotes started (adding ``delay`` per request once ``referenced`` has read
    them), ``trips`` round trips measured, and a gateway federating them whose local registry
    holds the referring document; all stopped on the way out."""
    servers = {rid: GatewayServer(rid, docs, tmp / rid) for rid, docs in REMOTES.items()
               if (tmp / rid).mkdir() is None}
    try:
        for server in servers.values():
            server.start()
        async with httpx.AsyncClient(trust_env=False) as c:
            bases, groups = await referenced(c, servers, messages, delay)
            measured = await round_trips(c, servers, trips)
        roots = {rid: s.base_url for rid, s in servers.items()}
        registries = [{"id": rid, "kind": "xregistry", "url": url, "cache_ttl": 300} for rid, url in roots.items()]
        app, client, lifespan = await gateway(tmp / "federated", registries, [referring_document(bases, groups, roots)])
        try:
            yield Federated(servers, bases, groups, roots, measured, app, client)
        finally:
            await client.aclose()
            await lifespan.__aexit__(None, None, None)
    finally:
        for server in servers.values():
            server.stop()


async def run_query(client: httpx.AsyncClient) -> tuple[float, dict, list[str]]:
    """Seconds, the answer's data and the paths of its unresolved references (any other error
    stops the run)."""
    started = time.perf_counter()
    response = await client.post("/graphql", json={"query": QUERY})
    elapsed = time.perf_counter() - started
    body = response.json()
    errors = body.get("errors") or []
    if body.get("data") is None or any((e.get("extensions") or {}).get("code") != "unresolved_reference"
                                       for e in errors):
        raise SystemExit(f"the query failed: {errors[:2]}")
    return elapsed, body["data"], sorted("/".join(map(str, e["path"])) for e in errors)


def resolved(data: dict) -> int:
    groups = data["registry"]["messagegroups"]["nodes"]
    refs = sum(1 for g in groups for m in g["messages"]["nodes"] if m["basemessage"])
    refs += sum(1 for m in (m for g in groups for m in g["messages"]["nodes"]) if (m["dataschema"] or {}).get("schema"))
    return refs + sum(len(e["messagegroups"]) for e in data["registry"]["endpoints"]["nodes"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.02, help="seconds each remote adds to every request")
    parser.add_argument("--runs", type=int, default=7, help="repetitions per figure (the median is shown)")
    parser.add_argument("--messages", type=int, default=50, help="referring messages in all (spread over the remotes)")
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.messages = 1, 3
    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="xreg-bench-fed-"))
    async with federated(tmp, args.messages, args.delay, args.runs) as fed:
        servers, client = fed.servers, fed.client
        cold, warm, asked_cold, asked_warm = [], [], [], []
        for _ in range(args.runs):
            await fed.app.state.federation.backend.clear()
            for server in servers.values():
                server.wrapper.clear()
            waves = Waves()
            try:
                elapsed, data, dangling = await run_query(client)
            finally:
                waves.close()
            cold.append(elapsed)
            per_remote = {rid: s.wrapper.requests for rid, s in servers.items()}
            asked_cold.append(sum(per_remote.values()))
            for server in servers.values():
                server.wrapper.clear()
            elapsed, _, _ = await run_query(client)
            warm.append(elapsed)
            asked_warm.append(sum(s.wrapper.requests for s in servers.values()))
        refs = resolved(data)
    trips = fed.trips

    local_docs = [normalise(read_document(XREG_DATA / name), strict=False)[0]
                  for names in REMOTES.values() for name in names]
    local_docs.append(referring_document(fed.bases, fed.groups, {rid: "" for rid in fed.roots}))
    _, client, lifespan = await gateway(tmp / "local", [], local_docs)
    local, local_dangling = [], []
    try:
        for _ in range(args.runs):
            elapsed, _, local_dangling = await run_query(client)
            local.append(elapsed)
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    if local_dangling != dangling:
        raise SystemExit(f"unresolved references differ: federated {dangling}, local {local_dangling}")
    ms = lambda xs: f"{statistics.median(xs) * 1000:8.1f}"  # noqa: E731
    print(f"{refs} references resolved ({args.messages} base messages, 1 data schema, the endpoint's message groups) "
          f"over 3 remotes adding {args.delay * 1000:.0f} ms per request ({len(dangling)} unresolved in the "
          f"documents themselves, federated and local alike); median of {args.runs} runs; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} CPUs")
    print()
    print(f"{'target':38} {'ms':>8} {'remote requests':>16}")
    print(f"{'federated, cold cache':38} {ms(cold)} {statistics.median(asked_cold):>16.0f}")
    print(f"{'federated, warm cache':38} {ms(warm)} {statistics.median(asked_warm):>16.0f}")
    print(f"{'baseline: all local, no federation':38} {ms(local)} {0:>16}")
    print(f"{'baseline: one remote round trip':38} {ms(trips)} {1:>16}")
    print()
    print("cold − local = " + f"{(statistics.median(cold) - statistics.median(local)) * 1000:.1f} ms "
          f"≈ {(statistics.median(cold) - statistics.median(local)) / statistics.median(trips):.1f} round trips; "
          "requests of the last cold run per remote: "
          + ", ".join(f"{rid} {n}" for rid, n in per_remote.items()))
    count, gaps, cpu = waves.count()
    print(f"remote waves of the last cold query: {count}; waiting between waves: "
          + (", ".join(f"{g * 1000:.1f}" for g in gaps) or "none") + " ms (gateway CPU: "
          + (", ".join(f"{c * 1000:.1f}" for c in cpu) or "none") + " ms)")
    print(f"summary: federated {statistics.median(cold) / statistics.median(local):.1f}× the local baseline's time "
          f"with a cold cache, {statistics.median(warm) / statistics.median(local):.1f}× with a warm one, "
          f"{count} remote waves")


if __name__ == "__main__":
    asyncio.run(main())
