"""A resource written with both its default version's attributes and a ``versions`` map, per
core/spec.md, "Resource Processing Algorithm", step 2 ("Processing the Resource's default Version
attributes"), over HTTP; and the request description (``/registry/openapi.json``) agreeing with
the server on those bodies."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.http.support import assert_problem, revision

FORMAT = "JSONSchema/draft-07"
SCHEMAS = "/registry/schemagroups/g/schemas"


async def versions_of(client, rid: str) -> dict[str, dict[str, Any]]:
    r = await client.get(f"{SCHEMAS}/{rid}$details?inline=versions,meta")
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
async def group(client):
    assert (await client.put("/registry/schemagroups/g", json={})).status_code == 201
    return client


async def test_top_level_versionid_not_in_versions_is_a_version_of_its_own(group):
    """"If a Resource-level `versionid` attribute is present, and that Version is not in the
    request's `versions` collection, then a new Version with that `versionid` MUST be created
    with the Resource-level attributes." """
    body = {"versionid": "2", "format": FORMAT, "description": "top",
            "versions": {"1": {"format": FORMAT, "description": "one"}}}
    assert (await group.put(f"{SCHEMAS}/a$details", json=body)).status_code == 201
    got = await versions_of(group, "a")
    assert {v: d["description"] for v, d in got["versions"].items()} == {"1": "one", "2": "top"}


async def test_meta_defaultversionid_not_in_versions_is_a_version_of_its_own(group):
    """"If `versionid` is not present, but `meta.defaultversionid` is present, and that Version is
    not in the request's `versions` collection, then a new Version with that `versionid` MUST be
    created, with the Resource-level attributes." — and it is the default version."""
    body = {"meta": {"defaultversionid": "2"}, "format": FORMAT, "description": "top",
            "versions": {"1": {"format": FORMAT, "description": "one"}}}
    assert (await group.put(f"{SCHEMAS}/b$details", json=body)).status_code == 201
    got = await versions_of(group, "b")
    assert {v: d["description"] for v, d in got["versions"].items()} == {"1": "one", "2": "top"}
    assert got["meta"]["defaultversionid"] == "2" and got["description"] == "top"


@pytest.mark.parametrize("naming", [{"versionid": "1"}, {"meta": {"defaultversionid": "1"}}, {}],
                         ids=["versionid", "meta.defaultversionid", "neither"])
async def test_the_versions_win_over_the_top_level_attributes(group, app, naming):
    """"If it is in the `versions` collection then the Resource-level attributes MUST be ignored";
    "If `versions` is present with at least one Version, then the Resource-level attributes MUST
    be ignored." — ignored, so a valid value changes nothing of version ``1``."""
    body = {**naming, "format": FORMAT, "description": "top", "labels": {"from": "top"},
            "versions": {"1": {"format": FORMAT, "description": "one"}}}
    assert (await group.put(f"{SCHEMAS}/c$details", json=body)).status_code == 201
    got = await versions_of(group, "c")
    assert list(got["versions"]) == ["1"]
    assert got["description"] == "one" and "labels" not in got and "labels" not in got["versions"]["1"]


async def test_an_empty_versions_map_takes_the_top_level_attributes(group):
    """"If `versions` is missing, or empty, then the server MUST generate a new unique
    `versionid` value and create a new Version using that value, with the Resource-level
    attributes." """
    body = {"format": FORMAT, "description": "top", "versions": {}}
    assert (await group.put(f"{SCHEMAS}/d$details", json=body)).status_code == 201
    got = await versions_of(group, "d")
    assert list(got["versions"]) == ["1"] and got["versions"]["1"]["description"] == "top"


async def test_an_update_applies_them_to_the_default_version_outside_versions(group):
    """Step 2 on an existing resource: "the Resource's default Version (as defined prior to the
    start of the operation) is to be updated with the Resource-level attributes" when the request's
    `versions` do not hold it."""
    assert (await group.put(f"{SCHEMAS}/e$details", json={"format": FORMAT, "description": "v1"})).status_code == 201
    body = {"format": FORMAT, "description": "top", "versions": {"2": {"format": FORMAT, "description": "two"}}}
    assert (await group.put(f"{SCHEMAS}/e$details", json=body)).status_code == 200
    got = await versions_of(group, "e")
    assert {v: d["description"] for v, d in got["versions"].items()} == {"1": "top", "2": "two"}


