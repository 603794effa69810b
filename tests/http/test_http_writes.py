"""Writes of the xRegistry HTTP API through ASGI: every method at every level, epochs, the write
flags (ignore, setdefaultversionid, epoch) and documents with xRegistry-* headers."""

from __future__ import annotations

import pytest

from tests.http.support import BASE, assert_problem, revision
from xreg.storage.records import Write

MSG = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.x"}}}
SCHEMA = {"format": "JSONSchema/draft-07"}


async def test_put_creates_then_replaces_a_group(app, client):
    created = await client.put("/registry/messagegroups/g1", json={"name": "One", "description": "first"})
    assert created.status_code == 201 and created.headers["location"] == f"{BASE}/messagegroups/g1"
    assert created.json()["epoch"] == 1
    replaced = await client.put("/registry/messagegroups/g1", json={"name": "Uno"})
    assert replaced.status_code == 200 and "location" not in replaced.headers
    assert replaced.json()["epoch"] == 2 and "description" not in replaced.json()  # PUT replaces
    patched = await client.patch("/registry/messagegroups/g1", json={"description": "again", "name": None})
    assert patched.json()["description"] == "again" and "name" not in patched.json()  # null deletes
    assert patched.json()["createdat"] == created.json()["createdat"]


async def test_stale_epochs_are_refused_and_change_nothing(app, client):
    await client.put("/registry/messagegroups/g1", json={"name": "One"})
    await client.put("/registry/messagegroups/g1", json={"name": "Two", "epoch": 1})
    rev = await revision(app)
    body = assert_problem(await client.put("/registry/messagegroups/g1", json={"name": "Three", "epoch": 1}),
                          400, "mismatched_epoch")
    assert body["args"] == {"bad_epoch": "1", "epoch": "2"} and body["subject"] == "/messagegroups/g1"
    assert_problem(await client.delete("/registry/messagegroups/g1?epoch=1"), 400, "mismatched_epoch")
    assert await revision(app) == rev
    assert (await client.get("/registry/messagegroups/g1")).json()["name"] == "Two"
    assert (await client.put("/registry/messagegroups/g1?ignore=epoch", json={"name": "Four", "epoch": 1})).status_code == 200
    assert (await client.delete("/registry/messagegroups/g1?epoch=3")).status_code == 204
    assert (await client.get("/registry/messagegroups/g1")).status_code == 404


async def test_resource_epoch_lives_in_meta(client):
    await client.put("/registry/messagegroups/g/messages/m", json=MSG)
    meta = (await client.get("/registry/messagegroups/g/messages/m/meta")).json()
    assert_problem(await client.patch("/registry/messagegroups/g/messages/m/meta",
                                      json={"epoch": meta["epoch"] + 5, "labels": {"a": "b"}}), 400, "mismatched_epoch")
    ok = await client.patch("/registry/messagegroups/g/messages/m/meta", json={"epoch": meta["epoch"], "labels": {"a": "b"}})
    assert ok.status_code == 200 and ok.json()["epoch"] == meta["epoch"] + 1 and ok.json()["labels"] == {"a": "b"}


async def test_nested_collections_are_written_with_their_parent(client):
    response = await client.put("/registry/messagegroups/g?inline=messages", json={
        "name": "G", "messagesurl": "ignored", "messagescount": 99, "messages": {"m1": MSG, "m2": MSG}})
    assert response.status_code == 201
    body = response.json()
    assert set(body["messages"]) == {"m1", "m2"} and body["messagescount"] == 2


async def test_collection_post_and_patch_return_only_the_processed_entities(client):
    await client.put("/registry/messagegroups/keep", json={"name": "keep"})
    posted = await client.post("/registry/messagegroups", json={"a": {"name": "A"}, "b": {"name": "B"}})
    assert posted.status_code == 200 and set(posted.json()) == {"a", "b"}
    patched = await client.patch("/registry/messagegroups", json={"a": {"description": "more"}})
    assert set(patched.json()) == {"a"} and patched.json()["a"]["name"] == "A" and patched.json()["a"]["description"] == "more"
    posted = await client.post("/registry/messagegroups", json={"a": {"description": "only"}})
    assert "name" not in posted.json()["a"]  # POST = PUT semantics per entity
    assert (await client.get("/registry/messagegroups")).json().keys() == {"a", "b", "keep"}


