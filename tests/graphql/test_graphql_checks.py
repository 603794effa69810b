"""Checks that write nothing, through GraphQL: ``checkSchemaVersion`` (the write path's dry run)
and ``validateMessage`` (a payload against a message's materialised schema and envelope)."""

from __future__ import annotations

import pytest

V1 = {"type": "record", "name": "Reading", "fields": [{"name": "metric", "type": "float"}]}
V2_BREAKS = {"type": "record", "name": "Reading", "fields": [{"name": "metric", "type": "string"}]}
V2_OK = {"type": "record", "name": "Reading", "fields": [{"name": "metric", "type": "float"},
                                                          {"name": "unit", "type": "string", "default": "m"}]}

CHECK = """query($doc: JSON!, $ancestor: String, $format: String!) {
  checkSchemaVersion(groupId: "g", schemaId: "reading", format: $format, document: $doc, ancestorId: $ancestor) {
    accepted versionid formatvalidated compatibilityvalidated problems } }"""

IMPORT = "mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"


@pytest.fixture
async def readings(empty):
    await empty.data(IMPORT, doc={"schemagroups": {"g": {"schemas": {"reading": {
        "meta": {"compatibility": "backward"},
        "versions": {"1": {"format": "Avro/1.11", "schema": V1}}}}}}})
    return empty


async def test_check_schema_version_answers_without_writing(readings):
    before = (await readings.data("{ registry { revision } }"))["registry"]["revision"]
    refused = (await readings.data(CHECK, doc=V2_BREAKS, ancestor="1", format="Avro/1.11"))["checkSchemaVersion"]
    assert refused["accepted"] is False
    (problem,) = refused["problems"]
    assert problem["type"].endswith("#compatibility_violation") and "metric" in problem["detail"]
    assert any("metric" in e["path"] for e in problem["errors"])
    ok = (await readings.data(CHECK, doc=V2_OK, ancestor="1", format="Avro/1.11"))["checkSchemaVersion"]
    assert ok == {"accepted": True, "versionid": "2", "formatvalidated": True, "compatibilityvalidated": True,
                  "problems": []}
    broken = (await readings.data(CHECK, doc="{ this is not avro", ancestor="1", format="Avro/1.9"))
    assert broken["checkSchemaVersion"]["problems"][0]["type"].endswith("#format_violation")
    assert (await readings.data("{ registry { revision } }"))["registry"]["revision"] == before
    versions = await readings.data('{ lookup(xid: "/schemagroups/g/schemas/reading") { ... on Schema { '
                                   'versions { totalCount } } } }')
    assert versions["lookup"]["versions"]["totalCount"] == 1


MESSAGE = {"messagegroups": {"m": {"messages": {
    "inline": {"envelope": "CloudEvents/1.0",
               "envelopemetadata": {"type": {"value": "com.example.reading", "required": True},
                                    "source": {"type": "uritemplate", "value": "/sensors/{id}", "required": True}},
               "dataschemaformat": "JsonSchema/draft-07",
               "dataschema": {"type": "object", "properties": {"metric": {"type": "number"}},
                              "required": ["metric"]}},
    "derived": {"basemessageuri": "/messagegroups/m/messages/inline", "protocol": "KAFKA",
                "protocoloptions": {"key": "id"}},
    "avro": {"dataschemaformat": "Avro/1.11", "dataschemauri": "/schemagroups/g/schemas/reading"},
}}}}

VALIDATE = """query($xid: String!, $data: JSON!, $meta: JSON) {
  validateMessage(xid: $xid, data: $data, metadata: $meta) { valid validated reason format schema
    violations { path message } } }"""


async def test_validate_message_checks_payload_and_envelope(readings):
    await readings.data(IMPORT, doc=MESSAGE)
    ok = (await readings.data(VALIDATE, xid="/messagegroups/m/messages/derived", data={"metric": 1.5},
                              meta={"type": "com.example.reading", "source": "/sensors/7"}))["validateMessage"]
    assert ok == {"valid": True, "validated": True, "reason": None, "format": "JsonSchema/draft-07", "schema": None,
                  "violations": []}  # the derived message's schema and envelope are its base's
    bad = (await readings.data(VALIDATE, xid="/messagegroups/m/messages/derived", data={"metric": "high"},
                               meta={"type": "com.example.other"}))["validateMessage"]
    assert bad["valid"] is False and bad["validated"] is True
    paths = {v["path"] for v in bad["violations"]}
    assert paths == {"/metric", "/metadata/type", "/metadata/source"}
    avro = (await readings.data(VALIDATE, xid="/messagegroups/m/messages/avro", data={"metric": "x"}))
    result = avro["validateMessage"]
    assert result["schema"] == "/schemagroups/g/schemas/reading" and result["format"] == "Avro/1.11"
    assert [v["path"] for v in result["violations"]] == ["/metric"]
    missing = await readings.error('{ validateMessage(xid: "/messagegroups/m/messages/nope", data: {}) { valid } }')
    assert missing["extensions"]["code"] == "not_found"
