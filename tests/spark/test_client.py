"""The data source's GraphQL client and planning, without Spark: token, retries, timeouts, errors,
filter expressions, chunks and partitions."""

from __future__ import annotations

import asyncio
import itertools
import threading

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pyspark_xregistry.client import ClientConfig, GatewayClient, GatewayError, GroupRef
from pyspark_xregistry.schemas import row_values, schema_for
from pyspark_xregistry.source import (
    MAX_FILTER_EXPRESSIONS,
    ReadOptions,
    XRegistryReader,
    chunk_groups,
    filter_expressions,
    split_contiguous,
)
from tests.spark.conftest import CORPUS_COUNTS, REGISTRY_ID, serve


def test_reads_need_the_bearer_token(gateway):
    with GatewayClient(ClientConfig(url=gateway.url, retries=0)) as anonymous:
        with pytest.raises(GatewayError, match="401"):
            anonymous.registries()
    with GatewayClient(ClientConfig(url=gateway.url, token=gateway.token)) as client:
        assert client.registries()[REGISTRY_ID] >= gateway.corpus_revision


@pytest.fixture
def flaky():
    """A real HTTP server that answers 503 (with ``Retry-After: 0``) to the first ``fail`` requests
    and, when told to ``hold``, answers only once the test is over."""
    over = threading.Event()
    state = {"fail": 0, "seen": 0, "hold": False}

    async def graphql(request: Request) -> JSONResponse:
        state["seen"] += 1
        if state["hold"]:
            await asyncio.to_thread(over.wait)
        if state["seen"] <= state["fail"]:
            return JSONResponse({"errors": [{"message": "busy"}]}, 503, headers={"retry-after": "0"})
        return JSONResponse({"data": {"registries": [{"registryid": "r", "revision": 7}]}})

    with serve(Starlette(routes=[Route("/graphql", graphql, methods=["POST"])])) as base:
        try:
            yield f"{base}/graphql", state
        finally:
            over.set()


def test_retries_ride_out_transient_failures(flaky):
    url, state = flaky
    state["fail"] = 2
    with GatewayClient(ClientConfig(url=url, retries=2, backoff=0.01)) as client:
        assert client.registries() == {"r": 7}
    assert state["seen"] == 3
    state.update(fail=10, seen=0)
    with GatewayClient(ClientConfig(url=url, retries=1, backoff=0.01)) as client:
        with pytest.raises(GatewayError, match="503"):
            client.registries()
    assert state["seen"] == 2


def test_a_request_slower_than_the_timeout_fails_after_its_retries(flaky):
    url, state = flaky
    state["hold"] = True
    with GatewayClient(ClientConfig(url=url, timeout=0.2, retries=1, backoff=0.01)) as client:
        with pytest.raises(GatewayError, match="unreachable"):
            client.registries()
    assert state["seen"] == 2


def test_graphql_errors_are_reported_not_retried(gateway):
    with GatewayClient(ClientConfig(url=gateway.url, token=gateway.token)) as client:
        with pytest.raises(GatewayError, match="unknown registry: nope"):
            client.groups("nope", 1, "endpoints", raw=None, after=None, count=1)
        with pytest.raises(GatewayError, match="not readable"):
            client.groups(REGISTRY_ID, 10**6, "endpoints", raw=None, after=None, count=1)


def test_reader_without_spark_plans_and_reads_the_corpus(gateway):
    """The reader is plain Python: plan and read it directly (what Spark's workers do)."""
    options = ReadOptions.parse({"URL": gateway.url, "Entity": "schemaversions", "token": gateway.token,
                                 "asOfRevision": str(gateway.corpus_revision), "numPartitions": "3"})
    reader = XRegistryReader(options, schema_for("schemaversions"))
    partitions = reader.partitions()
    assert len(partitions) == 3
    rows = sum(batch.num_rows for p in partitions for batch in reader.read(p))
    assert rows == CORPUS_COUNTS["schemaversions"]


def test_options_are_validated():
    with pytest.raises(ValueError, match="url"):
        ReadOptions.parse({"entity": "messages"})
    with pytest.raises(ValueError, match="entity"):
        ReadOptions.parse({"url": "http://x/graphql", "entity": "widgets"})
    with pytest.raises(ValueError, match="asOfRevision"):
        ReadOptions.parse({"url": "http://x/graphql", "entity": "messages", "asOfRevision": "latest"})
    opts = ReadOptions.parse({"url": "http://x/graphql", "entity": "Messages", "registry": "a, b",
                              "sinceRevision": "a=3,b=4", "pageSize": "50", "timeout": "2.5"})
    assert (opts.entity, opts.registries, opts.since, opts.page_size, opts.timeout) == (
        "messages", ("a", "b"), {"a": 3, "b": 4}, 50, 2.5)


def test_filter_expressions_never_narrow_what_is_asked():
    assert filter_expressions({"protocol": {"KAFKA"}, "envelope": {"CloudEvents/1.0"}}) == [
        "envelope=CloudEvents/1.0,protocol=KAFKA"]
    assert sorted(filter_expressions({"messageid": {"a", "b"}})) == ["messageid=a", "messageid=b"]
    # values a filter expression cannot carry stay with the exact check only
    assert filter_expressions({"protocol": {"a,b"}}) is None
    assert filter_expressions({"protocol": {"null"}}) is None  # would mean "absent" to the gateway
    assert filter_expressions({"protocol": {"x*"}, "envelope": {"e"}}) == ["envelope=e"]
    many = {"messageid": {str(i) for i in range(100)}, "protocol": {"p"}}
    assert filter_expressions(many) == ["protocol=p"]
    combos = filter_expressions({"a": set("12345678"), "b": set("12345678")})
    assert len(combos) == MAX_FILTER_EXPRESSIONS


def test_chunks_and_partitions_are_contiguous_and_balanced():
    refs = [GroupRef(None if i == 0 else f"c{i - 1}", f"g{i}", children) for i, children in
            enumerate(itertools.islice(itertools.cycle([1, 5, 2, 40, 3]), 100))]
    chunks = chunk_groups(refs, "r", 9, "messagegroups", rows=60, page_size=500)
    assert sum(c.count for c in chunks) == 100 and sum(c.weight for c in chunks) == sum(r.children for r in refs)
    assert all(c.weight <= 60 or c.count == 1 for c in chunks)
    assert next(c.after for c in chunks) is None
    runs = split_contiguous(chunks, 4)
    assert len(runs) == 4 and [c for run in runs for c in run] == chunks
    weights = [sum(c.weight for c in run) for run in runs]
    assert max(weights) - min(weights) <= 60
    assert split_contiguous(chunks[:2], 4) == [[chunks[0]], [chunks[1]]]


def test_schemauri_column_holds_the_rc4_schemaurl():
    """Schema versions serve their external document's link as rc4's ``schemaurl``; the
    ``schemauri`` column keeps holding it (and an older view's ``schemauri``)."""
    xid = "/schemagroups/g/schemas/s/versions/1"
    new = row_values("schemaversions", "r", {"xid": xid, "schemaurl": "https://e.example/s.json"}, 3)
    old = row_values("schemaversions", "r", {"xid": xid, "schemauri": "https://e.example/o.json"}, 3)
    assert new["schemauri"] == "https://e.example/s.json" and old["schemauri"] == "https://e.example/o.json"
