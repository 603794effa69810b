"""Small hardening findings: every error is JSON (unknown paths and methods too), ``POST {}`` to
a missing group is ``not_found``, and a document whose collections are not objects is refused,
not an internal error."""

from __future__ import annotations

from pathlib import Path

from tests.http.support import asgi_client, make_settings, revision, running


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