async def test_post_to_the_registry_and_to_a_group(client):
    response = await client.post("/registry", json={"endpoints": {"e": {"usage": ["consumer"]}},
                                                    "schemagroups": {"sg": {}}})
    assert response.status_code == 200 and set(response.json()) == {"endpoints", "schemagroups"}
    assert_problem(await client.post("/registry", json={"name": "not a group"}), 400, "groups_only")
    group = await client.post("/registry/schemagroups/sg", json={"schemas": {"s": SCHEMA}})
    assert list(group.json()) == ["schemas"] and group.json()["schemas"]["s"]["versionid"] == "1"
    assert_problem(await client.post("/registry/schemagroups/sg", json={"name": "x"}), 400, "resources_only")


async def test_registry_put_and_patch(app, client):
    response = await client.patch("/registry", json={"description": "A registry"})
    assert response.status_code == 200 and response.json()["description"] == "A registry"
    assert_problem(await client.put("/registry", json={"registryid": "other"}), 400, "mismatched_id")
    assert (await client.put("/registry?ignore=id", json={"registryid": "other", "name": "N"})).json()["registryid"] == "test"
    assert_problem(await client.patch("/registry", json={"capabilities": {"shortself": True}}), 400, "capability_value")
    assert (await client.patch("/registry?ignore=capabilities", json={"capabilities": {"x": 1}})).status_code == 200
    assert_problem(await client.patch("/registry", json={"modelsource": {"groups": {"x": {}}}}), 400, "model_error")
    with_groups = await client.put("/registry?inline=endpoints", json={"name": "N", "endpoints": {"e": {"usage": ["producer"]}}})
    assert with_groups.json()["endpoints"]["e"]["endpointid"] == "e"


async def test_an_ancestorid_that_is_not_a_string_is_refused(app, client):
    """An ``ancestorid`` object on a new version is an invalid attribute, not a server error."""
    before = await revision(app)
    response = await client.post("/registry/schemagroups/sg/schemas/s$details",
                                 json={**SCHEMA, "ancestorid": {"1": 2}})
    body = assert_problem(response, 400, "invalid_attribute")
    assert "ancestorid" in body["title"]
    assert await revision(app) == before


@pytest.mark.parametrize("ancestor", [{"1": 2}, ["1"], 7])
async def test_versions_with_an_ancestorid_that_is_not_a_string_are_refused(app, client, ancestor):
    """Versions given in a resource's body with an ``ancestorid`` that is no string are refused
    (``invalid_attribute``) before the versions are ordered by it — not a server error."""
    before = await revision(app)
    response = await client.patch("/registry/messagegroups/g9/messages/m9", json={
        "versions": {"a": {"ancestorid": ancestor}, "b": {"name": "b"}}})
    body = assert_problem(response, 400, "invalid_attribute")
    assert "ancestorid" in body["title"]
    assert await revision(app) == before


@pytest.mark.parametrize("value", [[621, 10553], {}, 3, True])
@pytest.mark.parametrize("method", ["put", "patch"])
async def test_a_defaultversionid_that_is_not_a_string_is_refused(app, client, value, method):
    """``meta.defaultversionid`` must name a version: anything but a string (or null) is
    ``invalid_attribute``, also when the meta write would create the resource."""
    before = await revision(app)
    for url in ("/registry/schemagroups/new/schemas/fresh/meta", "/registry/messagegroups/g9/messages/m9/meta"):
        response = await getattr(client, method)(url, json={"defaultversionid": value})
        body = assert_problem(response, 400, "invalid_attribute")
        assert "defaultversionid" in body["title"]
    assert await revision(app) == before


