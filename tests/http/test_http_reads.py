"""Reads of the xRegistry HTTP API through ASGI: entities, collections and every read flag."""

from __future__ import annotations

import base64
import json

import pytest

from tests.http.support import BASE, assert_problem


async def get(client, path: str, **params):
    return await client.get("/registry" + path, params=params or None)


async def ids(client, path: str, *filters: str, **params) -> list[str]:
    query = [("filter", f) for f in filters] + list(params.items())
    response = await client.get("/registry" + path, params=query)
    assert response.status_code == 200, response.text
    return list(response.json())


async def test_root_lists_group_collections_with_counts(seeded):
    response = await get(seeded, "/")
    body = response.json()
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert f"<{BASE}>;rel=xregistry-root" in response.headers["link"]
    assert body["specversion"] == "1.0-rc4" and body["registryid"] == "test" and body["xid"] == "/"
    assert body["messagegroupsurl"] == f"{BASE}/messagegroups" and body["messagegroupscount"] == 3
    assert body["schemagroupscount"] == 1 and body["endpointscount"] == 1
    assert "messagegroups" not in body  # not inlined


async def test_entities_at_every_level(seeded):
    group = (await get(seeded, "/messagegroups/orders")).json()
    assert group["messagegroupid"] == "orders" and group["messagescount"] == 2
    assert group["messagesurl"] == f"{BASE}/messagegroups/orders/messages"
    message = await get(seeded, "/messagegroups/orders/messages/created")
    assert message.json()["versionid"] == "1" and message.json()["isdefault"] is True
    assert message.headers["content-location"] == f"{BASE}/messagegroups/orders/messages/created/versions/1"
    assert message.json()["self"] == f"{BASE}/messagegroups/orders/messages/created"  # no documents: no $details
    meta = (await get(seeded, "/messagegroups/orders/messages/created/meta")).json()
    assert meta["xid"] == "/messagegroups/orders/messages/created/meta" and meta["defaultversionid"] == "1"
    versions = (await get(seeded, "/schemagroups/sg1/schemas/s1/versions")).json()
    assert list(versions) == ["1.0", "2.0"] and versions["2.0"]["isdefault"] is True
    version = (await get(seeded, "/schemagroups/sg1/schemas/s1/versions/1.0$details")).json()
    assert version["self"] == f"{BASE}/schemagroups/sg1/schemas/s1/versions/1.0$details"
    assert version["isdefault"] is False and "schema" not in version


async def test_missing_entities_are_not_found(seeded):
    for path in ("/messagegroups/nope", "/messagegroups/orders/messages/nope", "/messagegroups/nope/messages",
                 "/schemagroups/sg1/schemas/s1/versions/9", "/schemagroups/sg1/schemas/nope/meta"):
        assert_problem(await get(seeded, path), 404, "not_found")


async def test_resource_document_view_serves_the_document_with_headers(seeded):
    response = await get(seeded, "/schemagroups/sg1/schemas/s1")
    assert response.status_code == 200
    assert response.json() == {"type": "string"}
    h = response.headers
    assert h["xregistry-schemaid"] == "s1" and h["xregistry-versionid"] == "2.0"
    assert h["xregistry-self"] == f"{BASE}/schemagroups/sg1/schemas/s1"
    assert h["xregistry-format"] == "JSONSchema/draft-07" and h["xregistry-versionscount"] == "2"
    assert h["content-disposition"] == "s1"
    assert h["content-location"] == f"{BASE}/schemagroups/sg1/schemas/s1/versions/2.0"
    binary = await get(seeded, "/schemagroups/sg1/schemas/s2")
    assert binary.content == b"\x00\x01\x02" and binary.headers["content-type"] == "application/octet-stream"
    old = await get(seeded, "/schemagroups/sg1/schemas/s1/versions/1.0")
    assert old.json() == {"type": "object"} and old.headers["xregistry-isdefault"] == "false"


