"""Conformance of the HTTP API with xRegistry 1.0-rc4 (core/spec.md, core/http.md): each test
quotes the sentence it checks."""

from __future__ import annotations

import base64

from tests.http.support import BASE, assert_problem, revision

SCHEMA = "/registry/schemagroups/g/schemas/s"
FORMAT = "JSONSchema/draft-07"


async def test_inline_document_in_metadata_sets_contenttype(seeded):
    """core/spec.md, "<RESOURCE>* Attribute Processing": "On a non-patch type of write
    operation, when `<RESOURCE>` is present, if no `contenttype` value is provided then the server
    MUST set it to the same type as the incoming request, e.g. `application/json`, even if the
    entity previously had a `contenttype` value." — and core/http.md, "`contenttype` Attribute":
    "this attribute MUST be erased if the incoming request does not include the `Content-Type`
    HTTP header"."""
    client = seeded
    r = await client.put(SCHEMA + "$details", json={"format": FORMAT, "contenttype": "text/x-old",
                                                    "schema": {"type": "object"}})
    assert r.status_code == 201, r.text
    r = await client.put(SCHEMA + "$details", json={"format": FORMAT, "schema": {"type": "string"}})
    assert r.json()["contenttype"] == "application/json"
    doc = await client.get(SCHEMA)
    assert doc.headers["content-type"].startswith("application/json") and doc.json() == {"type": "string"}
    # patch: set only when the entity has none
    r = await client.patch(SCHEMA + "$details", json={"schema": {"type": "integer"}})
    assert r.json()["contenttype"] == "application/json"
    # the document written with headers and no Content-Type: the stored one is erased
    r = await client.put(SCHEMA, content=b'{"type": "number"}')
    assert r.status_code == 200, r.text
    assert "contenttype" not in (await client.get(SCHEMA + "$details")).json()


async def test_defaultversionurl_and_content_location_use_details(seeded):
    """core/spec.md, "`defaultversionurl` Attribute": "If the Resource type's `hasdocument` aspect
    is set to `true`, then this URL MUST reference the xRegistry metadata view of the Version, not
    the domain-specific document view. In the HTTP protocol case, this means using the `$details`
    suffix." — and core/http.md: "If `Content-Location` is present then it MUST be a URL to the
    Version of the Resource in the `versions` collection - same as `meta.defaultversionurl`"."""
    client = seeded
    s1 = "/registry/schemagroups/sg1/schemas/s1"
    meta = (await client.get(s1 + "/meta")).json()
    assert meta["defaultversionurl"] == f"{BASE}/schemagroups/sg1/schemas/s1/versions/2.0$details"
    r = await client.get(s1 + "$details?inline=meta")
    assert r.json()["meta"]["defaultversionurl"] == meta["defaultversionurl"]
    assert r.headers["content-location"] == meta["defaultversionurl"]
    version = (await client.get(s1 + "/versions/2.0$details")).json()
    assert version["self"] == meta["defaultversionurl"]
    # a type without documents keeps the plain URL
    mmeta = (await client.get("/registry/messagegroups/orders/messages/created/meta")).json()
    assert mmeta["defaultversionurl"] == f"{BASE}/messagegroups/orders/messages/created/versions/1"


async def test_put_meta_creates_a_missing_resource(seeded, app):
    """core/spec.md, "Design: Implicit Creation of Parent Entities": "if any of its parent entities
    do not exist, then they MUST be implicitly created." — the `meta` of a resource that does not
    exist yet creates it (here a cross-reference, in a group that does not exist either), 201 with
    `Location` (core/http.md: "for a newly created entity, the HTTP status MUST be `201
    Created`")."""
    client = seeded
    r = await client.put("/registry/schemagroups/new/schemas/x/meta", json={"xref": "/schemagroups/sg1/schemas/s1"})
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"{BASE}/schemagroups/new/schemas/x/meta"
    assert r.json()["xref"] == "/schemagroups/sg1/schemas/s1"
    assert (await client.get("/registry/schemagroups/new")).status_code == 200
    # PATCH creates too: a message with a first version
    r = await client.patch("/registry/messagegroups/orders/messages/fresh/meta", json={})
    assert r.status_code == 201, r.text
    assert r.json()["defaultversionid"] == "1"
    rev = await revision(app)
    assert_problem(await client.put("/registry/schemagroups/new/schemas/y/meta",
                                    json={"xref": "/messagegroups/orders/messages/created"}), 400, "malformed_xref")
    assert await revision(app) == rev