async def test_resource_put_patch_post_and_versions(client):
    created = await client.put("/registry/schemagroups/sg/schemas/s$details", json={**SCHEMA, "versionid": "1.0"})
    assert created.status_code == 201
    assert created.headers["location"] == f"{BASE}/schemagroups/sg/schemas/s$details"
    assert created.headers["content-location"] == f"{BASE}/schemagroups/sg/schemas/s/versions/1.0$details"
    assert created.json()["self"] == f"{BASE}/schemagroups/sg/schemas/s$details"
    patched = await client.patch("/registry/schemagroups/sg/schemas/s$details", json={"description": "d"})
    assert patched.status_code == 200 and patched.json()["description"] == "d" and patched.json()["versionid"] == "1.0"
    new = await client.post("/registry/schemagroups/sg/schemas/s$details", json={**SCHEMA, "versionscount": 7})
    assert new.status_code == 201 and new.json()["versionid"] == "1" and new.json()["ancestorid"] == "1.0"
    assert new.headers["location"] == f"{BASE}/schemagroups/sg/schemas/s/versions/1$details"
    again = await client.post("/registry/schemagroups/sg/schemas/s$details", json={**SCHEMA, "versionid": "1", "name": "n"})
    assert again.status_code == 200 and again.json()["name"] == "n"
    versions = await client.post("/registry/schemagroups/sg/schemas/s/versions", json={"3": SCHEMA, "4": SCHEMA})
    assert set(versions.json()) == {"3", "4"}
    v = await client.patch("/registry/schemagroups/sg/schemas/s/versions", json={"3": {"name": "three"}})
    assert v.json()["3"]["name"] == "three" and v.json()["3"]["format"] == SCHEMA["format"]
    one = await client.put("/registry/schemagroups/sg/schemas/s/versions/5$details", json=SCHEMA)
    assert one.status_code == 201 and one.json()["isdefault"] is True
    assert (await client.patch("/registry/schemagroups/sg/schemas/s/versions/5$details", json={"name": "five"})).json()["name"] == "five"
    assert (await client.get("/registry/schemagroups/sg/schemas/s$details")).json()["versionscount"] == 5
    assert (await client.delete("/registry/schemagroups/sg/schemas/s/versions/5")).status_code == 204
    assert (await client.get("/registry/schemagroups/sg/schemas/s/meta")).json()["defaultversionid"] == "4"


async def test_resources_without_documents_need_no_details(client):
    created = await client.put("/registry/messagegroups/g/messages/m", json=MSG)
    assert created.status_code == 201 and created.headers["location"] == f"{BASE}/messagegroups/g/messages/m"
    patched = await client.patch("/registry/messagegroups/g/messages/m", json={"name": "M"})
    assert patched.json()["name"] == "M"
    same = await client.patch("/registry/messagegroups/g/messages/m$details", json={"description": "d"})
    assert same.status_code == 200 and same.json()["self"] == f"{BASE}/messagegroups/g/messages/m"


async def test_missing_versions_and_the_last_version(app, client):
    assert_problem(await client.post("/registry/schemagroups/sg/schemas/s/versions", json={}), 400, "missing_versions")
    await client.put("/registry/schemagroups/sg/schemas/s$details", json=SCHEMA)
    assert (await client.post("/registry/schemagroups/sg/schemas/s/versions", json={})).json() == {}
    rev = await revision(app)
    assert_problem(await client.delete("/registry/schemagroups/sg/schemas/s/versions/1"), 400, "bad_request")
    assert await revision(app) == rev