async def test_doc_flag_turns_a_document_request_into_the_metadata_view(seeded):
    body = (await seeded.get("/registry/schemagroups/sg1/schemas/s1?doc")).json()
    assert body["self"] == "#/" and "versionid" not in body and "format" not in body  # no default version attributes
    assert body["versionsurl"] == f"{BASE}/schemagroups/sg1/schemas/s1/versions"  # not inlined: stays absolute


async def test_inline_paths(seeded):
    root = (await seeded.get("/registry?inline=messagegroups.messages")).json()
    assert set(root["messagegroups"]) == {"orders", "Billing", "empty"}
    assert set(root["messagegroups"]["orders"]["messages"]) == {"created", "cancelled"}
    assert "schemagroups" not in root and "versions" not in root["messagegroups"]["orders"]["messages"]["created"]
    everything = (await seeded.get("/registry?inline=*")).json()
    s1 = everything["schemagroups"]["sg1"]["schemas"]["s1"]
    assert set(s1["versions"]) == {"1.0", "2.0"} and s1["meta"]["defaultversionid"] == "2.0"
    assert s1["schema"] == {"type": "string"} and s1["versions"]["1.0"]["schema"] == {"type": "object"}
    assert "model" not in everything and "capabilities" not in everything
    with_model = (await seeded.get("/registry?inline=model,capabilities")).json()
    assert "messagegroups" in with_model["model"]["groups"] and with_model["capabilities"]["pagination"] is True
    group = (await seeded.get("/registry/schemagroups/sg1?inline=schemas.meta")).json()
    assert group["schemas"]["s2"]["meta"]["defaultversionid"] == "1" and "versions" not in group["schemas"]["s2"]
    doc = (await seeded.get("/registry/schemagroups/sg1/schemas/s1$details?inline=schema")).json()
    assert doc["schema"] == {"type": "string"} and "meta" not in doc
    bare = (await seeded.get("/registry/schemagroups?inline")).json()
    assert "versions" in bare["sg1"]["schemas"]["s1"]


async def test_binary_flag_serialises_documents_as_base64(seeded):
    doc = (await seeded.get("/registry/schemagroups/sg1/schemas/s1$details?inline=schema&binary")).json()
    assert "schema" not in doc and json.loads(base64.b64decode(doc["schemabase64"])) == {"type": "string"}
    s2 = (await seeded.get("/registry/schemagroups/sg1/schemas/s2$details?inline=schema")).json()
    assert s2["schemabase64"] == "AAEC"


async def test_doc_view_uses_relative_references_for_what_the_response_holds(seeded):
    root = (await seeded.get("/registry?doc&inline=schemagroups.schemas.versions,schemagroups.schemas.meta")).json()
    assert root["self"] == "#/" and root["schemagroupsurl"] == "#/schemagroups"
    assert root["messagegroupsurl"] == f"{BASE}/messagegroups"  # not in the response
    s1 = root["schemagroups"]["sg1"]["schemas"]["s1"]
    assert s1["self"] == "#/schemagroups/sg1/schemas/s1" and s1["metaurl"] == "#/schemagroups/sg1/schemas/s1/meta"
    assert s1["meta"]["defaultversionurl"] == "#/schemagroups/sg1/schemas/s1/versions/2.0"
    assert "format" not in s1 and "isdefault" not in s1  # the document view drops default version attributes
    collection = (await seeded.get("/registry/schemagroups?doc&inline=schemas")).json()
    assert collection["sg1"]["self"] == "#/sg1" and collection["sg1"]["schemasurl"] == "#/sg1/schemas"


async def test_collections_flag_returns_only_the_group_collections(seeded):
    body = (await seeded.get("/registry?collections")).json()
    assert set(body) == {"messagegroups", "endpoints", "schemagroups"}
    assert "versions" in body["schemagroups"]["sg1"]["schemas"]["s1"]  # implies inline=*
    group = (await seeded.get("/registry/messagegroups/orders?collections")).json()
    assert set(group) == {"messages"}
    assert_problem(await seeded.get("/registry/messagegroups?collections"), 400, "bad_flag")


