"""Hostile input never costs data or availability: the reproductions of the hardening campaign
(deeply nested JSON everywhere the gateway parses it, lone surrogates, ids of the wrong type, an
entity stored too deep by an older gateway) answer a 4xx and leave the store writable."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli import app as cli
from tests.http.support import asgi_client, assert_problem, make_settings, revision, running
from xreg.json_limits import MAX_DEPTH, JSONLimitError, check, copy, loads


def nested(depth: int, leaf: object = 1) -> str:
    return '{"a":' * depth + json.dumps(leaf) + "}" * depth


@pytest.fixture
async def gateway(tmp_path: Path):
    async with running(make_settings(tmp_path)) as app:
        async with asgi_client(app) as writer, asgi_client(app, None) as anonymous:
            yield app, writer, anonymous


def test_the_bound_holds_without_recursion():
    assert loads(nested(MAX_DEPTH - 1))["a"]
    for depth in (MAX_DEPTH + 1, 1000, 100_000):
        with pytest.raises(JSONLimitError, match="nested more than"):
            loads(nested(depth))
    with pytest.raises(JSONLimitError, match="lone surrogate"):
        loads('{"name": "\\ud800"}')
    deep: dict = {}
    node = deep
    for _ in range(5000):  # deeper than any recursion limit
        node["a"] = {}
        node = node["a"]
    copied, levels = copy(deep), 0
    assert copied is not deep
    while copied:  # (walked, not compared: == on it would recurse)
        copied, levels = copied["a"], levels + 1
    assert levels == 5000
    with pytest.raises(JSONLimitError):
        check(deep)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 1000, 50_000])
async def test_deep_bodies_are_refused_over_http(gateway, depth):
    app, writer, _ = gateway
    before = await revision(app)
    body = '{"messagegroups": {"g": {"labels": {"x": "y"}, "deep": ' + nested(depth) + "}}}"
    response = await writer.post("/registry", content=body, headers={"Content-Type": "application/json"})
    problem = assert_problem(response, 400, "parsing_data")
    assert "nested more than" in problem["detail"]
    schema = await writer.put("/registry/schemagroups/g/schemas/s/versions/1", content=nested(depth).encode(),
                              headers={"Content-Type": "application/json", "xRegistry-format": "JsonSchema/draft-07"})
    assert schema.status_code == 400
    assert await revision(app) == before
    assert (await writer.put("/registry/messagegroups/ok", json={"name": "still writable"})).status_code == 201


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 50_000])
async def test_deep_graphql_requests_are_400_json_before_authentication(gateway, depth):
    app, _, anonymous = gateway
    posted = await anonymous.post("/graphql", content='{"query": "{ registry { name } }", "variables": '
                                  + nested(depth) + "}", headers={"Content-Type": "application/json"})
    assert posted.status_code == 400 and posted.headers["content-type"].startswith("application/json")
    assert "nested more than" in posted.text
    if depth <= 1000:  # (a longer URL is refused by the client already)
        got = await anonymous.get("/graphql", params={"query": "{ registry { name } }", "variables": nested(depth)})
        if len(got.request.url.raw_path) <= app.state.settings.max_url_bytes:
            assert got.status_code == 400 and "nested more than" in got.text
        else:  # a URL that long is refused before it is parsed
            assert got.status_code == 414 and got.json()["type"].endswith("#uri_too_long")


async def test_lone_surrogates_and_wrong_id_types_are_refused(gateway):
    app, writer, _ = gateway
    before = await revision(app)
    surrogate = await writer.put("/registry/messagegroups/g", content=b'{"name": "\\ud800"}',
                                 headers={"Content-Type": "application/json"})
    assert_problem(surrogate, 400, "parsing_data")
    gql = await writer.post("/graphql", json={"query": """mutation { createGroup(groupType: "messagegroups",
        groupId: "g", attributes: {name: "\\ud800"}) { revision } }"""})
    assert gql.status_code == 200 and gql.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    variables = await writer.post("/graphql", content=b'{"query": "mutation($a: JSON!) { createGroup(groupType: '
                                  b'\\"messagegroups\\", groupId: \\"g\\", attributes: $a) { revision } }", '
                                  b'"variables": {"a": {"name": "\\ud800"}}}',
                                  headers={"Content-Type": "application/json"})
    assert variables.status_code == 400 and "lone surrogate" in variables.text
    for bad in ([], {}, 7):
        resource = await writer.put("/registry/schemagroups/g/schemas/s$details", json={"versionid": bad})
        assert_problem(resource, 400, "invalid_attribute")
        version = await writer.post("/registry/schemagroups/g/schemas/s/versions", json={"x": {"versionid": bad}})
        assert version.status_code == 400, version.text
    assert await revision(app) == before


@pytest.mark.parametrize("method", ["put", "patch"])
async def test_a_resource_body_whose_meta_names_no_version_id_is_refused(gateway, method):
    """A new resource whose body's ``meta.defaultversionid`` is not a string is
    ``invalid_attribute``, not a server error (found by a random schemathesis run)."""
    app, writer, _ = gateway
    before = await revision(app)
    for value in ({"a": False}, [1], 3, True):
        response = await getattr(writer, method)("/registry/endpoints/e/messages/m", json={
            "name": "m", "meta": {"defaultversionid": value}})
        body = assert_problem(response, 400, "invalid_attribute")
        assert "defaultversionid" in body["title"]
    assert await revision(app) == before


async def test_a_null_under_a_name_no_attribute_can_have_is_refused(gateway):
    """``null`` deletes an attribute, but not one whose name is invalid: that is
    ``invalid_attribute``, not silently accepted (found by a random schemathesis run)."""
    app, writer, _ = gateway
    assert (await writer.put("/registry/schemagroups/g", json={"name": "g"})).status_code == 201
    before = await revision(app)
    for method, url, body in (("PUT", "/registry/schemagroups/new", {"": None}),
                              ("PATCH", "/registry/schemagroups/g", {"Bad Name": None}),
                              ("PATCH", "/registry", {"?": None}),
                              ("PUT", "/registry/schemagroups/g/schemas/s$details",
                               {"format": "JsonSchema/draft-07", "X": None})):
        body = assert_problem(await writer.request(method, url, json=body), 400, "invalid_attribute")
        assert "is not a valid attribute name" in body["detail"]
    assert await revision(app) == before
    assert (await writer.patch("/registry/schemagroups/g", json={"name": None})).status_code == 200  # still deletes


async def test_a_deep_graphql_attribute_literal_is_refused(gateway):
    _, writer, _ = gateway
    literal = "{a: " * (MAX_DEPTH + 5) + "1" + "}" * (MAX_DEPTH + 5)
    response = await writer.post("/graphql", json={"query": f"""mutation {{ createGroup(groupType: "messagegroups",
        groupId: "g", attributes: {{labels: {{x: "y"}}, deep: {literal}}}) {{ revision }} }}"""})
    errors = response.json()["errors"]
    assert response.status_code == 200 and errors[0]["extensions"]["code"] in (
        "invalid_attribute", "TOO_MANY_TOKENS", "GRAPHQL_PARSE_FAILED")


async def test_an_entity_stored_too_deep_by_an_older_gateway_can_be_deleted(tmp_path):
    settings = make_settings(tmp_path)
    async with running(settings) as app, asgi_client(app) as writer:
        assert (await writer.put("/registry/messagegroups/g", json={"name": "g"})).status_code == 201
        assert (await writer.put("/registry/messagegroups/g/messages/m", json={"name": "m"})).status_code == 201
    db = sqlite3.connect(tmp_path / "registry.db")
    poison = json.loads(nested(900))
    row = db.execute("SELECT seq, doc FROM states WHERE xkey = '/messagegroups/g' AND rev_to IS NULL").fetchone()
    doc = json.loads(row[1])
    doc["poison"] = poison
    db.execute("UPDATE states SET doc = ? WHERE seq = ?", (json.dumps(doc), row[0]))
    db.commit()
    db.close()
    async with running(settings) as app, asgi_client(app) as writer:
        patched = await writer.patch("/registry/messagegroups/g", json={"name": "renamed"})
        assert patched.status_code == 400  # the stored value is outside the bounds: refused, not a 500
        deleted = await writer.delete("/registry/messagegroups/g")
        assert deleted.status_code == 204, deleted.text
        assert (await writer.get("/registry/messagegroups/g")).status_code == 404


def test_import_of_a_deep_document_is_a_rejected_row(tmp_path, monkeypatch):
    monkeypatch.setenv("XREG_DATA_DIR", str(tmp_path))
    deep = tmp_path / "deep.xreg.json"
    deep.write_text('{"messagegroups": {"g": {"x": ' + nested(600) + "}}}")
    yml = tmp_path / "deep.xreg.yaml"
    yml.write_text("messagegroups:\n  g:\n    x: " + "[" * 2000 + "]" * 2000 + "\n")
    result = CliRunner().invoke(cli, ["import", str(deep), str(yml)])
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert "2 of 2 file(s) rejected" in output and "Traceback" not in output
