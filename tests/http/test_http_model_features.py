"""Model features of core/model.md over HTTP (and GraphQL), on each embedded store: every
attribute type of core/spec.md "Data Types" accepted in a model and enforced on writes, Group
constraints (``enum``, ``equals``, ``default``), and the ``versionmode`` algorithms (newest
Version as default, ancestors, ``maxversions`` pruning, ``singleversionroot``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.http.support import assert_problem

#: One attribute per type, each with a value of its type and one of the wrong shape.
TYPES: dict[str, tuple[Any, Any]] = {
    "boolean": (True, "true"),
    "decimal": (1.5, "1.5"),
    "integer": (-3, 1.5),
    "uinteger": (3, -1),
    "string": ("text", 7),
    "timestamp": ("2024-01-01T00:00:00Z", "yesterday"),
    "uri": ("urn:example:x", "a b"),
    "uriabsolute": ("https://example.com/x", "relative/path"),
    "urirelative": ("relative/path", "https://example.com/x"),
    "urireference": ("../up", "a b"),
    "uritemplate": ("https://example.com/{id}", "https://example.com/{bad id}"),
    "url": ("https://example.com", "a b"),
    "urlabsolute": ("https://example.com", "/only/a/path"),
    "urlrelative": ("/only/a/path", "https://example.com"),
    "xid": ("/dirs/d1/files/f1", "dirs/d1"),
    "xidtype": ("/dirs/files", "/nowhere"),
    "any": ({"any": ["thing"]}, None),
    "map": ({"k": "v"}, ["not", "a", "map"]),
    "array": (["a", "b"], {"not": "an array"}),
    "object": ({"inner": 1}, "not an object"),
}


def _typed_attribute(kind: str) -> dict[str, Any]:
    if kind in ("map", "array"):
        return {"type": kind, "item": {"type": "string"}}
    if kind == "object":
        return {"type": kind, "attributes": {"inner": {"type": "integer"}}}
    return {"type": kind}


def dirs_model(**resource: Any) -> dict[str, Any]:
    """A ``dirs``/``files`` model: metadata-only files with a ``t_<type>`` attribute per type."""
    return {"groups": {"dirs": {
        "plural": "dirs", "singular": "dir",
        "attributes": {"region": {"type": "string"}},
        "resources": {"files": {
            "plural": "files", "singular": "file", "hasdocument": False,
            "attributes": {f"t_{kind}": _typed_attribute(kind) for kind in TYPES}
            | {"tier": {"type": "string"}, "size": {"type": "uinteger"}},
            **resource,
        }},
    }}}


async def install(client, model: dict[str, Any]) -> None:
    r = await client.put("/registry/modelsource", json=model)
    assert r.status_code == 200, r.text


async def test_every_attribute_type_is_accepted_and_enforced(store_client):
    """core/spec.md "Data Types": "all attributes and extensions MUST be mutable and MUST be one
    of the following data types" — ``any``, ``array``, ``boolean``, ``decimal``, ``integer``,
    ``map``, ``object``, ``string``, ``timestamp``, ``uinteger``, ``uri``, ``uriabsolute``,
    ``urirelative``, ``uritemplate``, ``url``, ``urlabsolute``, ``urlrelative``, ``xid``,
    ``xidtype``; a value of the wrong shape is refused (``invalid_attribute``), nothing written."""
    await install(store_client, dirs_model())
    model = (await store_client.get("/registry/model")).json()
    attrs = model["groups"]["dirs"]["resources"]["files"]["attributes"]
    assert {f"t_{kind}" for kind in TYPES} <= set(attrs)
    good = {f"t_{kind}": ok for kind, (ok, _) in TYPES.items()}
    r = await store_client.put("/registry/dirs/d1/files/f1", json=good)
    assert r.status_code == 201, r.text
    assert {k: r.json()[k] for k in good} == good
    for kind, (_, bad) in TYPES.items():
        if bad is None:  # any: every value is of some type
            continue
        r = await store_client.patch("/registry/dirs/d1/files/f1", json={f"t_{kind}": bad})
        body = assert_problem(r, 400, "invalid_attribute")
        assert f"t_{kind}" in str(body), (kind, body)
    stored = (await store_client.get("/registry/dirs/d1/files/f1")).json()
    assert {k: stored[k] for k in good} == good and stored["epoch"] == 1


async def test_every_type_reaches_graphql(store_client):
    """The same values written through GraphQL's ``createResource`` come back in ``json``; a
    wrong one is refused with ``extensions.code`` ``invalid_attribute``."""
    await install(store_client, dirs_model())
    good = {f"t_{kind}": ok for kind, (ok, _) in TYPES.items()}
    mutation = """mutation($a: JSON) { createResource(groupType: "dirs", groupId: "d1", resourceType: "files",
                  resourceId: "f1", attributes: $a) { revision } }"""
    r = await store_client.post("/graphql", json={"query": mutation, "variables": {"a": good}})
    assert r.status_code == 200 and "errors" not in r.json(), r.text
    got = (await store_client.get("/registry/dirs/d1/files/f1")).json()
    assert {k: got[k] for k in good} == good
    bad = {"t_urlabsolute": "/only/a/path"}
    r = await store_client.post("/graphql", json={"query": mutation.replace('"f1"', '"f2"'), "variables": {"a": bad}})
    assert r.json()["errors"][0]["extensions"]["code"] == "invalid_attribute", r.text
    assert (await store_client.get("/registry/dirs/d1/files/f2")).status_code == 404


async def test_unknown_type_is_still_a_model_error(store_client):
    """core/model.md: the model's types are those of "Data Types"; anything else is
    ``model_error`` and the model is unchanged."""
    model = dirs_model()
    model["groups"]["dirs"]["resources"]["files"]["attributes"]["odd"] = {"type": "uriish"}
    assert_problem(await store_client.put("/registry/modelsource", json=model), 400, "model_error")
    assert (await store_client.get("/registry/modelsource")).json() == {}


def constrained(constraints: dict[str, Any]) -> dict[str, Any]:
    model = dirs_model()
    model["groups"]["dirs"]["constraints"] = constraints
    return model


async def test_group_constraint_enum_and_default(store_client):
    """core/model.md ``constraints.<RESOURCES>.<PATH>.enum``: "the set of values that the
    referenced Resource attribute MUST be restricted to"; ``.default``: "the default value that
    MUST be used for the referenced Resource attribute"; "The constraints MUST be applied to all
    Versions of all Resources in the Group instances, and generate an error
    (constraint_failure) if a violation is detected."."""
    await install(store_client, constrained({"files.tier": {"enum": ["gold", "silver"], "default": "silver"}}))
    r = await store_client.put("/registry/dirs/d1/files/f1", json={})
    assert r.status_code == 201 and r.json()["tier"] == "silver", r.text
    body = assert_problem(await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "bronze"}),
                          400, "constraint_failure")
    assert body["subject"].endswith("/dirs/d1/files/f1")
    assert '"enum" constraint for attribute "tier"' in body["title"], body["title"]  # no placeholder left
    assert (await store_client.get("/registry/dirs/d1/files/f1")).json()["tier"] == "silver"
    r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={"v2": {"tier": "bronze"}})
    assert_problem(r, 400, "constraint_failure")
    assert (await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "gold"})).status_code == 200


