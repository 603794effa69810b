"""The audit of core/http.md (xRegistry 1.0-rc4): each MUST the gateway meets, checked against
the app. Every test cites its section and sentence; docs/conformance.md maps each MUST of the
document to its test (or to the reason it is deliberately not met). MUSTs checked by earlier
suites (tests/http/test_http_conformance.py and others) are listed there with their test."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.http.support import BASE, assert_problem, revision
from tests.http.test_http_modelsource import DIRS

FORMAT = "JSONSchema/draft-07"
S1 = "/registry/schemagroups/sg1/schemas/s1"
JSON_UTF8 = "application/json; charset=utf-8"
MESSAGE = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.x"}}}


def urls_in(value: Any) -> list[str]:
    """Every string a JSON value holds under a key ending in ``url`` or named ``self``."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and (k == "self" or k.endswith("url")):
                out.append(v)
            else:
                out += urls_in(v)
    elif isinstance(value, list):
        for v in value:
            out += urls_in(v)
    return out


# -- "HTTP API Patterns" ------------------------------------------------------------------------


async def test_one_prefix_for_every_api(seeded):
    """"HTTP API Patterns": "the same prefix MUST be used consistently for all APIs in the same
    Registry instance." — every URL the registry hands out, at every level, is below the prefix."""
    client = seeded
    for path in ("/registry?inline=*", "/registry/messagegroups/orders/messages/created/meta",
                 S1 + "$details?inline=versions", "/registry/export"):
        urls = urls_in((await client.get(path)).json())
        assert urls and all(u.startswith(BASE) for u in urls if u.startswith("http")), urls
    assert (await client.get("/registry/capabilities")).status_code == 200


@pytest.mark.parametrize("path", ["/registry/.xregistry/more", "/registry/model/groups"])
async def test_unsupported_optional_paths_are_api_not_found(seeded, path):
    """"HTTP API Patterns": "If an OPTIONAL HTTP path is not supported by an implementation, then
    any use of that API MUST generate an error ([api_not_found](#api_not_found))." — and
    "api_not_found": "`request_path` MUST be the "Path" portion of the incoming request URL,
    starting with `/`." (A name that is no API and no group type is ``not_found``: see
    test_http_rc4_scenarios.py.)"""
    for method in ("GET", "PUT"):
        body = assert_problem(await seeded.request(method, path, json={}), 404, "api_not_found")
        assert body["subject"] == path.removeprefix("/registry")


@pytest.mark.parametrize(("method", "path"), [
    ("DELETE", "/registry"), ("PUT", "/registry/model"), ("PATCH", "/registry/export"),
    ("PUT", "/registry/model"), ("POST", "/registry/model"), ("DELETE", "/registry/modelsource"),
    ("PATCH", "/registry/modelsource"), ("PUT", "/registry/messagegroups"), ("POST", S1 + "/meta"),
    ("POST", S1 + "/versions/1.0$details"), ("DELETE", S1 + "/meta"),
])
async def test_unsupported_methods_are_action_not_supported(seeded, app, method, path):
    """"HTTP API Patterns": "If an HTTP method is not supported for a supported HTTP path, then an
    error ([action_not_supported](./spec.md#action_not_supported)) MUST be generated." — and the
    `/model` API "is a read-only API"; nothing changes."""
    rev = await revision(app)
    r = await seeded.request(method, path, json={})
    assert_problem(r, 405, "action_not_supported")
    allowed = [m.strip() for m in r.headers["allow"].split(",")]
    assert method not in allowed and "GET" in allowed  # what is supported there (RFC 9110: 405 with Allow)
    assert await revision(app) == rev


async def test_no_extension_paths_below_non_root_paths(seeded):
    """"HTTP API Patterns": "New HTTP paths that extend non-root paths MUST NOT be defined" — the
    gateway's one extension API (`/openapi.json`) is at the root; below entities such a name is an
    entity id like any other."""
    assert (await seeded.get("/registry/openapi.json")).status_code == 200
    for path in ("/registry/model/openapi.json", "/registry/capabilities/x", "/registry/export/x"):
        assert (await seeded.get(path)).status_code == 404
    assert_problem(await seeded.get("/registry/messagegroups/openapi.json"), 404, "not_found")


# -- "Adherence to HTTP Standards" / "Creating or Updating Entities" ----------------------------


async def test_put_resets_defaulted_attributes_instead_of_deleting_them(seeded):
    """"Adherence to HTTP Standards": "mandatory attributes, as well as ones that have default
    values defined, MUST be reset to their default values rather than deleted." — a `PUT` of a
    meta without `defaultversionsticky` resets it to `false` (and the default version follows)."""
    client = seeded
    r = await client.patch(S1 + "/meta", json={"defaultversionsticky": True, "defaultversionid": "1.0"})
    assert r.status_code == 200, r.text
    r = await client.put(S1 + "/meta", json={})
    assert r.status_code == 200, r.text
    meta = r.json()
    assert meta["defaultversionsticky"] is False
    assert meta["defaultversionid"] == "2.0"  # not sticky: the newest again
    assert meta["epoch"] >= 1 and meta["createdat"] and meta["modifiedat"]


async def test_put_creates_then_updates(seeded):
    """"Creating or Updating Entities": "The entity processed MUST either be created (if it does
    not already exist), or updated (if it does exist)." and "If an entity with the specified
    `<SINGULAR>id` already exists then it MUST be interpreted as a request to update the existing
    entity. Otherwise, it MUST be interpreted as a request to create a new entity" — `201` with
    `Location` the first time, `200` without `Location` ("Otherwise an HTTP `200 OK` without an
    HTTP `Location` header MUST be returned.") the second."""
    client = seeded
    first = await client.put("/registry/messagegroups/new", json={"name": "a"})
    assert first.status_code == 201 and first.headers["location"] == first.json()["self"]
    again = await client.put("/registry/messagegroups/new", json={"name": "b"})
    assert again.status_code == 200 and "location" not in again.headers
    assert again.json()["createdat"] == first.json()["createdat"] and again.json()["epoch"] == 2