async def test_sticky_default_version_without_an_id(seeded):
    """core/spec.md, "`defaultversionid` Attribute": the default MUST be set per the versionmode
    when "The processing fully replaced the `meta` sub-object and the request included
    `defaultversionsticky` with a value of `true`, but no `defaultversionid` was provided." — and
    "those changes alone MUST NOT change any attributes in any Version of the Resource [...].
    However, the Resource's `meta` sub-object's `modifiedat` and `epoch` attributes MUST be
    updated"; "Any attempt to set `defaultversionid` to a non-existing Version [...] MUST generate
    an error ([unknown_id](#unknown_id))"."""
    client = seeded
    s1 = "/registry/schemagroups/sg1/schemas/s1"
    r = await client.put(s1 + "$details", json={"format": FORMAT, "schema": {"type": "string"},
                                                "meta": {"defaultversionsticky": True}})
    assert r.status_code == 200, r.text
    meta = (await client.get(s1 + "/meta")).json()
    assert meta["defaultversionid"] == "2.0" and meta["defaultversionsticky"] is True
    before = (await client.get(s1 + "/versions")).json()
    r = await client.patch(s1 + "/meta", json={"defaultversionid": "1.0"})
    assert r.status_code == 200, r.text
    after_meta = r.json()
    assert after_meta["defaultversionid"] == "1.0" and after_meta["defaultversionsticky"] is True
    assert after_meta["epoch"] == meta["epoch"] + 1
    after = (await client.get(s1 + "/versions")).json()
    assert after["1.0"]["isdefault"] is True and after["2.0"]["isdefault"] is False
    for vid in ("1.0", "2.0"):
        assert after[vid]["epoch"] == before[vid]["epoch"]
        assert after[vid]["modifiedat"] == before[vid]["modifiedat"]
    body = assert_problem(await client.patch(s1 + "/meta", json={"defaultversionid": "9.9"}), 400, "unknown_id")
    assert "<" not in body["title"], body["title"]  # every placeholder filled


async def test_document_that_is_not_json_is_inlined_as_base64(seeded):
    """core/spec.md, "`<RESOURCE>` Attribute": "MUST only be used if the Version's document
    (bytes) is in the same format as the serialization of the Version entity." and
    "`<RESOURCE>base64` Attribute": "If the Version's document [...] is not conformant with the
    format being used to serialize the Version (e.g. as a JSON value), then this attribute MUST be
    used instead of the `<RESOURCE>` attribute.\""""
    client = seeded
    xsd = '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>'
    r = await client.put(SCHEMA + "$details", json={"format": "XSD/1.1", "contenttype": "application/xml",
                                                    "schema": xsd})
    assert r.status_code == 201, r.text
    body = (await client.get(SCHEMA + "$details?inline=schema")).json()
    assert "schema" not in body
    assert base64.b64decode(body["schemabase64"]) == xsd.encode()
    doc = await client.get(SCHEMA)
    assert doc.content == xsd.encode() and doc.headers["content-type"].startswith("application/xml")
    # a JSON document stays inline
    body = (await client.get("/registry/schemagroups/sg1/schemas/s1$details?inline=schema")).json()
    assert body["schema"] == {"type": "string"} and "schemabase64" not in body


async def test_dollar_schema_in_a_request_is_allowed(seeded):
    """core/spec.md, "Design: JSON `$schema` keyword": "Any JSON xRegistry metadata message that
    represents a single entity (i.e. not a map) MAY include a top-level "$schema" attribute [...]
    These notations can be used or ignored by receivers of these messages.\""""
    client = seeded
    hint = "https://xregistry.io/schemas/message.json"
    r = await client.put("/registry/messagegroups/g2", json={"$schema": hint, "name": "G2"})
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "G2" and "$schema" not in r.json()
    r = await client.put("/registry/messagegroups/g2/messages/m$details",
                         json={"$schema": hint, "description": "M", "meta": {"$schema": hint}})
    assert r.status_code == 201, r.text
    r = await client.patch("/registry", json={"$schema": hint, "description": "with a hint"})
    assert r.status_code == 200 and r.json()["description"] == "with a hint"


