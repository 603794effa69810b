"""GraphQL benchmark: three representative queries over the 117-feed corpus, each against a
baseline measured in the same run.

The baseline is a plain Starlette route on the same app and the same store that returns exactly
the JSON of the GraphQL response's ``data`` (checked before timing), reading the store with the
same batched calls but without GraphQL, loaders or xRegistry views. Both are served by one
uvicorn process on 127.0.0.1; this process drives them with a fixed number of concurrent
clients and prints requests/s and p50 / p99 latency. In this process it then times one request
at a time for both (no HTTP, CPU time) and prints the µs per resolved field: the query's time
divided by the fields in its response, and GraphQL's extra time over the baseline divided the
same way.

``--smoke``: a sample of the corpus (3 feeds) and a handful of requests — every step, in seconds.

Usage: python bench/bench_graphql.py [--requests 400] [--concurrency 8] [--runs 100] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from gateway import gc_tuning  # noqa: E402
from tests.corpus import corpus_sample  # noqa: E402
from xreg.config import Settings  # noqa: E402
from xreg.registry.filters import parse_filter  # noqa: E402
from xreg.registry.materialise import derived_of, message_ctypes  # noqa: E402
from xreg.registry.reads import Selection, collection_tree, count, select  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.semantics import Cursor, cursor_for  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402

CORPUS = REPO / "tests" / "data" / "xreg" / "rts__ALL-117-feeders-merged.xreg.json"
REGISTRY_ID = "bench"
MESSAGE = "/messagegroups/IO.AISstream/messages/IO.AISstream.PositionReport"
#: Each target is loaded this many times in turn, alternating with the other.
ROUNDS = 4

QUERIES: dict[str, str] = {
    "endpoint page": """{ registry { endpoints(first: 50) { totalCount pageInfo { hasNextPage endCursor }
      nodes { xid name protocol usage messagegroups { xid name messages(first: 20) {
        totalCount nodes { xid name envelope protocol dataschemaformat } } } } } } }""",
    "message + schema": """{ lookup(xid: "%s") { ... on Message { xid name envelope envelopemetadata
      dataschemaformat dataschema { xid schema { xid format versionid } document } } } }""".replace("%s", MESSAGE),
    "message search": """{ registry { messages(first: 50, filter: {format: "JsonStructure*",
      raw: ["envelopemetadata.type.value=*Report*"]}) {
        totalCount nodes { xid name envelope dataschemaformat } } } }""",
}


# -- the baseline: the same JSON straight from the store ----------------------------------------


def _pick(doc: dict[str, Any], *names: str) -> dict[str, Any]:
    return {n: doc.get(n) for n in names}


def _attributes(rec: Any) -> dict[str, Any]:
    """A stored resource's attributes as GraphQL shows them: its default version's, with its
    materialisation (what it inherits from its ``basemessageuri`` chain) laid over them."""
    derived = derived_of(rec.kind, rec.doc)
    default = rec.doc.get("default") or {}
    return {**default, **derived["attributes"]} if derived else default


async def baseline_endpoint_page(registry: LocalRegistry) -> dict[str, Any]:
    store = registry.store
    page = await select(store, Selection("endpoints", limit=50))
    total = await count(store, Selection("endpoints"))
    refs = {e.key: [r for r in (e.doc.get("messagegroups") or []) if isinstance(r, str) and r.startswith("/")]
            for e in page.items}
    groups = await store.get_many([r for rs in refs.values() for r in rs])
    keys = sorted({g.key for g in groups.values()})
    messages = (await select(store, Selection("messagegroups/messages", after=Cursor(min(k + "/" for k in keys)),
                                              before=Cursor(max(k + "0" for k in keys))))).items if keys else []
    by_group: dict[str, list] = {k: [] for k in keys}
    for m in messages:
        by_group.get(m.key.rsplit("/", 2)[0], []).append(m)

    def group_json(key: str) -> dict[str, Any]:
        g, ms = groups[key], by_group[key]
        return {"xid": g.xid, "name": g.doc.get("name"), "messages": {"totalCount": len(ms), "nodes": [
            {"xid": m.xid, **_pick(_attributes(m), "name", "envelope", "protocol", "dataschemaformat")}
            for m in ms[:20]]}}

    nodes = [{"xid": e.xid, **_pick(e.doc, "name", "protocol", "usage"),
              "messagegroups": [group_json(r.lower()) for r in refs[e.key] if r.lower() in groups]}
             for e in page.items]
    end = cursor_for(page.items[-1], None).encode() if page.items else None
    return {"registry": {"endpoints": {"totalCount": total, "pageInfo": {"hasNextPage": page.has_next,
                                                                          "endCursor": end}, "nodes": nodes}}}


async def baseline_message(registry: LocalRegistry) -> dict[str, Any]:
    store = registry.store
    msg = (await store.get_many([MESSAGE]))[MESSAGE.lower()]
    default = _attributes(msg)
    target = default["dataschemauri"]
    schema = (await store.get_many([target]))[target.lower()]
    sdefault = schema.doc["default"]
    return {"lookup": {"xid": msg.xid, **_pick(default, "name", "envelope", "envelopemetadata", "dataschemaformat"),
                       "dataschema": {"xid": target,
                                      "schema": {"xid": schema.xid, **_pick(sdefault, "format", "versionid")},
                                      "document": sdefault.get("schema")}}}


async def baseline_search(registry: LocalRegistry) -> dict[str, Any]:
    from xreg.registry.filters import FilterExpression, Filters

    store, found, total = registry.store, [], 0
    for ctype in ("messagegroups/messages", "endpoints/messages"):
        expr = parse_filter("dataschemaformat=JsonStructure*,envelopemetadata.type.value=*Report*",
                            collections=collection_tree(registry.model, ctype))
        sel = Selection(ctype, filters=Filters((FilterExpression(expr.terms),)), limit=50,
                        materialised=message_ctypes(registry.model))
        found += (await select(store, sel)).items
        total += await count(store, sel)
    found.sort(key=lambda r: r.key)
    return {"registry": {"messages": {"totalCount": total, "nodes": [
        {"xid": m.xid, **_pick(_attributes(m), "name", "envelope", "dataschemaformat")} for m in found[:50]]}}}


BASELINES: dict[str, Callable[[LocalRegistry], Awaitable[dict[str, Any]]]] = {
    "endpoint page": baseline_endpoint_page, "message + schema": baseline_message, "message search": baseline_search,
}


def build_app(db: Path) -> Any:
    """The gateway app over ``db``, plus ``/baseline/{n}`` for query number n."""
    from gateway.app import create_app

    registry = open_registry(db)
    app = create_app(Settings(data_dir=db.parent, registry_id=REGISTRY_ID), registry=registry)
    names = list(BASELINES)

    async def baseline(request: Request) -> JSONResponse:
        return JSONResponse({"data": await BASELINES[names[int(request.path_params["n"])]](registry)})

    app.router.routes.append(Route("/baseline/{n:int}", baseline))
    return app


# -- the load ---------------------------------------------------------------------------------


def _fields(value: Any) -> int:
    """Resolved fields in a response: every key of every object."""
    if isinstance(value, dict):
        return len(value) + sum(_fields(v) for v in value.values())
    if isinstance(value, list):
        return sum(_fields(v) for v in value)
    return 0


async def load(
    send: Callable[[], Awaitable[httpx.Response]], requests: int, concurrency: int,
) -> tuple[list[float], float]:
    """Latencies of ``requests`` requests sent by ``concurrency`` clients, and the wall time."""
    latencies: list[float] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            t0 = time.perf_counter()
            response = await send()
            latencies.append(time.perf_counter() - t0)
            response.raise_for_status()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - t0


async def compare(targets: dict[str, Callable[[], Awaitable[httpx.Response]]], requests: int, concurrency: int,
                  rounds: int = ROUNDS, warmup: int = 20) -> dict[str, dict[str, float]]:
    """Load each target in turn, ``rounds`` times (so that drift in the machine's load hits them
    alike); requests/s and p50 / p99 latency over all rounds."""
    for send in targets.values():  # warm-up
        for _ in range(warmup):
            (await send()).raise_for_status()
    runs: dict[str, tuple[list[float], float]] = {name: ([], 0.0) for name in targets}
    for _ in range(rounds):
        for name, send in targets.items():
            latencies, elapsed = await load(send, requests // rounds, concurrency)
            runs[name] = (runs[name][0] + latencies, runs[name][1] + elapsed)
    out = {}
    for name, (latencies, elapsed) in runs.items():
        latencies.sort()
        out[name] = {"rps": len(latencies) / elapsed, "p50_ms": statistics.median(latencies) * 1e3,
                     "p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1e3}
    return out


class CollectorClock:
    """The CPU time the garbage collector spends while this is one of ``gc.callbacks``
    (:attr:`spent`, seconds; reset it by hand)."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.spent += time.process_time() - self._started