async def test_group_instance_constraints_narrow_the_type(store_client):
    """core/spec.md "constraints Attribute": "This attribute is used to create a set of Group
    instance specific constraints on the Resources that exist within it" — it "MUST only
    further restrict any constraint aspect mentioned at the Group type level"."""
    await install(store_client, constrained({"files.tier": {"enum": ["gold", "silver"]}}))
    r = await store_client.put("/registry/dirs/d1", json={"constraints": {"files.tier": {"enum": ["gold"]}}})
    assert r.status_code == 201, r.text
    assert_problem(await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "silver"}),
                   400, "constraint_failure")
    assert (await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "gold"})).status_code == 201
    assert (await store_client.put("/registry/dirs/d2/files/f1", json={"tier": "silver"})).status_code == 201


async def test_group_constraint_equals(store_client):
    """core/model.md ``constraints.<RESOURCES>.<PATH>.equals``: "the dot (.) notation path in
    the Group instance that the referenced Resource attribute MUST match"; "If the referenced
    Group attribute does not have a value at runtime, then the equals constraint enforcement
    [...] MUST be silently ignored"."""
    await install(store_client, constrained({"files.tier": {"equals": "region"}}))
    assert (await store_client.put("/registry/dirs/free/files/f1", json={"tier": "any"})).status_code == 201
    await store_client.put("/registry/dirs/eu", json={"region": "eu"})
    body = assert_problem(await store_client.put("/registry/dirs/eu/files/f1", json={"tier": "us"}),
                          400, "constraint_failure")
    assert "region" in body["detail"]
    assert (await store_client.put("/registry/dirs/eu/files/f1", json={"tier": "eu"})).status_code == 201


