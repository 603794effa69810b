"""Schema documents are checked on write (core/model.md ``validateformat``,
``validatecompatibility``): a document that breaks its format, or a version that breaks the
resource's ``meta.compatibility`` along its ``ancestorid`` lineage, is refused and nothing is
written; every version records the outcome (``formatvalidated``, ``compatibilityvalidated``)."""

from __future__ import annotations

import json

import pytest

SCHEMAS = "/registry/schemagroups/g/schemas"

READING_V1 = {"type": "record", "name": "Reading", "namespace": "com.example",
              "fields": [{"name": "metric", "type": "float"}, {"name": "unit", "type": "string"}]}
#: drops 'unit' (fine for readers of v2 when it has no default? no: readers of v2 ignore it) and
#: changes 'metric' from float to string: v2 cannot read v1 data.
READING_BREAKING = {"type": "record", "name": "Reading", "namespace": "com.example",
                    "fields": [{"name": "metric", "type": "string"}]}
#: adds a field with a default: v2 reads v1 data.
READING_COMPATIBLE = {"type": "record", "name": "Reading", "namespace": "com.example",
                      "fields": [{"name": "metric", "type": "float"}, {"name": "unit", "type": "string"},
                                 {"name": "site", "type": "string", "default": ""}]}


async def post_document(client, sid: str, body: bytes, fmt: str, vid: str | None = None):
    url = f"{SCHEMAS}/{sid}" + (f"/versions/{vid}" if vid else "")
    method = client.put if vid else client.post
    if not vid:
        url = f"{SCHEMAS}/{sid}/versions"
        return await client.post(url, content=json.dumps({"1": {"format": fmt, "schema": json.loads(body)}}),
                                 headers={"Content-Type": "application/json"})
    return await method(url, content=body, headers={"xRegistry-format": fmt, "Content-Type": "application/json"})


async def test_a_document_that_breaks_its_format_is_refused(client):
    response = await client.put(f"{SCHEMAS}/broken/versions/1", content=b"{ this is not avro",
                                headers={"xRegistry-format": "Avro/1.9", "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["type"].endswith("#format_violation") and "Avro/1.9" in problem["title"]
    assert problem["detail"] and problem["errors"]
    assert (await client.get(f"{SCHEMAS}/broken")).status_code == 404  # nothing written

    response = await client.put(f"{SCHEMAS}/reading/versions/1", content=json.dumps(READING_V1).encode(),
                                headers={"xRegistry-format": "Avro/1.11", "Content-Type": "application/json"})
    assert response.status_code in (200, 201), response.text
    version = (await client.get(f"{SCHEMAS}/reading/versions/1$details")).json()
    assert version["formatvalidated"] is True and "formatvalidatedreason" not in version


async def test_an_unsupported_format_is_recorded_not_validated(client):
    response = await client.put(f"{SCHEMAS}/odd/versions/1", content=b'{"anything": 1}',
                                headers={"xRegistry-format": "Thrift/0.19", "Content-Type": "application/json"})
    assert response.status_code in (200, 201), response.text
    version = (await client.get(f"{SCHEMAS}/odd/versions/1$details")).json()
    assert version["formatvalidated"] is False and "unsupported format" in version["formatvalidatedreason"]
    linked = await client.put(f"{SCHEMAS}/linked/versions/1$details",
                              json={"format": "JsonSchema/draft-07", "schemauri": "https://example.com/s.json"})
    assert linked.status_code in (200, 201), linked.text
    version = (await client.get(f"{SCHEMAS}/linked/versions/1$details")).json()
    assert version["formatvalidated"] is False and "outside the registry" in version["formatvalidatedreason"]


async def _avro(client, sid: str, vid: str, schema: dict, ancestor: str | None = None):
    body = {"format": "Avro/1.11", "schema": schema, **({"ancestorid": ancestor} if ancestor else {})}
    return await client.put(f"{SCHEMAS}/{sid}/versions/{vid}$details", json=body)


async def test_backward_compatibility_refuses_a_breaking_version_naming_each_change(client):
    assert (await _avro(client, "reading", "1", READING_V1)).status_code in (200, 201)
    meta = await client.patch(f"{SCHEMAS}/reading/meta", json={"compatibility": "backward"})
    assert meta.status_code == 200, meta.text
    refused = await _avro(client, "reading", "2", READING_BREAKING, "1")
    assert refused.status_code == 400, refused.text
    problem = refused.json()
    assert problem["type"].endswith("#compatibility_violation") and "backward" in problem["title"]
    assert "metric" in problem["detail"] and "against version 1" in problem["detail"]
    assert {e["path"] for e in problem["errors"]} >= {"/fields/metric"} or any(
        "metric" in e["path"] for e in problem["errors"])
    assert (await client.get(f"{SCHEMAS}/reading/versions/2$details")).status_code == 404
    accepted = await _avro(client, "reading", "2", READING_COMPATIBLE, "1")
    assert accepted.status_code in (200, 201), accepted.text
    version = (await client.get(f"{SCHEMAS}/reading/versions/2$details")).json()
    assert version["compatibilityvalidated"] is True and version["formatvalidated"] is True


async def test_transitive_modes_check_the_whole_lineage_and_branches_follow_ancestorid(client):
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                      {"name": "b", "type": "int", "default": 0}]}
    # v3 drops 'a' ... no: adds 'c' without a default, readable from v2 data? no — needs a default
    v3_breaks_v1_only = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"},
                                                                     {"name": "b", "type": "int", "default": 0}]}
    for vid, schema, ancestor in (("1", v1, None), ("2", v2, "1")):
        assert (await _avro(client, "t", vid, schema, ancestor)).status_code in (200, 201)
    assert (await client.patch(f"{SCHEMAS}/t/meta", json={"compatibility": "forward_transitive"})).status_code == 200
    # int -> long: data written as long cannot be read as int by v1 or v2 (forward breaks)
    refused = await _avro(client, "t", "3", v3_breaks_v1_only, "2")
    assert refused.status_code == 400 and "#compatibility_violation" in refused.json()["type"]
    # a branch from v1 is checked against v1 only (its lineage), not v2
    branch = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                          {"name": "z", "type": "string", "default": "x"}]}
    assert (await _avro(client, "t", "1b", branch, "1")).status_code in (200, 201)


