"""The HTTP binding: GET and POST, request errors, GraphiQL for browsers, a real uvicorn."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import pytest

from tests.graphql.conftest import READ_KEY, WRITE_KEY, make_settings, open_registry, serve_asgi, serve_uvicorn
from xreg.config import Settings

HAS_GRAPHIQL = importlib.util.find_spec("gateway.graphiql") is not None
needs_graphiql = pytest.mark.skipif(not HAS_GRAPHIQL, reason="gateway.graphiql (GraphiQL page) is not there yet")


async def test_get_runs_queries_with_variables(corpus):
    response = await corpus.client.get("/graphql", params={
        "query": "query($x: String!) { lookup(xid: $x) { xid } }", "variables": '{"x": "/endpoints/IO.AISstream.Kafka"}'})
    assert response.status_code == 200
    assert response.json() == {"data": {"lookup": {"xid": "/endpoints/IO.AISstream.Kafka"}}}


@pytest.mark.parametrize("content, headers, status, code", [
    (b"{not json", {"content-type": "application/json"}, 400, "BAD_REQUEST"),
    (b'{"query": "{ registry { xid } }"}', {"content-type": "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
    (b'{"variables": {}}', {"content-type": "application/json"}, 400, "BAD_REQUEST"),
    (b'{"query": "{ registry { xid } }", "variables": [1]}', {"content-type": "application/json"}, 400, "BAD_REQUEST"),
    (b'[1, 2]', {"content-type": "application/json"}, 400, "BAD_REQUEST"),
    (b'{"query": "query A { registry { xid } }", "operationName": "B"}', {"content-type": "application/json"}, 400,
     "BAD_REQUEST"),
])
async def test_bad_requests(corpus, content, headers, status, code):
    response = await corpus.client.post("/graphql", content=content, headers=headers)
    assert response.status_code == status
    assert response.json()["errors"][0]["extensions"]["code"] == code


async def test_reads_need_the_read_scope_when_anonymous_reads_are_off(tmp_path: Path):
    async with open_registry(tmp_path / "r.db") as reg, \
            serve_asgi(reg, make_settings(tmp_path, anonymous_read=False)) as gql:
        refused = await gql.post("{ registry { xid } }")
        assert refused.status_code == 401
        assert refused.json()["errors"][0]["extensions"]["code"] == "unauthorized"
        assert refused.headers["www-authenticate"].startswith("Bearer")
        allowed = await gql.post("{ registry { xid } }", headers={"Authorization": f"Bearer {READ_KEY}"})
        assert allowed.json() == {"data": {"registry": {"xid": "/"}}}


@needs_graphiql
async def test_a_browser_gets_graphiql(corpus, tmp_path: Path):
    from gateway.graphiql import graphiql_page

    page = await corpus.client.get("/graphql", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    expected = graphiql_page(make_settings(tmp_path))
    assert page.status_code == expected.status_code
    assert page.content == expected.body
    assert (await corpus.client.get("/graphiql")).status_code == expected.status_code
    # a query typed into the address bar: browsers accept */* too, so JSON comes back
    api = await corpus.client.get("/graphql", params={"query": "{ registry { xid } }"},
                                  headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert api.json() == {"data": {"registry": {"xid": "/"}}}
    only_html = await corpus.client.get("/graphql", params={"query": "{ registry { xid } }"},
                                        headers={"Accept": "text/html"})
    assert only_html.status_code == 406


async def test_over_a_real_uvicorn(tmp_path: Path):
    settings: Settings = make_settings(tmp_path)
    async with serve_uvicorn(settings, open_registry(tmp_path / "served.db")) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            made = await client.post("/graphql", headers={"Authorization": f"Bearer {WRITE_KEY}"}, json={
                "query": 'mutation { createGroup(groupType: "messagegroups", groupId: "g", '
                         'attributes: {envelope: "CloudEvents/1.0"}) { node { xid } } }'})
            body = made.json()
            [correlation] = body.pop("extensions")["xregcorrelationid"]  # core/events.md: the write's events
            assert body == {"data": {"createGroup": {"node": {"xid": "/messagegroups/g"}}}} and correlation
            read = await client.post("/graphql", json={"query": "{ registry { messagegroups { totalCount "
                                                                "nodes { ... on MessageGroup { envelope } } } } }"})
            assert read.json() == {"data": {"registry": {"messagegroups": {
                "totalCount": 1, "nodes": [{"envelope": "CloudEvents/1.0"}]}}}}
