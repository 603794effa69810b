"""One depth rule: the deepest attribute value the API accepts (``json_limits.MAX_VALUE_DEPTH``)
is exported, imported again (``PUT /?ignore``, ``xreg-gateway import``) and read by a federating
gateway, all of which bound whole documents by ``json_limits.MAX_DEPTH``; a value one level
deeper is refused with 400 ``invalid_attribute`` and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import httpx

from adapters.base import Listing
from gateway.cli import run_import
from tests.federation.conftest import remote_config
from tests.http.support import WRITE_KEY, asgi_client, assert_problem, bearer, make_settings, revision, running
from xreg import json_limits
from xreg.json_limits import MAX_VALUE_DEPTH

S = "/registry/schemagroups/g/schemas/s"
V = f"{S}/versions/1"


def nested(levels: int) -> Any:
    """A JSON value ``levels`` containers deep (objects and arrays, alternating)."""
    value: Any = "bottom"
    for i in range(levels):
        value = {"d": value} if i % 2 else [value]
    return value


def depth(value: Any) -> int:
    """The containers on the deepest path of ``value``."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def deepest_writes(levels: int) -> list[tuple[str, str, dict[str, Any]]]:
    """Writes that put a value ``levels`` deep into a group, a version, a resource's ``meta`` and a
    JSON document kept as JSON."""
    value = nested(levels)
    return [
        ("PUT", "/registry/schemagroups/g", {"deep": value}),
        ("PUT", f"{V}$details", {"format": "Binary/1.0", "schemabase64": "AAEC", "deep": value}),
        ("PATCH", f"{S}/meta", {"deep": value}),
        ("PUT", "/registry/schemagroups/g/schemas/doc$details", {"format": "Binary/1.0", "schema": value}),
    ]


def test_the_rule_is_the_document_bound_less_the_nesting_of_the_export():
    assert MAX_VALUE_DEPTH == json_limits.MAX_DEPTH - json_limits.ENTITY_NESTING
    # registry > group map > group > resource map > resource > versions map > version > value
    doc = {"schemagroups": {"g": {"schemas": {"s": {"versions": {"1": {"deep": nested(MAX_VALUE_DEPTH)}}}}}}}
    assert depth(doc) == json_limits.MAX_DEPTH
    json_limits.check(doc)


async def test_the_deepest_accepted_value_round_trips_through_export_and_import(client, tmp_path):
    for method, path, body in deepest_writes(MAX_VALUE_DEPTH):
        response = await client.request(method, path, json=body)
        assert response.status_code in (200, 201), response.text
    export = await client.get("/registry/export")
    doc = json_limits.loads(export.content)  # within the document bound
    assert depth(doc["schemagroups"]["g"]["schemas"]["s"]["versions"]["1"]["deep"]) == MAX_VALUE_DEPTH
    assert depth(doc) == json_limits.MAX_DEPTH

    # PUT /?ignore into another gateway
    async with running(make_settings(tmp_path / "other")) as other, asgi_client(other) as target:
        assert (await target.put("/registry?ignore", json=doc)).status_code == 200
        assert (await target.get(f"{V}$details")).json()["deep"] == nested(MAX_VALUE_DEPTH)
        assert (await target.get(f"{S}/meta")).json()["deep"] == nested(MAX_VALUE_DEPTH)
        assert (await target.get("/registry/schemagroups/g")).json()["deep"] == nested(MAX_VALUE_DEPTH)
        stored = (await target.get("/registry/schemagroups/g/schemas/doc$details?inline=schema")).json()
        assert stored["schema"] == nested(MAX_VALUE_DEPTH)

    # xreg-gateway import of the exported file (reader, normalisation, import)
    path = tmp_path / "export.xreg.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    report = await run_import(make_settings(tmp_path / "imported"), [path], strict=False)
    assert report.rejected == 0, report.rows


async def test_a_value_one_level_deeper_is_refused_and_changes_nothing(client, app):
    assert (await client.put(f"{V}$details", json={"format": "Binary/1.0", "schemabase64": "AAEC"})).status_code == 201
    rev = await revision(app)
    for method, path, body in deepest_writes(MAX_VALUE_DEPTH + 1)[:3]:
        problem = assert_problem(await client.request(method, path, json=body), 400, "invalid_attribute")
        assert problem["args"]["name"].startswith("deep") and "nested more than" in problem["detail"], problem
        assert str(MAX_VALUE_DEPTH) in problem["detail"]
    # through GraphQL too
    query = """mutation($attrs: JSON!) { updateGroup(groupType: "schemagroups", groupId: "g", attributes: $attrs) {
      revision } }"""
    answer = (await client.post("/graphql", json={"query": query,
                                                  "variables": {"attrs": {"deep": nested(MAX_VALUE_DEPTH + 1)}}})).json()
    assert answer["errors"][0]["extensions"]["code"] == "invalid_attribute", answer
    assert await revision(app) == rev


async def test_a_json_document_deeper_than_a_value_is_kept_as_bytes_and_round_trips(client, tmp_path):
    """A document is bytes; one deeper than an attribute value may be is not shown as JSON (its
    ``schema``) but as ``schemabase64``, which any depth can take."""
    document = json.dumps(nested(MAX_VALUE_DEPTH + 1)).encode()
    response = await client.put("/registry/schemagroups/g/schemas/doc", content=document,
                                headers={"Content-Type": "application/json", "xRegistry-format": "Binary/1.0"})
    assert response.status_code == 201, response.text
    details = (await client.get("/registry/schemagroups/g/schemas/doc$details?inline=schema")).json()
    assert "schema" not in details and details["schemabase64"]
    doc = json_limits.loads((await client.get("/registry/export")).content)
    async with running(make_settings(tmp_path / "other")) as other, asgi_client(other) as target:
        assert (await target.put("/registry?ignore", json=doc)).status_code == 200
        assert (await target.get("/registry/schemagroups/g/schemas/doc")).content == document


async def test_a_federating_gateway_reads_the_deepest_accepted_value(live, open_remote):
    with httpx.Client(base_url=live.url, headers=bearer(WRITE_KEY)) as http:
        for method, path, body in deepest_writes(MAX_VALUE_DEPTH):
            response = http.request(method, path, json=body)
            assert response.status_code in (200, 201), response.text
    source = await open_remote(remote_config("deep", f"{live.url}/registry"))
    found = await source.get_many(["/schemagroups/g/schemas/s/versions/1", "/schemagroups/g",
                                   "/schemagroups/g/schemas/s"])
    assert found["/schemagroups/g/schemas/s/versions/1"].view["deep"] == nested(MAX_VALUE_DEPTH)
    assert found["/schemagroups/g"].view["deep"] == nested(MAX_VALUE_DEPTH)
    assert found["/schemagroups/g/schemas/s"].meta["deep"] == nested(MAX_VALUE_DEPTH)
    # collections read with their children inlined (the deepest answers a remote sends)
    versions = await source.list(Listing(ctypes=("schemagroups/schemas/versions",), limit=100))
    assert any(r.view.get("deep") == nested(MAX_VALUE_DEPTH) for r in versions.items)
