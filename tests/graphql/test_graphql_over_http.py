"""GraphQL over HTTP (the GraphQL Foundation's specification) against a real uvicorn: media types
chosen from Accept, their status codes, GET for queries only, Content-Type checks, batches
refused; and HTTP caching of GET queries (ETag, Cache-Control, 304)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from resolvers.media import GRAPHQL_RESPONSE, JSON, negotiate
from tests.corpus import XREG_DATA
from tests.graphql.conftest import READ_KEY, WRITE_KEY, make_settings, open_registry, serve_uvicorn
from tests.support.live import LiveServer

GQL = "application/graphql-response+json"
QUERY = "{ registry { messagegroups { totalCount nodes { xid } } } }"
CREATE = ('mutation($id: String!) { createGroup(groupType: "messagegroups", groupId: $id, '
          'attributes: {envelope: "CloudEvents/1.0"}) { node { xid } } }')
WRITER = {"Authorization": f"Bearer {WRITE_KEY}"}
READER = {"Authorization": f"Bearer {READ_KEY}"}


async def _serve(tmp_path: Path, **overrides) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_uvicorn(make_settings(tmp_path, **overrides), open_registry(tmp_path / "served.db")) as url, \
            httpx.AsyncClient(base_url=url, timeout=30) as client:
        made = await client.post("/graphql", json={"query": CREATE, "variables": {"id": "g1"}}, headers=WRITER)
        assert made.status_code == 200 and "errors" not in made.json(), made.text
        yield client


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a live gateway holding one message group; anonymous reads on."""
    async for client in _serve(tmp_path):
        yield client


@pytest.mark.parametrize("accept, chosen", [
    (None, JSON), ("", JSON), ("*/*", JSON), ("application/*", JSON), ("application/json", JSON),
    (GQL, GQL), (f"{GQL}, application/json;q=0.9", GQL), (f"application/json, {GQL}", GQL),
    (f"application/json, {GQL};q=0.5", JSON), (f"{GQL};charset=utf-8", GQL),
    ("text/html,application/xhtml+xml,*/*;q=0.8", JSON), ("text/html", None), (f"{GQL};q=0, text/plain", None),
    ("application/json;q=0, */*", None),
])
def test_accept_negotiation(accept, chosen):
    assert negotiate(accept) == chosen


async def test_media_type_and_status_codes_per_accept(http):
    ok = await http.post("/graphql", json={"query": QUERY}, headers={"Accept": GQL})
    assert ok.status_code == 200
    assert ok.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert ok.json() == {"data": {"registry": {"messagegroups": {"totalCount": 1, "nodes": [{"xid": "/messagegroups/g1"}]}}}}
    legacy = await http.post("/graphql", json={"query": QUERY})
    assert legacy.status_code == 200 and legacy.headers["content-type"] == "application/json; charset=utf-8"

    for document, code in [("{ registry { nosuchfield } }", "GRAPHQL_VALIDATION_FAILED"),
                           ("{ registry { xid ", "GRAPHQL_PARSE_FAILED")]:
        modern = await http.post("/graphql", json={"query": document}, headers={"Accept": GQL})
        assert modern.status_code == 400, modern.text
        assert "data" not in modern.json() and modern.json()["errors"][0]["extensions"]["code"] == code
        old = await http.post("/graphql", json={"query": document}, headers={"Accept": "application/json"})
        assert old.status_code == 200 and old.json()["errors"][0]["extensions"]["code"] == code

    # a field error: the operation ran, data is there (partial), so 200 for both media types
    partial = await http.post("/graphql", headers={"Accept": GQL}, json={
        "query": '{ registry { xid messagegroups(after: "not-a-cursor") { totalCount } } }'})
    assert partial.status_code == 200
    assert partial.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT" and "data" in partial.json()

    refused = await http.post("/graphql", json={"query": QUERY}, headers={"Accept": "text/plain"})
    assert refused.status_code == 406 and refused.json()["errors"][0]["extensions"]["code"] == "NOT_ACCEPTABLE"


async def test_credentials_are_checked_before_anything_runs(tmp_path: Path):
    async for http in _serve(tmp_path, anonymous_read=False):
        for accept in (GQL, JSON):
            anonymous = await http.post("/graphql", json={"query": QUERY}, headers={"Accept": accept})
            assert anonymous.status_code == 401, accept
            assert anonymous.json()["errors"][0]["extensions"]["code"] == "unauthorized"
            bad = await http.post("/graphql", json={"query": QUERY}, headers={"Accept": accept,
                                                                                "Authorization": "Bearer wrong"})
            assert bad.status_code == 401
        reader = await http.post("/graphql", json={"query": QUERY}, headers={"Accept": GQL, **READER})
        assert reader.status_code == 200 and reader.json()["data"]["registry"]["messagegroups"]["totalCount"] == 1
        # a mutation without the write scope: it ran and its field failed (data: null), so 200
        denied = await http.post("/graphql", json={"query": CREATE, "variables": {"id": "g2"}},
                                 headers={"Accept": GQL, **READER})
        assert denied.status_code == 200 and denied.json()["errors"][0]["extensions"]["code"] == "forbidden"


async def test_get_runs_queries_only(http):
    got = await http.get("/graphql", params={"query": QUERY}, headers={"Accept": GQL})
    assert got.status_code == 200 and got.json()["data"]["registry"]["messagegroups"]["totalCount"] == 1
    mutation = await http.get("/graphql", params={"query": CREATE, "variables": json.dumps({"id": "g9"})},
                              headers={"Accept": GQL, **WRITER})
    assert mutation.status_code == 405 and mutation.headers["allow"] == "POST"
    check = await http.post("/graphql", json={"query": QUERY})
    assert check.json()["data"]["registry"]["messagegroups"]["totalCount"] == 1  # nothing was created


