"""How much of a query's GraphQL cost is the executor, and how much the resolvers under it.

The endpoint page of ``bench_graphql.py`` (or, ``--query "message + schema"``, its message
with its schema) is built three ways in one process, over the same SQLite copy of the 117-feed
corpus, in turn (CPU time, median of ``--runs``):

- **graphql**: the schema executes the query (``schema.execute``), as the in-process figures of
  ``bench_graphql.py``;
- **resolvers only**: the same resolvers, loaders and entities (``collection`` and the forms for
  many objects the executor calls, ``to_node``, the request's ``Loaders`` and the local source's
  ``StoredEntity``), called level by level with one call per level and the response's
  dictionaries written by hand: what a GraphQL executor with no cost of its own would spend;
- **baseline**: ``bench_graphql.py``'s baseline (the same JSON straight from the store).

The three answers are checked equal before timing. The gap between the first two is the
executor's own cost; the gap between the last two is the resolver layer's.

For message + schema, "resolvers only" calls the root look-up's and ``dataschema``'s forms for
many objects (``lookups_of``, ``dataschemas_of``) and reads the fields from the entities.

``--smoke``: both queries over a sample of the corpus (3 feeds), 2 runs — every step, in seconds.

Usage: python bench/bench_resolver_floor.py [--runs 100] [--query "message + schema"] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_graphql  # noqa: E402
from graphql import parse  # noqa: E402

from resolvers.connections import Paging  # noqa: E402
from resolvers.context import Context  # noqa: E402
from resolvers.queries import lookups_of  # noqa: E402
from resolvers.schema import build_schema  # noqa: E402
from resolvers.types import bare_registry, collection, dataschemas_of, messagegroups_of, messages_of  # noqa: E402
from tests.corpus import corpus_sample  # noqa: E402
from xreg.config import Settings  # noqa: E402


async def resolvers_only(settings: Settings, sources: dict[str, Any]) -> dict[str, Any]:
    """The endpoint page from the gateway's resolvers, one wait per level, no executor."""
    ctx = Context(settings, sources, bench_graphql.REGISTRY_ID)
    info: Any = SimpleNamespace(context=ctx)  # what these resolvers read of ``info``
    try:
        source = ctx.sources[bench_graphql.REGISTRY_ID]
        await source.check_revision(None)
        root = bare_registry(source.id).entity  # as ``Query.registry``: the root record is not read
        page = await collection(info, root, ("endpoints",), None, None, Paging(first=50))
        endpoints = page.nodes
        infos = [info] * len(endpoints)
        groups = await messagegroups_of(endpoints, infos)
        flat = [g for gs in groups for g in gs]
        messages = dict(zip(map(id, flat), await messages_of(flat, [info] * len(flat), paging=Paging(first=20)),
                            strict=True))

        def group_json(group: Any) -> dict[str, Any]:
            e, conn = group.entity, messages[id(group)]
            return {"xid": e.xid, "name": e.attribute("name"), "messages": {"totalCount": conn.count(), "nodes": [
                {"xid": m.entity.xid, **{n: m.entity.attribute(n) for n in ("name", "envelope", "protocol",
                                                                             "dataschemaformat")}}
                for m in conn.nodes]}}

        nodes = [{"xid": n.entity.xid, **{a: n.entity.attribute(a) for a in ("name", "protocol", "usage")},
                  "messagegroups": [group_json(g) for g in gs]} for n, gs in zip(endpoints, groups, strict=True)]
        total = page.count()
        info_of_page = page.info_of_page()
        return {"registry": {"endpoints": {
            "totalCount": await total if not isinstance(total, int) else total,
            "pageInfo": {"hasNextPage": info_of_page.has_next_page, "endCursor": info_of_page.end_cursor},
            "nodes": nodes}}}
    finally:
        ctx.close()


@functools.cache
def _dataschema_node() -> Any:
    """The ``dataschema`` field node of the message + schema query (what its form reads of ``info``)."""
    operation = parse(bench_graphql.QUERIES["message + schema"]).definitions[0]
    lookup = operation.selection_set.selections[0]  # type: ignore[attr-defined]
    fields = lookup.selection_set.selections[0].selection_set.selections
    return next(f for f in fields if f.name.value == "dataschema")