async def test_patch_changes_only_what_it_names_and_null_deletes(seeded):
    """"Adherence to HTTP Standards": "A `PATCH` operation MUST only modify the attributes
    explicitly mentioned in the request. Any attribute in the request with a value of `null` MUST
    be interpreted as a request to delete the attribute" — for an entity and for each member of a
    collection ("The processing of each individual entity in the map MUST follow the same rules as
    defined for `PATCH` of a single entity")."""
    client = seeded
    r = await client.patch("/registry/messagegroups/orders", json={"description": None, "labels": {"x": "1"}})
    assert r.status_code == 200
    body = r.json()
    assert body["name"] == "Orders" and "description" not in body and body["labels"] == {"x": "1"}
    r = await client.patch("/registry/messagegroups", json={"orders": {"name": "O2"}, "Billing": {"name": None}})
    assert r.status_code == 200 and set(r.json()) == {"orders", "Billing"}
    assert r.json()["orders"]["labels"] == {"x": "1"} and r.json()["orders"]["name"] == "O2"
    assert "name" not in r.json()["Billing"] and r.json()["Billing"]["priority"] == 2


async def test_post_to_a_collection_replaces_each_member_and_answers_only_them(seeded):
    """"Creating or Updating Entities" (`POST` to a collection): "Each value in the map MUST be
    the full serialization of the entity" and "The processing of each individual entity in the map
    MUST follow the same rules as defined for `PUT` above."; "In the `POST` case, or a `PATCH`
    directed to an xRegistry collection, the result MUST contain only the entities processed, not
    the entire Registry collection.\""""
    client = seeded
    r = await client.post("/registry/messagegroups", json={"Billing": {"description": "only this"}})
    assert r.status_code == 200 and list(r.json()) == ["Billing"]
    got = (await client.get("/registry/messagegroups/Billing")).json()
    assert got["description"] == "only this" and "name" not in got and "labels" not in got
    r = await client.post("/registry/messagegroups/orders/messages", json={"m9": MESSAGE})
    assert list(r.json()) == ["m9"]


async def test_empty_versions_map_for_a_new_resource_is_missing_versions(seeded, app):
    """"Creating or Updating Entities": "In the case of an empty map of Versions and the Resource
    being referenced does not exist yet, an error ([missing_versions](#missing_versions)) MUST be
    generated" ("missing_versions": `400 Bad Request`)."""
    rev = await revision(app)
    body = assert_problem(await seeded.post("/registry/schemagroups/sg1/schemas/nope/versions", json={}), 400,
                          "missing_versions")
    assert body["subject"] == "/schemagroups/sg1/schemas/nope/versions"
    assert await revision(app) == rev
    assert (await seeded.post(S1 + "/versions", json={})).status_code == 200  # it exists: nothing to do


async def test_post_to_an_entity_takes_only_nested_collections(seeded, app):
    """"Creating or Updating Entities" (`POST <PATH-TO-ENTITY>`): "The root of the JSON object in
    the HTTP body MUST NOT contain any attributes of the targeted entity other than the nested
    collections"; "The response message MUST be a map of the nested entity types with just the
    changed entities that were processed."; "POST /": "A request that isn't a map of Group types
    [...] MUST generate an error ([groups_only](./spec.md#groups_only))" and "The response MUST
    only include the Groups that were processed, and not any Registry-level attributes."; "POST
    /<GROUPS>/<GID>": "A request that isn't a map of Resource types [...] MUST generate an error
    ([resources_only](./spec.md#resources_only)).\""""
    client = seeded
    rev = await revision(app)
    assert_problem(await client.post("/registry", json={"name": "x", "messagegroups": {}}), 400, "groups_only")
    assert_problem(await client.post("/registry/messagegroups/orders", json={"name": "x"}), 400, "resources_only")
    assert await revision(app) == rev
    r = await client.post("/registry", json={"messagegroups": {"g2": {"name": "two"}}, "endpoints": {}})
    assert r.status_code == 200 and r.json() == {"messagegroups": {"g2": r.json()["messagegroups"]["g2"]},
                                                 "endpoints": {}}
    assert "specversion" not in r.json()
    r = await client.post("/registry/messagegroups/orders", json={"messages": {"n1": MESSAGE}})
    assert r.status_code == 200 and list(r.json()) == ["messages"] and list(r.json()["messages"]) == ["n1"]
    assert (await client.get("/registry/messagegroups/orders")).json()["name"] == "Orders"


async def test_invalid_values_are_invalid_attribute(seeded, app):
    """"Creating or Updating Entities": "A request to update a mutable attribute with an invalid
    value MUST generate an error ([invalid_attribute](./spec.md#invalid_attribute))" — nothing
    is written."""
    client = seeded
    rev = await revision(app)
    for path, body in (("/registry/messagegroups/orders", {"name": 5}),
                       ("/registry/messagegroups/orders", {"labels": {"a": 1}}),
                       (S1 + "/meta", {"defaultversionsticky": "yes"}),
                       (S1 + "$details", {"format": FORMAT, "name": 5}),
                       (S1 + "/versions/1.0$details", {"createdat": "yesterday"}),
                       (S1 + "$details", {"createdat": "yesterday"})):  # the default version's
        assert_problem(await client.patch(path, json=body), 400, "invalid_attribute")
    assert await revision(app) == rev
    r = await client.patch(S1 + "$details", json={"createdat": "2020-01-01T00:00:00Z"})
    assert r.status_code == 200, r.text
    assert (await client.get(S1 + "/versions/2.0$details")).json()["createdat"] == "2020-01-01T00:00:00Z"