async def test_export_is_the_document_view_of_everything(seeded):
    body = (await seeded.get("/registry/export")).json()
    assert body["self"] == "#/" and body["capabilities"]["specversions"] == ["1.0-rc4"]
    assert body["schemagroups"]["sg1"]["schemas"]["s1"]["versions"]["1.0"]["schema"] == {"type": "object"}
    assert set(body["messagegroups"]) == {"orders", "Billing", "empty"}
    only = (await seeded.get("/registry/export?inline=endpoints")).json()
    assert "endpoints" in only and "messagegroups" not in only


async def test_model_capabilities_discovery_and_options(seeded):
    model = (await seeded.get("/registry/model")).json()
    assert model["groups"]["schemagroups"]["resources"]["schemas"]["hasdocument"] is True
    caps = (await seeded.get("/registry/capabilities")).json()
    assert caps["specversions"] == ["1.0-rc4"] and "filter" in caps["flags"] and caps["pagination"] is True
    discovery = await seeded.get("/.well-known/xregistry")
    assert discovery.json() == {"registries": [BASE]}
    options = await seeded.options("/registry/messagegroups/orders/messages/created/meta")
    assert options.status_code == 200
    assert options.headers["allow"] == options.headers["access-control-allow-methods"] == "GET, HEAD, PUT, PATCH, OPTIONS"
    assert (await seeded.options("/registry")).headers["allow"] == "GET, HEAD, PUT, PATCH, POST, OPTIONS"


@pytest.mark.parametrize("expression, expected", [
    ("name=orders", ["orders"]),                       # strings compare case-insensitively
    ("name=ORD*", ["orders"]),                         # wildcard
    ("name=*events", ["Billing"]),
    ("name!=orders", ["Billing", "empty"]),            # != matches absent attributes too
    ("name<>orders", ["Billing", "empty"]),
    ("name=null", ["empty"]),
    ("name", ["Billing", "orders"]),                   # presence
    ("name!=null", ["Billing", "orders"]),
    ("priority>2", ["empty"]),                         # numbers compare numerically
    ("priority>=2", ["Billing", "empty"]),
    ("priority<10", ["Billing"]),
    ("priority<=10", ["Billing", "empty"]),
    ("priority=10", ["empty"]),
    ("labels.team=billing", ["Billing"]),
    ("labels.*=prod", ["orders"]),
    ("messages.name=ordercreated", ["orders"]),        # into the nested collection
    ("messages.labels.team=billing", ["orders"]),
    ("messagegroupid=billing,labels.team=billing", ["Billing"]),  # AND within one value
    ("messagegroupid=billing,labels.team=sales", []),
    ("excludeall", []),
])
async def test_filter_grammar_on_a_collection(seeded, expression, expected):
    assert sorted(await ids(seeded, "/messagegroups", expression)) == sorted(expected)


async def test_filters_or_across_parameters_and_escape_wildcards(seeded):
    assert sorted(await ids(seeded, "/messagegroups", "name=orders", "priority=10")) == ["empty", "orders"]
    assert await ids(seeded, "/messagegroups/orders/messages", r"description=*\*created\**") == ["created"]
    assert await ids(seeded, "/messagegroups/orders/messages", r"description=*\*cre*") == ["created"]
    assert await ids(seeded, "/messagegroups/orders/messages", r"description=an order was \*") == []


async def test_filter_on_an_entity_answers_404_when_it_does_not_match(seeded):
    assert (await seeded.get("/registry/messagegroups/orders?filter=name=orders")).status_code == 200
    assert_problem(await seeded.get("/registry/messagegroups/orders?filter=name=other"), 404, "not_found")
    assert_problem(await seeded.get("/registry?filter=description=no-match"), 404, "not_found")
    assert_problem(await seeded.get("/registry/messagegroups/orders?filter=excludeall"), 404, "not_found")
    meta = await seeded.get("/registry/schemagroups/sg1/schemas/s1/meta?filter=defaultversionid=2.0")
    assert meta.status_code == 200
    assert_problem(await seeded.get("/registry/schemagroups/sg1/schemas/s1/meta?filter=defaultversionid=1.0"),
                   404, "not_found")


