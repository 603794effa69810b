"""GraphQL's fixed costs, one at a time: what a request pays around execution, what an entity's
object costs to make, and what the collector's gen-1 threshold does to the endpoint page.

1. **Around execution.** ``{ __typename }`` through ``GatewaySchema.execute`` (the operation
   pipeline: parse and validation caches, limits, metrics, the current model) against
   graphql-core's ``execute`` of the same parsed document with the same executor, and against
   strawberry's own ``Schema.execute`` with the gateway's four concerns as schema extensions
   (``_Hooked`` below: what the gateway ran before ``resolvers/operation.py``). CPU µs, medians.
2. **An entity's object.** ``node_of(Message, entity)`` against ``Message(entity=entity)``.
3. **A collector threshold** (``--gen1 50``, ``--gen0 5000``): the endpoint page of
   ``bench_graphql.py`` with CPython's thresholds ``(700, 10, 10)`` and with ``(700, N, 10)`` or
   ``(N, 10, 10)``, alternating every 10 requests in one process; mean CPU ms of GraphQL and of
   the baseline under each, and the collector's mean CPU ms per GraphQL request. Given either
   option, the script runs this section alone.
4. **Message + schema, step by step.** ``bench_graphql.py``'s "message + schema" query built up
   one step at a time (the lookup, the message's own fields, the reference to its schema, the
   schema), against its baseline, one store read, and the same read through a request's loader
   (what each of the query's two steps into the store pays around the read). CPU µs, medians,
   the order shuffled in every round.

``--smoke``: all four sections (the third with ``--gen1 50``) over a sample of the corpus (3 feeds),
a few runs each — every step, in seconds.

Usage: python bench/bench_fixed_costs.py [--runs 2000] [--step-runs 500] [--gen1 50 | --gen0 5000] [--rounds 100]
       [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_graphql  # noqa: E402
import strawberry  # noqa: E402
from graphql.execution import execute  # noqa: E402
from strawberry.execution.is_awaitable import optimized_is_awaitable  # noqa: E402
from strawberry.extensions import SchemaExtension  # noqa: E402
from strawberry.schema.config import StrawberryConfig  # noqa: E402

from adapters.base import Entity  # noqa: E402
from resolvers.context import Context  # noqa: E402
from resolvers.current_model import sync_current_model  # noqa: E402
from resolvers.execution import GatewayExecutor  # noqa: E402
from resolvers.limits import parse_document, refusals  # noqa: E402
from resolvers.mutations import Mutation  # noqa: E402
from resolvers.observed import ObservedOperation  # noqa: E402
from resolvers.queries import Query  # noqa: E402
from resolvers.reported import with_reported  # noqa: E402
from resolvers.scalars import SCALARS  # noqa: E402
from resolvers.schema import build_schema  # noqa: E402
from resolvers.types import TYPES, Message, node_of, read_field  # noqa: E402
from tests.corpus import corpus_sample  # noqa: E402
from xreg.config import Settings  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402


def _hooked_schema(limits: Any) -> strawberry.Schema:
    """The gateway's concerns as strawberry schema extensions, one each, as before the pipeline."""

    class Observed(SchemaExtension):
        def on_operation(self) -> Iterator[None]:
            with ObservedOperation() as observed:
                yield
                observed.outcome = "ok"

    class Limits(SchemaExtension):
        def on_parse(self) -> Iterator[None]:
            ctx = self.execution_context
            ctx.graphql_document = parse_document(ctx.query or "", limits.max_tokens)
            yield

        async def on_validate(self) -> AsyncIterator[None]:
            ctx = self.execution_context
            assert ctx.graphql_document is not None
            ctx.pre_execution_errors = await refusals(ctx.schema._schema, ctx.query or "", ctx.graphql_document,
                                                      ctx.operation_name, ctx.variables, limits, ctx.context)
            yield

    class Current(SchemaExtension):
        async def on_execute(self) -> AsyncIterator[None]:
            await sync_current_model(self.execution_context.context)
            yield

    class Reported(SchemaExtension):
        def on_execute(self) -> Iterator[None]:
            yield
            result = self.execution_context.result
            if result is not None:
                result.errors = with_reported(result.errors, self.execution_context.context)

    return strawberry.Schema(query=Query, mutation=Mutation, types=list(TYPES),
                             extensions=[Observed, Limits, Current, Reported],
                             execution_context_class=GatewayExecutor,
                             config=StrawberryConfig(scalar_map=SCALARS, default_resolver=read_field))