async def in_process(db: Path, runs: int = 100) -> dict[str, tuple[int, float, float, float]]:
    """Per query: fields in the response, and the median in-process CPU time (ms) of executing
    it and of its baseline function, one request at a time, alternating, and the mean CPU time (ms)
    the garbage collector spent during a GraphQL execution (a median misses the rare full
    collections). CPU time rather than wall time: on a shared machine a wall clock also counts the
    time other processes held the CPU."""
    import gc

    from adapters.local import LocalSource
    from resolvers.context import Context
    from resolvers.schema import build_schema

    settings = Settings(data_dir=db.parent, registry_id=REGISTRY_ID)
    schema = build_schema(settings)
    out = {}
    async with open_registry(db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        gc_tuning.tune(freeze=settings.gc_freeze, gen0_threshold=settings.gc_gen0_threshold)  # as the app does
        clock = CollectorClock()

        for name, query in QUERIES.items():
            graphql, baseline, fields, gc_time = [], [], 0, 0.0
            for _ in range(runs):
                gc.callbacks.append(clock)
                clock.spent = 0.0
                t0 = time.process_time()
                result = await schema.execute(query, context_value=Context(settings, sources, REGISTRY_ID))
                graphql.append(time.process_time() - t0)
                gc.callbacks.remove(clock)
                gc_time += clock.spent
                assert not result.errors, result.errors
                fields = _fields(result.data)
                t0 = time.process_time()
                await BASELINES[name](reg)
                baseline.append(time.process_time() - t0)
            out[name] = (fields, statistics.median(graphql) * 1e3, statistics.median(baseline) * 1e3,
                         gc_time / runs * 1e3)
    return out


def _rss_mib(pid: int) -> tuple[float, float]:
    """Resident memory of process ``pid`` now and at its peak, MiB (Linux)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_registry(db: Path) -> LocalRegistry:
    """The corpus registry in ``db`` as the gateway serves it (with the base URL the baselines'
    views use); open it with ``async with``."""
    return LocalRegistry(SQLiteStore(db), registry_id=REGISTRY_ID, base_url="http://127.0.0.1/registry")


@contextlib.asynccontextmanager
async def corpus_registry(corpus: Path = CORPUS) -> AsyncIterator[tuple[Settings, LocalRegistry, dict[str, Any]]]:
    """The corpus in a temporary SQLite registry, open: the gateway's settings over it, the
    registry, and the sources a request's context takes. As in the app, the schema of those
    settings is built (``build_schema`` keeps it) before the collector is tuned. ``corpus``: the
    document loaded (a smoke run's sample)."""
    from adapters.local import LocalSource
    from resolvers.schema import build_schema

    with tempfile.TemporaryDirectory() as tmpdir:
        db = Path(tmpdir) / "registry.db"
        await prepare(db, corpus)
        settings = Settings(data_dir=db.parent, registry_id=REGISTRY_ID)
        build_schema(settings)
        async with open_registry(db) as registry:
            gc_tuning.tune(freeze=settings.gc_freeze, gen0_threshold=settings.gc_gen0_threshold)  # as the app does
            yield settings, registry, {REGISTRY_ID: LocalSource(registry)}


async def prepare(db: Path, corpus: Path = CORPUS) -> None:
    from xreg.documents.normalise import normalise
    from xreg.documents.reader import read_document

    async with LocalRegistry(SQLiteStore(db), registry_id=REGISTRY_ID) as reg:
        await reg.apply_document(normalise(read_document(corpus))[0])


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=400, help="timed requests per query and target")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--runs", type=int, default=100, help="in-process runs per query and target (medians)")
    ap.add_argument("--serve", nargs=2, metavar=("DB", "PORT"), help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = ap.parse_args()
    warmup = 20
    if args.smoke:
        args.requests, args.concurrency, args.runs, warmup = 2 * ROUNDS, 2, 2, 1
    if args.serve:
        import uvicorn

        config = uvicorn.Config(build_app(Path(args.serve[0])), host="127.0.0.1", port=int(args.serve[1]),
                                log_level="warning", access_log=False)
        await uvicorn.Server(config).serve()
        return

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmpdir:
        db = Path(tmpdir) / "registry.db"
        await prepare(db, corpus_sample(Path(tmpdir) / "sample.json") if args.smoke else CORPUS)
        port = _free_port()
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(db), str(port)], env={**os.environ})
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                while True:  # until it serves (a busy machine starts it slowly) or exits
                    try:
                        await client.get("/healthz")
                        break
                    except httpx.TransportError:
                        if server.poll() is not None:
                            raise SystemExit("the server did not start") from None
                        await asyncio.sleep(0.05)
                rows = []
                for n, (name, query) in enumerate(QUERIES.items()):
                    graphql = (await client.post("/graphql", json={"query": query})).json()
                    assert "errors" not in graphql, graphql
                    base = (await client.get(f"/baseline/{n}")).json()
                    assert base == graphql, f"{name}: the baseline does not return the same JSON"
                    measured = await compare({
                        "graphql": lambda q=query: client.post("/graphql", json={"query": q}),
                        "baseline": lambda n=n: client.get(f"/baseline/{n}"),
                    }, args.requests, args.concurrency, warmup=warmup)
                    rows.append((name, measured["graphql"], measured["baseline"]))
                rss = _rss_mib(server.pid)
            inproc = await in_process(db, args.runs)
        finally:
            server.terminate()
            server.wait(10)
    print(f"concurrency {args.concurrency}, {args.requests} requests per query and target in {ROUNDS} alternating "
          f"rounds, uvicorn on 127.0.0.1, SQLite, 117-feed corpus; machine load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, {os.cpu_count()} CPUs; "
          f"XREG_GC_FREEZE={Settings().gc_freeze}, XREG_GC_GEN0_THRESHOLD={Settings().gc_gen0_threshold}; "
          f"server RSS after the load {rss[0]:.0f} MiB, "
          f"peak {rss[1]:.0f} MiB\n")
    print("over HTTP (req/s, latency at that concurrency) and in-process, one request at a time (CPU ms, median of "
          f"{args.runs});")
    print("µs/field: in-process CPU time per resolved field, and GraphQL's extra time over the baseline per field\n")
    print(f"{'query':18}{'target':10}{'req/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'1 req ms':>10}{'fields':>8}"
          f"{'µs/field':>10}{'+µs/field':>11}")
    results = {}
    for name, g, b in rows:
        fields, g_ms, b_ms, gc_ms = inproc[name]
        per, extra = g_ms * 1e3 / fields, (g_ms - b_ms) * 1e3 / fields
        print(f"{name:18}{'graphql':10}{g['rps']:8.0f}{g['p50_ms']:9.1f}{g['p99_ms']:9.1f}{g_ms:10.2f}{fields:8d}"
              f"{per:10.1f}{extra:11.1f}")
        print(f"{'':18}{'baseline':10}{b['rps']:8.0f}{b['p50_ms']:9.1f}{b['p99_ms']:9.1f}{b_ms:10.2f}")
        print(f"{'':18}{'ratio':10}{b['rps'] / g['rps']:7.1f}x{g['p50_ms'] / b['p50_ms']:8.1f}x"
              f"{'':9}{g_ms / b_ms:9.1f}x")
        results[name] = {"graphql": {**g, "one_request_ms": g_ms, "gc_ms_mean": gc_ms},
                         "baseline": {**b, "one_request_ms": b_ms},
                         "fields": fields, "us_per_field": per, "extra_us_per_field": extra}
    print()
    for name, r in results.items():
        print(f"{name}: GraphQL throughput {100 * r['graphql']['rps'] / r['baseline']['rps']:.0f}% of the baseline's; "
              f"{r['extra_us_per_field']:+.1f} µs per field over it (in-process CPU); garbage collection "
              f"{r['graphql']['gc_ms_mean']:.2f} ms CPU per GraphQL request (mean)")
    print("\n" + json.dumps(results))
    print("summary: GraphQL's throughput over HTTP against the baseline's: " + ", ".join(
        f"{name} {r['graphql']['rps'] / r['baseline']['rps']:.2f}×" for name, r in results.items()))


if __name__ == "__main__":
    asyncio.run(main())
