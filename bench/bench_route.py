"""What the HTTP route costs beyond executing the query: ``POST /graphql`` against
``schema.execute``, and the baseline's route against its function, in one process.

``bench_graphql.py`` compares GraphQL with the baseline twice: over HTTP (throughput) and
in-process (the query alone). This script tells how much of the gap between the two is the
routes' own work (reading and checking the request, the operation's document and context,
encoding the answer; for the baseline, Starlette's ``JSONResponse``): both routes are called
through the real app over ``httpx.ASGITransport`` (no sockets), each query and each target in
turn, shuffled every round. CPU ms, medians.

Then the answer's encoding alone, CPU ms (medians of 200): the standard library's encoder (what
the baseline's ``JSONResponse`` uses) against the gateway's (``xreg/json_encoding.py``), at
once and in paced pieces (``resolvers/pacing.py``'s ``encode_paced``, the way answers of costly
operations are encoded); and the client's parse of the answer (``json.loads``), which the
GraphQL route's figure includes and the baseline route's does not.

``--smoke``: a sample of the corpus (3 feeds), 2 rounds, 5 encodings — every step, in seconds.

Usage: python bench/bench_route.py [--query "endpoint page"] [--rounds 80] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_graphql  # noqa: E402
import httpx  # noqa: E402

from adapters.local import LocalSource  # noqa: E402
from resolvers.context import Context  # noqa: E402
from resolvers.schema import build_schema  # noqa: E402
from tests.corpus import corpus_sample  # noqa: E402
from xreg.config import Settings  # noqa: E402


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--query", default="endpoint page", choices=list(bench_graphql.QUERIES))
    ap.add_argument("--rounds", type=int, default=80, help="rounds of the four targets (medians)")
    ap.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = ap.parse_args()
    encodings = ENCODINGS
    if args.smoke:
        args.rounds, encodings = 2, 5
    query, number = bench_graphql.QUERIES[args.query], list(bench_graphql.BASELINES).index(args.query)
    baseline = bench_graphql.BASELINES[args.query]
    with tempfile.TemporaryDirectory() as tmpdir:
        db = Path(tmpdir) / "registry.db"
        await bench_graphql.prepare(db, corpus_sample(Path(tmpdir) / "sample.json") if args.smoke
                                    else bench_graphql.CORPUS)
        app = bench_graphql.build_app(db)  # the gateway's app plus /baseline/{n}
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            registry = app.state.registry
            settings = Settings(data_dir=db.parent, registry_id=bench_graphql.REGISTRY_ID)
            sources = {bench_graphql.REGISTRY_ID: LocalSource(registry)}
            schema = build_schema(settings)

            async def graphql_route() -> None:
                response = await client.post("/graphql", json={"query": query})
                assert response.status_code == 200 and "errors" not in response.json(), response.text

            async def execute() -> None:
                result = await schema.execute(query, context_value=Context(settings, sources,
                                                                           bench_graphql.REGISTRY_ID))
                assert not result.errors, result.errors

            async def baseline_route() -> None:
                response = await client.get(f"/baseline/{number}")
                assert response.status_code == 200, response.text

            async def baseline_function() -> None:
                await baseline(registry)

            targets: dict[str, Callable[[], Awaitable[None]]] = {
                "GraphQL route": graphql_route, "schema.execute": execute,
                "baseline route": baseline_route, "baseline function": baseline_function}
            assert (await client.post("/graphql", json={"query": query})).json()["data"] == \
                (await client.get(f"/baseline/{number}")).json()["data"]
            times: dict[str, list[float]] = {name: [] for name in targets}
            order = list(targets.items())
            for _ in range(5):  # warm-up
                for _, run in order:
                    await run()
            for _ in range(args.rounds):
                random.shuffle(order)
                for name, run in order:
                    started = time.process_time()
                    await run()
                    times[name].append(time.process_time() - started)
            answer = {"data": (await schema.execute(query, context_value=Context(
                settings, sources, bench_graphql.REGISTRY_ID))).data}
            encoded = await encoding_ms(answer, encodings)
    ms = {name: statistics.median(spent) * 1e3 for name, spent in times.items()}
    print(f"{args.query}: CPU ms per request, median of {args.rounds}, in-process over ASGI, shuffled")
    for name, value in ms.items():
        print(f"  {name:20s} {value:7.2f}")
    graphql_http, baseline_http = ms["GraphQL route"] - ms["schema.execute"], \
        ms["baseline route"] - ms["baseline function"]
    print(f"the route beyond the query: GraphQL {graphql_http:.2f} ms, baseline {baseline_http:.2f} ms "
          f"(the client's own work included in both); GraphQL's route costs {graphql_http - baseline_http:+.2f} ms "
          "more")
    print(f"throughput ratio from these medians: routes {ms['baseline route'] / ms['GraphQL route']:.0%}, "
          f"the queries alone {ms['baseline function'] / ms['schema.execute']:.0%}")
    size, *figures = encoded
    print(f"the answer's encoding ({size / 1024:.0f} KiB), CPU ms, median of {encodings}: " + ", ".join(
        f"{name} {value:.3f}" for name, value in zip(("standard library at once", "gateway at once",
                                                        "gateway in paced pieces", "client's parse"), figures,
                                                       strict=True)))
    print(f"summary: GraphQL's CPU over the baseline's: through the routes "
          f"{ms['GraphQL route'] / ms['baseline route']:.2f}×, "
          f"the queries alone {ms['schema.execute'] / ms['baseline function']:.2f}×")


#: encodings of the answer timed (medians)
ENCODINGS = 200


async def encoding_ms(answer: Any, encodings: int = ENCODINGS) -> tuple[int, float, float, float, float]:
    """The answer's size, and the CPU ms of encoding it each way and of parsing it (medians)."""
    from resolvers.pacing import encode_paced
    from xreg.json_encoding import dumps

    standard = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    text = dumps(answer)
    assert standard(answer).encode("utf-8") == text == await encode_paced(answer, 0.004)

    async def paced() -> None:
        await encode_paced(answer, 0.004)

    async def timed(run: Callable[[], Any]) -> float:
        spent = []
        for _ in range(encodings):
            started = time.process_time()
            done = run()
            if asyncio.iscoroutine(done):
                await done
            spent.append(time.process_time() - started)
        return statistics.median(spent) * 1e3

    return (len(text), await timed(lambda: standard(answer)), await timed(lambda: dumps(answer)), await timed(paced),
            await timed(lambda: json.loads(text)))


if __name__ == "__main__":
    asyncio.run(main())