@pytest.mark.parametrize("constraints", [
    {"files.nosuch": {"enum": ["a"]}},                  # not a defined attribute
    {"files.t_map": {"enum": [{"k": "v"}]}},            # not a scalar
    {"others.tier": {"enum": ["a"]}},                   # not a resource type of the group
    {"files.tier": {"equals": "nosuch"}},               # names no group attribute
    {"files.size": {"equals": "region"}},               # uinteger vs string
    {"files.tier": {"maximum": 3}},                     # not a constraint aspect
])
async def test_bad_group_constraints_are_model_errors(store_client, constraints):
    """core/model.md: the key "MUST reference a scalar attribute [...] MUST only reference
    statically-defined attributes"; ``equals``: "If the Group and Resource attributes are not of
    the same scalar type then an error (model_error) MUST be generated", "If the Group
    attribute is not defined at part of the the model, then an error (model_error) MUST be
    generated"."""
    assert_problem(await store_client.put("/registry/modelsource", json=constrained(constraints)), 400, "model_error")


async def _versions(client, rid: str = "f1") -> dict[str, Any]:
    return (await client.get(f"/registry/dirs/d1/files/{rid}/versions")).json()


@pytest.mark.parametrize("mode", ["createdat", "CreatedAt"])
async def test_versionmode_createdat(store_client, mode):
    """core/model.md ``versionmode`` ``createdat``: "Newest Version: MUST be determined by finding
    the Version with the newest createdat timestamp"; "the Versions sorted in ascending order,
    where the first one will be the "root" (oldest) Version and its ancestorid value MUST be its
    versionid"; "The value of this attribute MUST be case-insensitive"."""
    await install(store_client, dirs_model(versionmode=mode))
    r = await store_client.put("/registry/dirs/d1/files/f1", json={"versions": {
        "b": {"createdat": "2024-01-01T00:00:00Z"},
        "a": {"createdat": "2024-03-01T00:00:00Z"},
        "c": {"createdat": "2024-02-01T00:00:00Z", "ancestorid": "c"},
    }})
    assert r.status_code == 201, r.text
    assert r.json()["versionid"] == "a"
    versions = await _versions(store_client)
    assert {v: versions[v]["ancestorid"] for v in versions} == {"b": "b", "c": "b", "a": "c"}
    # moving a createdat reorders the versions, their ancestors and the default (core/model.md:
    # "this might cause a reordering of the Versions and the ancestorid attributes might need to
    # be changed accordingly")
    r = await store_client.patch("/registry/dirs/d1/files/f1/versions/b", json={"createdat": "2025-01-01T00:00:00Z"})
    assert r.status_code == 200, r.text
    versions = await _versions(store_client)
    assert {v: versions[v]["ancestorid"] for v in versions} == {"c": "c", "a": "c", "b": "a"}
    assert (await store_client.get("/registry/dirs/d1/files/f1/meta")).json()["defaultversionid"] == "b"
    # "Any modification to the ancestorid attribute MUST result in the owning Version's epoch
    # and modifiedat attributes be updated" (core/spec.md)
    assert versions["c"]["epoch"] == 2 and versions["a"]["epoch"] == 1  # a's ancestor is still c


async def test_versionmode_semver_orders_by_precedence_and_prunes_the_oldest(store_client):
    """core/model.md ``semver``: "Newest Version: MUST be the Version with the highest versionid
    value per the Semantic Versioning specification's "precedence" ordering rules"; maxversions:
    "implementations MUST prune Versions by deleting the oldest Version first (based on the
    Resource's versionmode algorithm), skipping the Version marked as "default"."."""
    await install(store_client, dirs_model(versionmode="semver", maxversions=3))
    for vid in ("1.10.0", "1.2.0", "1.10.0-rc.1"):
        r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={vid: {}})
        assert r.status_code in (200, 201), r.text
    meta = (await store_client.get("/registry/dirs/d1/files/f1/meta")).json()
    assert meta["defaultversionid"] == "1.10.0"
    versions = await _versions(store_client)
    assert {v: versions[v]["ancestorid"] for v in versions} == {
        "1.2.0": "1.2.0", "1.10.0-rc.1": "1.2.0", "1.10.0": "1.10.0-rc.1"}
    r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={"2.0.0": {}})
    assert r.status_code in (200, 201), r.text
    versions = await _versions(store_client)
    assert sorted(versions) == ["1.10.0", "1.10.0-rc.1", "2.0.0"]
    assert versions["1.10.0-rc.1"]["ancestorid"] == "1.10.0-rc.1"  # the new root
    assert (await store_client.get("/registry/dirs/d1/files/f1/meta")).json()["defaultversionid"] == "2.0.0"


