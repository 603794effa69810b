"""Per-request DataLoaders: the store calls of a query do not grow with its page sizes, whether
its lists are completed in one stretch or paced item by item (``resolvers/pacing.py``: the
request's loaders hold their batches while a paced list hands the event loop back)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.graphql.conftest import make_settings, open_registry, recorded_reads, serve_asgi

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


#: Lists completed in one stretch, or paced with a slice so short that every item of every list
#: waits for a turn of its own (the most a query's batches can be interrupted).
PACING = {"lists in one stretch": 0.0, "lists paced item by item": 1e-6}


@pytest.fixture(params=list(PACING))
async def uncapped(request: pytest.FixtureRequest, corpus_db: Path, tmp_path: Path):
    """The corpus app with a cost ceiling above the deep query's estimate (about 360,000)."""
    settings = make_settings(tmp_path, graphql_max_cost=10**7, graphql_pacing_slice_ms=PACING[request.param])
    async with open_registry(corpus_db) as reg, serve_asgi(reg, settings) as gql:
        yield gql


@pytest.fixture(params=list(PACING))
async def corpus_paced_or_not(request: pytest.FixtureRequest, corpus_db: Path, tmp_path: Path):
    async with open_registry(corpus_db) as reg, \
            serve_asgi(reg, make_settings(tmp_path, graphql_pacing_slice_ms=PACING[request.param])) as gql:
        yield gql


async def test_endpoint_page_with_groups_and_messages_costs_the_same_for_10_and_100(uncapped):
    small, small_data = await calls_of(uncapped, ENDPOINTS_DEEP, 10)
    large, large_data = await calls_of(uncapped, ENDPOINTS_DEEP, 100)
    assert _count(large_data, "messagegroups") >= 100 and _count(large_data, "nodes") > 300
    assert _count(large_data, "nodes") > 5 * _count(small_data, "nodes")
    assert large == small, (small, large)
    assert sum(large.values()) <= 15, large  # about one per level of the query


async def test_message_search_with_schemas_costs_the_same_for_10_and_100(corpus_paced_or_not):
    small, _ = await calls_of(corpus_paced_or_not, MESSAGES_WITH_SCHEMAS, 10)
    large, data = await calls_of(corpus_paced_or_not, MESSAGES_WITH_SCHEMAS, 100)
    nodes = data["registry"]["messages"]["nodes"]
    assert len(nodes) == 100 and all(n["dataschema"]["schema"]["versions"]["nodes"] for n in nodes)
    assert large == small, (small, large)


async def test_pacing_costs_no_store_call_more(corpus_db: Path, tmp_path: Path):
    """Paced item by item, the deep page needs at most the calls it needs in one stretch (a held
    batch may take in loads of the next level too), and the same data."""
    calls, data = [], []
    for slice_ms in PACING.values():
        settings = make_settings(tmp_path, graphql_max_cost=10**7, graphql_pacing_slice_ms=slice_ms)
        async with open_registry(corpus_db) as reg, serve_asgi(reg, settings) as gql:
            found, answer = await calls_of(gql, ENDPOINTS_DEEP, 100)
            calls.append(found)
            data.append(answer)
    one_stretch, paced = calls
    assert data[0] == data[1]
    assert sum(paced.values()) <= sum(one_stretch.values()), (one_stretch, paced)
    assert all(paced.get(call, 0) <= n for call, n in one_stretch.items()), (one_stretch, paced)


async def test_the_registry_record_is_read_only_when_something_of_it_is_asked(corpus):
    """``registry`` with only its id, source and collections selected reads nothing of the root
    record (the gateway's store always holds it); any of its attributes, or a fragment, reads it."""
    with recorded_reads(corpus.registry.store) as read:
        navigation = await corpus.data("{ registry { xid registryid kind endpoints(first: 1) { nodes { xid } } } }")
        roots_navigating = sum(x == "/" for xids in read for x in xids)
        read.clear()
        named = await corpus.data("{ registry { xid registryid name specversion epoch } }")
        roots_named = sum(x == "/" for xids in read for x in xids)
        read.clear()
        fragment = await corpus.data("{ registry { ... on Registry { xid registryid } } }")
        roots_fragment = sum(x == "/" for xids in read for x in xids)
    assert roots_navigating == 0 and roots_named == 1 and roots_fragment == 1
    for data in (navigation, named, fragment):
        assert data["registry"]["xid"] == "/" and data["registry"]["registryid"] == "test"
    assert navigation["registry"]["kind"] == "local" and navigation["registry"]["endpoints"]["nodes"]
    assert named["registry"]["specversion"] and named["registry"]["epoch"] >= 1