async def test_required_attributes_missing_after_a_write(client, app):
    """"Creating or Updating Entities": "After processing the request, if there are any missing
    REQUIRED attributes then an error ([required_attribute_missing](./spec.md#required_attribute_missing))
    MUST be generated." — for `PUT`, and for `PATCH` that creates ("any missing REQUIRED
    attributes MUST generate an error"), on a model whose `owner` is required."""
    model = copy.deepcopy(DIRS)
    model["groups"]["dirs"]["attributes"]["owner"]["required"] = True
    assert (await client.put("/registry/modelsource", json=model)).status_code == 200
    rev = await revision(app)
    for method in ("PUT", "PATCH"):
        assert_problem(await client.request(method, "/registry/dirs/d1", json={"colour": "red"}), 400,
                       "required_attribute_missing")
    assert await revision(app) == rev
    assert (await client.put("/registry/dirs/d1", json={"owner": "me"})).status_code == 201
    assert_problem(await client.patch("/registry/dirs/d1", json={"owner": None}), 400, "required_attribute_missing")
    assert_problem(await client.put("/registry/dirs/d1", json={}), 400, "required_attribute_missing")


async def test_patch_of_a_document_needs_details(seeded, app):
    """"Creating or Updating Entities": "When processing a Resource or Version, whose Resource
    type has its `hasdocument` model aspect set to `true`, the URL accessing the entity MUST
    include the `$details` suffix, and MUST generate an error ([details_required](#details_required))
    in the absence of the `$details` suffix." ("details_required": `405`, subject the resource's
    XID)."""
    rev = await revision(app)
    for path in (S1, S1 + "/versions/1.0"):
        body = assert_problem(await seeded.patch(path, json={"description": "d"}), 405, "details_required")
        assert body["subject"] == path.removeprefix("/registry")
    assert await revision(app) == rev
    assert (await seeded.patch(S1 + "$details", json={"description": "d"})).status_code == 200


async def test_metadata_bodies_refuse_xregistry_headers(seeded, app):
    """"Resources and Versions have the following additional rules": "When a write operation
    request includes the Resource/Version's metadata in the HTTP body, then the inclusion of any
    xRegistry `xRegistry-` HTTP headers MUST generate an error ([extra_xregistry_header](#extra_xregistry_header))."
    ("extra_xregistry_header": `400`, args `name`)."""
    rev = await revision(app)
    for method, path in (("PUT", S1 + "$details"), ("PATCH", S1 + "/versions/1.0$details"), ("POST", S1 + "$details"),
                         ("PUT", "/registry/messagegroups/orders/messages/created")):
        body = assert_problem(await seeded.request(method, path, json={"format": FORMAT},
                                                   headers={"xRegistry-name": "n"}), 400, "extra_xregistry_header")
        assert body["args"]["name"].lower() == "xregistry-name"
    assert await revision(app) == rev


@pytest.mark.parametrize("header", ["xRegistry-schema", "xRegistry-schemabase64"])
async def test_document_attributes_are_never_headers_on_writes(seeded, app, header):
    """"Resources and Versions have the following additional rules": "The `<RESOURCE>` and
    `<RESOURCEbase64>` attributes MUST never appear as xRegistry HTTP headers, and if present on a
    write request MUST generate an error ([extra_xregistry_header](#extra_xregistry_header)).\""""
    rev = await revision(app)
    assert_problem(await seeded.put(S1, content=b"{}", headers={"Content-Type": "application/json", header: "x"}),
                   400, "extra_xregistry_header")
    assert await revision(app) == rev


async def test_a_document_link_header_needs_an_empty_body(seeded, app):
    """"Resources and Versions have the following additional rules": "When a write operation
    request includes a domain-specific document in the HTTP body, and the `<RESOURCE>url`
    xRegistry HTTP header is present with a non-null value, the HTTP body MUST be empty.\""""
    client = seeded
    rev = await revision(app)
    assert_problem(await client.put(S1, content=b'{"a": 1}', headers={
        "Content-Type": "application/json", "xRegistry-schemaurl": "https://example.com/s.json"}), 400, "bad_request")
    assert await revision(app) == rev
    r = await client.put(S1, content=b"", headers={"xRegistry-schemaurl": "https://example.com/s.json"})
    assert r.status_code == 303 and r.headers["location"] == "https://example.com/s.json"


async def test_write_response_is_the_get_of_the_same_form(seeded):
    """"Creating or Updating Entities": "A successful response MUST return the same response as a
    `GET` to the entity (or entities) processed, showing their current representation in the same
    format (`$details` variant or not) as the request" and "the response MUST be generated
    applying the semantics of any request flags specified in the request URL (e.g. `?inline`).\""""
    client = seeded
    r = await client.patch(S1 + "$details", json={"description": "d"})
    assert r.json() == (await client.get(S1 + "$details")).json()
    r = await client.put(S1, content=b'{"type": "array"}', headers={"Content-Type": "application/json"})
    got = await client.get(S1)
    assert r.content == got.content == b'{"type": "array"}'
    assert r.headers["xregistry-versionid"] == got.headers["xregistry-versionid"]
    r = await client.patch("/registry/messagegroups/orders?inline=messages", json={"description": "x"})
    assert set(r.json()["messages"]) == {"created", "cancelled"}
    assert r.json() == (await client.get("/registry/messagegroups/orders?inline=messages")).json()


async def test_new_version_has_content_location(seeded):
    """"Creating or Updating Entities": "In the `PUT` or `PATCH` cases directed at a single
    Resource or Version, if a new Version was created, the response MUST include a
    `Content-Location` HTTP header to the newly created Version entity, and it MUST be the same as
    the Version's `self` attribute.\""""
    client = seeded
    r = await client.put(S1 + "$details", json={"versionid": "3.0", "format": FORMAT})
    assert r.status_code == 200, r.text
    version = (await client.get(S1 + "/versions/3.0$details")).json()
    assert r.headers["content-location"] == version["self"]
    r = await client.put("/registry/schemagroups/sg1/schemas/fresh", content=b"{}",
                         headers={"Content-Type": "application/json", "xRegistry-format": FORMAT})
    assert r.status_code == 201
    assert r.headers["content-location"] == f"{BASE}/schemagroups/sg1/schemas/fresh/versions/1"


# -- "HTTP-Specific Attribute Processing Rules" ------------------------------------------------