async def test_versionmode_modifiedat(store_client):
    """core/model.md ``modifiedat``: "This is the same as the createdat algorithm except that the
    modifiedat attribute of each Version MUST be used instead of the createdat attribute."."""
    await install(store_client, dirs_model(versionmode="modifiedat"))
    await store_client.put("/registry/dirs/d1/files/f1", json={"versions": {
        "x": {"modifiedat": "2024-02-01T00:00:00Z"}, "y": {"modifiedat": "2024-01-01T00:00:00Z"}}})
    assert (await store_client.get("/registry/dirs/d1/files/f1/meta")).json()["defaultversionid"] == "x"
    await store_client.patch("/registry/dirs/d1/files/f1/versions/y", json={"size": 1})  # modifiedat = now
    assert (await store_client.get("/registry/dirs/d1/files/f1/meta")).json()["defaultversionid"] == "y"


async def test_singleversionroot_and_ordered_modes(store_client):
    """core/model.md ``singleversionroot``: "the server MUST generate an error (multiple_roots) if
    any request results in a state where more than one Version of a Resource is a root"; with
    ``createdat``/``modifiedat``/``semver`` "the singleversionroot aspect MUST be set to true"."""
    bad = dirs_model(versionmode="semver", singleversionroot=False)
    assert_problem(await store_client.put("/registry/modelsource", json=bad), 400, "model_error")
    await install(store_client, dirs_model(singleversionroot=True))
    assert (await store_client.put("/registry/dirs/d1/files/f1", json={})).status_code == 201
    r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={"2": {"ancestorid": "2"}})
    assert_problem(r, 400, "multiple_roots")
    assert sorted(await _versions(store_client)) == ["1"]


async def test_maxversions_one_replaces_the_default(store_client):
    """core/model.md maxversions: "if maxversions is set to one (1), then the "default" Version is
    not skipped, which means it will be deleted and the new Version will become "default"";
    core/spec.md: sticky with maxversions 1 is ``setdefaultversionsticky_false``."""
    await install(store_client, dirs_model(maxversions=1))
    await store_client.put("/registry/dirs/d1/files/f1", json={})
    await store_client.patch("/registry/dirs/d1/files/f1/meta", json={"defaultversionsticky": False})
    r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={"2": {}})
    assert r.status_code in (200, 201), r.text
    assert sorted(await _versions(store_client)) == ["2"]
    assert_problem(await store_client.patch("/registry/dirs/d1/files/f1/meta",
                                            json={"defaultversionsticky": True}), 400, "setdefaultversionsticky_false")


async def test_capabilities_offer_the_version_modes(store_client):
    """core/spec.md capabilities ``versionmodes``: the algorithms the server supports."""
    caps = (await store_client.get("/registry/capabilities")).json()
    assert caps["versionmodes"] == ["manual", "createdat", "modifiedat", "semver"]
    model = copy.deepcopy(dirs_model(versionmode="nosuch"))
    assert_problem(await store_client.put("/registry/modelsource", json=model), 400, "model_error")


async def test_setversionid_false_refuses_client_versionids(store_client):
    """core/model.md ``setversionid``: "During the creation of a new Version, if setversionid is
    false and a versionid is provided then the server MUST generate an error
    (versionid_not_allowed)"."""
    await install(store_client, dirs_model(setversionid=False))
    assert (await store_client.put("/registry/dirs/d1/files/f1", json={})).status_code == 201
    r = await store_client.post("/registry/dirs/d1/files/f1", json={"versionid": "mine"})
    assert_problem(r, 400, "versionid_not_allowed")
    r = await store_client.post("/registry/dirs/d1/files/f1", json={"tier": "t"})
    assert r.status_code == 201 and r.json()["versionid"] == "2", r.text


