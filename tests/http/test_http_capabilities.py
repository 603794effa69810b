"""Changing the capabilities (core/spec.md "Updating the Capabilities of a Server", "Offered
Capabilities"; core/http.md "GET /capabilitiesoffered", "PATCH and PUT /capabilities") over
HTTP on each embedded store: offered values, PUT and PATCH semantics, the spec's errors with
nothing changed, enforcement of what a client narrowed (flags, ignores, available, mutable,
version modes, formats, compatibilities), and the settings surviving a restart."""

from __future__ import annotations

import uuid
from pathlib import Path

from mongomock_motor import AsyncMongoMockClient

from gateway.app import create_app
from tests.http.support import asgi_client, assert_problem, running
from xreg.config import Settings
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore

CAPS = "/registry/capabilities"


async def test_offered_capabilities(store_client):
    """core/spec.md "Offered Capabilities": "The top-level "<STRING>" MUST be the capability
    name"; each offered with its ``type`` and allowed values (``enum``)."""
    caps = (await store_client.get(CAPS)).json()
    offered = (await store_client.get("/registry/capabilitiesoffered")).json()
    assert offered["flags"] == {"type": "array", "item": {"type": "string"}, "enum": caps["flags"]}
    assert offered["pagination"] == {"type": "boolean", "enum": [False, True]}
    assert offered["shortself"] == {"type": "boolean", "enum": [False]}
    assert offered["specversions"]["enum"] == ["1.0-rc4"]
    assert offered["versionmodes"]["enum"] == caps["versionmodes"]
    assert caps["available"]["capabilities"] == {"mutable": True} and "capabilities" in caps["mutable"]
    inline = (await store_client.get("/registry?inline=capabilitiesoffered")).json()
    assert inline["capabilitiesoffered"] == offered


async def test_patch_and_put_capabilities(store_client):
    """core/http.md: "A PUT MUST be interpreted as a request to update the entire set of
    capabilities and any missing capability MUST be interpreted as a request to reset it to its
    default value"; "PATCH is done at a capability level"; "the response MUST show the requested
    changes"; core/spec.md: ``"*"`` "MUST replace "*" with the full set of items"."""
    full = (await store_client.get(CAPS)).json()
    epoch = (await store_client.get("/registry")).json()["epoch"]
    r = await store_client.patch(CAPS, json={"flags": ["Inline", "filter"], "pagination": False})
    assert r.status_code == 200, r.text
    assert r.json()["flags"] == ["filter", "inline"] and r.json()["pagination"] is False
    assert r.json()["ignores"] == full["ignores"]
    assert (await store_client.get(CAPS)).json() == r.json()
    assert (await store_client.get("/registry?inline=capabilities")).json()["capabilities"] == r.json()
    # core/spec.md Registry entity: capabilities modified, the registry's epoch moves
    assert (await store_client.get("/registry")).json()["epoch"] == epoch + 1
    r = await store_client.put(CAPS, json={"ignores": ["epoch"]})  # the rest back to the supported set
    assert r.status_code == 200 and r.json() == {**full, "ignores": ["epoch"]}, r.text
    r = await store_client.patch(CAPS, json={"ignores": ["*"]})
    assert r.json() == full
    r = await store_client.patch("/registry", json={"capabilities": {"flags": ["doc"]}, "description": "d"})
    assert r.status_code == 200 and (await store_client.get(CAPS)).json()["flags"] == ["doc"]


async def test_refused_changes_change_nothing(store_client):
    """core/spec.md: "A request to update an unknown capability MUST generate an error
    (capability_unknown)"; "with an invalid value MUST generate an error (capability_value)";
    ``"*"`` "along with any other value": ``capability_wildcard``; "that doesn't include a
    mandatory value (such as the current specification version for specversions), MUST
    generate an error (capability_missing_value)"; core/http.md: "no changes applied"."""
    before = (await store_client.get(CAPS)).json()
    cases = [
        ({"nosuch": True}, "capability_unknown"),
        ({"flags": ["inline", "teleport"]}, "capability_value"),
        ({"flags": "inline"}, "capability_value"),
        ({"shortself": True}, "capability_value"),
        ({"pagination": "yes"}, "capability_value"),
        ({"flags": ["*", "inline"]}, "capability_wildcard"),
        ({"specversions": []}, "capability_missing_value"),
        ({"versionmodes": ["semver"]}, "capability_missing_value"),
        ({"available": {"entities": {"mutable": True}, "model": {"mutable": False}}}, "capability_missing_value"),
        ({"available": {**before["available"], "model": {"mutable": True}}}, "capability_value"),
        ({"available": {**before["available"], "capabilities": {"mutable": False}}}, "capability_error"),
        ({"formats": ["Nope/1.0"]}, "capability_value"),
    ]
    for body, error in cases:
        for method in ("PUT", "PATCH"):
            assert_problem(await store_client.request(method, CAPS, json=body), 400, error)
    assert_problem(await store_client.put(CAPS, json=["flags"]), 400, "bad_request")
    assert (await store_client.get(CAPS)).json() == before