async def around_execution(settings: Settings, sources: dict[str, Any], runs: int) -> dict[str, float]:
    schema = build_schema(settings)
    hooked = _hooked_schema(schema.limits)
    query = "{ __typename }"
    document = parse_document(query, None)

    async def pipeline() -> Any:
        return await schema.execute(query, context_value=Context(settings, sources, bench_graphql.REGISTRY_ID))

    async def hooks() -> Any:
        return await hooked.execute(query, context_value=Context(settings, sources, bench_graphql.REGISTRY_ID))

    async def core() -> Any:
        result = execute(schema._schema, document, context_value=Context(settings, sources, bench_graphql.REGISTRY_ID),
                         is_awaitable=optimized_is_awaitable, executor_class=GatewayExecutor)
        return await result if optimized_is_awaitable(result) else result

    targets = {"GatewaySchema.execute (the pipeline)": pipeline, "strawberry with 4 schema extensions": hooks,
               "graphql-core execute alone": core}
    for run in targets.values():
        assert (await run()).data == {"__typename": "Query"}
    print(f"1. {query}, CPU µs per request (median of {runs}, interleaved)")
    medians = await _medians(targets, runs)
    for name, median in medians.items():
        print(f"   {name:40s} {median:8.1f}")
    return medians


async def _medians(targets: dict[str, Any], runs: int, shuffled: bool = False) -> dict[str, float]:
    """Each target's median CPU µs over ``runs`` rounds of them all, in order or ``shuffled``."""
    times: dict[str, list[float]] = {name: [] for name in targets}
    order = list(targets.items())
    for _ in range(runs):
        if shuffled:
            random.shuffle(order)
        for name, run in order:
            started = time.process_time()
            await run()
            times[name].append(time.process_time() - started)
    return {name: statistics.median(spent) * 1e6 for name, spent in times.items()}


def objects(runs: int) -> None:
    entity = Entity(bench_graphql.REGISTRY_ID, "/messagegroups/g/messages/m", "resource", "messagegroups/messages",
                    {}, None)
    made = timeit.repeat(lambda: node_of(Message, entity), number=runs, repeat=5)
    init = timeit.repeat(lambda: Message(entity=entity), number=runs, repeat=5)
    print(f"2. an entity's object, µs (best of 5 × {runs}): node_of {min(made) / runs * 1e6:.2f}, "
          f"Message(entity=…) {min(init) / runs * 1e6:.2f}; instance attributes "
          f"{len(vars(node_of(Message, entity)))} against {len(vars(Message(entity=entity)))}")


async def thresholds(settings: Settings, sources: dict[str, Any], registry: LocalRegistry,
                     other: tuple[int, int, int], rounds: int) -> None:
    schema = build_schema(settings)
    query = bench_graphql.QUERIES["endpoint page"]
    baseline = bench_graphql.BASELINES["endpoint page"]
    cpython = (700, 10, 10)
    spent: dict[tuple[int, int, int], tuple[list[float], list[float], list[float]]] = {
        cpython: ([], [], []), other: ([], [], [])}
    clock = bench_graphql.CollectorClock()
    for _ in range(5):
        await schema.execute(query, context_value=Context(settings, sources, bench_graphql.REGISTRY_ID))
    gc.callbacks.append(clock)
    try:
        for n in range(rounds):
            for setting in (cpython, other) if n % 2 == 0 else (other, cpython):
                gc.set_threshold(*setting)
                for _ in range(10):
                    clock.spent = 0.0
                    started = time.process_time()
                    await schema.execute(query, context_value=Context(settings, sources, bench_graphql.REGISTRY_ID))
                    spent[setting][0].append(time.process_time() - started)
                    spent[setting][2].append(clock.spent)
                    started = time.process_time()
                    await baseline(registry)
                    spent[setting][1].append(time.process_time() - started)
    finally:
        gc.callbacks.remove(clock)
        gc.set_threshold(*cpython)
    print(f"3. endpoint page, CPU ms per request (mean of {rounds * 10} each, thresholds alternating every 10)")
    for setting, (graphql, base, collector) in spent.items():
        print(f"   gc thresholds {setting!s:17s} graphql {statistics.mean(graphql) * 1e3:7.2f}  "
              f"baseline {statistics.mean(base) * 1e3:7.2f}  collector during graphql "
              f"{statistics.mean(collector) * 1e3:5.2f}")