async def test_document_link_is_resource_url(seeded, app):
    """core/spec.md, "`<RESOURCE>url` Attribute" (rc4's name for the link to a document kept
    outside the registry): served and accepted as `schemaurl`; the older `schemauri` is still
    taken. core/spec.md, "<RESOURCE>* Attribute Processing": "At most, only one of the 3
    attributes MAY be present in the request, and the presence of any one of them MUST delete the
    other 2 attributes.\""""
    client = seeded
    link = "https://example.com/s.json"
    r = await client.put(SCHEMA + "$details", json={"format": FORMAT, "schemaurl": link})
    assert r.status_code == 201, r.text
    assert r.json()["schemaurl"] == link and "schemauri" not in r.json()
    doc = await client.get(SCHEMA)
    assert doc.status_code == 303 and doc.headers["location"] == link
    r = await client.put(SCHEMA + "/versions/2$details", json={"format": FORMAT, "schemauri": link + "#old"})
    assert r.status_code == 201, r.text
    assert r.json()["schemaurl"] == link + "#old" and "schemauri" not in r.json()
    exported = (await client.get("/registry/export")).json()
    version = exported["schemagroups"]["g"]["schemas"]["s"]["versions"]["1"]
    assert version["schemaurl"] == link and "schemauri" not in version
    # a state an older gateway stored as schemauri is served as schemaurl, and written back so
    store = app.state.registry.store
    rec = await store.get("/schemagroups/g/schemas/s/versions/1")
    old = {k if k != "schemaurl" else "schemauri": v for k, v in rec.doc.items()}
    from xreg.storage.records import Write
    await store.commit([Write(xid=rec.xid, kind="version", ctype=rec.ctype, doc=old, expect=rec.revision)], note="old")
    got = (await client.get("/registry/schemagroups/g/schemas/s/versions/1$details")).json()
    assert got["schemaurl"] == link and "schemauri" not in got
    r = await client.patch("/registry/schemagroups/g/schemas/s/versions/1$details", json={"description": "d"})
    assert r.status_code == 200, r.text
    stored = (await store.get("/schemagroups/g/schemas/s/versions/1")).doc
    assert stored["schemaurl"] == link and "schemauri" not in stored


async def test_not_found_versus_api_not_found(seeded):
    """core/http.md: "If an OPTIONAL HTTP path is not supported by an implementation, then any use
    of that API MUST generate an error ([api_not_found](#api_not_found))." — while core/spec.md,
    "not_found": "this SHOULD only be used when the request was directed to an entity that does not
    exist": a path that names nothing, a collection the model does not define included, is
    `not_found`; an optional API not offered is `api_not_found`."""
    client = seeded
    assert_problem(await client.get("/registry/model/groups"), 404, "api_not_found")
    assert assert_problem(await client.get("/registry/nosuchapi"), 404, "not_found")["subject"] == "/nosuchapi"
    for path in ("/messagegroups/nope", "/messagegroups/orders/messages/nope",
                 "/messagegroups/orders/nosuchcollection", "/messagegroups/orders/messages/created/versions/9",
                 "/messagegroups/orders/messages/created/nosuch", "/messagegroups/nope/messages"):
        body = assert_problem(await client.get("/registry" + path), 404, "not_found")
        assert body["subject"].startswith("/messagegroups/")


async def test_error_subject_is_the_addressed_entity(seeded, app):
    """core/spec.md, "Error Processing": "Subject [...] MUST be a reference to the entity being
    processed when the error occurred. In the case of a Registry entity, it MUST be the XID of the
    entity." — a resource written through its own attributes is the entity being processed, not
    the default version the write creates for it."""
    client = seeded
    rev = await revision(app)
    body = assert_problem(await client.put("/registry/messagegroups/orders/messages/bad$details",
                                           json={"envelope": 5}), 400, "invalid_attribute")
    assert body["subject"] == "/messagegroups/orders/messages/bad"
    assert body["title"] == ('The attribute "envelope" for "/messagegroups/orders/messages/bad" is not valid: '
                             "must be a string.")
    body = assert_problem(await client.put("/registry/messagegroups/orders/messages/bad/versions/v1$details",
                                           json={"envelope": 5}), 400, "invalid_attribute")
    assert body["subject"] == "/messagegroups/orders/messages/bad/versions/v1"
    assert await revision(app) == rev


# -- the rest of core/http.md: the MUSTs most likely to be missed ---------------------------------


async def test_options_lists_methods_in_both_headers_and_changes_nothing(seeded, app):
    """core/http.md "HTTP OPTIONS Method": "The same `<METHODS>` values MUST be returned for both
    headers." "`OPTIONS` MUST be one of the values returned." "This operation MUST NOT modify any
    data within the Registry.\""""
    client = seeded
    rev = await revision(app)
    for path in ("/registry", "/registry/modelsource", "/registry/messagegroups",
                 "/registry/schemagroups/sg1/schemas/s1", "/registry/schemagroups/sg1/schemas/s1/meta",
                 "/registry/schemagroups/sg1/schemas/s1/versions/1.0$details"):
        r = await client.options(path)
        assert r.status_code == 200
        assert r.headers["allow"] == r.headers["access-control-allow-methods"]
        assert "OPTIONS" in [m.strip() for m in r.headers["allow"].split(",")]
    assert await revision(app) == rev


