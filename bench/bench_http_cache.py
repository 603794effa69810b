"""HTTP caching benchmark: what a revalidation (``If-None-Match`` → 304) costs against the full
response it replaces, measured in the same run over the 117-feed corpus.

The gateway app runs in this process behind ``httpx.ASGITransport`` (no sockets, so the figures
are the gateway's own time); each target is requested one at a time, the full ``GET`` and its
revalidation alternating, and the p50 of each is printed with their ratio. Targets: GraphQL's
endpoint page (``bench_graphql.py``'s query) over ``GET``, and an xRegistry HTTP API page of
50 message groups with their messages inlined. Also printed: the bytes of an automatic persisted
query's request (the hash alone) against the full query's.

``--smoke``: a sample of the corpus (3 feeds), 2 runs — every step, in seconds.

Usage: python bench/bench_http_cache.py [--runs 40] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from gateway.app import create_app  # noqa: E402
from tests.corpus import corpus_sample  # noqa: E402
from xreg.config import Settings  # noqa: E402
from xreg.documents.normalise import normalise  # noqa: E402
from xreg.documents.reader import read_document  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402

CORPUS = REPO / "tests" / "data" / "xreg" / "rts__ALL-117-feeders-merged.xreg.json"
ENDPOINT_PAGE = """{ registry { endpoints(first: 50) { totalCount pageInfo { hasNextPage endCursor }
  nodes { xid name protocol usage messagegroups { xid name messages(first: 20) {
    totalCount nodes { xid name envelope protocol dataschemaformat } } } } } } }"""
REGISTRY_PAGE = "/registry/messagegroups?limit=50&inline=messages"


async def timed(client: httpx.AsyncClient, url: str, params: dict[str, str] | None, headers: dict[str, str],
                status: int) -> float:
    started = time.perf_counter()
    response = await client.get(url, params=params, headers=headers)
    elapsed = time.perf_counter() - started
    assert response.status_code == status, (response.status_code, response.text[:200])
    return elapsed


async def main(runs: int, smoke: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "registry.db"
        registry = LocalRegistry(SQLiteStore(db), registry_id="bench", base_url="http://bench/registry")
        corpus = corpus_sample(Path(tmp) / "sample.json") if smoke else CORPUS
        async with registry:
            await registry.apply_document(normalise(read_document(corpus))[0])
        app = create_app(Settings(data_dir=Path(tmp), registry_id="bench", base_url="http://bench/registry",
                                  config=None), registry=LocalRegistry(SQLiteStore(db), registry_id="bench",
                                                                       base_url="http://bench/registry"))
        async with app.router.lifespan_context(app), \
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
            rows = []
            for name, url, params in (("graphql endpoint page", "/graphql", {"query": ENDPOINT_PAGE}),
                                      ("registry groups page", REGISTRY_PAGE, None)):
                first = await client.get(url, params=params)
                assert "etag" in first.headers, first.text[:300]
                etag, size = first.headers["etag"], len(first.content)
                full, revalidated = [], []
                for _ in range(runs):
                    full.append(await timed(client, url, params, {}, 200))
                    revalidated.append(await timed(client, url, params, {"If-None-Match": etag}, 304))
                rows.append((name, size, statistics.median(full) * 1e3, statistics.median(revalidated) * 1e3))
    print(f"{'target':26} {'body bytes':>10} {'200 p50 ms':>11} {'304 p50 ms':>11} {'304/200':>8}")
    for name, size, full_ms, cached_ms in rows:
        print(f"{name:26} {size:>10} {full_ms:>11.2f} {cached_ms:>11.2f} {cached_ms / full_ms:>8.3f}")
    whole = len(json.dumps({"query": ENDPOINT_PAGE}))
    hashed = len(json.dumps({"extensions": {"persistedQuery": {
        "version": 1, "sha256Hash": hashlib.sha256(ENDPOINT_PAGE.encode()).hexdigest()}}}))
    print(f"APQ request body: {hashed} bytes with the hash alone, {whole} with the query ({hashed / whole:.2f})")
    print("summary: a revalidation's time against the full response's: " + ", ".join(
        f"{name} {cached_ms / full_ms:.3f}×" for name, _, full_ms, cached_ms in rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    asyncio.run(main(2 if args.smoke else args.runs, args.smoke))