async def test_meta_writes_and_sticky_default_versions(client):
    await client.put("/registry/schemagroups/sg/schemas/s$details",
                     json={"versions": {"1": SCHEMA, "2": SCHEMA}})
    meta = await client.patch("/registry/schemagroups/sg/schemas/s/meta",
                              json={"defaultversionid": "1", "defaultversionsticky": True})
    assert meta.json()["defaultversionid"] == "1" and meta.json()["defaultversionurl"].endswith("/versions/1$details")
    await client.post("/registry/schemagroups/sg/schemas/s$details", json=SCHEMA)
    assert (await client.get("/registry/schemagroups/sg/schemas/s/meta")).json()["defaultversionid"] == "1"
    put = await client.put("/registry/schemagroups/sg/schemas/s/meta", json={"compatibility": "none"})
    assert put.json()["defaultversionsticky"] is False and put.json()["defaultversionid"] == "3"
    ignored = await client.patch("/registry/schemagroups/sg/schemas/s/meta?ignore=defaultversionid,defaultversionsticky",
                                 json={"defaultversionid": "1", "defaultversionsticky": True})
    assert ignored.json()["defaultversionid"] == "3"
    created = await client.put("/registry/messagegroups/g/messages/new/meta", json={})  # created implicitly
    assert created.status_code == 201 and created.json()["defaultversionid"] == "1"


async def test_setdefaultversionid_flag(app, client):
    await client.put("/registry/schemagroups/sg/schemas/s$details", json={"versions": {"a": SCHEMA, "b": SCHEMA}})
    made = await client.post("/registry/schemagroups/sg/schemas/s$details?setdefaultversionid=request", json=SCHEMA)
    assert made.json()["isdefault"] is True
    meta = (await client.get("/registry/schemagroups/sg/schemas/s/meta")).json()
    assert meta["defaultversionid"] == made.json()["versionid"] and meta["defaultversionsticky"] is True
    pinned = await client.patch("/registry/schemagroups/sg/schemas/s/meta?setdefaultversionid=a",
                                json={"defaultversionid": "b"})
    assert pinned.json()["defaultversionid"] == "a"  # the flag wins over the body
    await client.post("/registry/schemagroups/sg/schemas/s/versions", json={"z": SCHEMA})
    assert (await client.get("/registry/schemagroups/sg/schemas/s/meta")).json()["defaultversionid"] == "a"
    newest = await client.patch("/registry/schemagroups/sg/schemas/s/meta?setdefaultversionid=null", json={})
    assert newest.json()["defaultversionsticky"] is False and newest.json()["defaultversionid"] == "z"
    deleted = await client.delete("/registry/schemagroups/sg/schemas/s/versions/z?setdefaultversionid=b")
    assert deleted.status_code == 204
    assert (await client.get("/registry/schemagroups/sg/schemas/s/meta")).json()["defaultversionid"] == "b"
    rev = await revision(app)
    assert_problem(await client.patch("/registry/schemagroups/sg/schemas/s/meta?setdefaultversionid=nope", json={}),
                   400, "unknown_id")
    assert_problem(await client.patch("/registry/schemagroups/sg/schemas/s$details?setdefaultversionid=request",
                                      json={}), 400, "bad_flag")
    assert_problem(await client.patch("/registry/schemagroups/sg/schemas?setdefaultversionid=a", json={}), 400, "bad_flag")
    assert_problem(await client.patch("/registry/schemagroups/sg/schemas/s/meta?setdefaultversionid=bad%20id", json={}),
                   400, "bad_defaultversionid")
    assert await revision(app) == rev


async def test_ignore_id(client):
    await client.put("/registry/messagegroups/g", json={})
    assert_problem(await client.put("/registry/messagegroups/g", json={"messagegroupid": "other"}), 400, "mismatched_id")
    ok = await client.put("/registry/messagegroups/g?ignore=id", json={"messagegroupid": "other", "name": "n"})
    assert ok.status_code == 200 and ok.json()["messagegroupid"] == "g"
    assert_problem(await client.put("/registry/schemagroups/sg/schemas/s/versions/1$details",
                                    json={**SCHEMA, "versionid": "2"}), 400, "mismatched_id")
    v = await client.put("/registry/schemagroups/sg/schemas/s/versions/1$details?ignore",
                         json={**SCHEMA, "versionid": "2", "schemaid": "x"})
    assert v.status_code == 201 and v.json()["versionid"] == "1"