async def test_attribute_headers_of_a_document(seeded):
    """"`labels` Attribute": "each map entry MUST appear as a separate HTTP header using a name of
    `xRegistry-labels.<KEYNAME>`."; "`contenttype` Attribute": "it MUST use the name
    `Content-Type` and not `xRegistry-contenttype`."; "`<RESOURCE>` Attribute" and
    "`<RESOURCE>base64` Attribute": "this attribute MUST NOT be included in the list."; "Scalar
    default Version extension attributes MUST also appear as `xRegistry-` HTTP headers."."""
    client = seeded
    r = await client.put(S1 + "$details", json={"format": FORMAT, "labels": {"a": "1", "b.c": "2"},
                                                "contenttype": "application/schema+json", "myext": "yes",
                                                "schema": {"type": "object"}})
    assert r.status_code == 200, r.text
    got = await client.get(S1)
    assert got.headers["xregistry-labels.a"] == "1" and got.headers["xregistry-labels.b.c"] == "2"
    assert got.headers["content-type"] == "application/schema+json"
    assert "xregistry-contenttype" not in got.headers
    assert "xregistry-schema" not in got.headers and "xregistry-schemabase64" not in got.headers
    assert got.headers["xregistry-myext"] == "yes"


async def test_document_view_headers_of_a_resource(seeded):
    """"Serializing Resource Domain-Specific Documents": "The `versionid` attribute MUST be the ID
    of the Resource's default Version."; "The `xid` URI references the Resource, not the default
    Version."; "The `versionsurl` and `versionscount` Collection attributes are included, but not
    the `versions` collection itself."; "The `Content-Location` header MAY appear, and if present,
    MUST reference the "default" Version."; "`Content-Disposition` SHOULD be present and if so,
    MUST be the `<RESOURCE>id` value." — for `GET`, `PUT` and `POST` of documents alike."""
    client = seeded
    got = await client.get(S1)
    h = got.headers
    assert h["xregistry-schemaid"] == "s1" and h["xregistry-versionid"] == "2.0"
    assert h["xregistry-xid"] == "/schemagroups/sg1/schemas/s1" and h["xregistry-self"] == BASE + S1[9:]
    assert h["xregistry-versionscount"] == "2" and h["xregistry-versionsurl"] == f"{BASE}{S1[9:]}/versions"
    assert h["xregistry-metaurl"] == f"{BASE}{S1[9:]}/meta" and h["xregistry-isdefault"] == "true"
    assert "xregistry-versions" not in h and "xregistry-meta" not in h
    assert h["content-location"] == f"{BASE}{S1[9:]}/versions/2.0"
    assert h["content-disposition"] == "s1"
    version = await client.get(S1 + "/versions/1.0")
    assert version.headers["content-disposition"] == "s1" and version.headers["xregistry-isdefault"] == "false"
    assert version.headers["xregistry-xid"] == "/schemagroups/sg1/schemas/s1/versions/1.0"
    assert "xregistry-versionscount" not in version.headers
    posted = await client.post(S1, content=b"{}", headers={"Content-Type": "application/json",
                                                           "xRegistry-format": FORMAT})
    assert posted.status_code == 201 and posted.headers["content-disposition"] == "s1"
    assert posted.headers["location"] == posted.headers["xregistry-self"]


