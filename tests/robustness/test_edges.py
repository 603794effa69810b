"""Small hardening findings: every error is JSON (unknown paths and methods too), ``POST {}`` to
a missing group is ``not_found``, and a document whose collections are not objects is refused,
not an internal error. The last test replays every "smaller" reproduction of the hardening
campaign over a real socket (an over-long URL: tests/robustness/test_oversize.py; a refused
``Link`` target: tests/federation/test_faults.py; the OpenAPI description:
tests/http/test_http_schemathesis.py)."""

from __future__ import annotations

from pathlib import Path

import httpx

from gateway.app import create_app
from gateway.request_limits import server_options
from tests.http.support import SEED, WRITE_KEY, asgi_client, bearer, make_settings, revision, running
from tests.support.live import LiveServer


async def test_unknown_paths_and_methods_answer_json_problems(tmp_path: Path):
    async with running(make_settings(tmp_path)) as app, asgi_client(app) as client:
        missing = await client.get("/nothing/here")
        assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/json")
        assert missing.json()["type"].endswith("#api_not_found") and missing.json()["subject"] == "/nothing/here"
        for method, path in (("PUT", "/graphql"), ("POST", "/healthz"), ("DELETE", "/.well-known/xregistry")):
            refused = await client.request(method, path)
            assert refused.status_code == 405 and refused.headers["allow"]
            assert refused.json()["type"].endswith("#action_not_supported") and refused.json()["status"] == 405


async def test_post_of_nothing_to_a_missing_group_is_not_found(tmp_path: Path):
    async with running(make_settings(tmp_path)) as app, asgi_client(app) as client:
        before = await revision(app)
        for body in ({}, {"messages": {}}):
            missing = await client.post("/registry/messagegroups/nope", json=body)
            assert missing.status_code == 404 and missing.json()["type"].endswith("#not_found")
        assert (await client.get("/registry/messagegroups/nope")).status_code == 404
        assert await revision(app) == before
        assert (await client.put("/registry/messagegroups/g", json={})).status_code == 201
        assert (await client.post("/registry/messagegroups/g", json={})).json() == {}
        created = await client.post("/registry/messagegroups/new", json={"messages": {"m": {"name": "m"}}})
        assert created.status_code == 200  # creating a resource creates its missing group (core/spec.md)


async def test_an_import_whose_collections_are_not_objects_is_refused(tmp_path: Path):
    async with running(make_settings(tmp_path)) as app, asgi_client(app) as client:
        before = await revision(app)
        for document in ({"messagegroups": True}, {"messagegroups": {"g": ["x"]}}, {"schemagroups": 3}):
            response = await client.post("/graphql", json={
                "query": "mutation($d: JSON!) { importDocument(document: $d) { revision } }", "variables": {"d": document}})
            codes = [e["extensions"]["code"] for e in response.json()["errors"]]
            assert codes and "INTERNAL_SERVER_ERROR" not in codes, (document, response.json())
        assert await revision(app) == before


def test_the_smaller_reproductions_answer_4xx_over_a_real_socket(tmp_path: Path):
    settings = make_settings(tmp_path)
    with LiveServer(create_app(settings), **server_options(settings)) as live, \
            httpx.Client(base_url=live.url, headers=bearer(WRITE_KEY), timeout=30) as http:
        assert http.post("/registry", json=SEED).status_code == 200
        before = http.get("/healthz").json()["revision"]
        # HEAD on API paths answers as GET does (it was 405)
        for path in ("/registry", "/registry/schemagroups", "/registry/schemagroups/sg1/schemas/s1",
                     "/registry/model", "/registry/openapi.json"):
            head, get = http.head(path), http.get(path)
            assert head.status_code == get.status_code == 200 and head.content == b"", path
        # non-API 404 / 405 and an over-long URL are JSON problems (they were plain text)
        for response, status, kind in ((http.get("/no/such/page"), 404, "api_not_found"),
                                       (http.delete("/healthz"), 405, "action_not_supported"),
                                       (http.get("/registry?x=" + "y" * 9000), 414, "uri_too_long")):
            assert response.status_code == status and response.headers["content-type"].startswith("application/json")
            assert response.json()["type"].endswith("#" + kind)
        # DELETE of a collection with a body of white space deletes nothing (it deleted everything)
        blank = http.request("DELETE", "/registry/schemagroups", content=b" \n\t ",
                             headers={"Content-Type": "application/json"})
        assert blank.status_code == 400 and blank.json()["type"].endswith("#missing_body")
        assert set(http.get("/registry/schemagroups").json()) == {"sg1"}
        # POST {} to a missing group is not_found (it answered 200 without creating it)
        missing = http.post("/registry/messagegroups/nope", json={})
        assert missing.status_code == 404 and missing.json()["type"].endswith("#not_found")
        assert http.get("/healthz").json()["revision"] == before