#: Top-level values that are invalid on a version, in bodies whose ``versions`` win over them.
INVALID = [
    ("schemagroups/g/schemas", {"format": ""}),  # core/spec.md, format: "MUST be a non-empty ... string"
    ("schemagroups/g/schemas", {"name": 5}),
    ("schemagroups/g/schemas", {"labels": {"team": 1}}),
    ("schemagroups/g/schemas", {"documentation": ""}),
    ("messagegroups/m/messages", {"envelope": "CloudEvents"}),  # message/spec.md: <NAME>/<VERSION>
    ("messagegroups/m/messages", {"dataschemaformat": "Avro"}),
]


@pytest.mark.parametrize(("collection", "top"), INVALID, ids=[str(t) for _, t in INVALID])
@pytest.mark.parametrize("how", ["PUT", "POST", "versionid in versions"])
async def test_invalid_top_level_values_are_refused_even_when_ignored(group, app, collection, top, how):
    """Ignored or not, an invalid value is bad input: ``invalid_attribute`` naming the attribute
    and the resource, nothing written (core/spec.md, "Error Processing": invalid_attribute)."""
    assert (await group.put("/registry/messagegroups/m", json={})).status_code == 201
    version = {"format": FORMAT} if collection.startswith("schema") else {}
    body: dict[str, Any] = {**top, "versions": {"1": version}}
    suffix = "$details" if collection.startswith("schema") else ""
    before = await revision(app)
    if how == "POST":
        r = await group.post(f"/registry/{collection}", json={"x": body})
    else:
        if how != "PUT":
            body["versionid"] = "1"
        r = await group.put(f"/registry/{collection}/x{suffix}", json=body)
    problem = assert_problem(r, 400, "invalid_attribute")
    assert problem["args"]["name"].split(".")[0] == next(iter(top)) and problem["subject"].endswith("/x")
    assert await revision(app) == before
    assert (await group.get(f"/registry/{collection}/x{suffix}")).status_code == 404


async def test_graphql_create_resource_follows_the_same_rules(group, app):
    """``createResource`` writes through the same path: the top-level ``versionid`` outside
    ``versions`` is a version of its own; an invalid top-level value is ``invalid_attribute``."""
    mutation = """mutation($id: String!, $attrs: JSON) { createResource(groupType: "schemagroups", groupId: "g",
      resourceType: "schemas", resourceId: $id, attributes: $attrs) { created } }"""

    async def run(rid: str, attrs: dict[str, Any]) -> dict[str, Any]:
        r = await group.post("/graphql", json={"query": mutation, "variables": {"id": rid, "attrs": attrs}})
        assert r.status_code == 200, r.text
        return r.json()

    made = await run("q", {"versionid": "2", "format": FORMAT, "versions": {"1": {"format": FORMAT}}})
    assert sorted(made["data"]["createResource"]["created"]) == [
        "/schemagroups/g/schemas/q", "/schemagroups/g/schemas/q/versions/1", "/schemagroups/g/schemas/q/versions/2"]
    before = await revision(app)
    refused = await run("r", {"format": "", "versions": {"1": {"format": FORMAT}}})
    assert refused["errors"][0]["extensions"]["code"] == "invalid_attribute", refused
    assert await revision(app) == before


# -- the request description agrees -------------------------------------------------------------

BODIES = [
    {"format": "", "versions": {"1": {"format": FORMAT}}},
    {"format": "", "versionid": "1", "versions": {"1": {"format": FORMAT}}},
    {"name": 5, "versions": {"1": {"format": FORMAT}}},
    {"versions": {"1": {"format": FORMAT}}},  # no top-level format: the versions stand in
    {"description": "top", "versions": {"1": {"format": FORMAT}}},
    {"format": FORMAT, "versions": {}},
    {"format": FORMAT},
]


@pytest.mark.parametrize("body", BODIES, ids=[str(b) for b in BODIES])
async def test_the_request_description_agrees_with_the_server(group, body):
    """A new schema's body is valid by ``Resource_schemagroups_schemas`` exactly when the server
    accepts it."""
    document = (await group.get("/registry/openapi.json")).json()
    schema = {**document, "$ref": "#/components/schemas/Resource_schemagroups_schemas"}
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    r = await group.put(f"{SCHEMAS}/n$details", json=body)
    assert (r.status_code == 201) == valid, (valid, r.text)