async def test_a_flag_turned_off_is_refused(store_client):
    """core/spec.md ``flags``: "Absence in the map indicates no support for that flag"; this
    server refuses a flag it does not support (``bad_flag``, see docs/conformance.md), and
    paging flags once ``pagination`` is false."""
    assert (await store_client.get("/registry?inline=*")).status_code == 200
    await store_client.patch(CAPS, json={"flags": ["doc"], "pagination": False})
    assert_problem(await store_client.get("/registry?inline=*"), 400, "bad_flag")
    assert_problem(await store_client.get("/registry/modelsource?limit=1"), 400, "bad_flag")
    assert (await store_client.get("/registry?doc")).status_code == 200
    await store_client.patch(CAPS, json={"flags": ["*"], "pagination": True})
    assert (await store_client.get("/registry?inline=*")).status_code == 200


async def test_capability_settings_survive_a_restart(settings: Settings, tmp_path: Path):
    """The settings are stored with the registry entity (one write path): a new process on the
    same store, SQLite or MongoDB, serves them."""
    async with running(settings) as app, asgi_client(app) as c:
        assert (await c.patch(CAPS, json={"pagination": False})).status_code == 200
    async with running(settings) as app, asgi_client(app) as c:
        assert (await c.get(CAPS)).json()["pagination"] is False
    store = MongoStore(client=AsyncMongoMockClient(), database=f"caps_{uuid.uuid4().hex[:12]}")
    app = create_app(settings, registry=LocalRegistry(store, registry_id="test", base_url=settings.base_url))
    async with app.router.lifespan_context(app), asgi_client(app) as c:
        assert (await c.patch(CAPS, json={"pagination": False})).status_code == 200
        other = LocalRegistry(store, registry_id="test")  # another process on the same database
        await other.sync_model()
        assert other.capability_settings == {"pagination": False}


async def test_narrowed_ignores_are_enforced(store_client):
    """core/spec.md ``ignore``: "Specifying an invalid, or unsupported, value for this flag MUST
    generate an error (bad_ignore)"; "Specifying the flag without any values, an empty string, or
    * indicates a request to ignore all possible (server supported) aspects" — after a client
    narrows ``ignores``, a value it removed is ``bad_ignore`` and ``?ignore`` means the rest."""
    group = "/registry/messagegroups/g1"
    assert (await store_client.put(group, json={"messagegroupid": "other"}) ).status_code == 400
    assert (await store_client.put(group + "?ignore=id", json={"messagegroupid": "other"})).status_code == 201
    assert (await store_client.patch(CAPS, json={"ignores": ["epoch"]})).status_code == 200
    body = assert_problem(await store_client.put(group + "?ignore=id", json={"messagegroupid": "other"}),
                          400, "bad_ignore")
    assert "id" in body["title"]
    # "all" is the enabled ones: ``id`` is no longer ignored, the ids are compared
    assert_problem(await store_client.put(group + "?ignore", json={"messagegroupid": "other"}), 400, "mismatched_id")
    assert (await store_client.put(group + "?ignore=epoch", json={"epoch": 99})).status_code == 200


async def test_unavailable_metadata_is_not_available(store_client):
    """core/spec.md ``available``: "Metadata not listed in this capability is to be assumed to be
    unavailable via all mechanisms. Attempts to access unavailable metadata MUST generate an
    error (not_available)" — the API and ``?inline`` alike; ``/export`` leaves it out of its
    default."""
    assert (await store_client.get("/registry/export")).json()["modelsource"] == {}
    keep = {"capabilities": {"mutable": True}, "entities": {"mutable": True}, "model": {"mutable": False},
            "export": {"mutable": False}}
    assert (await store_client.patch(CAPS, json={"available": keep})).status_code == 200
    for path in ("/registry/modelsource", "/registry/capabilitiesoffered", "/registry?inline=modelsource",
                 "/registry?inline=capabilitiesoffered"):
        assert_problem(await store_client.get(path), 400, "not_available")
    assert_problem(await store_client.put("/registry/modelsource", json={}), 400, "not_available")
    export = await store_client.get("/registry/export")
    assert export.status_code == 200 and "modelsource" not in export.json() and "capabilities" in export.json()
    assert (await store_client.get("/registry/model")).status_code == 200
    keep.pop("export")
    assert (await store_client.patch(CAPS, json={"available": keep})).status_code == 200
    assert_problem(await store_client.get("/registry/export"), 400, "not_available")