async def test_version_document_link_is_a_redirect(seeded):
    """"`GET /<GROUPS>/<GID>/<RESOURCES>/<RID>/versions/<VID>`": "a successful response MUST
    either return the Version's domain-specific document, or an HTTP redirect to the
    `<RESOURCE>url` value if set." and "`Location`, if present, and `<RESOURCE>url` MUST have the
    same value."; for the resource "the HTTP body MUST be empty" with `303`."""
    client = seeded
    link = "https://example.com/v1.json"
    assert (await client.put(S1 + "/versions/1.0$details", json={"format": FORMAT, "schemaurl": link})).status_code == 200
    r = await client.get(S1 + "/versions/1.0", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == link and r.content == b""
    assert r.headers["xregistry-schemaurl"] == link


async def test_post_to_a_resource_creates_or_updates_the_named_version(seeded):
    """"`POST /<GROUPS>/<GID>/<RESOURCES>/<RID>`": "When the `versionid` attribute is absent in
    the request then a new Version MUST be created. When present, then the server MUST update the
    specified Version rather than create a new one. If the specified Version does not already
    exist then a new Version MUST be created.\""""
    client = seeded
    r = await client.post(S1 + "$details", json={"format": FORMAT, "versionid": "1.0", "description": "upd"})
    assert r.status_code == 200 and r.json()["versionid"] == "1.0" and r.json()["description"] == "upd"
    r = await client.post(S1 + "$details", json={"format": FORMAT, "versionid": "7"})
    assert r.status_code == 201 and r.json()["versionid"] == "7"
    r = await client.post(S1 + "$details", json={"format": FORMAT})
    assert r.status_code == 201 and r.json()["versionid"] not in ("1.0", "2.0", "7")
    assert (await client.get(S1 + "$details")).json()["versionscount"] == 4


# -- "Pagination" ------------------------------------------------------------------------------


async def test_pagination_only_on_collections(seeded):
    """"Pagination": "The pagination specification MUST only be used when the request is directed
    at a collection, not at its owning entity (such as the root of the Registry, or at an
    individual Group or Resource).\""""
    client = seeded
    for path in ("/registry", "/registry/messagegroups/orders", S1 + "$details"):
        assert_problem(await client.get(path + "?limit=1"), 400, "bad_flag")
        assert "rel=next" not in (await client.get(path + "?inline=*")).headers.get("link", "")
    r = await client.get("/registry/messagegroups?limit=1")
    assert len(r.json()) == 1 and "rel=next" in r.headers["link"].replace('"', "")


# -- Registry entity, /export, /capabilities, /model, /modelsource -----------------------------


@pytest.mark.parametrize("path", [
    "/registry", "/registry/capabilities", "/registry/model", "/registry/modelsource", "/registry/export",
    "/registry/messagegroups", "/registry/messagegroups/orders", "/registry/messagegroups/orders/messages",
    "/registry/messagegroups/orders/messages/created", S1 + "$details", S1 + "/meta", S1 + "/versions",
    S1 + "/versions/1.0$details",
])
async def test_successful_reads_are_json_utf8(seeded, path):
    """Each `GET` section: "A successful response MUST be of the form: `HTTP/1.1 200 OK` /
    `Content-Type: application/json; charset=utf-8`" (the `Link` of collections: "`Link:
    <URL>;rel=next;count=<UINTEGER> ?`")."""
    r = await seeded.get(path)
    assert r.status_code == 200 and r.headers["content-type"] == JSON_UTF8
    assert isinstance(r.json(), dict)


async def test_missing_capabilities_and_modelsource_change_nothing(client):
    """"`PATCH` and `PUT /`": "A missing `capabilities` or `modelsource` attribute MUST NOT result
    in any changes to those values." — and a `modelsource` present "MUST be a complete replacement
    representation of the model definition."""
    assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
    for method in ("PUT", "PATCH"):
        r = await client.request(method, "/registry", json={"description": "d"})
        assert r.status_code == 200, r.text
        assert (await client.get("/registry/modelsource")).json() == DIRS
    smaller = copy.deepcopy(DIRS)
    del smaller["groups"]["dirs"]["resources"]
    assert (await client.patch("/registry", json={"modelsource": smaller})).status_code == 200
    assert (await client.get("/registry/modelsource")).json() == smaller
    assert (await client.get("/registry/model")).json()["groups"]["dirs"].get("resources", {}) == {}


@pytest.mark.parametrize("reset", [None, {}])
async def test_modelsource_null_or_empty_resets_to_no_groups(client, reset):
    """"`PATCH` and `PUT /`": "A value of `null` or `{}` MUST reset the model to the server's
    default value (no Groups, Resources, extension attributes or custom specification-defined
    attributes).\""""
    assert (await client.put("/registry/modelsource", json=DIRS)).status_code == 200
    r = await client.put("/registry", json={"modelsource": reset})
    assert r.status_code == 200, r.text
    assert (await client.get("/registry/model")).json().get("groups", {}) == {}
    assert (await client.get("/registry/modelsource")).json() == {}
    assert_problem(await client.get("/registry/dirs"), 404, "not_found")


async def test_unsupported_capability_changes_are_refused(seeded, app):
    """In `PUT /`, "Any change to the configuration of the server that is not supported MUST
    result in an error [...] and no changes applied" (here `capability_value`, core/spec.md) —
    the same capabilities are accepted, and `available.capabilities.mutable` is `true` (see
    tests/http/test_http_capabilities.py)."""
    client = seeded
    caps = (await client.get("/registry/capabilities")).json()
    assert caps["available"]["capabilities"] == {"mutable": True}
    rev = await revision(app)
    changed = {**caps, "shortself": True}
    assert_problem(await client.patch("/registry", json={"capabilities": changed, "description": "x"}), 400,
                   "capability_value")
    assert await revision(app) == rev
    assert (await client.patch("/registry", json={"capabilities": caps, "description": "x"})).status_code == 200


async def test_capabilities_advertise_only_what_works(seeded):
    """core/spec.md "Registry Capabilities": "servers MUST include all capabilities [...] since
    the absence of a capability indicates lack of support"; "`available`": "the data MUST be
    available via all supported retrieval mechanisms" and "if a separate API is defined for a
    piece of data, it MUST be supported if that data type is listed in this capability";
    `capabilities`, `entities` and `model` "MUST always be present", `model` "MUST have a
    `mutable` value of `false`". Each advertised flag, `ignore` value, specversion and API works;
    what is not advertised (`shortself`) is not served."""
    client = seeded
    caps = (await client.get("/registry/capabilities")).json()
    available = caps["available"]
    assert {"capabilities", "entities", "model"} <= set(available) and available["model"] == {"mutable": False}
    for name in available:
        if name != "entities":
            assert (await client.get(f"/registry/{name}")).status_code == 200, name
        if name in ("capabilities", "capabilitiesoffered", "model", "modelsource"):
            r = await client.get(f"/registry?inline={name}")
            assert r.status_code == 200 and name in r.json(), name
    for api in caps["apis"]:  # the extension list of root APIs (earlier drafts' "apis")
        assert (await client.get("/registry" + api)).status_code == 200, api
    assert (await client.get("/registry/capabilitiesoffered")).json()["flags"]["enum"] == caps["flags"]
    assert caps["shortself"] is False and "shortself" not in (await client.get("/registry/messagegroups/orders")).json()
    reads = {"binary": "?binary", "collections": "?collections", "doc": "?doc", "filter": "?filter=name=x",
             "inline": "?inline=*", "sort": None, "specversion": f"?specversion={caps['specversions'][0]}"}
    for flag in caps["flags"]:
        if reads.get(flag):
            assert (await client.get("/registry" + reads[flag])).status_code in (200, 404), flag
    assert (await client.get("/registry/messagegroups?sort=name=desc")).status_code == 200
    assert (await client.delete("/registry/messagegroups/empty?epoch=1")).status_code == 204
    assert (await client.patch(S1 + "/meta?setdefaultversionid=1.0", json={})).json()["defaultversionid"] == "1.0"
    assert (await client.patch("/registry/messagegroups/orders?dryrun", json={"name": "n"})).status_code == 200
    assert "dryrun" in caps["flags"]
    for value in caps["ignores"]:
        r = await client.patch(f"/registry/messagegroups/orders?ignore={value}", json={"description": value})
        assert r.status_code == 200, (value, r.text)
    assert caps["pagination"] is True and caps["versionmodes"] == ["manual", "createdat", "modifiedat", "semver"]


async def test_export_is_the_document_view_of_everything(seeded):
    """"`GET /export`": "The `GET /export` API MUST be an alias for
    `GET /?doc&inline=*,capabilities,modelsource`" (``modelsource`` is ``{}`` until a model is
    given, see docs/conformance.md) and "any `?inline` flag specified MUST override the default
    value defined above.\""""
    client = seeded
    export = (await client.get("/registry/export")).json()
    alias = (await client.get("/registry?doc&inline=*,capabilities,modelsource")).json()
    assert export == alias and export["modelsource"] == {}
    assert "messages" in export["messagegroups"]["orders"] and "capabilities" in export
    narrowed = (await client.get("/registry/export?inline=schemagroups")).json()
    assert "messagegroups" not in narrowed and "capabilities" not in narrowed and narrowed["messagegroupscount"] == 3
    assert "schemas" not in narrowed["schemagroups"]["sg1"] and narrowed["schemagroups"]["sg1"]["schemascount"] == 2


async def test_model_is_served_and_read_only(seeded, app):
    """"`GET /model`": "A server MUST support clients retrieving its full model definition via an
    HTTP `GET`", also "via the Inline Flag with a value of `model`"; "the `/model` API is a
    read-only API.\""""
    client = seeded
    model = (await client.get("/registry/model")).json()
    assert {"messagegroups", "schemagroups", "endpoints"} <= set(model["groups"])
    assert (await client.get("/registry?inline=model")).json()["model"] == model
    rev = await revision(app)
    assert_problem(await client.put("/registry/model", json=model), 405, "action_not_supported")
    assert await revision(app) == rev


async def test_modelsource_reads_and_writes(client, app):
    """"`GET /modelsource`": "In cases where the Registry's model has never been specified via
    `modelsource`, this operation MUST return `{}` not an empty HTTP body."; "`PUT /modelsource`":
    "the HTTP body MUST be a JSON object and an empty request MUST generate an error
    ([missing_body](#missing_body)).\""""
    r = await client.get("/registry/modelsource")
    assert r.status_code == 200 and r.content == b"{}"
    rev = await revision(app)
    assert_problem(await client.put("/registry/modelsource", content=b"",
                                    headers={"Content-Type": "application/json"}), 400, "missing_body")
    assert_problem(await client.put("/registry/modelsource", json=[1]), 400, "bad_request")
    assert await revision(app) == rev


# -- Deleting ----------------------------------------------------------------------------------


async def test_delete_checks_epochs(seeded, app):
    """"`DELETE /<GROUPS>`": "Notice that the `epoch` value for `ep1` will be verified prior to the
    delete, but no such check will happen for `ep2`." (core/spec.md "Deleting Entities": a
    mismatch is `mismatched_epoch` and nothing is deleted); "A successful response MUST be of the
    form: `HTTP/1.1 200 OK` or `HTTP/1.1 204 No Content`" — collections, groups (`?epoch`),
    resources and versions alike."""
    client = seeded
    rev = await revision(app)
    assert_problem(await client.request("DELETE", "/registry/messagegroups", json={
        "Billing": {"epoch": 99}, "empty": {}}), 400, "mismatched_epoch")
    assert_problem(await client.delete("/registry/messagegroups/orders?epoch=99"), 400, "mismatched_epoch")
    assert_problem(await client.request("DELETE", S1 + "/versions", json={"1.0": {"epoch": 42}}), 400,
                   "mismatched_epoch")
    assert await revision(app) == rev
    r = await client.request("DELETE", "/registry/messagegroups", json={"Billing": {"epoch": 1}, "empty": {}})
    assert r.status_code == 204 and set((await client.get("/registry/messagegroups")).json()) == {"orders"}
    assert (await client.request("DELETE", S1 + "/versions", json={"1.0": {"epoch": 1}})).status_code == 204
    assert list((await client.get(S1 + "/versions")).json()) == ["2.0"]
    assert (await client.delete("/registry/messagegroups/orders/messages/created?epoch=1")).status_code == 204


# -- "Request Flags / Query Parameters" --------------------------------------------------------


async def test_filter_and_within_or_across(seeded):
    """"`?filter` Flag": "All `<EXPRESSION>` values within the scope of one `?filter` query
    parameter MUST be evaluated as a logical `AND`" and "The `?filter` query parameter MAY appear
    multiple times and if so MUST be evaluated as a logical `OR` with the other `?filter` query
    parameters"."""
    client = seeded
    r = await client.get("/registry/messagegroups?filter=labels.team=sales,name=Orders")
    assert list(r.json()) == ["orders"]
    r = await client.get("/registry/messagegroups?filter=labels.team=sales,name=billing%20events")
    assert r.json() == {}
    r = await client.get("/registry/messagegroups?filter=labels.team=sales&filter=name=billing%20events")
    assert sorted(r.json()) == ["Billing", "orders"]


async def test_ignore_without_a_value_is_everything(seeded, app):
    """"`?ignore` Flag": "A value of `*` is an alias for all server supported values." and "No
    value, or an empty string, is an alias for `*`." and "The `?ignore` query parameter MAY be
    specified more than once." — `epoch` among them."""
    client = seeded
    assert_problem(await client.patch("/registry/messagegroups/orders", json={"epoch": 99}), 400, "mismatched_epoch")
    for query in ("?ignore", "?ignore=", "?ignore=*", "?ignore=id&ignore=epoch"):
        r = await client.patch("/registry/messagegroups/orders" + query, json={"epoch": 99, "description": query})
        assert r.status_code == 200, (query, r.text)
    assert_problem(await client.patch("/registry/messagegroups/orders?ignore=colour", json={}), 400, "bad_ignore")


async def test_inline_values_and_repeats(seeded):
    """"`?inline` Flag": "The value portion of the `?inline` query parameter MAY Include a single
    `<PATH>` value or be a comma-separated list of `<PATH>` values." and "The `?inline` query
    parameter MAY be specified more than once." — both forms mean the same."""
    client = seeded
    one = (await client.get("/registry?inline=messagegroups,schemagroups")).json()
    two = (await client.get("/registry?inline=messagegroups&inline=schemagroups")).json()
    assert one == two and "messagegroups" in one and "schemagroups" in one and "endpoints" not in one


async def test_sort_ascending_and_descending(seeded):
    """"`?sort` Flag": "This query parameter MUST be serialized as: `?sort=<ATTRIBUTE>[=asc|desc]`"
    — and core/spec.md "Sort Flag": "Entities that do not have a value for the specified attribute
    MUST be treated the same as if they had the "lowest" possible value for that attribute.\""""
    client = seeded
    asc = list((await client.get("/registry/messagegroups?sort=priority")).json())
    desc = list((await client.get("/registry/messagegroups?sort=priority=desc")).json())
    assert asc == ["orders", "Billing", "empty"] and desc == ["empty", "Billing", "orders"]
    assert list((await client.get("/registry/messagegroups?sort=priority=asc")).json()) == asc


# -- "HTTP Header Values" ----------------------------------------------------------------------


async def test_header_values_are_percent_encoded(seeded):
    """"HTTP Header Values": "When encoding an attribute's value as an HTTP header, it MUST be
    percent-encoded" — "Space (U+0020)", "Double-quote (U+0022)", "Percent (U+0025)" and "Any
    characters outside the printable ASCII range" (the spec's example: "Euro € 😀" is
    `Euro%20%E2%82%AC%20%F0%9F%98%80`); "Any character represented in memory as a Unicode
    surrogate pair MUST be treated as a single Unicode character.\""""
    client = seeded
    await client.patch(S1 + "$details", json={"description": "Euro \u20ac \U0001f600", "name": 'a "q" 5%'})
    h = (await client.get(S1)).headers
    assert h["xregistry-description"] == "Euro%20%E2%82%AC%20%F0%9F%98%80"
    assert h["xregistry-name"] == "a%20%22q%22%205%25"


async def test_header_values_are_decoded(seeded, app):
    """"HTTP Header Values": "any HTTP header value MUST first be unescaped with respect to
    double-quoted strings [...] A single round of percent-decoding MUST then be performed";
    "decoding MUST accept lowercase values"; "values that have been unnecessarily percent-encoded
    MUST be accepted, but encoded byte sequences which are invalid in UTF-8 MUST generate an error
    ([header_error](#header_error)). For example, "%C0%A0" is an overlong encoding of U+0020, and
    would be rejected.\""""
    client = seeded
    r = await client.put(S1, content=b"{}", headers={
        "Content-Type": "application/json", "xRegistry-description": "Euro%20%e2%82%ac%20%41",
        "xRegistry-name": '"quoted \\"name\\" %25"'})
    assert r.status_code == 200, r.text
    details = (await client.get(S1 + "$details")).json()
    assert details["description"] == "Euro \u20ac A" and details["name"] == 'quoted "name" %'
    rev = await revision(app)
    body = assert_problem(await client.put(S1, content=b"{}", headers={
        "Content-Type": "application/json", "xRegistry-description": "%C0%A0"}), 400, "header_error")
    assert body["args"]["name"].lower() == "xregistry-description"
    assert await revision(app) == rev


# -- "Error Processing" ------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body", "status", "type_"), [
    ("GET", "/registry/model/groups", None, 404, "api_not_found"),
    ("PATCH", S1, {}, 405, "details_required"),
    ("PUT", S1 + "$details", {}, 400, "extra_xregistry_header"),
    ("PUT", S1, None, 400, "header_error"),
    ("PUT", "/registry/messagegroups/orders", b"", 400, "missing_body"),
    ("POST", "/registry/schemagroups/sg1/schemas/x/versions", {}, 400, "missing_versions"),
])
async def test_error_documents(seeded, method, path, body, status, type_):
    """"Error Processing": "when used, MUST be of the following form: `HTTP/1.1 <CODE>` /
    `Content-Type: application/json; charset=utf-8`" with `type`, `title` (, `detail`,
    `subject`, `args`, `instance`) — for each error http.md defines, with its code and the type
    URI `https://github.com/xregistry/spec/blob/main/core/http.md#<error>`."""
    headers = {"xRegistry-name": "n"} if type_ == "extra_xregistry_header" else {}
    if type_ == "header_error":
        headers = {"xRegistry-description": "%C0%A0", "Content-Type": "application/json"}
    kwargs: dict[str, Any] = {"headers": headers}
    if isinstance(body, bytes):
        kwargs["content"] = body
        headers["Content-Type"] = "application/json"
    elif body is not None:
        kwargs["json"] = body
    else:
        kwargs["content"] = b"{}"
    r = await seeded.request(method, path, **kwargs)
    problem = assert_problem(r, status, type_)
    assert r.headers["content-type"] == JSON_UTF8
    assert problem["type"] == f"https://github.com/xregistry/spec/blob/main/core/http.md#{type_}"
    assert isinstance(problem["title"], str) and "<" not in problem["title"]
    assert problem["subject"].startswith("/")


