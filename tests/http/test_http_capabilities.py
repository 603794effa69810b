"""Changing the capabilities (core/spec.md "Updating the Capabilities of a Server", "Offered
Capabilities"; core/http.md "GET /capabilitiesoffered", "PATCH and PUT /capabilities") over
HTTP on each embedded store: offered values, PUT and PATCH semantics, the spec's errors with
nothing changed, enforcement of a flag turned off, and the settings surviving a restart."""

from __future__ import annotations

import uuid
from pathlib import Path

from mongomock_motor import AsyncMongoMockClient

from gateway.app import create_app
from gateway.config import Settings
from gateway.registry.service import LocalRegistry
from gateway.storage.mongo import MongoStore
from tests.http.support import asgi_client, assert_problem, running

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