async def message_steps(settings: Settings, sources: dict[str, Any], registry: LocalRegistry,
                        runs: int) -> dict[str, float]:
    schema = build_schema(settings)
    message = bench_graphql.MESSAGE
    own = "xid name envelope envelopemetadata dataschemaformat"
    def on_message(selection: str) -> str:
        return '{ lookup(xid: "MESSAGE") { SELECTION } }'.replace("MESSAGE", message).replace("SELECTION", selection)

    steps = {
        "{ __typename }": "{ __typename }",
        "lookup { __typename }": on_message("__typename"),
        "+ the message's own fields": on_message(f"... on Message {{ {own} }}"),
        "+ dataschema { xid }": on_message(f"... on Message {{ {own} dataschema {{ xid }} }}"),
        "+ schema { xid }": on_message(f"... on Message {{ {own} dataschema {{ xid schema {{ xid }} }} }}"),
        "the whole query": bench_graphql.QUERIES["message + schema"],
    }
    targets: dict[str, Any] = {}
    for name, query in steps.items():
        async def run(query: str = query) -> None:
            result = await schema.execute(query, context_value=Context(settings, sources, bench_graphql.REGISTRY_ID))
            assert not result.errors, result.errors
        targets[name] = run

    async def baseline() -> None:
        await bench_graphql.BASELINES["message + schema"](registry)

    async def store_read() -> None:
        await registry.store.get_many([message.lower()])

    async def loader_read() -> None:
        context = Context(settings, sources, bench_graphql.REGISTRY_ID)
        await context.loaders.entity(bench_graphql.REGISTRY_ID, message, None)

    targets.update({"baseline (the same JSON from the store)": baseline, "one store read (get_many)": store_read,
                    "the same read through a request's loader": loader_read})
    for run in targets.values():
        await run()
    print(f"4. message + schema step by step, CPU µs per request (median of {runs}, shuffled)")
    medians = await _medians(targets, runs, shuffled=True)
    for name, median in medians.items():
        print(f"   {name:45s} {median:8.1f}")
    return medians


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="requests (1) and objects (2) timed")
    ap.add_argument("--step-runs", type=int, default=500, help="rounds of the message + schema steps (4)")
    ap.add_argument("--gen1", type=int, help="also compare this gen-1 threshold with CPython's 10 (3)")
    ap.add_argument("--gen0", type=int, help="also compare this gen-0 threshold with CPython's 700 (3)")
    ap.add_argument("--rounds", type=int, default=100, help="rounds of 10 requests per threshold (3)")
    ap.add_argument("--smoke", action="store_true", help="the smallest run of every section (tests/bench)")
    args = ap.parse_args()
    if args.gen0 is not None and args.gen1 is not None:
        ap.error("one threshold at a time: --gen0 or --gen1")
    if args.smoke:
        args.runs, args.step_runs, args.rounds = 5, 2, 1
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_sample(Path(tmp) / "sample.json") if args.smoke else bench_graphql.CORPUS
        async with bench_graphql.corpus_registry(corpus) as (settings, registry, sources):
            if args.gen0 is not None:  # section 3 alone
                await thresholds(settings, sources, registry, (args.gen0, 10, 10), args.rounds)
            elif args.gen1 is not None:
                await thresholds(settings, sources, registry, (700, args.gen1, 10), args.rounds)
            if (args.gen0 is None and args.gen1 is None) or args.smoke:
                around = await around_execution(settings, sources, args.runs)
                objects(args.runs * 50)
                if args.smoke:
                    await thresholds(settings, sources, registry, (700, 50, 10), args.rounds)
                steps = await message_steps(settings, sources, registry, args.step_runs)
                pipeline = around["GatewaySchema.execute (the pipeline)"] / around["graphql-core execute alone"]
                whole = steps["the whole query"] / steps["baseline (the same JSON from the store)"]
                print(f"summary: GatewaySchema.execute {pipeline:.2f}× graphql-core's execute alone for "
                      f"{{ __typename }}; message + schema {whole:.2f}× its baseline")


if __name__ == "__main__":
    asyncio.run(main())