# -- core/spec.md rules the HTTP API applies (observable over HTTP) ------------------------------


async def test_nested_collections_in_updates(seeded, app):
    """"Creating or Updating Entities": "Registry collection attributes MUST be processed per the
    rules specified in the Updating Nested Registry Collections section." — core/spec.md: "The
    `<COLLECTION>url` and `<COLLECTION>count` attributes MUST be silently ignored"; "the server
    MUST process each entity in the collection map as a request to create or update that entity";
    "An entry in the map that isn't a valid entity (e.g. is `null`) MUST generate an error
    ([bad_request](#bad_request))."; "An absent `<COLLECTION>` attribute, or empty map, MUST be
    interpreted as a request to not modify the collection at all.\""""
    client = seeded
    r = await client.put("/registry/messagegroups/orders", json={
        "name": "Orders", "messagescount": 0, "messagesurl": "x", "messages": {"added": MESSAGE}})
    assert r.status_code == 200, r.text
    assert set((await client.get("/registry/messagegroups/orders/messages")).json()) == {"created", "cancelled",
                                                                                         "added"}
    for body in ({"name": "Orders"}, {"name": "Orders", "messages": {}}):
        assert (await client.put("/registry/messagegroups/orders", json=body)).status_code == 200
        assert (await client.get("/registry/messagegroups/orders")).json()["messagescount"] == 3
    rev = await revision(app)
    assert_problem(await client.put("/registry/messagegroups/orders", json={"messages": {"bad": None}}), 400,
                   "bad_request")
    assert_problem(await client.patch("/registry/messagegroups", json={"orders": None}), 400, "bad_request")
    assert_problem(await client.patch("/registry/messagegroups", json=[1]), 400, "bad_request")
    assert_problem(await client.patch("/registry/messagegroups", json={"orders": {"messagegroupid": "x"}}), 400,
                   "mismatched_id")
    assert await revision(app) == rev


