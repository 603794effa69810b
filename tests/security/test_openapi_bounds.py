"""``GET /registry/openapi.json`` stays linear in the model and is built once per model; a model
beyond the ``XREG_MODEL_MAX_*`` bounds is refused (``model_error``) and changes nothing.

An anonymous caller could make the description of a model with a few hundred group types take
gigabytes: every XID pattern named every type of the model, and each reference attribute of
each type repeated it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from gateway.http_api import openapi
from tests.http.support import asgi_client, assert_problem, make_settings, revision, running
from tests.security.models import extra_group, wide_model
from xreg.errors import XRegistryError
from xreg.model.modelsource import model_of_source


async def _description_bytes(client, groups: int) -> int:
    assert (await client.put("/registry/modelsource", json=wide_model(groups))).status_code == 200
    response = await client.get("/registry/openapi.json")
    assert response.status_code == 200
    return len(response.content)


async def test_the_description_grows_linearly_with_the_model(client, anon):
    """Each group type adds the same number of bytes: 0 → 16 → 32 extra groups (with ``xid``
    attributes, whose patterns name every type) give equal increments, so doubling the model
    less than doubles the document (a quadratic one would add three times as much the second
    time)."""
    sizes = {n: await _description_bytes(client, n) for n in (0, 16, 32)}
    first, second = sizes[16] - sizes[0], sizes[32] - sizes[16]
    assert 0.98 < second / first < 1.02, sizes
    assert sizes[32] / sizes[16] < 2, sizes
    # anonymous callers get it too (reads are open): the same bytes
    assert (await anon.get("/registry/openapi.json")).content == (await client.get("/registry/openapi.json")).content


async def test_the_description_is_built_once_per_model(client, monkeypatch):
    builds: list[int] = []
    build = openapi.openapi_document

    def counting(model, settings):
        builds.append(id(model))
        return build(model, settings)

    monkeypatch.setattr(openapi, "openapi_document", counting)
    assert (await client.put("/registry/modelsource", json=wide_model(2))).status_code == 200
    answers = await asyncio.gather(*(client.get("/registry/openapi.json") for _ in range(4)))
    answers.append(await client.get("/registry/openapi.json"))
    assert len(builds) == 1
    assert len({a.content for a in answers}) == 1
    document = answers[0].json()
    assert "/g1s/{g1id}/items/{itemid}" in document["paths"]
    # a new model: built once more; its document names the new types
    assert (await client.put("/registry/modelsource", json=wide_model(3))).status_code == 200
    for _ in range(3):
        document = (await client.get("/registry/openapi.json")).json()
    assert len(builds) == 2 and "/g2s/{g2id}/items/{itemid}" in document["paths"]
    # references are shared: one component per target, named by every resource schema
    schemas = document["components"]["schemas"]
    assert schemas["Xid"]["pattern"].count("/g2s/") == 4  # group, resource, meta, version
    assert json.dumps(schemas["Version_g2s_items"]).count("/g2s/") == 0


@pytest.fixture
async def bounded(tmp_path: Path):
    """A gateway with small model bounds, and its writer client."""
    settings = make_settings(tmp_path, model_max_groups=5, model_max_resources=6, model_max_attributes=600,
                             model_max_bytes=100_000)
    async with running(settings) as app, asgi_client(app) as client:
        yield app, client


def _with_groups(n: int, **resource_extra) -> dict:
    """A model of ``n`` groups of :func:`extra_group` (no built-in ones)."""
    groups = {f"g{i}s": extra_group(i) for i in range(n)}
    for g in groups.values():
        g["resources"]["items"].update(resource_extra)
    return {"groups": groups}


@pytest.mark.parametrize(("doc", "limit"), [
    (_with_groups(6), "XREG_MODEL_MAX_GROUPS"),
    ({"groups": {"g0s": {**extra_group(0), "resources": {
        f"r{i}s": {"plural": f"r{i}s", "singular": f"r{i}"} for i in range(7)}}}}, "XREG_MODEL_MAX_RESOURCES"),
    ({"groups": {"g0s": {**extra_group(0), "attributes": {
        f"a{i}": {"type": "object", "attributes": {"x": {"type": "string"}}} for i in range(301)}}}},
     "XREG_MODEL_MAX_ATTRIBUTES"),
    (_with_groups(2, description="x" * 100_000), "XREG_MODEL_MAX_BYTES"),
], ids=["groups", "resources", "attributes", "bytes"])
async def test_a_model_beyond_the_bounds_is_refused_and_changes_nothing(bounded, doc, limit):
    app, client = bounded
    assert (await client.put("/registry/modelsource", json=_with_groups(5))).status_code == 200
    rev = await revision(app)
    before = (await client.get("/registry/modelsource")).json()
    body = assert_problem(await client.put("/registry/modelsource", json=doc), 400, "model_error")
    assert limit in body["detail"]
    # the same model through PUT / (modelsource in the registry body)
    body = assert_problem(await client.put("/registry", json={"modelsource": doc}), 400, "model_error")
    assert limit in body["detail"]
    assert await revision(app) == rev
    assert (await client.get("/registry/modelsource")).json() == before
    # through the import path too (LocalRegistry.apply_document, as ``xreg-gateway import`` uses)
    with pytest.raises(XRegistryError) as refused:
        await app.state.registry.apply_document({"modelsource": doc})
    assert refused.value.type == "model_error" and limit in (refused.value.detail or "")
    assert await revision(app) == rev


async def test_the_built_in_model_fits_the_default_bounds(client):
    assert (await client.put("/registry/modelsource", json=wide_model(8))).status_code == 200


def test_only_reference_attributes_share_a_reference_schema(tmp_path: Path):
    """A ``uri`` with a ``target`` and an ``xid`` refer to their target's component; a ``string``
    naming the same ``target`` keeps its own schema."""
    doc = wide_model(1)
    doc["groups"]["g0s"]["attributes"] = {"link": {"type": "uri", "target": "/g0s"}, "note": {"type": "string", "target": "/g0s"},
                                          "home": {"type": "xid", "target": "/g0s"}}
    document = openapi.openapi_document(model_of_source(doc), make_settings(tmp_path))
    props = document["components"]["schemas"]["Group_g0s"]["properties"]
    link, home = props["link"]["anyOf"][0], props["home"]["anyOf"][0]
    assert link == {"$ref": "#/components/schemas/Uri_g0s"} and home == {"$ref": "#/components/schemas/Xid_g0s"}
    assert props["note"]["anyOf"][0] == {"type": "string"}
    schemas = document["components"]["schemas"]
    assert schemas["Xid_g0s"]["pattern"].startswith("^(?:/g0s/") and "Uri_g0s" in schemas
