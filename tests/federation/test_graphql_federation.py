"""The federation through GraphQL: the gateway app (its real lifespan, settings and federation)
over three remotes of our own, the faulty registry and a document, queried at /graphql."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from tests.federation.conftest import data_file
from tests.federation.servers import all_held
from tests.federation.test_federation import remote_entry
from xreg.config import Settings

ERP_GROUP = "/messagegroups/Contoso.ERP.EmployeeEvents"
EDGE_NODE = "/messagegroups/Eclipse.SparkplugB.EdgeNode"
EMPLOYEE_SCHEMA = "/schemagroups/Contoso.ERP/schemas/Contoso.ERP.EmployeeData"
TRANSIT_MQTT = "/messagegroups/GeneralTransitFeedRealTime.mqtt/messages/GeneralTransitFeedRealTime.Vehicle.VehiclePosition.mqtt"


def seed(remotes, canary_origin: str) -> dict[str, Any]:
    erp, iot, transit = (remotes[r].base_url for r in ("erp", "iot", "transit"))
    return {
        "messagegroups": {"local": {"messages": {
            "vehicle": {"basemessageuri": transit + TRANSIT_MQTT, "description": "ours", "envelope": "CloudEvents/1.0",
                        "envelopemetadata": {"source": {"value": "/ours"}},
                        "dataschemaformat": "JsonSchema/draft-07",
                        "dataschemauri": f"{erp}{EMPLOYEE_SCHEMA}/versions/1"},
            "external-schema": {"dataschemaformat": "JsonSchema/draft-07",
                                "dataschemauri": "https://json.schemastore.org/package.json"},
            "loop-a": {"basemessageuri": "/messagegroups/local/messages/loop-b"},
            # a loop through a URL (of this registry): the store cannot see it, the read-time walk does
            "loop-b": {"basemessageuri": "http://gw.test/registry/messagegroups/local/messages/loop-a"},
            "alias": {"meta": {"xref": "/messagegroups/local/messages/vehicle"}},
        }}},
        "endpoints": {"fleet": {"usage": ["consumer"], "protocol": "MQTT/5.0", "messagegroups": [
            f"{erp}{ERP_GROUP}", "#/messagegroups/local", f"{iot}{EDGE_NODE}",
            f"{canary_origin}/registry/messagegroups/stolen", f"{erp}/messagegroups/missing"],
            "protocoloptions": {"willmessage": "/messagegroups/local/messages/vehicle"}}},
    }


class Gateway:
    def __init__(self, app, client: httpx.AsyncClient) -> None:
        self.app, self.client = app, client

    async def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        response = await self.client.post("/graphql", json={"query": query, "variables": variables or None})
        assert response.status_code == 200, response.text
        return response.json()

    async def data(self, query: str, **variables: Any) -> dict[str, Any]:
        body = await self(query, **variables)
        assert "errors" not in body, body["errors"]
        return body["data"]


async def start(tmp_path, registries: list[dict], document: dict | None = None):
    settings = Settings(data_dir=tmp_path, registry_id="test", base_url="http://gw.test/registry",
                        config_watch_seconds=0, registries=registries)
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    if document:
        await app.state.registry.apply_document(document)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")
    return Gateway(app, client), lifespan


@pytest.fixture
async def gateway(tmp_path, remotes, canary, faulty):
    registries = [
        *(remote_entry(rid, s.base_url) for rid, s in remotes.items()),
        {"id": "spec", "kind": "file", "path": str(data_file("windgenerator-kafka-avro.xreg.json")), "priority": 300},
        remote_entry("exotic", faulty[0].origin + "/exotic/registry", priority=400),
    ]
    gw, lifespan = await start(tmp_path, registries, seed(remotes, canary[0].origin))
    try:
        yield gw
    finally:
        await gw.client.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_every_registry_with_its_health(gateway):
    data = await gateway.data("""{ registries { registryid kind revision status { healthy kind url breaker
        lastSuccess lastError cache { hits misses } } } }""")
    rows = {r["registryid"]: r for r in data["registries"]}
    assert list(rows) == ["test", "erp", "iot", "transit", "spec", "exotic"]
    assert [rows[r]["kind"] for r in rows] == ["local", "xregistry", "xregistry", "xregistry", "file", "xregistry"]
    erp = rows["erp"]["status"]
    assert erp["healthy"] and erp["breaker"] == "closed" and erp["lastSuccess"].endswith("Z") and erp["lastError"] is None
    assert erp["cache"]["misses"] >= 0 and rows["test"]["status"]["cache"] is None
    assert rows["exotic"]["revision"] >= 1  # a snapshot minted for the query


async def test_references_resolve_wherever_they_point(gateway, canary):
    _, canary_hits = canary
    before = sum(canary_hits.values())
    body = await gateway("""{ registry { lookup(xid: "/endpoints/fleet") { ... on Endpoint {
        messagegroups { registryid xid name messages(first: 2) { totalCount nodes { xid } } }
        willmessage { xid effective } } } } }""")
    fleet = body["data"]["registry"]["lookup"]
    assert [(g["registryid"], g["xid"]) for g in fleet["messagegroups"]] == [
        ("erp", ERP_GROUP), ("test", "/messagegroups/local"), ("iot", EDGE_NODE)]
    assert fleet["messagegroups"][0]["messages"]["totalCount"] == 3  # nested pages of a remote group
    assert fleet["willmessage"]["xid"] == "/messagegroups/local/messages/vehicle"
    errors = body["errors"]
    assert [e["extensions"]["code"] for e in errors] == ["unresolved_reference"] * 2
    assert all(e["extensions"]["args"]["registry"] == "test" for e in errors)
    assert errors[0]["extensions"]["args"]["reference"].endswith("/messagegroups/stolen")
    assert "not fetched" in errors[0]["extensions"]["detail"]
    assert errors[1]["extensions"]["args"]["reference"].endswith("/messagegroups/missing")
    assert errors[0]["path"] == ["registry", "lookup", "messagegroups"]
    assert sum(canary_hits.values()) == before  # no request left for a host that is not a registry


async def test_base_messages_effective_definitions_and_schemas_across_registries(gateway):
    body = await gateway("""{ registry {
        vehicle: lookup(xid: "/messagegroups/local/messages/vehicle") { ... on Message {
          basemessage { registryid xid protocol basemessage { xid } }
          effective
          dataschema { registryid xid schema { xid format } version { versionid } document } } }
        external: lookup(xid: "/messagegroups/local/messages/external-schema") { ... on Message {
          dataschema { uri schema { xid } } } }
        loop: lookup(xid: "/messagegroups/local/messages/loop-a") { ... on Message { effective unresolvedBase } }
        alias: lookup(xid: "/messagegroups/local/messages/alias/meta") { ... on Meta {
          xref xrefresource { xid registryid } } } } }""")
    reg = body["data"]["registry"]
    vehicle = reg["vehicle"]
    assert vehicle["basemessage"]["registryid"] == "transit" and vehicle["basemessage"]["xid"] == TRANSIT_MQTT
    assert vehicle["basemessage"]["protocol"] == "MQTT/5.0"
    assert vehicle["basemessage"]["basemessage"]["xid"].endswith("GeneralTransitFeedRealTime.Vehicle.VehiclePosition")
    effective = vehicle["effective"]
    assert effective["description"] == "ours" and effective["protocol"] == "MQTT/5.0"
    assert effective["envelopemetadata"]["source"]["value"] == "/ours"
    assert effective["envelopemetadata"]["type"]["value"]  # from the base of the base, in the transit registry
    schema = vehicle["dataschema"]
    assert schema["registryid"] == "erp" and schema["xid"] == EMPLOYEE_SCHEMA + "/versions/1"
    assert schema["schema"]["xid"] == EMPLOYEE_SCHEMA and schema["version"]["versionid"] == "1"
    assert schema["document"]["type"] == "object"
    assert reg["external"]["dataschema"] == {"uri": "https://json.schemastore.org/package.json", "schema": None}
    assert reg["loop"]["effective"]["messageid"] == "loop-a"
    assert reg["alias"]["xrefresource"] == {"xid": "/messagegroups/local/messages/vehicle", "registryid": "test"}
    assert reg["loop"]["unresolvedBase"] == "http://gw.test/registry/messagegroups/local/messages/loop-a"
    (cycle,) = body["errors"]
    assert cycle["path"] == ["registry", "loop", "unresolvedBase"] and "cycle" in cycle["extensions"]["detail"]


async def test_collections_across_registries_page_correctly(gateway):
    query = """query($after: String, $registries: [String!]) {
        messages(first: 9, after: $after, registries: $registries, sort: {attribute: "name", order: DESC}) {
          totalCount pageInfo { hasNextPage endCursor } nodes { registryid xid name } } }"""
    for registries in (None, ["erp", "transit"]):
        seen, after, total = [], None, None
        while True:
            data = (await gateway.data(query, after=after, registries=registries))["messages"]
            total = data["totalCount"]
            seen += [(n["registryid"], n["xid"]) for n in data["nodes"]]
            if not data["pageInfo"]["hasNextPage"]:
                break
            after = data["pageInfo"]["endCursor"]
        assert len(seen) == len(set(seen)) == total
        expected = {"erp": 17, "transit": 93}
        for rid, count in expected.items():
            assert sum(1 for r, _ in seen if r == rid) == count
        if registries:
            assert {r for r, _ in seen} == set(registries)
    data = await gateway.data("""{ messagegroups(filter: {name: "*Employee*"}, first: 50) { nodes { registryid xid } } }""")
    assert [(n["registryid"], n["xid"]) for n in data["messagegroups"]["nodes"]] == []  # erp groups have no name
    data = await gateway.data("""{ messagegroups(first: 100, filter: {raw: ["messagegroupid=*Employee*"]}) {
        totalCount nodes { registryid xid } } }""")
    assert data["messagegroups"]["nodes"] == [{"registryid": "erp", "xid": ERP_GROUP}]


async def test_group_types_only_a_remote_knows(gateway):
    data = await gateway.data("""{ groups(groupType: "devices") { nodes { registryid xid type
        ... on GenericGroup { name attributes resources(resourceType: "firmwares") { nodes { xid
          ... on GenericResource { versionid attributes } } } } } }
        registry(id: "exotic") { model } }""")
    (device,) = data["groups"]["nodes"]
    assert device["registryid"] == "exotic" and device["type"] == "devices" and device["attributes"]["vendor"] == "Acme"
    assert device["resources"]["nodes"][0]["attributes"]["channel"] == "stable"
    assert list(data["registry"]["model"]["groups"]) == ["devices"]


async def test_a_failing_registry_costs_only_its_own_data(tmp_path, remotes, faulty):
    registries = [remote_entry("erp", remotes["erp"].base_url),
                  remote_entry("broken", faulty[0].origin + "/malformed/registry"),
                  remote_entry("slow", faulty[0].origin + "/slow/registry", timeouts={"connect": 0.5, "read": 0.3, "total": 0.5})]
    gw, lifespan = await start(tmp_path, registries)
    try:
        # the slow registry would answer after 3 s: its error below says it was not waited for
        body = await gw("""{ messagegroups(first: 100) { totalCount nodes { registryid } }
            registries { registryid status { healthy lastError } endpoints(first: 1) { totalCount } } }""")
        data, errors = body["data"], body["errors"]
        assert {n["registryid"] for n in data["messagegroups"]["nodes"]} == {"erp"}
        status = {r["registryid"]: r["status"] for r in data["registries"]}
        assert status["erp"]["healthy"] and not status["broken"]["healthy"] and not status["slow"]["healthy"]
        assert "malformed JSON" in status["broken"]["lastError"]
        named = {e["extensions"]["args"]["registry"] for e in errors}
        assert named == {"broken", "slow"} and all(e["extensions"]["code"] == "data_retrieval_error" for e in errors)
    finally:
        await gw.client.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_fifty_base_messages_over_three_remotes(tmp_path, remotes):
    """50 local messages whose bases are spread over the three remotes: the page asks each remote
    once per collection, all remotes at once — each remote holds the requests it gets until all
    three hold one, which asking one remote after another could never give."""
    groups: dict[str, dict] = {}
    for rid, count in (("erp", 17), ("iot", 16), ("transit", 17)):
        async with httpx.AsyncClient(trust_env=False) as c:
            found = (await c.get(remotes[rid].base_url + "/messagegroups", params={"inline": "messages"})).json()
        xids = [m["xid"] for g in found.values() for m in (g.get("messages") or {}).values()][:count]
        groups[f"fan-{rid}"] = {"messages": {f"m{i:02d}": {"basemessageuri": remotes[rid].base_url + x}
                                             for i, x in enumerate(xids)}}
    gw, lifespan = await start(tmp_path, [remote_entry(rid, s.base_url) for rid, s in remotes.items()],
                               {"messagegroups": groups})
    query = """query($f: [String!]) { registry { messagegroups(filter: {raw: $f}) { nodes { messages(first: 50) {
        nodes { basemessage { registryid xid } } } } } } }"""
    try:
        await gw.app.state.federation.backend.clear()  # cold: the remotes' cache is shared by all of them
        for server in remotes.values():
            server.wrapper.reset()
            server.wrapper.hold()
        answering = asyncio.ensure_future(gw.data(query, f=["messagegroupid=fan-*"]))
        try:
            await all_held([server.wrapper for server in remotes.values()])
        finally:
            for server in remotes.values():
                server.wrapper.release()
        data = await answering
        found = [m["basemessage"] for g in data["registry"]["messagegroups"]["nodes"] for m in g["messages"]["nodes"]]
        assert len(found) == 50 and all(b is not None for b in found)
        assert {b["registryid"] for b in found} == set(remotes)
        asked = {rid: s.wrapper.requests for rid, s in remotes.items()}
        collections = {b["xid"].rsplit("/", 1)[0] for b in found}
        assert sum(asked.values()) == len(collections) < 50, asked
        await gw.data(query, f=["messagegroupid=fan-*"])  # warm: nothing more is asked
        assert sum(s.wrapper.requests for s in remotes.values()) == sum(asked.values())
    finally:
        await gw.client.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_instance_ids_per_kind_of_registry(gateway):
    rows = {r["registryid"]: r["instanceId"] for r in (await gateway.data("{ registries { registryid instanceId } }"))[
        "registries"]}
    assert rows["test"] == gateway.app.state.registry.instance_id
    assert rows["erp"] is None and rows["exotic"] is None  # remote registries have no revisions of their own
    assert rows["spec"] not in (None, rows["test"])  # the loaded copy of a document is an instance of its own
    data = await gateway.data('query($i: String) { registry(id: "spec") { changes(since: 0, instanceId: $i) '
                              '{ nodes { xid } } } }', i=rows["spec"])
    assert data["registry"]["changes"]["nodes"]
    body = await gateway('{ registry(id: "erp") { changes(since: 0, instanceId: "x") { nodes { xid } } } }')
    error = body["errors"][0]
    assert error["extensions"]["code"] == "instance_mismatch" and "has no instance id" in error["extensions"]["detail"]


async def test_messages_reachable_over_a_protocol_across_registries(gateway):
    """The gateway's own store and the document answer; the remotes are left out, each named."""
    body = await gateway("""{ messages(first: 100, filter: {reachableOver: "mqtt*"}) {
        nodes { xid registryid } } }""")
    found = {(n["registryid"], n["xid"]) for n in body["data"]["messages"]["nodes"]}
    assert {x for r, x in found if r == "test"} == {f"/messagegroups/local/messages/{m}" for m in (
        "vehicle", "external-schema", "loop-a", "loop-b", "alias")}  # `#/messagegroups/local` of the MQTT endpoint
    assert {r for r, _ in found} <= {"test", "spec"}
    left_out = {e["extensions"]["args"]["registry"] for e in body["errors"]
                if e["extensions"]["code"] == "action_not_supported"}
    assert left_out == {"erp", "iot", "transit", "exotic"}