async def test_immutable_entities_refuse_writes_over_http_and_graphql(store_client):
    """core/spec.md ``available``: "a nested "mutable" boolean attribute indicating whether or not
    the corresponding data is user-editable": once a client sets ``entities`` (or
    ``modelsource``) not mutable, writes of them are ``readonly`` — over HTTP and through GraphQL
    mutations; reads go on, and the capabilities stay changeable to undo it."""
    assert (await store_client.put("/registry/messagegroups/g1", json={})).status_code == 201
    frozen = {"capabilities": {"mutable": True}, "entities": {"mutable": False}, "model": {"mutable": False},
              "modelsource": {"mutable": False}}
    assert (await store_client.patch(CAPS, json={"available": frozen})).status_code == 200
    for method, path in (("PUT", "/registry/messagegroups/g2"), ("PATCH", "/registry/messagegroups/g1"),
                         ("DELETE", "/registry/messagegroups/g1"), ("POST", "/registry/messagegroups"),
                         ("PATCH", "/registry"), ("PUT", "/registry/modelsource")):
        r = await store_client.request(method, path, json={} if method != "DELETE" else None)
        assert_problem(r, 400, "readonly")
    r = await store_client.post("/graphql", json={"query": """mutation { createGroup(groupType: "messagegroups",
        groupId: "g3") { revision } }"""})
    assert r.json()["errors"][0]["extensions"]["code"] == "readonly", r.text
    assert (await store_client.get("/registry/messagegroups/g1")).status_code == 200
    # modelsource alone not mutable: a registry write carrying one is refused, others pass
    only = {**frozen, "entities": {"mutable": True}}
    assert (await store_client.patch(CAPS, json={"available": only})).status_code == 200
    assert (await store_client.patch("/registry", json={"description": "d"})).status_code == 200
    assert_problem(await store_client.patch("/registry", json={"modelsource": {}}), 400, "readonly")
    assert (await store_client.patch(CAPS, json={"available": None})).status_code == 200
    assert (await store_client.put("/registry/messagegroups/g2", json={})).status_code == 201


async def test_versionmodes_turned_off_are_model_errors(store_client):
    """core/spec.md ``versionmodes``: the version modes the server offers; a model naming one a
    client turned off is ``model_error``, as one the server does not know."""
    model = {"groups": {"dirs": {"plural": "dirs", "singular": "dir", "resources": {"files": {
        "plural": "files", "singular": "file", "versionmode": "semver"}}}}}
    assert (await store_client.patch(CAPS, json={"versionmodes": ["manual"]})).status_code == 200
    assert_problem(await store_client.put("/registry/modelsource", json=model), 400, "model_error")
    assert_problem(await store_client.put("/registry", json={"modelsource": model}), 400, "model_error")
    assert (await store_client.patch(CAPS, json={"versionmodes": ["*"]})).status_code == 200
    assert (await store_client.put("/registry/modelsource", json=model)).status_code == 200


async def test_formats_and_compatibilities_turned_off_are_not_checked(store_client):
    """core/spec.md ``formats``: "The list of case-insensitive Version format values that can be
    validated"; ``compatibilities``: "The set of compatibility rules that are available for each
    supported format" — a format or rule a client removed is treated as one the server cannot
    check: the Version records it as not validated (``strictvalidation``: ``format_unknown`` /
    ``compatibility_unknown``, see docs/schema-validation.md)."""
    schemas = "/registry/schemagroups/g/schemas"
    avro = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}
    caps = (await store_client.get(CAPS)).json()
    assert (await store_client.patch(CAPS, json={"formats": [f for f in caps["formats"] if "avro" not in f]})
            ).status_code == 200
    r = await store_client.put(f"{schemas}/s/versions/1$details", json={"format": "Avro/1.11", "schema": avro})
    assert r.status_code == 201, r.text
    assert r.json()["formatvalidated"] is False and "turned off" in r.json()["formatvalidatedreason"]
    broken = await store_client.put(f"{schemas}/b/versions/1", content=b"{ not avro",
                                    headers={"xRegistry-format": "Avro/1.11", "Content-Type": "application/json"})
    assert broken.status_code == 201, broken.text  # not checked: not refused as a format_violation
    assert (await store_client.patch(CAPS, json={"formats": ["*"], "compatibilities": {"avro/1.*": ["none"]}})
            ).status_code == 200
    assert (await store_client.patch(f"{schemas}/s/meta", json={"compatibility": "backward"})).status_code == 200
    r = await store_client.put(f"{schemas}/s/versions/2$details",
                               json={"format": "Avro/1.11", "schema": {**avro, "fields": []}, "ancestorid": "1"})
    assert r.status_code == 201, r.text
    assert r.json()["formatvalidated"] is True and r.json()["compatibilityvalidated"] is False
    assert "turned off" in r.json()["compatibilityvalidatedreason"]