async def test_xref_resources_and_converting_back(client):
    await client.put("/registry/messagegroups/g/messages/target", json={**MSG, "name": "T"})
    await client.put("/registry/messagegroups/g/messages/m", json=MSG)
    xref = await client.put("/registry/messagegroups/g/messages/m/meta", json={"xref": "/messagegroups/g/messages/target"})
    assert xref.json()["xref"] == "/messagegroups/g/messages/target"
    assert (await client.get("/registry/messagegroups/g/messages/m")).json()["versionscount"] == 1  # the target's
    assert_problem(await client.post("/registry/messagegroups/g/messages/m", json=MSG), 400, "bad_request")
    back = await client.patch("/registry/messagegroups/g/messages/m/meta", json={"xref": None})
    assert back.status_code == 200 and "xref" not in back.json() and back.json()["defaultversionid"] == "1"


async def test_deleting_members_of_collections(app, client):
    await client.post("/registry/messagegroups", json={"a": {}, "b": {}, "c": {}})
    epoch = (await client.get("/registry/messagegroups/a")).json()["epoch"]
    assert_problem(await client.request("DELETE", "/registry/messagegroups", json={"a": {"epoch": epoch + 1}}),
                   400, "mismatched_epoch")
    assert_problem(await client.request("DELETE", "/registry/messagegroups", json={"a": {"messagegroupid": "b"}}),
                   400, "mismatched_id")
    gone = await client.request("DELETE", "/registry/messagegroups", json={"a": {"epoch": epoch}, "missing": {}})
    assert gone.status_code == 204
    assert set((await client.get("/registry/messagegroups")).json()) == {"b", "c"}
    await client.post("/registry/messagegroups/b/messages", json={"m": MSG, "n": MSG})
    assert_problem(await client.request("DELETE", "/registry/messagegroups/b/messages", json={"m": {"epoch": 1}}),
                   400, "misplaced_epoch")
    meta_epoch = (await client.get("/registry/messagegroups/b/messages/m/meta")).json()["epoch"]
    ok = await client.request("DELETE", "/registry/messagegroups/b/messages", json={"m": {"meta": {"epoch": meta_epoch}}})
    assert ok.status_code == 204
    # a body of white space is not "no body": refused, nothing deleted
    blank = await client.request("DELETE", "/registry/messagegroups", content=b"  \n",
                                 headers={"content-type": "application/json"})
    assert_problem(blank, 400, "missing_body")
    assert set((await client.get("/registry/messagegroups")).json()) == {"b", "c"}
    assert (await client.delete("/registry/messagegroups")).status_code == 204  # no body: all of them
    assert (await client.get("/registry/messagegroups")).json() == {}


async def test_write_responses_follow_the_flags(client):
    response = await client.put("/registry/schemagroups/sg/schemas/s$details?inline=versions,meta&doc",
                                json={"versions": {"1": {**SCHEMA, "schema": {"a": 1}}}})
    body = response.json()
    assert body["self"] == "#/" and body["versions"]["1"]["self"] == "#/versions/1" and "format" not in body
    assert "schema" not in body["versions"]["1"]
    assert_problem(await client.put("/registry/schemagroups/sg?inline=nope", json={}), 400, "bad_inline")


# -- documents --------------------------------------------------------------------------------