async def message_resolvers_only(settings: Settings, sources: dict[str, Any]) -> dict[str, Any]:
    """Message + schema from the gateway's resolvers: the look-up's form, ``dataschema``'s form
    (asked for the fields the query selects), the fields read from the entities."""
    ctx = Context(settings, sources, bench_graphql.REGISTRY_ID)
    info: Any = SimpleNamespace(context=ctx, _raw_info=SimpleNamespace(field_nodes=[_dataschema_node()], fragments={}))
    try:
        (node,) = await lookups_of([None], [info], [{"xid": bench_graphql.MESSAGE, "registry": None, "as_of": None}])
        (schema,) = await dataschemas_of([node], [info])
        message, target = node.entity, schema.found.target
        return {"lookup": {"xid": message.xid, **{n: message.attribute(n) for n in (
            "name", "envelope", "envelopemetadata", "dataschemaformat")}, "dataschema": {
            "xid": target.xid, "schema": {"xid": target.xid, "format": target.attribute("format"),
                                          "versionid": target.attribute("versionid")},
            "document": target.attribute("schema")}}}
    finally:
        ctx.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100, help="runs of each (medians)")
    ap.add_argument("--query", default="endpoint page", choices=list(FLOORS))
    ap.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = ap.parse_args()
    if args.smoke:
        args.runs = 2
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_sample(Path(tmp) / "sample.json") if args.smoke else bench_graphql.CORPUS
        async with bench_graphql.corpus_registry(corpus) as (settings, registry, sources):
            figures = [await measure(name, settings, registry, sources, args.runs)
                       for name in (FLOORS if args.smoke else [args.query])]
    print("summary: CPU over the baseline's: " + "; ".join(
        f"{name}: GraphQL {graphql:.2f}×, resolvers only {floor:.2f}×" for name, graphql, floor in figures))


#: The resolvers-only build of each query.
FLOORS = {"endpoint page": resolvers_only, "message + schema": message_resolvers_only}


async def measure(name: str, settings: Settings, registry: Any, sources: dict[str, Any],
                  runs: int) -> tuple[str, float, float]:
    """Prints the three builds of query ``name``, timed; returns it and the CPU of GraphQL and of
    the resolvers alone, each over the baseline's."""
    query, floor = bench_graphql.QUERIES[name], FLOORS[name]
    schema = build_schema(settings)

    async def graphql() -> Any:
        context = Context(settings, sources, bench_graphql.REGISTRY_ID)
        result = await schema.execute(query, context_value=context)
        assert not result.errors, result.errors
        return result.data

    targets = {
        "graphql": graphql,
        "resolvers only": lambda: floor(settings, sources),
        "baseline": lambda: bench_graphql.BASELINES[name](registry),
    }
    answers = [await run() for run in targets.values()]
    assert answers[0] == answers[1] == answers[2], "the three do not give the same JSON"
    fields = bench_graphql._fields(answers[0])
    times: dict[str, list[float]] = {target: [] for target in targets}
    for _ in range(runs):
        for target, run in targets.items():
            started = time.process_time()
            await run()
            times[target].append(time.process_time() - started)
    ms = {target: statistics.median(t) * 1e3 for target, t in times.items()}
    base = ms["baseline"]
    print(f"{name} ({fields} fields), CPU ms per request, median of {runs}, in turn in one process")
    for target, value in ms.items():
        print(f"  {target:15s} {value:7.2f} ms   baseline / this {base / value:5.2f}   "
              f"+{(value - base) * 1e3 / fields:5.1f} µs per field over the baseline")
    print(f"executor's own share of GraphQL's extra cost: "
          f"{(ms['graphql'] - ms['resolvers only']) / (ms['graphql'] - base):.0%}")
    return name, ms["graphql"] / base, ms["resolvers only"] / base


if __name__ == "__main__":
    asyncio.run(main())