async def test_patch_that_creates_answers_201_with_location(seeded):
    """"Creating or Updating Entities": "In the `PUT` or `PATCH` cases that are directed to a
    single entity, for a newly created entity, the HTTP status MUST be `201 Created`, and it MUST
    include an HTTP `Location` header with a URL to the newly created entity. Note that this URL
    MUST be the same as the `self` attribute of that entity." — groups, resources ($details: the
    URL with the suffix, like `self`), versions; documents: "The `Location` header only appears in
    response to a create operation and MUST be the same as the `self` URL.\""""
    client = seeded
    for path, body in (("/registry/messagegroups/p1", {"name": "p"}),
                       ("/registry/messagegroups/p1/messages/m1", MESSAGE),
                       (S1 + "/versions/9$details", {"format": FORMAT}),
                       ("/registry/schemagroups/sg1/schemas/p2$details", {"format": FORMAT})):
        r = await client.patch(path, json=body)
        assert r.status_code == 201, (path, r.text)
        assert r.headers["location"] == r.json()["self"]
    created = await client.put("/registry/schemagroups/sg1/schemas/d1", content=b"{}", headers={
        "Content-Type": "application/json", "xRegistry-format": FORMAT})
    assert created.status_code == 201 and created.headers["location"] == created.headers["xregistry-self"]
    updated = await client.put("/registry/schemagroups/sg1/schemas/d1", content=b"{}", headers={
        "Content-Type": "application/json"})
    assert updated.status_code == 200 and "location" not in updated.headers