async def test_document_put_and_get_round_trip_bytes_and_headers(client):
    xsd = b'<?xml version="1.0"?><xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>'
    created = await client.put("/registry/schemagroups/sg/schemas/order", content=xsd, headers={
        "Content-Type": "application/xml", "xRegistry-format": "XSD/1.1",
        "xRegistry-name": "Bestellung%20%E2%82%AC", "xRegistry-labels.team": "sales", "xRegistry-labels.tier": "1"})
    assert created.status_code == 201, created.text
    assert created.content == xsd and created.headers["content-type"] == "application/xml"
    assert created.headers["location"] == f"{BASE}/schemagroups/sg/schemas/order"
    assert created.headers["xregistry-name"] == "Bestellung%20%E2%82%AC"
    meta = (await client.get("/registry/schemagroups/sg/schemas/order$details")).json()
    assert meta["name"] == "Bestellung €" and meta["labels"] == {"team": "sales", "tier": "1"}
    assert meta["contenttype"] == "application/xml" and meta["format"] == "XSD/1.1"
    updated = await client.put("/registry/schemagroups/sg/schemas/order", content=b"{}", headers={
        "Content-Type": "application/json", "xRegistry-labels.team": "ops", "xRegistry-epoch": "1",
        "xRegistry-format": "JSONSchema/draft-07"})
    assert updated.status_code == 200 and updated.json() == {}
    meta = (await client.get("/registry/schemagroups/sg/schemas/order$details?inline=schema")).json()
    assert meta["labels"] == {"team": "ops"} and meta["name"] == "Bestellung €"  # maps whole, others kept
    assert meta["schema"] == {} and "schemabase64" not in meta
    assert_problem(await client.put("/registry/schemagroups/sg/schemas/order", content=b"{}",
                                    headers={"Content-Type": "application/json", "xRegistry-epoch": "1"}),
                   400, "mismatched_epoch")


async def test_document_post_creates_a_version(client):
    # (a format the gateway does not check: the plain text document below is accepted)
    await client.put("/registry/schemagroups/sg/schemas/s", content=b'{"v": 1}',
                     headers={"Content-Type": "application/json", "xRegistry-format": "Custom/1.0"})
    new = await client.post("/registry/schemagroups/sg/schemas/s", content=b'{"v": 2}',
                            headers={"Content-Type": "application/json", "xRegistry-format": "Custom/1.0"})
    assert new.status_code == 201 and new.headers["xregistry-versionid"] == "2"
    assert new.headers["location"] == f"{BASE}/schemagroups/sg/schemas/s/versions/2"
    assert new.headers["content-location"] == new.headers["location"]
    assert (await client.get("/registry/schemagroups/sg/schemas/s")).json() == {"v": 2}
    v1 = await client.put("/registry/schemagroups/sg/schemas/s/versions/1", content=b'{"v": "one"}',
                          headers={"Content-Type": "application/json"})
    assert v1.status_code == 200 and v1.json() == {"v": "one"} and "content-type" in v1.headers
    gone = await client.put("/registry/schemagroups/sg/schemas/s/versions/1", content=b"plain text")
    assert (await client.get("/registry/schemagroups/sg/schemas/s/versions/1")).content == b"plain text"
    assert "xregistry-contenttype" not in gone.headers