@pytest.mark.parametrize("content_type, status", [
    ("application/json", 200), ("application/json; charset=utf-8", 200), ("application/json;charset=UTF-8", 200),
    ("application/json; charset=iso-8859-1", 415), ("text/plain", 415), ("application/graphql", 415), (None, 415),
])
async def test_content_type_checks(http, content_type, status):
    headers = {"Content-Type": content_type} if content_type else {}
    response = await http.post("/graphql", content=json.dumps({"query": QUERY}).encode(), headers=headers)
    assert response.status_code == status, response.text
    if status == 415:
        assert response.json()["errors"][0]["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_batches_are_refused_clearly(http):
    for accept in (GQL, JSON):
        batch = await http.post("/graphql", json=[{"query": QUERY}, {"query": QUERY}], headers={"Accept": accept})
        assert batch.status_code == 400
        error = batch.json()["errors"][0]
        assert error["extensions"]["code"] == "BAD_REQUEST" and "Batched requests" in error["message"]


# -- HTTP caching ------------------------------------------------------------------------------------


async def test_get_queries_carry_an_etag_and_revalidate_to_304(http):
    first = await http.get("/graphql", params={"query": QUERY})
    etag = first.headers["etag"]
    assert first.status_code == 200 and etag.startswith('"')
    assert first.headers["cache-control"] == "public, no-cache"
    assert first.headers["vary"] == "Accept, Authorization"
    again = await http.get("/graphql", params={"query": QUERY}, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag and again.headers["cache-control"] == "public, no-cache"
    assert (await http.get("/graphql", params={"query": QUERY},
                           headers={"If-None-Match": f'"other", W/{etag}'})).status_code == 304

    # the request is part of the tag: other variables, operation, media type
    other_media = await http.get("/graphql", params={"query": QUERY}, headers={"Accept": GQL, "If-None-Match": etag})
    assert other_media.status_code == 200 and other_media.headers["etag"] != etag
    named = await http.get("/graphql", params={"query": "query Q " + QUERY, "operationName": "Q"},
                           headers={"If-None-Match": etag})
    assert named.status_code == 200 and named.headers["etag"] != etag

    # a write moves the revision: the old tag no longer matches and the new body comes back
    made = await http.post("/graphql", json={"query": CREATE, "variables": {"id": "g2"}}, headers=WRITER)
    assert made.headers["cache-control"] == "no-store" and "etag" not in made.headers
    fresh = await http.get("/graphql", params={"query": QUERY}, headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.headers["etag"] != etag
    assert fresh.json()["data"]["registry"]["messagegroups"]["totalCount"] == 2


async def test_responses_for_credentials_are_private_and_tagged_per_caller(http):
    anonymous = await http.get("/graphql", params={"query": QUERY})
    reader = await http.get("/graphql", params={"query": QUERY}, headers=READER)
    writer = await http.get("/graphql", params={"query": QUERY}, headers=WRITER)
    assert anonymous.headers["cache-control"].startswith("public")
    assert reader.headers["cache-control"] == writer.headers["cache-control"] == "private, no-cache"
    assert len({anonymous.headers["etag"], reader.headers["etag"], writer.headers["etag"]}) == 3
    # another caller's tag never revalidates
    crossed = await http.get("/graphql", params={"query": QUERY}, headers={**WRITER, "If-None-Match": reader.headers["etag"]})
    assert crossed.status_code == 200
    assert (await http.get("/graphql", params={"query": QUERY},
                           headers={**READER, "If-None-Match": reader.headers["etag"]})).status_code == 304


async def test_errors_and_posts_are_not_tagged(http):
    failed = await http.get("/graphql", params={"query": "{ registry { nosuchfield } }"})
    assert "etag" not in failed.headers
    posted = await http.post("/graphql", json={"query": QUERY})
    assert "etag" not in posted.headers and posted.headers["cache-control"] == "no-store"


async def test_max_age_and_private_when_anonymous_reads_are_off(tmp_path: Path):
    async for http in _serve(tmp_path, anonymous_read=False, http_cache_max_age=30):
        response = await http.get("/graphql", params={"query": QUERY}, headers=READER)
        assert response.headers["cache-control"] == "private, max-age=30, must-revalidate"


async def test_federated_queries_are_tagged_by_their_body(tmp_path: Path):
    """A document registry changes without a local revision: the tag follows the body."""
    document = json.loads((XREG_DATA / "contoso-erp-jsons07.xreg.json").read_text(encoding="utf-8"))
    path = tmp_path / "erp.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    settings = make_settings(tmp_path, registries=[{"id": "erp", "kind": "file", "path": str(path)}])
    query = '{ registry(id: "erp") { messagegroups { totalCount } } }'
    app = create_app(settings, registry=open_registry(tmp_path / "local.db"))
    async with LiveServer(app) as live, httpx.AsyncClient(base_url=live.url, timeout=30) as http:
        first = await http.get("/graphql", params={"query": query})
        count = first.json()["data"]["registry"]["messagegroups"]["totalCount"]
        assert count == len(document["messagegroups"]) and "etag" in first.headers
        same = await http.get("/graphql", params={"query": query}, headers={"If-None-Match": first.headers["etag"]})
        assert same.status_code == 304 and same.headers["etag"] == first.headers["etag"]

        del document["messagegroups"][next(iter(document["messagegroups"]))]
        path.write_text(json.dumps(document), encoding="utf-8")
        await app.state.federation.reload(settings)  # the local revision has not moved
        changed = await http.get("/graphql", params={"query": query}, headers={"If-None-Match": first.headers["etag"]})
        assert changed.status_code == 200 and changed.headers["etag"] != first.headers["etag"]
        assert changed.json()["data"]["registry"]["messagegroups"]["totalCount"] == count - 1
