"""Hosting any model: ``GET/PUT /modelsource`` (core/http.md), the model checked (core/model.md),
refused when existing entities would not comply, stored with the registry's revisions; a custom
``dirs``/``files`` model used over HTTP and GraphQL, exported and imported."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.http.support import asgi_client, assert_problem, make_settings, revision, running
from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore

#: A model of directories holding files (documents), with extra attributes and constraints.
DIRS: dict[str, Any] = {
    "description": "directories of files",
    "groups": {"dirs": {
        "plural": "dirs", "singular": "dir",
        "attributes": {"owner": {"type": "string", "required": False}, "*": {"type": "any"}},
        "resources": {"files": {
            "plural": "files", "singular": "file", "maxversions": 2, "hasdocument": True,
            "attributes": {
                "size": {"type": "uinteger"},
                "kind": {"type": "string", "enum": ["text", "binary"], "strict": True},
                "format": {"type": "string"},
            },
        }},
    }},
}


def with_builtin(model: dict[str, Any], builtin: dict[str, Any]) -> dict[str, Any]:
    """``model`` plus the built-in groups (``GET /model``'s)."""
    out = copy.deepcopy(model)
    out["groups"] = {**builtin["groups"], **out["groups"]}
    return out


async def test_modelsource_is_empty_until_set_and_capabilities_say_it_is_mutable(client):
    """core/http.md "GET /modelsource": "In cases where the Registry's model has never been
    specified via `modelsource`, this operation MUST return `{}` not an empty HTTP body.\""""
    r = await client.get("/registry/modelsource")
    assert r.status_code == 200 and r.json() == {}
    caps = (await client.get("/registry/capabilities")).json()
    assert "/modelsource" in caps["apis"] and caps["available"]["modelsource"] == {"mutable": True}
    assert "modelsource" in caps["mutable"]
    assert (await client.get("/registry?inline=modelsource")).json()["modelsource"] == {}
    assert "PUT" in (await client.options("/registry/modelsource")).headers["allow"]


async def test_custom_model_over_http(client, app):
    """core/model.md: the model's groups and resources become the registry's (here only
    ``dirs``/``files``: "An explicit value of `null`, or an empty JSON object (`{}`), MUST result
    in all Groups, Resources and extension Registry-level attributes being removed from the
    model" — the built-in ones are replaced too)."""
    r = await client.put("/registry/modelsource", json=DIRS)
    assert r.status_code == 200, r.text
    assert r.json() == DIRS
    assert (await client.get("/registry/modelsource")).json() == DIRS
    model = (await client.get("/registry/model")).json()
    assert list(model["groups"]) == ["dirs"]
    assert model["groups"]["dirs"]["resources"]["files"]["maxversions"] == 2
    root = (await client.get("/registry")).json()
    assert root["dirscount"] == 0 and "messagegroupsurl" not in root and "modelsource" not in root
    assert_problem(await client.get("/registry/messagegroups"), 404, "not_found")

    # a file: its document and attributes in headers
    r = await client.put("/registry/dirs/d1/files/readme", content=b"hello", headers={
        "Content-Type": "text/plain", "xRegistry-kind": "text", "xRegistry-size": "5"})
    assert r.status_code == 201, r.text
    assert r.content == b"hello" and r.headers["xregistry-size"] == "5"
    details = (await client.get("/registry/dirs/d1/files/readme$details")).json()
    assert details["kind"] == "text" and details["size"] == 5 and details["self"].endswith("readme$details")
    # constraints of the model: enum, type, unknown attributes
    rev = await revision(app)
    assert_problem(await client.put("/registry/dirs/d1/files/x$details", json={"kind": "video"}), 400,
                   "invalid_attribute")
    assert_problem(await client.put("/registry/dirs/d1/files/x$details", json={"size": -1}), 400, "invalid_attribute")
    # core/spec.md "Extensions": "All extension attributes that appear in the serialization of an
    # entity MUST conform to the model definition of the Registry, otherwise an error
    # ([unknown_attribute](#unknown_attribute)) MUST be generated." (files have no "*"; dirs do)
    body = assert_problem(await client.put("/registry/dirs/d1/files/x$details", json={"colour": "red"}), 400,
                          "unknown_attribute")
    assert body["args"]["name"] == "colour"
    assert await revision(app) == rev
    # maxversions: the oldest versions go
    for text in (b"two", b"three"):
        assert (await client.post("/registry/dirs/d1/files/readme", content=text,
                                   headers={"Content-Type": "text/plain"})).status_code == 201
    versions = (await client.get("/registry/dirs/d1/files/readme/versions")).json()
    assert sorted(versions) == ["2", "3"]
    assert (await client.get("/registry/dirs/d1/files/readme")).content == b"three"
    # collections of the custom model are filtered and paged
    for d in ("d2", "d3"):
        await client.put(f"/registry/dirs/{d}", json={"owner": "ops" if d == "d2" else "dev"})
    r = await client.get("/registry/dirs?filter=owner=ops")
    assert list(r.json()) == ["d2"]
    r = await client.get("/registry/dirs?limit=2")
    assert len(r.json()) == 2 and "rel=next" in r.headers["link"].replace('"', "")


async def test_invalid_model_documents_are_refused_with_the_spec_errors(client, app):
    """core/model.md: "Servers MUST generate an error ([model_error](./spec.md#model_error)) if a
    model definition includes unknown model language attributes." — plus the plural/singular and
    attribute rules of "groups.<STRING>.plural", "attributes.<STRING>.type" and "default"."""
    rev = await revision(app)
    cases = [
        ({"groups": {"dirs": {**DIRS["groups"]["dirs"], "colour": "red"}}}, "model_error"),
        ({"groups": {"dirs": {"plural": "dirs", "singular": "dirs"}}}, "model_error"),
        ({"groups": {"dirs": {"plural": "folders", "singular": "dir"}}}, "model_error"),
        ({"groups": {"Dirs": {"plural": "Dirs", "singular": "dir"}}}, "model_error"),
        ({"groups": {"dirs": {"plural": "dirs", "singular": "dir", "attributes": {"a": {"type": "colour"}}}}},
         "model_error"),
        ({"groups": {"dirs": {"plural": "dirs", "singular": "dir", "resources": {
            "files": {"plural": "files", "singular": "file", "maxversions": -1}}}}}, "model_error"),
        ({"groups": {"dirs": {"plural": "dirs", "singular": "dir", "attributes": {
            "a": {"type": "string", "default": "x"}}}}}, "model_required_true"),
        ({"groups": {"dirs": {"plural": "dirs", "singular": "dir", "attributes": {
            "a": {"type": "object", "default": {}, "required": True}}}}}, "model_scalar_default"),
        ({"unknown": 1}, "model_error"),
    ]
    for doc, error in cases:
        body = assert_problem(await client.put("/registry/modelsource", json=doc), 400, error)
        assert body["subject"] == "/modelsource"
    assert_problem(await client.put("/registry/modelsource", content=b"", headers={"Content-Type": "application/json"}),
                   400, "missing_body")
    assert await revision(app) == rev
    assert (await client.get("/registry/modelsource")).json() == {}


async def test_changes_existing_entities_would_violate_are_refused(seeded, app):
    """core/model.md: "Servers MUST ensure that the representation of all entities within the
    Registry adheres to the new model prior to completing the model update request." [...] "Any
    request to update the model that does not adhere to those requirements MUST generate an error
    ([model_compliance_error](./spec.md#model_compliance_error))."."""
    client = seeded
    builtin = (await client.get("/registry/model")).json()
    rev = await revision(app)
    # dropping group types that hold entities
    body = assert_problem(await client.put("/registry/modelsource", json=DIRS), 400, "model_compliance_error")
    assert "messagegroups" in body["detail"]
    both = with_builtin(DIRS, builtin)
    assert (await client.put("/registry/modelsource", json=both)).status_code == 200
    await client.put("/registry/dirs/d1/files/f$details", json={"kind": "text", "versions": {
        "1": {"kind": "text"}, "2": {"kind": "binary"}}})
    after = await revision(app)
    assert after > rev
    # a narrower enum, maxversions 1, hasdocument false: each breaks an existing file
    narrower = copy.deepcopy(both)
    narrower["groups"]["dirs"]["resources"]["files"]["attributes"]["kind"]["enum"] = ["binary"]
    body = assert_problem(await client.put("/registry/modelsource", json=narrower), 400, "model_compliance_error")
    assert "kind" in body["detail"]
    fewer = copy.deepcopy(both)
    fewer["groups"]["dirs"]["resources"]["files"]["maxversions"] = 1
    assert "maxversions" in assert_problem(await client.put("/registry/modelsource", json=fewer), 400,
                                           "model_compliance_error")["detail"]
    required = copy.deepcopy(both)
    required["groups"]["dirs"]["attributes"]["owner"]["required"] = True
    assert_problem(await client.put("/registry/modelsource", json=required), 400, "model_compliance_error")
    assert await revision(app) == after
    # an attribute the new model would not know: dir d1 gets "team" only once the model has it
    assert_problem(await client.patch("/registry/dirs/d1/files/f$details", json={"team": "a"}), 400,
                   "unknown_attribute")
    # a compatible change (a new optional attribute) is taken
    wider = copy.deepcopy(both)
    wider["groups"]["dirs"]["attributes"]["team"] = {"type": "string"}
    assert (await client.put("/registry/modelsource", json=wider)).status_code == 200
    assert (await client.put("/registry/dirs/d1", json={"team": "a"})).status_code == 200


async def test_the_model_has_the_registry_revisions_and_survives_a_restart(settings, tmp_path: Path):
    """The model is stored with the registry entity: an as-of export shows the model of that
    revision, and a reopened registry runs on the stored model."""
    async with running(settings) as app:
        async with asgi_client(app) as client:
            before = await revision(app)
            assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
            await client.put("/registry/dirs/d1", json={"owner": "me"})
    registry = LocalRegistry(SQLiteStore(str(settings.effective_store_url).removeprefix("sqlite:///")))
    async with registry:
        assert list(registry.model.groups) == ["dirs"] and registry.model_source == DIRS
        old = await registry.export_document(as_of=before)
        assert "modelsource" not in old and "messagegroups" in old and "dirs" not in old
        now = await registry.export_document()
        assert now["modelsource"] == DIRS and now["dirs"]["d1"]["owner"] == "me"


async def test_custom_model_exported_and_imported(client, tmp_path: Path):
    """core/http.md "GET /export": "`GET /?doc&inline=*,capabilities,modelsource`" — the export
    carries the model, and importing it (``PUT /?ignore`` into another gateway, or the import
    command's path) installs the model before the entities."""
    assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
    await client.put("/registry/dirs/d1/files/f", content=b"abc", headers={"Content-Type": "text/plain",
                                                                          "xRegistry-kind": "text"})
    await client.post("/registry/dirs/d1/files/f", content=b"abcd", headers={"Content-Type": "text/plain"})
    exported = (await client.get("/registry/export")).json()
    assert exported["modelsource"] == DIRS
    assert set(exported["dirs"]["d1"]["files"]["f"]["versions"]) == {"1", "2"}

    other = make_settings(tmp_path / "other")
    async with running(other) as app2:
        async with asgi_client(app2) as c2:
            r = await c2.put("/registry?ignore=epoch,id,capabilities", json=exported)
            assert r.status_code == 200, r.text
            assert (await c2.get("/registry/modelsource")).json() == DIRS
            assert (await c2.get("/registry/dirs/d1/files/f/versions/1")).content == b"abc"
            again = (await c2.get("/registry/export")).json()
            for doc in (again, exported):
                for key in ("self", "epoch", "createdat", "modifiedat", "registryid", "capabilities"):
                    doc.pop(key, None)
            assert again["dirs"]["d1"]["files"]["f"]["versions"]["2"]["fileid"] == "f"
            assert again["modelsource"] == exported["modelsource"]
    async with LocalRegistry(SQLiteStore(str(tmp_path / "third.db"))) as third:
        outcome = await third.apply_document(exported)
        assert "/dirs/d1/files/f/versions/2" in outcome.created
        assert third.model_source == DIRS


async def test_custom_model_through_graphql(client):
    """Groups and resources of a custom model come through GraphQL's generic types, filtered and
    paged; the built-in types stay typed."""
    builtin = (await client.get("/registry/model")).json()
    assert (await client.put("/registry/modelsource", json=with_builtin(DIRS, builtin))).status_code == 200
    for d, owner in (("a", "ops"), ("b", "dev"), ("c", "ops")):
        await client.put(f"/registry/dirs/{d}", json={"owner": owner})
    await client.put("/registry/dirs/a/files/f", content=b"x", headers={"Content-Type": "text/plain",
                                                                       "xRegistry-kind": "text"})
    await client.put("/registry/messagegroups/g", json={"name": "typed"})
    query = """{ registry {
      groups(groupType: "dirs", first: 1, filter: {raw: ["owner=ops"]}) {
        totalCount pageInfo { hasNextPage }
        nodes { __typename xid ... on GenericGroup { json
          resources(resourceType: "files") { nodes { __typename xid ... on GenericResource { json } } } } } }
      messagegroups { nodes { __typename xid } } } }"""
    r = await client.post("/graphql", json={"query": query})
    assert r.status_code == 200 and "errors" not in r.json(), r.text
    data = r.json()["data"]["registry"]
    groups = data["groups"]
    assert groups["totalCount"] == 2 and groups["pageInfo"]["hasNextPage"] is True
    [node] = groups["nodes"]
    assert node["__typename"] == "GenericGroup" and node["xid"] == "/dirs/a" and node["json"]["owner"] == "ops"
    [file] = node["resources"]["nodes"]
    assert file["xid"] == "/dirs/a/files/f" and file["json"]["kind"] == "text"
    assert data["messagegroups"]["nodes"][0]["__typename"] == "MessageGroup"


async def test_another_process_takes_up_the_model_at_its_next_write(tmp_path: Path):
    """Two registries on one store (two processes): a model one of them installs is the other's
    at its next write (the write path reads the stored model before building)."""
    path = str(tmp_path / "shared.db")
    async with LocalRegistry(SQLiteStore(path)) as first, LocalRegistry(SQLiteStore(path)) as second:
        assert "messagegroups" in second.model.groups

        async def install(cs):
            await cs.put_model_source(DIRS)

        await first.write(install, subject="/modelsource", note="model")

        async def create_dir(cs):
            await cs.put_group("dirs", "d1", {"owner": "me"})

        await second.write(create_dir, subject="/dirs/d1", note="dir")
        assert list(second.model.groups) == ["dirs"] and second.model_source == DIRS
        assert (await second.entity("/dirs/d1"))["owner"] == "me"