async def test_nested_filters_narrow_inlined_collections_and_their_counts_and_urls(seeded):
    root = (await seeded.get("/registry", params={"filter": "messagegroups.messages.name=ordercreated",
                                                  "inline": "messagegroups.messages"})).json()
    assert list(root["messagegroups"]) == ["orders"] and root["messagegroupscount"] == 1
    assert list(root["messagegroups"]["orders"]["messages"]) == ["created"]
    assert root["schemagroupscount"] == 0 and root["schemagroupsurl"] == f"{BASE}/schemagroups?filter=excludeall"
    plain = (await seeded.get("/registry", params={"filter": "messagegroups.messages.name=ordercreated"})).json()
    assert plain["messagegroupscount"] == 1
    assert plain["messagegroupsurl"] == f"{BASE}/messagegroups?filter=messages.name%3Dordercreated"
    follow = await seeded.get(plain["messagegroupsurl"].replace("http://gw.test", ""))
    assert list(follow.json()) == ["orders"]
    either = (await seeded.get("/registry", params=[("filter", "messagegroups.messagegroupid=empty"),
                                                     ("filter", "schemagroups.schemas.format=binary*"),
                                                     ("inline", "*")])).json()
    assert list(either["messagegroups"]) == ["empty"] and list(either["schemagroups"]["sg1"]["schemas"]) == ["s2"]
    assert list(either["schemagroups"]["sg1"]["schemas"]["s2"]["versions"]) == ["1"]  # below a match: all


async def test_sort(seeded):
    assert await ids(seeded, "/messagegroups", sort="name") == ["empty", "Billing", "orders"]  # absent sorts lowest
    assert await ids(seeded, "/messagegroups", sort="name=desc") == ["orders", "Billing", "empty"]
    assert await ids(seeded, "/messagegroups", sort="priority=desc") == ["empty", "Billing", "orders"]
    assert await ids(seeded, "/schemagroups/sg1/schemas/s1/versions", sort="createdat=desc") == ["2.0", "1.0"]
    assert await ids(seeded, "/messagegroups") == ["Billing", "empty", "orders"]  # by id, case-insensitively


async def test_specversion_flag(seeded):
    for value in ("1.0-rc4", "1.0-RC4", "1.0.7-rc4"):
        assert (await seeded.get(f"/registry?specversion={value}")).status_code == 200
    for value in ("1.0", "0.5", "1.0-rc3", "x"):
        body = assert_problem(await seeded.get(f"/registry?specversion={value}"), 400, "unsupported_specversion")
        assert body["args"]["list"] == "1.0-rc4"


async def test_a_dangling_xref_resource_reads_as_ids_and_xref(client):
    assert (await client.put("/registry/messagegroups/g/messages/m", json={})).status_code == 201
    assert (await client.put("/registry/messagegroups/g/messages/alias",
                             json={"meta": {"xref": "/messagegroups/g/messages/gone"}})).status_code == 201
    meta = (await client.get("/registry/messagegroups/g/messages/alias/meta?doc")).json()
    assert meta == {"messageid": "alias", "self": "#/", "xid": "/messagegroups/g/messages/alias/meta",
                    "xref": "/messagegroups/g/messages/gone"}
    assert_problem(await client.get("/registry/messagegroups/g/messages/alias/versions?doc"), 400, "cannot_doc_xref")


async def test_head_answers_the_gets_status_and_headers_without_a_body(seeded):
    for path in ("/registry", "/registry/messagegroups?limit=1", "/registry/messagegroups/orders",
                 "/registry/schemagroups/sg/schemas/s", "/registry/messagegroups/nope"):
        get, head = await seeded.get(path), await seeded.head(path)
        assert head.status_code == get.status_code and head.content == b"", path
        for name in ("content-type", "content-length", "location"):
            assert head.headers.get(name) == get.headers.get(name), (path, name)
        assert head.headers.get_list("link") == get.headers.get_list("link"), path
    paged = await seeded.head("/registry/messagegroups?limit=1")
    assert any("rel=next" in v for v in paged.headers.get_list("link"))  # pagination links survive HEAD