async def test_matchversions(store_client):
    """core/model.md ``matchversions``: "all Versions of a Resource instance MUST have the same
    value for this attribute (or MUST be missing from all Versions). If an inconsistency is found
    then an error (mismatched_version_attribute) MUST be generated"; it "MUST only be true for
    [...] scalar typed attributes" (else ``model_error``)."""
    model = dirs_model()
    model["groups"]["dirs"]["resources"]["files"]["attributes"]["tier"]["matchversions"] = True
    bad = copy.deepcopy(model)
    bad["groups"]["dirs"]["resources"]["files"]["attributes"]["t_map"]["matchversions"] = True
    assert_problem(await store_client.put("/registry/modelsource", json=bad), 400, "model_error")
    await install(store_client, model)
    assert (await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "a"})).status_code == 201
    r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={"2": {"tier": "b"}})
    assert_problem(r, 400, "mismatched_version_attribute")
    r = await store_client.post("/registry/dirs/d1/files/f1/versions", json={"2": {"tier": "a"}})
    assert r.status_code in (200, 201), r.text
    assert_problem(await store_client.patch("/registry/dirs/d1/files/f1/versions/1", json={"tier": None}),
                   400, "mismatched_version_attribute")


async def test_readonly_model_attributes_are_ignored_and_immutable_is_spec_only(store_client):
    """core/model.md ``readonly``: "during creation, or update, of an entity if this attribute is
    specified, then its value MUST be silently ignored by the server"; ``immutable``: "MUST ONLY
    be used for server-controlled specification-defined attributes [...] and MUST NOT be used for
    extension attributes" (``model_error``)."""
    bad = dirs_model()
    bad["groups"]["dirs"]["attributes"]["region"]["immutable"] = True
    assert_problem(await store_client.put("/registry/modelsource", json=bad), 400, "model_error")
    model = dirs_model()
    model["groups"]["dirs"]["attributes"]["region"]["readonly"] = True
    model["groups"]["dirs"]["resources"]["files"]["attributes"]["tier"]["readonly"] = True
    await install(store_client, model)
    r = await store_client.put("/registry/dirs/d1", json={"region": "eu"})
    assert r.status_code == 201 and "region" not in r.json(), r.text
    r = await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "gold", "size": 1})
    assert r.status_code == 201 and "tier" not in r.json() and r.json()["size"] == 1, r.text
    r = await store_client.patch("/registry/dirs/d1/files/f1", json={"tier": 5})  # even if the value is invalid
    assert r.status_code == 200 and "tier" not in r.json(), r.text


async def test_model_changes_refused_by_existing_resources(store_client):
    """core/model.md ``hasdocument``: "Attempts to change this value from true to false when there
    are existing Versions with domain-specific documents MUST generate an error
    (hasdocument_violation)"; ``maxversions``: "An attempt to change maxversions to 1 when there
    are existing Resource instances that have their defaultversionsticky attribute set to true
    MUST generate an error (setdefaultversionsticky_false)"."""
    await install(store_client, dirs_model(hasdocument=True))
    r = await store_client.put("/registry/dirs/d1/files/f1", content=b"text", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201, r.text
    assert_problem(await store_client.put("/registry/modelsource", json=dirs_model(hasdocument=False)),
                   400, "hasdocument_violation")
    await store_client.patch("/registry/dirs/d1/files/f1/meta", json={"defaultversionsticky": True})
    assert_problem(await store_client.put("/registry/modelsource", json=dirs_model(hasdocument=True, maxversions=1)),
                   400, "setdefaultversionsticky_false")
    assert (await store_client.get("/registry/modelsource")).json() == dirs_model(hasdocument=True)


async def test_group_changes_are_checked_against_its_versions(store_client):
    """core/model.md: "The constraints MUST be applied to all Versions of all Resources in the Group
    instances, and generate an error (constraint_failure) if a violation is detected" — also when
    the Group's ``equals`` attribute or its own ``constraints`` change; nothing is written."""
    await install(store_client, constrained({"files.tier": {"equals": "region"}}))
    await store_client.put("/registry/dirs/eu", json={"region": "eu"})
    assert (await store_client.put("/registry/dirs/eu/files/f1", json={"tier": "eu"})).status_code == 201
    assert_problem(await store_client.patch("/registry/dirs/eu", json={"region": "us"}), 400, "constraint_failure")
    r = await store_client.patch("/registry/dirs/eu", json={"constraints": {"files.tier": {"enum": ["gold"]}}})
    assert_problem(r, 400, "constraint_failure")
    assert (await store_client.get("/registry/dirs/eu")).json()["region"] == "eu"
    assert (await store_client.patch("/registry/dirs/eu", json={"labels": {"a": "b"}})).status_code == 200
