"""Custom models (``modelsource``) beyond the local registry's own HTTP API: a document file whose
document carries ``modelsource`` is served through GraphQL's generic types like the local
registry; GraphQL of any process takes up a model another process installed within
``MODEL_MAX_AGE``; CORS exposes the ``xRegistry-*`` headers of the current model."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.http.support import asgi_client, make_settings, running
from tests.http.test_http_modelsource import DIRS
from xreg.registry import service
from xreg.registry.service import MODEL_MAX_AGE

GROUPS = """query($id: String) { registry(id: $id) {
  groups(groupType: "dirs", first: 10) { totalCount nodes { __typename xid ... on GenericGroup { json
    resources(resourceType: "files", first: 10) { nodes { __typename xid ... on GenericResource { json
      versions(first: 10) { totalCount } } } } } } } } }"""


def modelled_document() -> dict:
    """A registry document of the ``dirs`` model: one dir holding one file with two versions."""
    return {"specversion": "1.0-rc4", "registryid": "docs", "modelsource": DIRS, "dirs": {"d1": {
        "owner": "ops", "files": {"readme": {"versions": {
            "1": {"kind": "text", "file": "one"}, "2": {"kind": "text", "file": "two"}}}}}}}


@pytest.mark.parametrize("source", ["written", "exported"])
async def test_a_file_source_serves_its_documents_model(tmp_path: Path, source: str):
    """A document file with ``modelsource`` (written by hand, or the ``/export`` of a registry on
    that model) is served like the local registry: its groups and resources through the generic
    types, its model as ``model``."""
    doc = tmp_path / "docs.xreg.json"
    if source == "written":
        doc.write_text(json.dumps(modelled_document()))
    else:
        async with running(make_settings(tmp_path / "origin")) as origin, asgi_client(origin) as client:
            assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
            assert (await client.put("/registry/dirs/d1", json={"owner": "ops"})).status_code == 201
            for text in (b"one", b"two"):
                r = await client.post("/registry/dirs/d1/files/readme", content=text,
                                      headers={"Content-Type": "text/plain", "xRegistry-kind": "text"})
                assert r.status_code == 201, r.text
            doc.write_text((await client.get("/registry/export")).text)
    settings = make_settings(tmp_path, registries=[{"id": "test", "kind": "local"},
                                                   {"id": "docs", "kind": "file", "path": str(doc)}])
    async with running(settings) as app, asgi_client(app) as client:
        r = await client.post("/graphql", json={"query": GROUPS, "variables": {"id": "docs"}})
        assert r.status_code == 200 and "errors" not in r.json(), r.text
        groups = r.json()["data"]["registry"]["groups"]
        assert groups["totalCount"] == 1
        [group] = groups["nodes"]
        assert group["__typename"] == "GenericGroup" and group["xid"] == "/dirs/d1" and group["json"]["owner"] == "ops"
        [file] = group["resources"]["nodes"]
        assert file["xid"] == "/dirs/d1/files/readme" and file["json"]["kind"] == "text"
        assert file["versions"]["totalCount"] == 2
        r = await client.post("/graphql", json={"query": '{ registry(id: "docs") { model } }'})
        assert list(r.json()["data"]["registry"]["model"]["groups"]) == ["dirs"]
        # the local registry keeps the built-in model
        r = await client.post("/graphql", json={"query": GROUPS})
        assert r.json()["errors"][0]["extensions"]["code"] == "unknown_group_type"


async def test_a_file_source_with_an_invalid_model_is_refused(tmp_path: Path):
    """A document whose ``modelsource`` is not a model (core/model.md, ``model_error``) is not
    loaded: the gateway refuses to start on it, naming the file."""
    bad = modelled_document()
    bad["modelsource"] = {"groups": {"dirs": {"plural": "dirs", "singular": "dirs"}}}
    doc = tmp_path / "bad.xreg.json"
    doc.write_text(json.dumps(bad))
    settings = make_settings(tmp_path, registries=[{"id": "test", "kind": "local"},
                                                   {"id": "docs", "kind": "file", "path": str(doc)}])
    with pytest.raises(Exception, match=r"bad\.xreg\.json"):
        async with running(settings):
            pass


async def test_graphql_of_another_process_sees_a_model_change_within_a_second(tmp_path: Path, monkeypatch):
    """Two gateways on one store: a model installed through one is what the other's GraphQL
    operations read once ``MODEL_MAX_AGE`` has passed — without a write or an HTTP API call
    there. The check is upkeep: the store's call counts of an operation leave it out, and an
    operation refused before execution reads nothing."""
    settings = make_settings(tmp_path)
    async with running(settings) as first, running(settings) as second:
        async with asgi_client(first) as one, asgi_client(second) as two:
            r = await two.post("/graphql", json={"query": GROUPS})
            assert r.json()["errors"][0]["extensions"]["code"] == "unknown_group_type"
            builtin = (await one.get("/registry/model")).json()
            model = copy.deepcopy(DIRS)
            model["groups"] = {**builtin["groups"], **model["groups"]}
            assert (await one.put("/registry/modelsource", json=model)).status_code == 200
            assert (await one.put("/registry/dirs/d1", json={"owner": "me"})).status_code == 201
            stats = second.state.registry.store.stats
            stats.calls.clear()
            refused = await two.post("/graphql", json={"query": "{ registry { nosuchfield } }"})
            assert refused.json()["errors"] and stats.total == 0
            later = time.monotonic() + MODEL_MAX_AGE + 0.5  # the clock moved by hand past MODEL_MAX_AGE
            monkeypatch.setattr(service, "time", SimpleNamespace(monotonic=lambda: later))
            r = await two.post("/graphql", json={"query": GROUPS})
            assert "errors" not in r.json(), r.text
            assert r.json()["data"]["registry"]["groups"]["nodes"][0]["json"]["owner"] == "me"
            assert second.state.registry.model_source == model


async def test_cors_exposes_the_headers_of_the_current_model(tmp_path: Path):
    """CORS (gateway/cors.py): the ``xRegistry-*`` headers of a model installed after start-up are
    allowed in preflights and exposed on responses, without a restart."""
    origin = "http://127.0.0.1:5999"
    settings = make_settings(tmp_path, cors_origins=[origin])
    async with running(settings) as app, asgi_client(app) as client:
        def preflight():
            return client.options("/registry/dirs/d1/files/f", headers={
                "Origin": origin, "Access-Control-Request-Method": "PUT",
                "Access-Control-Request-Headers": "xregistry-kind"})

        assert (await preflight()).status_code == 400  # not a header of the built-in model
        assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
        r = await preflight()
        assert r.status_code == 200 and "xregistry-kind" in r.headers["access-control-allow-headers"].lower()
        await client.put("/registry/dirs/d1/files/f", content=b"x", headers={"Content-Type": "text/plain",
                                                                            "xRegistry-kind": "text"})
        got = await client.get("/registry/dirs/d1/files/f", headers={"Origin": origin})
        exposed = {h.strip().lower() for h in got.headers["access-control-expose-headers"].split(",")}
        assert got.headers["xregistry-kind"] == "text" and {"xregistry-kind", "xregistry-size"} <= exposed
