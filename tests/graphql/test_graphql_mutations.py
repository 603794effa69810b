"""Mutations over HTTP on a real SQLite registry: the core's validation, epochs, spec error codes,
nothing written on failure."""

from __future__ import annotations

import json

from tests.corpus import XREG_DATA
from tests.graphql.conftest import READ_KEY

CREATE_GROUP = """mutation($type: String!, $id: String!, $attrs: JSON) {
  createGroup(groupType: $type, groupId: $id, attributes: $attrs) { revision created updated
    node { __typename xid ... on Entity { epoch name } ... on Endpoint { protocol usage } } } }"""
UPDATE_GROUP = """mutation($id: String!, $attrs: JSON!, $epoch: Int, $replace: Boolean! = false) {
  updateGroup(groupType: "endpoints", groupId: $id, attributes: $attrs, epoch: $epoch, replace: $replace) {
    revision updated node { ... on Endpoint { epoch name protocol usage } } } }"""
DELETE = """mutation($xid: String!, $epoch: Int) { deleteEntity(xid: $xid, epoch: $epoch) { revision deleted node { xid } } }"""
ENDPOINT = """query($xid: String!) { lookup(xid: $xid) { ... on Endpoint { epoch name protocol usage } } }"""


async def revision(gql) -> int:
    return await gql.registry.store.current_revision()


async def refused(gql, query: str, code: str, **variables) -> dict:
    """Run a mutation that must fail with ``code`` and write nothing."""
    before = await revision(gql)
    error = await gql.error(query, **variables)
    assert error["extensions"]["code"] == code, error
    assert await revision(gql) == before, "a refused mutation wrote something"
    return error


async def test_group_lifecycle_with_epochs(empty):
    made = (await empty.data(CREATE_GROUP, type="endpoints", id="e1",
                             attrs={"name": "One", "protocol": "KAFKA", "usage": ["producer"]}))["createGroup"]
    assert made["created"] == ["/endpoints/e1"] and made["revision"] == await revision(empty)
    assert made["node"] == {"__typename": "Endpoint", "xid": "/endpoints/e1", "epoch": 1, "name": "One",
                            "protocol": "KAFKA", "usage": ["producer"]}
    await refused(empty, CREATE_GROUP, "bad_request", type="endpoints", id="e1", attrs={})
    error = await refused(empty, UPDATE_GROUP, "mismatched_epoch", id="e1", attrs={"name": "Uno"}, epoch=7)
    assert error["extensions"]["args"] == {"bad_epoch": "7", "epoch": "1"} and error["path"] == ["updateGroup"]
    patched = (await empty.data(UPDATE_GROUP, id="e1", attrs={"name": "Uno"}, epoch=1))["updateGroup"]
    assert patched["node"] == {"epoch": 2, "name": "Uno", "protocol": "KAFKA", "usage": ["producer"]}
    replaced = (await empty.data(UPDATE_GROUP, id="e1", attrs={"usage": ["consumer"]}, replace=True))["updateGroup"]
    assert replaced["node"] == {"epoch": 3, "name": None, "protocol": None, "usage": ["consumer"]}
    await refused(empty, UPDATE_GROUP, "not_found", id="e2", attrs={"name": "x"})
    await refused(empty, UPDATE_GROUP, "invalid_attribute", id="e1", attrs={"usage": "consumer"})
    await refused(empty, CREATE_GROUP, "unknown_group_type", type="widgets", id="w1", attrs={})
    await refused(empty, CREATE_GROUP, "malformed_id", type="endpoints", id="no spaces", attrs={})
    await refused(empty, DELETE, "mismatched_epoch", xid="/endpoints/e1", epoch=1)
    gone = (await empty.data(DELETE, xid="/endpoints/e1", epoch=3))["deleteEntity"]
    assert gone["deleted"] == ["/endpoints/e1"] and gone["node"] is None
    assert (await empty.data(ENDPOINT, xid="/endpoints/e1"))["lookup"] is None
    await refused(empty, DELETE, "not_found", xid="/endpoints/e1")


RESOURCE = """mutation($id: String!, $attrs: JSON) { createResource(groupType: "schemagroups", groupId: "g",
  resourceType: "schemas", resourceId: $id, attributes: $attrs) { created node { ... on Schema { versionid epoch } } } }"""
CREATE_VERSION = """mutation($vid: String!, $attrs: JSON) {
  create: createVersion(groupType: "schemagroups", groupId: "g", resourceType: "schemas", resourceId: "s",
    versionId: $vid, attributes: $attrs) { created node { ... on SchemaVersion { versionid schema } } } }"""
UPDATE_VERSION = """mutation($vid: String!, $attrs: JSON!, $epoch: Int, $replace: Boolean! = false) {
  update: updateVersion(groupType: "schemagroups", groupId: "g", resourceType: "schemas", resourceId: "s",
    versionId: $vid, attributes: $attrs, epoch: $epoch, replace: $replace) {
    node { ... on SchemaVersion { versionid epoch format schema } } } }"""
SCHEMA = """{ lookup(xid: "/schemagroups/g/schemas/s") { ... on Schema { versionid format schema
  defaultversion { versionid } versions { totalCount nodes { versionid isdefault ancestorid } } } } }"""


