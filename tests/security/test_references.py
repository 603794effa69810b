"""JSON Schema ``$ref`` never reaches a file or the network: a stored message whose schema
points at a local file, a loopback URL, or (by a relative reference) under a remote ``$id`` is
refused by ``validateMessage`` with the reason, the file unread and the server never asked; a
reference loop is refused too, never an internal error."""

from __future__ import annotations

import json

from tests.security.conftest import store_message, validate_anonymously

SECRET = "s3cr3t-marker-7d1f"


async def test_a_file_reference_is_not_read(gateway, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"enum": [SECRET]}))
    xid = await store_message(gateway, "file", "JsonSchema/draft-07", {"$ref": secret.as_uri()})
    result = await validate_anonymously(gateway, xid, "x")
    assert result["validated"] is False and result["valid"] is False
    assert "reference" in result["reason"] and "not retrieved" in result["reason"]
    assert SECRET not in str(result)


async def test_etc_passwd_is_a_clear_refusal_not_an_internal_error(gateway):
    xid = await store_message(gateway, "passwd", "JsonSchema/draft-07", {"$ref": "file:///etc/passwd"})
    result = await validate_anonymously(gateway, xid, "x")
    assert result["validated"] is False and "file:///etc/passwd" in result["reason"]
    assert "root:" not in str(result)


async def test_a_loopback_url_reference_is_never_fetched(gateway, trap):
    server, url = trap
    xid = await store_message(gateway, "loopback", "JsonSchema/draft-07", {"$ref": f"{url}/x.json"})
    result = await validate_anonymously(gateway, xid, "x")
    assert result["validated"] is False and "not retrieved" in result["reason"]
    assert server.hits == 0


async def test_a_relative_reference_under_a_remote_id_is_never_fetched(gateway, trap):
    server, url = trap
    schema = {"$id": f"{url}/schemas/root.json", "type": "object", "properties": {"a": {"$ref": "other.json"}}}
    xid = await store_message(gateway, "relative", "JsonSchema/draft-07", schema)
    result = await validate_anonymously(gateway, xid, {"a": 1})
    assert result["validated"] is False and "other.json" in result["reason"]
    assert server.hits == 0


async def test_looping_references_are_refused(gateway):
    schema = {"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
              "$ref": "#/definitions/a"}
    xid = await store_message(gateway, "loop", "JsonSchema/draft-07", schema)
    result = await validate_anonymously(gateway, xid, "x")
    assert result["validated"] is False and "nested too deep" in result["reason"]


async def test_references_within_the_document_and_to_the_meta_schemas_still_resolve(gateway):
    schema = {"definitions": {"n": {"type": "integer"}}, "properties": {
        "n": {"$ref": "#/definitions/n"}, "s": {"$ref": "http://json-schema.org/draft-07/schema#"}}}
    xid = await store_message(gateway, "local", "JsonSchema/draft-07", schema)
    result = await validate_anonymously(gateway, xid, {"n": "one", "s": {"type": 5}})
    assert result["validated"] is True
    assert {v["path"] for v in result["violations"]} == {"/n", "/s/type"}


async def test_a_reference_to_a_schema_the_registry_holds_resolves(gateway):
    await gateway.data("mutation($doc: JSON!) { importDocument(document: $doc) { revision } }", doc={
        "schemagroups": {"g": {"schemas": {
            "count": {"versions": {"1": {"format": "JsonSchema/draft-07", "schema": {"type": "integer"}}}},
            "pair": {"versions": {"1": {"format": "JsonSchema/draft-07", "schema": {
                "type": "array", "items": {"$ref": "/schemagroups/g/schemas/count"}}}}}}}}})
    by_xid = await store_message(gateway, "by-xid", "JsonSchema/draft-07", {"$ref": "/schemagroups/g/schemas/pair"})
    assert (await validate_anonymously(gateway, by_xid, [1, 2]))["valid"] is True
    bad = await validate_anonymously(gateway, by_xid, [1, "two"])
    assert bad["validated"] is True and [v["path"] for v in bad["violations"]] == ["/1"]
    by_url = await store_message(gateway, "by-url", "JsonSchema/draft-07", {
        "properties": {"n": {"$ref": "http://gw/registry/schemagroups/g/schemas/count"}}})
    bad = await validate_anonymously(gateway, by_url, {"n": "x"})
    assert bad["validated"] is True and [v["path"] for v in bad["violations"]] == ["/n"]


async def test_a_compatibility_check_over_looping_references_is_a_clear_refusal(gateway):
    looping = {"allOf": [{"$ref": "#"}], "type": "object"}
    await gateway.data("mutation($doc: JSON!) { importDocument(document: $doc) { revision } }", doc={
        "schemagroups": {"g": {"schemas": {"loop": {"meta": {"compatibility": "backward"}, "versions": {
            "1": {"format": "JsonSchema/draft-07", "schema": looping}}}}}}})
    response = await gateway.client.put(
        "/registry/schemagroups/g/schemas/loop/versions/2", content=json.dumps({**looping, "title": "two"}),
        headers={**gateway.headers, "xRegistry-format": "JsonSchema/draft-07", "xRegistry-ancestor": "1",
                 "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["type"].endswith("#compatibility_violation") and "nested too deep" in problem["detail"]
