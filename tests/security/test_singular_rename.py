"""A model change that renames a group or resource type's ``singular`` (or ``plural``) while
entities of that type are stored is refused with ``model_compliance_error`` naming the rename —
the entities hold ``<singular>id`` under the old name, which a later write would silently drop.
Without stored entities the rename is accepted. Checked through ``PUT /modelsource``, ``PUT /``,
GraphQL ``importDocument`` and the engine on SQLite and mongomock."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.http.support import assert_problem, revision
from xreg.errors import XRegistryError
from xreg.registry.changeset import Changeset
from xreg.registry.service import LocalRegistry

DIRS: dict[str, Any] = {"groups": {"dirs": {
    "plural": "dirs", "singular": "dir", "attributes": {"*": {"type": "any"}},
    "resources": {"files": {"plural": "files", "singular": "file", "attributes": {"*": {"type": "any"}}}},
}}}


def renamed(group: str | None = None, resource: str | None = None, plural: str | None = None) -> dict[str, Any]:
    """:data:`DIRS` with the group's singular, the resource's singular or the group's plural renamed."""
    doc = copy.deepcopy(DIRS)
    gdoc = doc["groups"]["dirs"]
    if group:
        gdoc["singular"] = group
    if resource:
        gdoc["resources"]["files"]["singular"] = resource
    if plural:
        doc["groups"] = {plural: {**gdoc, "plural": plural}}
    return doc


RENAMES = [(renamed(group="folder"), "singular 'dir' to 'folder'"),
           (renamed(resource="doc"), "singular 'file' to 'doc'"),
           (renamed(plural="folders"), "which the new model does not define")]
IDS = ["group-singular", "resource-singular", "group-plural"]


@pytest.fixture
async def filled(client):
    """``client`` on the :data:`DIRS` model with a directory holding a file."""
    assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
    r = await client.put("/registry/dirs/d1/files/f1", content=b"hi", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201, r.text
    return client


async def _stored(client) -> tuple[Any, ...]:
    return ((await client.get("/registry/modelsource")).json(), (await client.get("/registry/dirs/d1")).json(),
            (await client.get("/registry/dirs/d1/files/f1$details")).json())


@pytest.mark.parametrize(("doc", "detail"), RENAMES, ids=IDS)
async def test_a_rename_with_stored_entities_is_refused_over_http(filled, app, doc, detail):
    client = filled
    rev, before = await revision(app), await _stored(client)
    assert before[1]["dirid"] == "d1" and before[2]["fileid"] == "f1"
    for method, path, body in (("PUT", "/registry/modelsource", doc), ("PUT", "/registry", {"modelsource": doc})):
        problem = assert_problem(await client.request(method, path, json=body), 400, "model_compliance_error")
        assert detail in problem["detail"], problem
    assert await revision(app) == rev
    assert await _stored(client) == before


IMPORT = """mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"""


@pytest.mark.parametrize(("doc", "detail"), RENAMES, ids=IDS)
async def test_a_rename_with_stored_entities_is_refused_through_graphql(filled, app, doc, detail):
    client = filled
    rev, before = await revision(app), await _stored(client)
    answer = (await client.post("/graphql", json={"query": IMPORT, "variables": {"doc": {"modelsource": doc}}})).json()
    assert answer["errors"][0]["extensions"]["code"] == "model_compliance_error", answer
    assert detail in answer["errors"][0]["message"] + str(answer["errors"][0]["extensions"]), answer
    assert await revision(app) == rev
    assert await _stored(client) == before


async def test_a_rename_without_stored_entities_is_accepted(filled):
    client = filled
    assert (await client.delete("/registry/dirs/d1")).status_code == 204
    assert (await client.put("/registry/modelsource", json=renamed(group="folder", resource="doc"))).status_code == 200
    r = await client.put("/registry/dirs/d2/files/f2", content=b"hi", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201, r.text
    group = (await client.get("/registry/dirs/d2")).json()
    details = (await client.get("/registry/dirs/d2/files/f2$details")).json()
    assert group["folderid"] == "d2" and "dirid" not in group
    assert details["docid"] == "f2" and "fileid" not in details


@pytest.fixture
async def dirs(local: LocalRegistry) -> LocalRegistry:
    """``local`` (each embedded store) on the :data:`DIRS` model with ``/dirs/d1``."""
    await local.apply_document({"modelsource": DIRS, "dirs": {"d1": {"files": {"f1": {"size": 1}}}}})
    return local


@pytest.mark.parametrize(("doc", "detail"), RENAMES, ids=IDS)
async def test_the_engine_refuses_a_rename_on_every_store(dirs: LocalRegistry, doc, detail):
    local = dirs
    rev = await local.store.current_revision()

    async def build(cs: Changeset) -> None:
        await cs.put_model_source(doc)

    with pytest.raises(XRegistryError) as refused:
        await local.write(build, subject="/modelsource", note="rename")
    assert refused.value.type == "model_compliance_error" and detail in (refused.value.detail or "")
    assert await local.store.current_revision() == rev
    group = await local.store.get("/dirs/d1")
    assert group is not None and group.doc["dirid"] == "d1"