async def test_put_is_not_for_collections_and_export_is_read_only(seeded, app):
    """core/http.md: "`PUT` MUST NOT be targeted at xRegistry collections." — and "GET /export":
    "it MUST NOT support any HTTP update methods.\""""
    client = seeded
    rev = await revision(app)
    for path in ("/registry/messagegroups", "/registry/messagegroups/orders/messages",
                 "/registry/schemagroups/sg1/schemas/s1/versions"):
        assert_problem(await client.put(path, json={}), 405, "action_not_supported")
    for method in ("PUT", "PATCH", "POST", "DELETE"):
        assert_problem(await client.request(method, "/registry/export", json={}), 405, "action_not_supported")
    assert await revision(app) == rev


async def test_details_suffix_rules(seeded):
    """core/http.md: "Use of `$details` on a non-Resource entity MUST generate an error
    ([bad_details](./spec.md#bad_details))." — and for a type without documents "use of the
    `$details` suffix in a request URL MUST be treated the same as if it were absent and any URLs
    in server response messages referencing that Resource (e.g. `self`) MUST NOT include it.\""""
    client = seeded
    assert_problem(await client.get("/registry/messagegroups/orders$details"), 400, "bad_details")
    plain = await client.get("/registry/messagegroups/orders/messages/created")
    details = await client.get("/registry/messagegroups/orders/messages/created$details")
    assert plain.status_code == details.status_code == 200
    assert plain.json() == details.json()
    assert not details.json()["self"].endswith("$details")


