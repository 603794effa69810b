"""Overload never costs availability: admission control (bounded work, 503 + Retry-After, probes
outside the line), the per-operation cost ceiling, and per-caller rate limits (429 with the
RateLimit headers; GraphQL charged its cost), in memory and in a real Redis shared by two
gateways."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from graphql import get_introspection_query, parse
from prometheus_client import REGISTRY

from gateway.admission import Busy, Gate
from gateway.ratelimit import MemoryBuckets, Rate, refill
from resolvers.cost import LIST_ESTIMATE, operation_cost
from resolvers.schema import build_schema
from tests.federation.servers import redis_or_skip
from tests.http.support import READ_KEY, SEED, asgi_client, make_settings, running

HEAVY = "{ registry { messagegroups(first: 100) { nodes { xid name messages(first: 100) { nodes { xid name } } } } } }"
PAGE = "query($n: Int) { registry { messagegroups(first: $n) { nodes { xid name } } } }"


def cost(query: str, **variables: object) -> int:
    return operation_cost(build_schema()._schema, parse(query), None, variables,
                          default_page_size=100, max_page_size=500)


# -- cost ---------------------------------------------------------------------------------------------


def test_cost_is_fields_times_page_sizes():
    assert cost("{ registry { messages(first: 50) { nodes { xid name } } } }") == 1 + 1 + 1 + 50 * 2
    assert cost(PAGE, n=10) == 3 + 10 * 2 and cost(PAGE, n=400) == 3 + 400 * 2
    assert cost(PAGE) == 3 + 100 * 2  # no first: the default page size
    assert cost(PAGE, n=10_000) == 3 + 500 * 2  # above the bound: the bound (the field refuses it anyway)
    nested = "{ registry { messagegroups(first: 10) { totalCount nodes { messages(last: 20) { nodes { xid } } } } } }"
    assert cost(nested) == 1 + 1 + 1 + 1 + 10 * (1 + 1 + 20 * 1)  # totalCount is not multiplied
    spread = "query { registry { ...R } } fragment R on Registry { a: endpoints(first: 5) { nodes { xid } } " \
             "b: endpoints(first: 5) { nodes { xid } } }"
    assert cost(spread) == 1 + 2 * (1 + 1 + 5)
    assert cost('query($ids: [ID!]!) { nodes(ids: $ids) { id } }', ids=["a", "b", "c"]) == 1 + 3
    assert cost("{ registry { endpoints(first: 2) { nodes { messagegroups { xid } } } } }") == \
        3 + 2 * (1 + LIST_ESTIMATE)


def test_a_document_run_without_variables_is_costed_once(monkeypatch):
    from resolvers import cost as costing

    schema, document, counted = build_schema()._schema, parse(HEAVY), []
    operation = costing.CostCounter.operation

    def counting(self, op):
        counted.append(op)
        return operation(self, op)

    monkeypatch.setattr(costing.CostCounter, "operation", counting)
    costs = [operation_cost(schema, document, None, None, default_page_size=100, max_page_size=500)
             for _ in range(3)]
    assert costs == [1 + 1 + 1 + 100 * (1 + 1 + 1 + 1 + 100 * 2)] * 3 and len(counted) == 1
    page = parse(PAGE)  # with variables: costed each time, each with its own
    assert [operation_cost(schema, page, None, {"n": n}, default_page_size=100, max_page_size=500)
            for n in (10, 20)] == [3 + 10 * 2, 3 + 20 * 2] and len(counted) == 3


def test_graphiqls_introspection_fits_and_nested_introspection_does_not():
    assert cost(get_introspection_query(descriptions=True, input_value_deprecation=True)) < 50_000
    bomb = "{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }"
    assert cost(bomb) > 1_000_000


async def test_a_costly_operation_is_refused_before_it_runs(tmp_path: Path):
    async with running(make_settings(tmp_path, graphql_max_cost=500)) as app, asgi_client(app, None) as client:
        stats = app.state.registry.store.stats
        stats.calls.clear()
        refused = await client.post("/graphql", json={"query": PAGE, "variables": {"n": 300}})
        (error,) = refused.json()["errors"]
        assert error["extensions"] == {"code": "QUERY_TOO_COSTLY", "cost": 603, "maxCost": 500}
        assert "data" not in refused.json() and stats.total == 0
        ok = await client.post("/graphql", json={"query": PAGE, "variables": {"n": 200}})
        assert ok.json()["data"]["registry"]["messagegroups"]["nodes"] == []


# -- admission ----------------------------------------------------------------------------------------


async def test_a_gate_queues_in_order_then_refuses():
    gate = Gate("graphql", concurrency=1, queue_size=1, queue_timeout=0.2)
    await gate.acquire()
    waiter = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    assert gate.waiting == 1
    with pytest.raises(Busy):  # the line is full: refused at once
        await gate.acquire()
    gate.release()
    await waiter  # the waiter got the slot
    late = asyncio.create_task(gate.acquire())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not late.done() and gate.waiting == 1  # in line, not refused at once
    with pytest.raises(Busy):  # waited its time, then refused
        await late
    assert gate.stats.rejected == 2 and gate.stats.admitted == 2 and gate.retry_after == 1
    gate.release()


async def test_a_full_gate_refuses_with_503_and_probes_still_answer(tmp_path: Path):
    settings = make_settings(tmp_path, admission_graphql_concurrency=1, admission_http_concurrency=1,
                             admission_queue_size=0)
    async with running(settings) as app, asgi_client(app) as client:
        gates = app.state.admission.gates
        await gates["graphql"].acquire()  # the only slots are taken, as by long requests
        await gates["http"].acquire()
        graphql = await client.post("/graphql", json={"query": "{ registry { name } }"})
        assert graphql.status_code == 503 and graphql.headers["retry-after"] == "5"
        assert graphql.json()["errors"][0]["extensions"]["code"] == "server_busy"
        http = await client.get("/registry/messagegroups")
        assert http.status_code == 503 and http.headers["retry-after"] == "5"
        assert http.json()["type"].endswith("#server_busy") and http.json()["status"] == 503
        write = await client.put("/registry/messagegroups/g", json={})
        assert write.status_code == 503
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.options("/registry/messagegroups")).status_code == 200
        assert app.state.admission.rejected("graphql") == 1 and app.state.admission.rejected("http") == 2
        gates["graphql"].release()
        gates["http"].release()
        assert (await client.post("/graphql", json={"query": "{ registry { name } }"})).status_code == 200
        assert (await client.get("/registry/messagegroups/g")).status_code == 404  # the refused write wrote nothing


async def test_concurrent_heavy_queries_beyond_the_line_get_503_the_rest_complete(tmp_path: Path):
    settings = make_settings(tmp_path, admission_graphql_concurrency=2, admission_queue_size=4,
                             admission_queue_timeout_seconds=30)
    async with running(settings) as app, asgi_client(app) as client:
        assert (await client.post("/registry", json=SEED)).status_code == 200
        before = REGISTRY.get_sample_value("xreg_admission_rejected_total", {"kind": "graphql"}) or 0
        responses = await asyncio.gather(*(client.post("/graphql", json={"query": HEAVY}) for _ in range(30)))
        statuses = sorted(r.status_code for r in responses)
        assert statuses.count(200) >= 6 and set(statuses) == {200, 503}
        assert all(r.headers["retry-after"] == "30" for r in responses if r.status_code == 503)
        assert all(r.json()["data"]["registry"]["messagegroups"]["nodes"] for r in responses if r.status_code == 200)
        assert app.state.admission.rejected("graphql") == statuses.count(503)
        after = REGISTRY.get_sample_value("xreg_admission_rejected_total", {"kind": "graphql"})
        assert after - before == statuses.count(503)  # what /metrics reports


# -- rate limits --------------------------------------------------------------------------------------


def test_the_token_bucket():
    rate = Rate(rate=2.0, burst=10.0)
    assert refill(10, 0, 0, rate, 4) == (True, 6)
    assert refill(6, 0, 1, rate, 4) == (True, 4)  # 2 refilled
    assert refill(4, 0, 0, rate, 5) == (False, 4)
    assert refill(10, 0, 0, rate, 25) == (True, -15)  # dearer than the bucket: served when full, paid by waiting
    assert refill(-15, 0, 5, rate, 1) == (False, -5)
    assert refill(-15, 0, 100, rate, 1) == (True, 9)  # never more than the burst


async def test_memory_buckets_forget_nothing_within_a_burst():
    now = [0.0]
    buckets = MemoryBuckets(clock=lambda: now[0])
    rate = Rate(rate=1.0, burst=3.0)
    decisions = [await buckets.take("a", 1, rate) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert decisions[2].remaining == 0 and decisions[3].retry_after == 1 and decisions[3].reset == 3
    assert (await buckets.take("b", 1, rate)).allowed  # another caller has its own bucket
    now[0] = 1.0
    assert (await buckets.take("a", 1, rate)).allowed


def limited(tmp_path: Path, **overrides: object):
    values: dict[str, object] = dict(rate_limit_enabled=True, rate_limit_anonymous_rate=0.01,
                                     rate_limit_anonymous_burst=5, rate_limit_read_rate=0.01,
                                     rate_limit_read_burst=300, rate_limit_write_rate=0)
    values.update(overrides)
    return make_settings(tmp_path, **values)


async def test_http_requests_are_counted_per_caller_with_ratelimit_headers(tmp_path: Path):
    async with running(limited(tmp_path)) as app, asgi_client(app, None) as anonymous, \
            asgi_client(app, READ_KEY) as reader, asgi_client(app) as writer:
        got = [await anonymous.get("/registry") for _ in range(6)]
        assert [r.status_code for r in got] == [200] * 5 + [429]
        assert [r.headers["ratelimit-remaining"] for r in got[:5]] == ["4", "3", "2", "1", "0"]
        assert got[0].headers["ratelimit-limit"] == "5" and got[0].headers["ratelimit-policy"] == "5;w=500"
        refused = assert_problem_429(got[5])
        assert got[5].headers["ratelimit-remaining"] == "0" and got[5].headers["retry-after"] == "100"
        assert refused["type"].endswith("#too_many_requests")
        assert (await reader.get("/registry")).status_code == 200  # another caller is served
        assert "ratelimit-limit" not in (await writer.get("/registry")).headers  # rate 0: not limited
        assert (await anonymous.get("/healthz")).status_code == 200  # probes are never limited
        assert app.state.rate_limiter.limited("anonymous") == 1


async def test_bulk_reads_are_counted_like_http_reads(tmp_path: Path):
    async with running(limited(tmp_path, rate_limit_read_burst=3)) as app, asgi_client(app, READ_KEY) as reader:
        got = [await reader.get("/bulk/rows", params={"registry": "local", "entity": "messages"})
               for _ in range(4)]
        assert [r.status_code for r in got[:3]] == [400] * 3  # answered (asOf missing), and charged
        assert [r.headers["ratelimit-remaining"] for r in got[:3]] == ["2", "1", "0"]
        assert_problem_429(got[3])
        assert app.state.rate_limiter.limited("read") == 1


def assert_problem_429(response):
    assert response.status_code == 429, response.text
    assert int(response.headers["retry-after"]) >= 1
    return response.json()


async def test_graphql_is_charged_its_cost(tmp_path: Path):
    async with running(limited(tmp_path)) as app, asgi_client(app, READ_KEY) as reader:
        query = {"query": PAGE, "variables": {"n": 100}}  # costs 203 of the reader's 300
        first = await reader.post("/graphql", json=query)
        assert first.status_code == 200 and first.headers["ratelimit-remaining"] == "97"
        second = await reader.post("/graphql", json=query)
        assert_problem_429(second)
        assert second.headers["ratelimit-remaining"] == "97"  # what is left: less than the 203 asked for
        (error,) = second.json()["errors"]
        assert error["extensions"]["code"] == "too_many_requests" and error["extensions"]["cost"] == 203
        cheap = await reader.post("/graphql", json={"query": PAGE, "variables": {"n": 10}})  # 23 points
        assert cheap.status_code == 200 and cheap.headers["ratelimit-remaining"] == "74"
        bad = await reader.post("/graphql", content=b"{", headers={"Content-Type": "application/json"})
        assert bad.status_code == 400 and bad.headers["ratelimit-remaining"] == "73"  # refused early: one point
        assert app.state.rate_limiter.limited("read") == 1


async def test_under_load_one_caller_is_limited_while_another_is_served(tmp_path: Path):
    redis = redis_or_skip()
    try:
        settings = limited(tmp_path, rate_limit_url=redis.url, rate_limit_read_burst=40)
        async with running(settings) as one, running(settings) as two, asgi_client(one, None) as flood_one, \
                asgi_client(two, None) as flood_two, asgi_client(two, READ_KEY) as reader:
            before = REGISTRY.get_sample_value("xreg_rate_limited_total", {"scope": "anonymous"}) or 0
            flood = [flood_one.get("/registry/messagegroups") for _ in range(60)]
            flood += [flood_two.get("/registry/messagegroups") for _ in range(60)]
            served = [reader.post("/graphql", json={"query": "{ registry { name } }"}) for _ in range(10)]
            responses = await asyncio.gather(*flood, *served)
            flooded, other = responses[:120], responses[120:]
            # the anonymous caller's one bucket of 5, shared by both gateways through Redis
            assert sorted(r.status_code for r in flooded) == [200] * 5 + [429] * 115
            assert all(r.status_code == 200 and r.json()["data"]["registry"]["name"] for r in other)
            counted = one.state.rate_limiter.limited("anonymous") + two.state.rate_limiter.limited("anonymous")
            assert counted == 115 and two.state.rate_limiter.limited("read") == 0
            assert REGISTRY.get_sample_value("xreg_rate_limited_total", {"scope": "anonymous"}) - before == 115
    finally:
        redis.stop()


async def test_a_failing_redis_lets_requests_through(tmp_path: Path):
    settings = limited(tmp_path, rate_limit_url="redis://127.0.0.1:9/0")
    async with running(settings) as app, asgi_client(app, None) as anonymous:
        assert [(await anonymous.get("/registry")).status_code for _ in range(7)] == [200] * 7
        assert app.state.rate_limiter.stats.storage_errors == 7
