"""Per-request DataLoaders: the store calls of a query do not grow with its page sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.graphql.conftest import make_settings, open_registry, serve_asgi

ENDPOINTS_DEEP = """query($n: Int!) { registry { endpoints(first: $n) { totalCount nodes { xid protocol usage
  messagegroups { xid name messages(first: 50) { totalCount nodes { xid name envelope
    dataschema { schema { xid format } version { versionid } document } defaultversion { versionid } meta { epoch } } } }
  messages { totalCount nodes { xid } } } } } }"""

MESSAGES_WITH_SCHEMAS = """query($n: Int!) { registry { messages(first: $n, filter: {raw: ["dataschemauri"]}) {
  nodes { xid group { xid } dataschema { schema { xid versions { nodes { versionid } } } } } } } }"""


async def calls_of(gql, query: str, n: int) -> tuple[dict[str, int], dict]:
    stats = gql.registry.store.stats
    stats.calls.clear()
    data = await gql.data(query, n=n)
    return dict(stats.calls), data


def _count(data: dict, key: str) -> int:
    """How many objects under ``key`` the response holds, at any depth."""
    if isinstance(data, dict):
        return sum((len(v) if k == key and isinstance(v, list) else 0) + _count(v, key) for k, v in data.items())
    if isinstance(data, list):
        return sum(_count(v, key) for v in data)
    return 0


@pytest.fixture
async def uncapped(corpus_db: Path, tmp_path: Path):
    """The corpus app with a cost ceiling above the deep query's estimate (about 360,000)."""
    async with open_registry(corpus_db) as reg, serve_asgi(reg, make_settings(tmp_path, graphql_max_cost=10**7)) as gql:
        yield gql


async def test_endpoint_page_with_groups_and_messages_costs_the_same_for_10_and_100(uncapped):
    small, small_data = await calls_of(uncapped, ENDPOINTS_DEEP, 10)
    large, large_data = await calls_of(uncapped, ENDPOINTS_DEEP, 100)
    assert _count(large_data, "messagegroups") >= 100 and _count(large_data, "nodes") > 300
    assert _count(large_data, "nodes") > 5 * _count(small_data, "nodes")
    assert large == small, (small, large)
    assert sum(large.values()) <= 15, large  # about one per level of the query


async def test_message_search_with_schemas_costs_the_same_for_10_and_100(corpus):
    small, _ = await calls_of(corpus, MESSAGES_WITH_SCHEMAS, 10)
    large, data = await calls_of(corpus, MESSAGES_WITH_SCHEMAS, 100)
    nodes = data["registry"]["messages"]["nodes"]
    assert len(nodes) == 100 and all(n["dataschema"]["schema"]["versions"]["nodes"] for n in nodes)
    assert large == small, (small, large)