async def test_changing_the_compatibility_checks_every_version(client):
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}
    for vid, schema, ancestor in (("1", v1, None), ("2", v2, "1")):
        assert (await _avro(client, "c", vid, schema, ancestor)).status_code in (200, 201)
    refused = await client.patch(f"{SCHEMAS}/c/meta", json={"compatibility": "backward"})
    assert refused.status_code == 400 and "#compatibility_violation" in refused.json()["type"]
    meta = (await client.get(f"{SCHEMAS}/c/meta")).json()
    assert meta.get("compatibility", "none") == "none"


async def test_a_dry_run_answers_without_writing(client):
    assert (await _avro(client, "d", "1", READING_V1)).status_code in (200, 201)
    assert (await client.patch(f"{SCHEMAS}/d/meta", json={"compatibility": "backward"})).status_code == 200
    before = (await client.get("/registry")).json()["epoch"]
    body = {"format": "Avro/1.11", "schema": READING_BREAKING, "ancestorid": "1"}
    refused = await client.put(f"{SCHEMAS}/d/versions/2$details?dryrun", json=body)
    assert refused.status_code == 400 and "#compatibility_violation" in refused.json()["type"]
    body["schema"] = READING_COMPATIBLE
    accepted = await client.put(f"{SCHEMAS}/d/versions/2$details?dryrun", json=body)
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["accepted"] is True and f"{SCHEMAS.removeprefix('/registry')}/d/versions/2" in \
        accepted.json()["created"]
    assert (await client.get(f"{SCHEMAS}/d/versions/2$details")).status_code == 404
    assert (await client.get("/registry")).json()["epoch"] == before
    assert (await client.get(f"{SCHEMAS}/d/versions/1?dryrun")).status_code == 400  # reads take no dryrun


INVALID = {
    "JsonSchema/draft-07": {"type": "object", "properties": {"a": {"type": "nonsense"}}},
    "Avro/1.11": {"type": "record", "name": "R"},
    "Protobuf/3": 'syntax = "proto3"; message A { int32 a = 1; int32 b = 1; }',
    "XSD/1.1": '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="a" type="xs:nothing"/>'
               '</xs:schema>',
    "JsonStructure/draft-02": {"$schema": "https://json-structure.org/meta/extended/v0/#", "$id": "https://x.test/s",
                               "name": "S", "type": "nonsense"},
}
VALID = {
    "JsonSchema/draft-07": {"type": "object", "properties": {"a": {"type": "string"}}},
    "Avro/1.11": {"type": "record", "name": "R", "fields": []},
    "Protobuf/3": 'syntax = "proto3"; message A { int32 a = 1; int32 b = 2; }',
    "XSD/1.1": '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="a" type="xs:string"/>'
               '</xs:schema>',
    "JsonStructure/draft-02": {"$schema": "https://json-structure.org/meta/extended/v0/#", "$id": "https://x.test/s",
                               "name": "S", "type": "object", "properties": {"a": {"type": "string"}}},
}


@pytest.mark.parametrize("fmt", sorted(INVALID))
async def test_each_supported_format_refuses_an_invalid_document(client, fmt):
    sid = fmt.split("/")[0].lower()
    refused = await client.put(f"{SCHEMAS}/{sid}/versions/1$details", json={"format": fmt, "schema": INVALID[fmt]})
    assert refused.status_code == 400, refused.text
    assert refused.json()["type"].endswith("#format_violation") and refused.json()["errors"]
    accepted = await client.put(f"{SCHEMAS}/{sid}/versions/1$details", json={"format": fmt, "schema": VALID[fmt]})
    assert accepted.status_code in (200, 201), accepted.text
    assert accepted.json()["formatvalidated"] is True


async def test_capabilities_list_the_checked_formats_and_modes(client):
    caps = (await client.get("/registry/capabilities")).json()
    assert {"avro", "jsonschema/draft-07", "protobuf/3", "xsd/1.1", "jsonstructure/draft-*"} <= set(caps["formats"])
    assert {"backward", "forward_transitive", "full_transitive"} <= set(caps["compatibilities"]["avro"])