async def test_deleting_entities(seeded, app):
    """core/spec.md "Deleting Entities" (http.md's `DELETE` sections defer to it): "If the request
    body is absent (does not include a map), then all entities in the collection MUST be
    deleted."; "A map with no entities MUST NOT delete any entities."; "If the entity's
    `<SINGULAR>id` is present in the request, then it MUST match its corresponding `<KEY>` value,
    otherwise a [mismatched_id](#mismatched_id) MUST be generated."; "If one of the referenced
    entities cannot be found, then the server MUST silently ignore this condition"; for a single
    entity "If the entity cannot be found, then an error ([not_found](./spec.md#not_found)) MUST be
    generated."; "Deleting an entity MUST delete all children entities as well."; for Resources
    "If an `epoch` value only appears at the top-level (and not within `meta`) then an error
    ([misplaced_epoch](./spec.md#misplaced_epoch)) MUST be generated." and "If `epoch` appears in
    both places then the top-level one MUST be silently ignored."; "Any other entity attributes that
    appear in the request MUST be silently ignored, even if their values are invalid.\""""
    client = seeded
    rev = await revision(app)
    assert (await client.request("DELETE", "/registry/messagegroups", json={})).status_code == 204
    assert await revision(app) == rev
    assert_problem(await client.request("DELETE", "/registry/messagegroups", json={
        "orders": {"messagegroupid": "Billing"}}), 400, "mismatched_id")
    assert_problem(await client.request("DELETE", "/registry/messagegroups/orders/messages", json={
        "created": {"epoch": 1}}), 400, "misplaced_epoch")
    assert_problem(await client.delete("/registry/messagegroups/nope"), 404, "not_found")
    assert await revision(app) == rev
    r = await client.request("DELETE", "/registry/messagegroups/orders/messages", json={
        "created": {"meta": {"epoch": 1}, "epoch": 99, "name": 5}, "ghost": {}})
    assert r.status_code == 204
    assert list((await client.get("/registry/messagegroups/orders/messages")).json()) == ["cancelled"]
    assert (await client.delete("/registry/messagegroups/orders")).status_code == 204
    assert_problem(await client.get("/registry/messagegroups/orders/messages/cancelled"), 404, "not_found")
    assert (await client.delete("/registry/messagegroups")).status_code == 204
    assert (await client.get("/registry/messagegroups")).json() == {}
    assert (await client.get("/registry/schemagroups")).json() != {}


async def test_request_flags_of_core_spec(seeded):
    """core/spec.md "Request Flags" as http.md maps them: "Doc Flag" (below), "Collections Flag" (only the nested
    collections), "Epoch Flag" on deletes, "SetDefaultVersionID Flag" (`request` names the version
    the request made), "SpecVersion Flag" (an unsupported version is `unsupported_specversion`)."""
    client = seeded
    doc = (await client.get("/registry/messagegroups/orders?doc&inline=messages")).json()
    assert doc["self"] == "#/" and doc["messagesurl"] == "#/messages"
    assert doc["messages"]["created"]["self"] == "#/messages/created"
    # "Doc Flag": "MUST remove the default Version attributes from a Resource's serialization",
    # "MUST remove the Version `formatvalidated` and `compatibilityvalidated` attributes", Resources
    # and Versions "MUST be serialized in their xRegistry metadata view", and relative URLs "if,
    # and only if, the entities that they reference are included in the response output"
    resource = (await client.get(S1 + "?doc&inline=meta")).json()
    assert "versionid" not in resource and "format" not in resource and resource["metaurl"] == "#/meta"
    assert resource["versionsurl"].startswith("http") and resource["meta"]["defaultversionurl"].startswith("http")
    version = (await client.get(S1 + "/versions/1.0?doc")).json()
    assert version["self"] == "#/" and "formatvalidated" not in version and version["format"] == FORMAT
    collections = (await client.get("/registry/messagegroups/orders?collections")).json()
    assert set(collections) == {"messages"} and set(collections["messages"]) == {"created", "cancelled"}
    r = await client.post(S1 + "$details?setdefaultversionid=request", json={"format": FORMAT, "versionid": "0.9"})
    assert r.status_code == 201
    assert (await client.get(S1 + "/meta")).json()["defaultversionid"] == "0.9"
    assert_problem(await client.get("/registry?specversion=0.1"), 400, "unsupported_specversion")