async def test_document_links_redirect(client):
    linked = await client.put("/registry/schemagroups/sg/schemas/ext", headers={
        "xRegistry-format": "Avro/1.9", "xRegistry-schemaurl": "https://example.com/s.avsc"})
    assert linked.status_code == 201 and linked.headers["location"] == f"{BASE}/schemagroups/sg/schemas/ext"
    response = await client.get("/registry/schemagroups/sg/schemas/ext", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "https://example.com/s.avsc"
    assert response.headers["xregistry-schemaurl"] == "https://example.com/s.avsc" and response.content == b""
    meta = (await client.get("/registry/schemagroups/sg/schemas/ext$details")).json()
    assert meta["schemaurl"] == "https://example.com/s.avsc" and "schemauri" not in meta
    json_alias = await client.put("/registry/schemagroups/sg/schemas/ext2$details",
                                  json={"format": "Avro/1.9", "schemauri": "https://example.com/2.avsc"})
    assert json_alias.json()["schemaurl"] == "https://example.com/2.avsc"  # the older name is taken
    assert_problem(await client.put("/registry/schemagroups/sg/schemas/ext", content=b"body",
                                    headers={"xRegistry-schemaurl": "https://example.com/x"}), 400, "bad_request")


async def test_document_view_errors_change_nothing(app, client):
    await client.put("/registry/schemagroups/sg/schemas/s$details", json=SCHEMA)
    rev = await revision(app)
    path = "/registry/schemagroups/sg/schemas/s"
    assert_problem(await client.patch(path, content=b"{}"), 405, "details_required")
    assert_problem(await client.put(path, content=b"{}", headers={"xRegistry-schema": "x"}), 400, "extra_xregistry_header")
    assert_problem(await client.put(path, content=b"{}", headers={"xRegistry-schemabase64": "AA=="}), 400,
                   "extra_xregistry_header")
    assert_problem(await client.put(path + "$details", json=SCHEMA, headers={"xRegistry-name": "n"}), 400,
                   "extra_xregistry_header")
    assert_problem(await client.put(path, content=b"{}", headers={"xRegistry-name": "%C0%A0"}), 400, "header_error")
    assert_problem(await client.put(path, content=b"{}", headers={"xRegistry-epoch": "one"}), 400, "header_error")
    assert await revision(app) == rev


@pytest.mark.parametrize("value, expected", [("Euro%20%E2%82%AC%20%F0%9F%98%80", "Euro € 😀"),
                                             ('"quoted%20value"', "quoted value"), ("%e2%82%ac", "€")])
async def test_header_values_are_percent_decoded(client, value, expected):
    response = await client.put("/registry/schemagroups/sg/schemas/s", content=b"{}",
                                headers={"Content-Type": "application/json", "xRegistry-format": "JSONSchema",
                                         "xRegistry-description": value})
    assert response.status_code == 201
    assert (await client.get("/registry/schemagroups/sg/schemas/s$details")).json()["description"] == expected


async def test_map_keys_that_cannot_be_header_names_are_left_out_of_the_headers(client):
    created = await client.put("/registry/schemagroups/sg/schemas/s$details",
                               json={**SCHEMA, "labels": {"ok": "1"}, "xmap": {"has space": "v", "fine": "w"}})
    assert created.status_code == 201, created.text
    response = await client.get("/registry/schemagroups/sg/schemas/s")
    assert response.status_code == 200
    assert response.headers["xregistry-labels.ok"] == "1" and response.headers["xregistry-xmap.fine"] == "w"
    assert not any("space" in name for name in response.headers)


async def test_stored_values_that_cannot_be_headers_are_made_safe(app, client):
    unsafe = "https://example.com/a b/ü\r\nX-Evil: 1"
    assert_problem(await client.put("/registry/schemagroups/sg/schemas/a$details",
                                    json={**SCHEMA, "schemaurl": unsafe}), 400, "invalid_attribute")
    await client.put("/registry/schemagroups/sg/schemas/a$details",
                     json={**SCHEMA, "schemaurl": "https://example.com/a"})
    store = app.state.registry.store  # a value stored before links were checked (an older gateway)
    for xid in ("/schemagroups/sg/schemas/a", "/schemagroups/sg/schemas/a/versions/1"):
        rec = await store.get(xid)
        doc = {**rec.doc, "default": {**rec.doc["default"], "schemaurl": unsafe}} if rec.kind == "resource" \
            else {**rec.doc, "schemaurl": unsafe}
        await store.commit([Write(xid=rec.xid, kind=rec.kind, ctype=rec.ctype, doc=doc, expect=rec.revision)])
    linked = await client.get("/registry/schemagroups/sg/schemas/a", follow_redirects=False)
    assert linked.status_code == 303 and "x-evil" not in linked.headers
    assert linked.headers["location"] == "https://example.com/a%20b/%C3%BC%0D%0AX-Evil:%201"
    await client.put("/registry/schemagroups/sg/schemas/b$details",
                     json={**SCHEMA, "format": "Custom/1.0", "schemabase64": "not base64!",
                           "contenttype": "text/x\r\nX-Evil: 1"})
    odd = await client.get("/registry/schemagroups/sg/schemas/b")
    assert odd.status_code == 200 and "x-evil" not in odd.headers
    assert odd.headers["content-type"] == "application/octet-stream"