async def test_resources_and_versions(empty):
    made = (await empty.data(RESOURCE, id="s", attrs={"format": "JsonSchema/draft-07", "schema": {"type": "object"}}))
    assert set(made["createResource"]["created"]) == {"/schemagroups/g", "/schemagroups/g/schemas/s",
                                                      "/schemagroups/g/schemas/s/versions/1"}
    assert made["createResource"]["node"] == {"versionid": "1", "epoch": 1}
    await refused(empty, RESOURCE, "bad_request", id="s", attrs={})
    v2 = await empty.data(CREATE_VERSION, vid="2", attrs={"format": "JsonSchema/draft-07", "schema": {"type": "string"}})
    assert v2["create"]["node"] == {"versionid": "2", "schema": {"type": "string"}}
    schema = (await empty.data(SCHEMA))["lookup"]
    assert schema["versionid"] == schema["defaultversion"]["versionid"] == "2"
    assert schema["schema"] == {"type": "string"} and schema["versions"]["totalCount"] == 2
    assert [(v["versionid"], v["isdefault"], v["ancestorid"]) for v in schema["versions"]["nodes"]] == \
        [("1", False, "1"), ("2", True, "1")]
    await refused(empty, UPDATE_VERSION, "mismatched_epoch", vid="1", attrs={"format": "x"}, epoch=9)
    await refused(empty, UPDATE_VERSION, "not_found", vid="3", attrs={"format": "x"})
    await refused(empty, CREATE_VERSION, "bad_request", vid="2", attrs={})
    replaced = await empty.data(UPDATE_VERSION, vid="1", attrs={"format": "JsonSchema/draft-07"}, epoch=1, replace=True)
    assert replaced["update"]["node"] == {"versionid": "1", "epoch": 2, "format": "JsonSchema/draft-07", "schema": None}
    patched = await empty.data(UPDATE_VERSION, vid="1", attrs={"schema": {"type": "number"}})
    assert patched["update"]["node"]["schema"] == {"type": "number"}
    assert patched["update"]["node"]["format"] == "JsonSchema/draft-07"


async def test_message_dataschema_inline_and_by_xid(empty):
    await empty.data(RESOURCE, id="s", attrs={"format": "Avro/1.9", "schema": {"type": "record", "name": "R",
                                                                          "fields": []}})
    create = """mutation($id: String!, $attrs: JSON) { createResource(groupType: "messagegroups", groupId: "mg",
      resourceType: "messages", resourceId: $id, attributes: $attrs) { created } }"""
    await empty.data(create, id="byxid", attrs={"dataschemaxid": "/schemagroups/g/schemas/s/versions/1",
                                                "dataschemaformat": "Avro/1.9"})
    await empty.data(create, id="inline", attrs={"dataschema": {"type": "string"}, "dataschemaformat": "JsonSchema/draft-07"})
    await empty.data(create, id="external", attrs={"dataschemauri": "https://example.com/s.json",
                                                  "dataschemaformat": "JsonSchema/draft-07"})
    data = await empty.data("""{ registry { messages { nodes { messageid dataschema { xid inline
      schema { xid } version { versionid format } document } } } } }""")
    by_id = {n["messageid"]: n["dataschema"] for n in data["registry"]["messages"]["nodes"]}
    assert by_id["byxid"] == {"xid": "/schemagroups/g/schemas/s/versions/1", "inline": None,
                              "schema": {"xid": "/schemagroups/g/schemas/s"},
                              "version": {"versionid": "1", "format": "Avro/1.9"},
                              "document": {"type": "record", "name": "R", "fields": []}}
    assert by_id["inline"] == {"xid": None, "inline": {"type": "string"}, "schema": None, "version": None,
                               "document": {"type": "string"}}
    assert by_id["external"] == {"xid": None, "inline": None, "schema": None, "version": None, "document": None}


async def test_import_reports_normalisations_and_strict_refuses(empty):
    old = json.loads((XREG_DATA / "codegen-5675db7__Microsoft.Storage.0.4-wip.cereg.json").read_text())
    query = """mutation($doc: JSON!, $strict: Boolean!) { importDocument(document: $doc, strict: $strict) {
      revision created updated unchanged normalisations { path rule detail } } }"""
    await refused(empty, query, "invalid_attribute", doc=old, strict=True)
    result = (await empty.data(query, doc=old, strict=False))["importDocument"]
    assert result["created"] > 0 and result["normalisations"] and result["revision"] == await revision(empty)
    assert {"legacy-definitiongroups"} <= {n["rule"] for n in result["normalisations"]}
    again = (await empty.data(query, doc=old, strict=False))["importDocument"]
    assert again["revision"] is None and again["created"] == 0 and again["unchanged"] == result["created"]
    await refused(empty, query, "unknown_group_type", doc={"widgets": {}}, strict=False)


async def test_writes_need_the_write_scope(empty):
    anonymous = await empty.post(CREATE_GROUP, {"type": "endpoints", "id": "e1"}, headers={"Authorization": ""})
    assert anonymous.status_code == 200
    assert anonymous.json()["errors"][0]["extensions"]["code"] == "unauthorized"
    reader = await empty.post(CREATE_GROUP, {"type": "endpoints", "id": "e1"},
                              headers={"Authorization": f"Bearer {READ_KEY}"})
    assert reader.json()["errors"][0]["extensions"]["code"] == "forbidden"
    assert reader.json()["data"] is None
    assert await revision(empty) == 1  # only the registry entity exists
    bad_key = await empty.post("{ registry { xid } }", headers={"Authorization": "Bearer nope"})
    assert bad_key.status_code == 401 and bad_key.json()["errors"][0]["extensions"]["code"] == "unauthorized"
    assert bad_key.headers["www-authenticate"].startswith("Bearer")


async def test_mutations_over_get_are_refused(empty):
    response = await empty.client.get("/graphql", params={"query": 'mutation { deleteEntity(xid: "/x") { revision } }'})
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["errors"][0]["extensions"]["code"] == "METHOD_NOT_ALLOWED"