async def test_read_only_attributes_are_ignored_and_ids_compared(seeded):
    """core/http.md: "A request to update, or delete, a read-only attribute MUST be silently
    ignored. However, a request that includes a `<SINGULAR>id` MUST be compared with the entity's
    current value and if it differs then an error ([mismatched_id](./spec.md#mismatched_id)) MUST
    be generated." — and on `POST` to a resource, "Resource-level read-only attributes (such as
    `versionscount`) [...] MUST be silently ignored by the server.\""""
    client = seeded
    r = await client.patch("/registry/messagegroups/orders", json={
        "self": "https://elsewhere.example/x", "xid": "/messagegroups/other", "messagescount": 99,
        "messagesurl": "https://elsewhere.example/m", "description": "new"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["self"] == f"{BASE}/messagegroups/orders" and body["xid"] == "/messagegroups/orders"
    assert body["messagescount"] == 2 and body["description"] == "new"
    assert_problem(await client.put("/registry/messagegroups/orders", json={"messagegroupid": "other"}), 400,
                   "mismatched_id")
    assert_problem(await client.put("/registry/schemagroups/sg1/schemas/s1/versions/1.0$details",
                                    json={"versionid": "2.0", "format": FORMAT}), 400, "mismatched_id")
    r = await client.post("/registry/schemagroups/sg1/schemas/s1$details", json={
        "format": FORMAT, "schema": {"type": "null"}, "versionscount": 7, "versionsurl": "x", "metaurl": "y"})
    assert r.status_code == 201, r.text
    assert (await client.get("/registry/schemagroups/sg1/schemas/s1")).json() == {"type": "null"}


async def test_put_replaces_the_whole_entity_and_write_responses_leave_documents_out(seeded):
    """core/http.md: "Any missing attributes MUST be interpreted as a request for them to be
    deleted" (PUT); "any complex attributes (e.g. objects, maps), MUST be fully replaced by the
    incoming value"; "The responses MUST NOT include any inlineable attributes (such as
    `<RESOURCE>`, `<RESOURCE>base64` or nested objects/collections) unless requested."; "for a
    newly created entity, the HTTP status MUST be `201 Created`, and it MUST include an HTTP
    `Location` header with a URL to the newly created entity. Note that this URL MUST be the same
    as the `self` attribute of that entity.\""""
    client = seeded
    r = await client.put("/registry/messagegroups/orders", json={"labels": {"only": "this"}})
    assert r.status_code == 200
    assert r.json()["labels"] == {"only": "this"} and "name" not in r.json() and "description" not in r.json()
    r = await client.put("/registry/schemagroups/g/schemas/x$details", json={"format": FORMAT,
                                                                           "schema": {"type": "object"}})
    assert r.status_code == 201 and r.headers["location"] == r.json()["self"]
    assert "schema" not in r.json() and "schemabase64" not in r.json() and "versions" not in r.json()
    r = await client.put("/registry/messagegroups/fresh", json={"messages": {"m": {"description": "d"}}})
    assert r.status_code == 201 and r.headers["location"] == r.json()["self"]
    assert "messages" not in r.json()


async def test_empty_metadata_bodies_and_nested_errors_change_nothing(seeded, app):
    """core/http.md: "Write operations that are meant to include xRegistry metadata in the HTTP
    body MUST NOT be empty, and if detected MUST generate an error ([missing_body](#missing_body))."
    "Any error during the processing of an entity, or its nested entities, MUST result in the
    entire request being rejected and no updates performed.\""""
    client = seeded
    rev = await revision(app)
    for path in ("/registry/messagegroups/orders", "/registry/schemagroups/sg1/schemas/s1$details",
                 "/registry/schemagroups/sg1/schemas/s1/meta", "/registry/messagegroups"):
        method = "PATCH" if path.endswith("groups") else "PUT"
        assert_problem(await client.request(method, path, content=b"",
                                            headers={"Content-Type": "application/json"}), 400, "missing_body")
    assert_problem(await client.put("/registry/messagegroups/orders", json={
        "description": "changed", "messages": {"ok": {"description": "fine"}, "bad": {"envelope": 5}}}),
        400, "invalid_attribute")
    assert await revision(app) == rev
    assert (await client.get("/registry/messagegroups/orders")).json()["description"] == "Order events"


async def test_document_view_bytes_headers_and_links(seeded):
    """core/http.md "Serializing Resource Domain-Specific Documents": the body "MUST be the exact
    bytes of that document. If the document is empty, then the HTTP body MUST be empty (zero
    length)."; "Complex top-level attributes (e.g. arrays, objects, non-scalar maps) MUST NOT" be
    headers; headers absent "MUST be interpreted as a request to leave their values unchanged.
    Using a value of `null` (case-sensitive) MUST be processed as a request to delete the
    attribute."; "Any top-level map attributes that appear as HTTP headers MUST be included in
    their entirety and any missing keys MUST be interpreted as a request to delete those keys";
    and for `303`: "If `<RESOURCE>url` is present then it MUST have the same value as
    `Location`."; "A `DELETE` directed to the Meta entity is not supported and MUST generate an
    error.\""""
    client = seeded
    raw = b'{ "type":  "object" }'
    r = await client.put(SCHEMA, content=raw, headers={"Content-Type": "application/octet-stream",
                                                       "xRegistry-format": "Binary/1", "xRegistry-labels.a": "1",
                                                       "xRegistry-labels.b": "2", "xRegistry-description": "d"})
    assert r.status_code == 201 and r.content == raw
    r = await client.put(SCHEMA, content=raw, headers={"Content-Type": "application/octet-stream",
                                                       "xRegistry-labels.a": "3", "xRegistry-description": "null"})
    details = (await client.get(SCHEMA + "$details")).json()
    assert details["labels"] == {"a": "3"} and "description" not in details and details["format"] == "Binary/1"
    got = await client.get(SCHEMA)
    assert got.content == raw
    assert not any(name.startswith("xregistry-labels") and name != "xregistry-labels.a" for name in got.headers)
    assert "xregistry-deprecated" not in got.headers
    empty = await client.put("/registry/schemagroups/g/schemas/empty", content=b"",
                             headers={"Content-Type": "text/plain", "xRegistry-format": "Binary/1"})
    assert empty.status_code == 201 and empty.content == b""
    assert (await client.get("/registry/schemagroups/g/schemas/empty")).content == b""
    link = "https://example.com/doc.json"
    await client.put("/registry/schemagroups/g/schemas/ext$details", json={"format": FORMAT, "schemaurl": link})
    r = await client.get("/registry/schemagroups/g/schemas/ext", follow_redirects=False)
    assert r.status_code == 303 and r.content == b""
    assert r.headers["location"] == r.headers["xregistry-schemaurl"] == link
    assert_problem(await client.delete("/registry/schemagroups/g/schemas/ext/meta"), 405, "action_not_supported")


async def test_single_valued_flags_appear_once(seeded):
    """core/http.md "Query Parameters": "When the flag has a single value associated with it, then
    it MUST be serialized as `?FLAG_NAME=VALUE` [...] The flag MUST NOT be specified more than
    once.\""""
    client = seeded
    assert_problem(await client.get("/registry/messagegroups?sort=name&sort=description"), 400, "bad_flag")
    r = await client.get("/registry/messagegroups?filter=name=Orders&filter=name=Billing")
    assert r.status_code == 200  # filter may repeat (OR)
