"""Every attribute is validated on every write path, a resource's nested ``meta`` included: a
``meta`` with ``"createdat": true`` or ``"modifiedat": [1]`` is refused (400 ``invalid_attribute``;
GraphQL ``extensions.code``) and changes nothing, through each entry point that carries one.
Values an older gateway stored are listed by ``xreg-gateway check`` and repaired by
``check --repair`` through the write path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import REPO
from tests.http.support import asgi_client, assert_problem, make_settings, revision, running
from xreg import json_limits
from xreg.errors import XRegistryError
from xreg.registry.changeset import Changeset
from xreg.registry.service import LocalRegistry
from xreg.registry.stored_values import find_invalid, repair_timestamps
from xreg.storage.records import Write

S = "/registry/schemagroups/g/schemas/s"
BAD_META: list[dict[str, Any]] = [{"createdat": True}, {"modifiedat": [1]}, {"createdat": "yesterday"}]


def _entry_points(meta: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """``(method, path, body)`` of every HTTP request that writes the ``meta`` of resource ``s``."""
    resource = {"format": "Binary/1.0", "schemabase64": "AAEC", "meta": meta}
    return [
        ("PUT", f"{S}$details", resource),
        ("PATCH", f"{S}$details", resource),
        ("PUT", f"{S}/meta", meta),
        ("PATCH", f"{S}/meta", meta),
        ("PUT", "/registry/schemagroups/g", {"schemas": {"s": resource}}),
        ("PATCH", "/registry/schemagroups/g", {"schemas": {"s": resource}}),
        ("POST", "/registry/schemagroups/g", {"schemas": {"s": resource}}),
        ("POST", "/registry/schemagroups/g/schemas", {"s": resource}),
        ("PATCH", "/registry/schemagroups/g/schemas", {"s": resource}),
        ("POST", "/registry/schemagroups", {"g": {"schemas": {"s": resource}}}),
        ("PATCH", "/registry", {"schemagroups": {"g": {"schemas": {"s": resource}}}}),
        ("POST", "/registry", {"schemagroups": {"g": {"schemas": {"s": resource}}}}),
        ("PUT", "/registry", {"schemagroups": {"g": {"schemas": {"s": resource}}}}),
    ]


CASES = [(method, path, body) for meta in BAD_META for method, path, body in _entry_points(meta)]


async def _state(client) -> tuple[Any, Any]:
    meta = (await client.get(f"{S}/meta")).json()
    export = (await client.get("/registry/export")).json()
    return meta, export


@pytest.fixture
async def resource(client):
    r = await client.put(f"{S}$details", json={"format": "Binary/1.0", "schemabase64": "AAEC"})
    assert r.status_code == 201, r.text
    return client


@pytest.mark.parametrize(("method", "path", "body"), CASES,
                         ids=[f"{m}-{p.removeprefix('/registry') or '/'}-meta{i // (len(CASES) // len(BAD_META))}"
                              for i, (m, p, _) in enumerate(CASES)])
async def test_a_bad_meta_timestamp_is_refused_on_every_http_entry_point(resource, app, method, path, body):
    client = resource
    rev, before = await revision(app), await _state(client)
    problem = assert_problem(await client.request(method, path, json=body), 400, "invalid_attribute")
    assert problem["args"]["name"] in ("createdat", "modifiedat"), problem
    assert await revision(app) == rev
    assert await _state(client) == before


async def test_a_new_resource_with_a_bad_meta_is_refused(client, app):
    rev = await revision(app)
    for meta in BAD_META:
        assert_problem(await client.put(f"{S}$details", json={"format": "Binary/1.0", "meta": meta}), 400,
                       "invalid_attribute")
    assert await revision(app) == rev
    assert (await client.get(f"{S}$details")).status_code == 404


UPDATE = """mutation($attrs: JSON!, $replace: Boolean!) { updateResource(groupType: "schemagroups", groupId: "g",
  resourceType: "schemas", resourceId: "s", attributes: $attrs, replace: $replace) { revision } }"""
CREATE = """mutation($attrs: JSON!) { createResource(groupType: "schemagroups", groupId: "g",
  resourceType: "schemas", resourceId: "t", attributes: $attrs) { revision } }"""


@pytest.mark.parametrize("meta", BAD_META, ids=[f"meta{i}" for i in range(len(BAD_META))])
async def test_a_bad_meta_timestamp_is_refused_through_graphql(resource, app, meta):
    client = resource
    rev, before = await revision(app), await _state(client)
    for query, variables in ((UPDATE, {"attrs": {"meta": meta}, "replace": False}),
                             (UPDATE, {"attrs": {"format": "Binary/1.0", "meta": meta}, "replace": True}),
                             (CREATE, {"attrs": {"format": "Binary/1.0", "meta": meta}})):
        answer = (await client.post("/graphql", json={"query": query, "variables": variables})).json()
        assert answer["data"] is None or all(v is None for v in answer["data"].values()), answer
        assert answer["errors"][0]["extensions"]["code"] == "invalid_attribute", answer
    assert await revision(app) == rev
    assert await _state(client) == before


# -- values an older gateway stored: found and repaired ------------------------------------------------
def cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``xreg-gateway`` in a subprocess, on the SQLite store of ``data_dir``."""
    script = Path(sys.executable).with_name("xreg-gateway")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("XREG_")}
    env.update(XREG_DATA_DIR=str(data_dir), XREG_REGISTRY_ID="test", COLUMNS="200")
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=120)


def _deep() -> list:
    """A value one level deeper than the depth rule allows."""
    value: list = []
    for _ in range(json_limits.MAX_VALUE_DEPTH):
        value = [value]
    return value


async def _store_as_an_older_gateway_did(registry: LocalRegistry, xid: str, change: dict[str, Any],
                                         within: str | None = None) -> None:
    """Write ``change`` into the stored state of ``xid`` (into its ``within`` object) behind the
    write path's back."""
    rec = await registry.store.get(xid)
    assert rec is not None
    doc = {**rec.doc}
    if within is None:
        doc.update(change)
    else:
        doc[within] = {**doc[within], **change}
    await registry.store.commit([Write(xid=rec.xid, kind=rec.kind, ctype=rec.ctype, doc=doc, expect=rec.revision)])


async def test_check_lists_stored_bad_values_and_repair_fixes_them_through_the_write_path(tmp_path):
    settings = make_settings(tmp_path, registry_id="test")
    async with running(settings) as app:
        registry: LocalRegistry = app.state.registry
        async with asgi_client(app) as client:
            assert (await client.put(f"{S}$details", json={"format": "Binary/1.0", "schemabase64": "AAEC"})
                    ).status_code == 201
            assert (await client.put("/registry/schemagroups/h", json={"name": "h"})).status_code == 201
            meta = (await client.get(f"{S}/meta")).json()
        await _store_as_an_older_gateway_did(registry, "/schemagroups/g/schemas/s", {"createdat": True}, "meta")
        await _store_as_an_older_gateway_did(registry, "/schemagroups/h", {"modifiedat": [1], "labels": {"A": "x"},
                                                                              "deep": _deep()})
        await _store_as_an_older_gateway_did(registry, "/schemagroups/g/schemas/s/versions/1",
                                             {"createdat": "soon", "modifiedat": "2024-05-01T00:00:00Z"})
        async with asgi_client(app) as client:  # such a meta makes later writes of the resource fail
            assert_problem(await client.patch(f"{S}/meta", json={"compatibility": "none"}), 400, "invalid_attribute")

    found = cli("check", data_dir=tmp_path)
    assert found.returncode == 1, found.stderr
    for where in ("/schemagroups/g/schemas/s/meta", "/schemagroups/h", "/schemagroups/g/schemas/s/versions/1"):
        assert where in found.stdout
    assert "labels" in found.stdout and "nested more than" in found.stdout

    repaired = cli("check", "--repair", data_dir=tmp_path)
    assert repaired.returncode == 1, repaired.stdout + repaired.stderr  # the bad label key is not a timestamp
    assert "repaired /schemagroups/g/schemas/s/meta" in repaired.stdout
    assert "repaired /schemagroups/g/schemas/s/versions/1" in repaired.stdout
    assert "not repaired /schemagroups/h" in repaired.stdout  # the write path refuses its label key

    async with running(settings) as app:
        async with asgi_client(app) as client:
            fixed = (await client.get(f"{S}/meta")).json()
            # createdat: the entity's valid modifiedat (its earliest known time); modifiedat: the repair
            assert fixed["createdat"] == meta["modifiedat"] and fixed["epoch"] == meta["epoch"] + 1
            version = (await client.get(f"{S}/versions/1$details")).json()
            assert version["createdat"] == "2024-05-01T00:00:00Z"
            assert version["modifiedat"] > version["createdat"]
            # the resource takes writes again, and its export imports
            assert (await client.patch(f"{S}/meta", json={"compatibility": "none"})).status_code == 200
            export = (await client.get("/registry/export")).json()
            del export["schemagroups"]["h"]
            assert (await client.put("/registry?ignore", json=export)).status_code == 200, "export does not import"


# -- the engine, on every embedded store ----------------------------------------------------------------
async def test_the_engine_refuses_a_bad_meta_and_check_repairs_stored_ones_on_every_store(local: LocalRegistry):
    async def create(cs: Changeset) -> None:
        await cs.put_resource("schemagroups", "g", "schemas", "s", {"format": "Binary/1.0", "schemabase64": "AAEC"})

    await local.write(create, subject="/schemagroups/g/schemas/s", note="create")
    rev = await local.store.current_revision()
    for meta in BAD_META:
        async def bad(cs: Changeset, meta: dict[str, Any] = meta) -> None:
            await cs.put_meta("schemagroups", "g", "schemas", "s", meta, patch=True)

        with pytest.raises(XRegistryError) as refused:
            await local.write(bad, subject="/schemagroups/g/schemas/s/meta", note="bad")
        assert refused.value.type == "invalid_attribute"
    assert await local.store.current_revision() == rev

    await _store_as_an_older_gateway_did(local, "/schemagroups/g/schemas/s", {"createdat": True}, "meta")
    assert [(f.xid, f.path, f.repairable) for f in await find_invalid(local)] == [
        ("/schemagroups/g/schemas/s/meta", "createdat", True)]
    repairs = await repair_timestamps(local)
    assert [(r.xid, r.refused) for r in repairs] == [("/schemagroups/g/schemas/s/meta", None)]
    assert await find_invalid(local) == []
    rec = await local.store.get("/schemagroups/g/schemas/s")
    assert rec is not None and rec.doc["meta"]["createdat"] == repairs[0].values["createdat"]


def test_check_finds_nothing_in_a_registry_the_write_path_filled(tmp_path):
    """What the gateway keeps beside an entity's attributes (a message's ``@materialised`` view of
    its base message, the registry's ``@modelsource`` and ``@capabilities``) is not an attribute:
    ``check`` after a plain import of the samples (base messages among them) reports nothing."""
    imported = cli("import", str(REPO / "samples"), data_dir=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    found = cli("check", data_dir=tmp_path)
    assert found.returncode == 0, found.stdout + found.stderr
    assert "@materialised" not in found.stdout
