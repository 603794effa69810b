"""xRegistry 1.0-rc4 behaviour other rc4 servers share, in the shape of the spec's own scenarios: a
``dirs``/``files`` model installed through ``/modelsource``, then requests over a real uvicorn
server, once per store (the ``wire`` fixture: SQLite and MongoDB through ``mongomock_motor``)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.http.support import BASE
from tests.http.test_http_modelsource import DIRS

API = "/registry"
IMPORT = "mutation Load($doc: JSON!) { importDocument(document: $doc) { revision } }"
INSTANCE = "X-Registry-Instance"


def check_problem(r: httpx.Response, status: int, type_: str, subject: str) -> dict[str, Any]:
    """``r`` is the problem ``type_`` (HTTP ``status``) about ``subject``, named in its title too,
    every placeholder of the title filled (core/spec.md: "At runtime, each placeholder MUST be
    replaced with the appropriate value from "Args"")."""
    assert r.status_code == status, r.text
    body = r.json()
    assert body["type"].endswith("#" + type_) and body["subject"] == subject, body
    assert subject in body["title"] and not re.search(r"<[a-z][a-z0-9_]*>", body["title"]), body
    return body


async def install(c: httpx.AsyncClient, model: dict[str, Any] = DIRS) -> None:
    r = await c.put(f"{API}/modelsource", json=model)
    assert r.status_code == 200, r.text


def attribute_headers(r: httpx.Response) -> dict[str, str]:
    return {k.lower(): v for k, v in r.headers.items() if k.lower().startswith("xregistry-")}


async def test_xregistry_headers_are_only_the_described_entitys_attributes(wire):
    """core/http.md "Resource Metadata vs Resource Document": "On responses, unless otherwise
    stated, all top-level scalar attributes of the Resource SHOULD appear as HTTP headers where the
    header name is the name of the attribute prefixed with `xRegistry-`." — the ``xRegistry-``
    namespace holds the attributes of the entity a response describes, so no response (of any
    method, document or ``$details``, success or error) carries one that is not such an
    attribute. The registry's instance id travels as ``X-Registry-Instance`` (and GraphQL
    ``Registry.instanceId``); a write's ``xRegistry-xregcorrelationid`` is core/events.md's. And
    core/http.md "Adherence to HTTP Standards" / RFC 9110: every
    response with a body says its length (``Content-Length``)."""
    c = wire
    await install(c)
    instance = (await c.post("/graphql", json={"query": "{ registry { instanceId } }"})).json()[
        "data"]["registry"]["instanceId"]
    doc_headers = {"Content-Type": "text/plain", "xRegistry-kind": "text", "xRegistry-labels.team": "ops"}
    f1 = f"{API}/dirs/d1/files/f1"
    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", API, {}), ("GET", f"{API}?inline=*,model,capabilities,modelsource", {}),
        ("GET", f"{API}/capabilities", {}), ("GET", f"{API}/model", {}), ("GET", f"{API}/modelsource", {}),
        ("GET", f"{API}/export", {}), ("GET", f"{API}/.xregistry", {}), ("PUT", f"{API}/modelsource", {"json": DIRS}),
        ("PUT", f"{API}/dirs/d1", {"json": {"owner": "ops"}}), ("PATCH", f"{API}/dirs/d1", {"json": {"x": 1}}),
        ("PUT", f1, {"content": b"one", "headers": doc_headers}),           # document write
        ("GET", f1, {}), ("HEAD", f1, {}), ("GET", f1 + "$details", {}),   # document and metadata
        ("PATCH", f1 + "$details", {"json": {"size": 3}}),
        ("POST", f1, {"content": b"two", "headers": {"Content-Type": "text/plain"}}),  # a new version
        ("GET", f1 + "/versions", {}), ("GET", f1 + "/versions/1", {}), ("GET", f1 + "/versions/2$details", {}),
        ("PUT", f1 + "/versions/1", {"content": b"uno", "headers": {"xRegistry-size": "3"}}),
        ("GET", f1 + "/meta", {}), ("PATCH", f1 + "/meta", {"json": {"defaultversionsticky": True}}),
        ("OPTIONS", f1, {}), ("POST", f"{API}/dirs", {"json": {"d2": {}}}),
        ("GET", f"{API}/dirs/d9", {}), ("GET", f"{API}/widgets", {}),     # errors
        ("PUT", f1 + "$details", {"json": {"kind": "video"}}),
        ("PUT", f1, {"content": b"x", "headers": {"xRegistry-kind": "video"}}),
        ("DELETE", f1 + "/versions/1", {}), ("DELETE", f"{API}/dirs/d2", {}), ("DELETE", f1, {}),
    ]
    documents = 0
    for method, path, kwargs in requests:
        r = await c.request(method, path, **kwargs)
        assert r.status_code < 500, (method, path, r.text)
        assert r.headers[INSTANCE] == instance, (method, path)
        if method != "HEAD" and r.content:
            assert r.headers["content-length"] == str(len(r.content)), (method, path)
        headers = attribute_headers(r)
        # core/events.md, the one xRegistry-* header that is no attribute: "In the case of an HTTP
        # interaction, the following HTTP header MUST be present in the response flow:
        # xRegistry-xregcorrelationid" — on every write that committed (the PUT /modelsource of the
        # model already installed commits nothing), on nothing else
        correlation = headers.pop("xregistry-xregcorrelationid", None)
        wrote = method not in ("GET", "HEAD", "OPTIONS") and r.status_code < 300 and path != f"{API}/modelsource"
        assert (correlation is not None) == wrote, (method, path, r.status_code)
        is_document = "$details" not in path and "/files/" in path and not path.endswith(("/versions", "/meta"))
        if not (is_document and r.status_code in (200, 201, 303) and method in ("GET", "HEAD", "PUT", "POST")):
            assert headers == {}, (method, path, headers)
            continue
        documents += 1
        view = (await c.get(API + headers["xregistry-xid"] + "$details")).json()
        for name in headers:
            attr, _, key = name.removeprefix("xregistry-").partition(".")
            assert attr in view and (not key or key in view[attr]), (method, path, name)
    assert documents == 6


async def test_unknown_collections_are_not_found_and_unoffered_apis_api_not_found(wire):
    """core/spec.md "not_found": "this SHOULD only be used when the request was directed to an
    entity that does not exist" with "Subject: `<entity_xid>`"; core/http.md "HTTP API Patterns":
    "If an OPTIONAL HTTP path is not supported by an implementation, then any use of that API MUST
    generate an error ([api_not_found](#api_not_found))." — a collection name the model does not
    define addresses nothing that exists (``not_found``, naming that collection); only the
    optional APIs of core/http.md the server does not offer are ``api_not_found``."""
    c = wire
    await install(c)
    assert (await c.put(f"{API}/dirs/d1", json={})).status_code == 201
    check_problem(await c.get(f"{API}/widgets"), 404, "not_found", "/widgets")
    check_problem(await c.get(f"{API}/messagegroups/g1/messages"), 404, "not_found", "/messagegroups")
    check_problem(await c.put(f"{API}/widgets/w1", json={}), 404, "not_found", "/widgets")
    check_problem(await c.get(f"{API}/dirs/d1/widgets/w1"), 404, "not_found", "/dirs/d1/widgets")
    check_problem(await c.get(f"{API}/model/groups"), 404, "api_not_found", "/model/groups")
    check_problem(await c.get(f"{API}/.xregistry/more"), 404, "api_not_found", "/.xregistry/more")


async def test_errors_of_writes_to_a_resource_name_the_resource(wire):
    """core/spec.md "Error Processing", field "Subject": "If present, MUST be a reference to the
    entity being processed when the error occurred. In the case of a Registry entity, it MUST be
    the XID of the entity." — a write addressed to a resource processes that resource: its own
    attributes, written to its default (or new) version, are the resource's, so the error names
    ``/dirs/d1/files/f2``, not ``…/versions/1`` (also for resources inside a collection, group or
    registry write); a version the request names in ``versions`` is the entity being processed
    and keeps its own XID. Nothing is written."""
    c = wire
    await install(c)
    f1, f2 = f"{API}/dirs/d1/files/f1", f"{API}/dirs/d1/files/f2"
    assert (await c.put(f1 + "$details", json={"kind": "text"})).status_code == 201
    before = (await c.get(f"{API}/export")).json()
    refused = [
        ("PUT", f1 + "$details", {"json": {"epoch": 5}}, "mismatched_epoch", "/dirs/d1/files/f1"),
        ("PUT", f2 + "$details", {"json": {"file": "a", "filebase64": "YQ=="}}, "one_resource", "/dirs/d1/files/f2"),
        ("PUT", f2 + "$details", {"json": {"ancestorid": "zz"}}, "unknown_id", "/dirs/d1/files/f2"),
        ("PUT", f2 + "$details", {"json": {"colour": "red"}}, "unknown_attribute", "/dirs/d1/files/f2"),
        ("PUT", f2 + "$details", {"json": {"fileid": "f3"}}, "mismatched_id", "/dirs/d1/files/f2"),
        ("PUT", f1 + "/versions/1$details", {"json": {"versionid": "2"}}, "mismatched_id",
         "/dirs/d1/files/f1/versions/1"),
        ("PATCH", f1 + "$details", {"json": {"kind": "video"}}, "invalid_attribute", "/dirs/d1/files/f1"),
        ("POST", f1 + "$details", {"json": {"colour": "red"}}, "unknown_attribute", "/dirs/d1/files/f1"),
        ("POST", f1, {"content": b"x", "headers": {"xRegistry-kind": "video"}}, "invalid_attribute",
         "/dirs/d1/files/f1"),
        ("PUT", f2, {"content": b"x", "headers": {"xRegistry-kind": "video"}}, "invalid_attribute",
         "/dirs/d1/files/f2"),
        # a version of the body's own versions map is the entity being processed
        ("PUT", f2 + "$details", {"json": {"versions": {"v1": {"colour": 1}}}}, "unknown_attribute",
         "/dirs/d1/files/f2/versions/v1"),
        # resources written inside a collection, a group or the registry are processed the same way
        ("POST", f"{API}/dirs/d1/files", {"json": {"f1": {"epoch": 99}}}, "mismatched_epoch", "/dirs/d1/files/f1"),
        ("PATCH", f"{API}/dirs/d1/files", {"json": {"f1": {"file": "a", "filebase64": "YQ=="}}}, "one_resource",
         "/dirs/d1/files/f1"),
        ("PUT", f"{API}/dirs/d1", {"json": {"files": {"f1": {"epoch": 99}}}}, "mismatched_epoch", "/dirs/d1/files/f1"),
        ("PUT", API, {"json": {"dirs": {"d1": {"files": {"f1": {"ancestorid": "zz"}}}}}}, "unknown_id",
         "/dirs/d1/files/f1"),
        # the version addressed itself
        ("PUT", f1 + "/versions/1$details", {"json": {"epoch": 5}}, "mismatched_epoch", "/dirs/d1/files/f1/versions/1"),
    ]
    for method, path, kwargs, error, subject in refused:
        check_problem(await c.request(method, path, **kwargs), 400, error, subject)
    assert (await c.get(f"{API}/export")).json() == before


async def test_read_flags_apply_to_write_responses(wire):
    """core/http.md "PUT / POST / PATCH": "Note that the response MUST be generated applying the
    semantics of any [request flags](#request-flags--query-parameters) specified in the request
    URL (e.g. `?inline`)." — at every level; a ``PUT /`` that installs a model (``modelsource``
    is processed first) inlines the collections of that new model. An ``inline`` naming nothing
    of the model is still ``bad_inline`` and changes nothing."""
    c = wire
    r = await c.put(f"{API}?inline=dirs.files", json={"modelsource": DIRS, "dirs": {"d1": {"files": {
        "f1": {"kind": "text"}}}}})
    assert r.status_code == 200, r.text
    assert r.json()["dirs"]["d1"]["files"]["f1"]["kind"] == "text" and "versions" not in r.json()["dirs"]["d1"][
        "files"]["f1"]
    r = await c.put(f"{API}/dirs/d1?inline=files.versions", json={"files": {"f1": {"kind": "binary"}}})
    assert r.status_code == 200 and r.json()["files"]["f1"]["versions"]["1"]["kind"] == "binary", r.text
    r = await c.patch(f"{API}/dirs/d1?collections", json={"owner": "ops"})
    assert r.status_code == 200 and set(r.json()) == {"files"} and "f1" in r.json()["files"], r.text
    r = await c.put(f"{API}/dirs/d1/files/f1$details?inline=meta,versions", json={"kind": "text"})
    assert r.status_code == 200 and r.json()["meta"]["defaultversionid"] == "1" and r.json()["versionscount"] == 1
    r = await c.put(f"{API}/dirs/d1/files/f1/versions/1$details?inline=file", json={"kind": "text", "file": {"a": 1}})
    assert r.status_code == 200 and r.json()["file"] == {"a": 1}, r.text
    r = await c.post(f"{API}/dirs/d1/files?inline=versions&doc", json={"f1": {"kind": "text"}})
    assert r.status_code == 200 and r.json()["f1"]["versions"]["1"]["self"] == "#/f1/versions/1", r.text
    before = (await c.get(f"{API}/export")).json()
    r = await c.put(f"{API}?inline=widgets", json={"dirs": {"d2": {}}})
    check_problem(r, 400, "bad_inline", "/")
    r = await c.put(f"{API}?inline=dirs", json={"modelsource": {"groups": {"things": {
        "plural": "things", "singular": "thing"}}}, "things": {}})
    assert r.status_code == 400, r.text  # (the new model would leave the dirs without a type)
    assert (await c.get(f"{API}/export")).json() == before


async def test_filter_and_sort_apply_to_write_responses(wire):
    """core/http.md: the write response "MUST be generated applying the semantics of any request
    flags specified in the request URL" — ``filter`` too (core/spec.md "Filter Flag": only
    matching entities, the ancestors of matches kept) and ``sort`` where the response is a
    collection ("When a request is directed to a collection [...] the Sort flag MAY be used";
    elsewhere ``sort_noncollection``). A processed entity the filter does not select is still
    the response to its own write, shown with nothing below it. A bad filter changes nothing."""
    c = wire
    await install(c)
    r = await c.post(f"{API}/dirs/d1/files?filter=kind=text&sort=fileid=desc",
                     json={"a": {"kind": "text"}, "b": {"kind": "binary"}, "c": {"kind": "text"}})
    assert r.status_code == 200 and list(r.json()) == ["c", "a"], r.text
    r = await c.patch(f"{API}/dirs/d1/files?sort=kind=desc", json={"a": {"kind": "binary"}, "b": {}, "c": {}})
    assert r.status_code == 200 and list(r.json()) == ["c", "b", "a"], r.text  # ties: by id, descending too
    r = await c.put(f"{API}/dirs/d1?inline=files&filter=files.kind=text", json={"owner": "ops"})
    assert r.status_code == 200 and set(r.json()["files"]) == {"c"} and r.json()["owner"] == "ops", r.text
    r = await c.put(f"{API}/dirs/d1?inline=files&filter=owner=nobody", json={"owner": "ops"})
    assert r.status_code == 200 and r.json()["owner"] == "ops" and r.json()["files"] == {}, r.text
    r = await c.patch(f"{API}?inline=dirs.files&filter=dirs.files.kind=binary", json={})
    assert r.status_code == 200 and set(r.json()["dirs"]["d1"]["files"]) == {"a", "b"}, r.text
    r = await c.post(f"{API}/dirs/d1/files/a?filter=kind=text", json={"kind": "text"})
    assert r.status_code == 201 and r.json()["kind"] == "text", r.text
    before = (await c.get(f"{API}/export")).json()
    check_problem(await c.put(f"{API}/dirs/d9?filter=owner<null", json={}), 400, "bad_filter", "/dirs/d9")
    check_problem(await c.put(f"{API}/dirs/d9?sort=owner", json={}), 400, "sort_noncollection", "/dirs/d9")
    assert (await c.get(f"{API}/export")).json() == before


async def test_filter_with_inline_keeps_matches_and_their_ancestors(wire):
    """core/spec.md "Filter Flag": "Inlining MAY be used at the same time but MUST NOT result in
    additional entities being included in the results unless they are children of a matching
    leaf entity." and its examples over ``mygroups/g1/myresources/r1/versions/v1`` … (here
    ``dirs/d1/files/f1/versions/v1`` …): ``GET
    /?filter=mygroups.mygroupid=g2&filter=mygroups.myresources.myresourceid=r1&inline=*`` returns
    r1's versions "from 2nd ?filter" and g2's "from 1nd ?filter"; with ``g1`` in the first filter
    all of g1; AND'd (``,``) only r1."""
    c = wire
    await install(c)
    for path in ("d1/files/f1/versions/v1", "d1/files/f1/versions/v2", "d1/files/f2/versions/v1",
                 "d2/files/f3/versions/v1"):
        assert (await c.put(f"{API}/dirs/{path}$details", json={"kind": "text"})).status_code == 201

    async def leaves(query: str) -> set[str]:
        r = await c.get(f"{API}?{query}&inline=*")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["dirscount"] == len(body["dirs"])
        out = set()
        for did, d in body["dirs"].items():
            assert d["filescount"] == len(d["files"])
            out |= {f"{did}/{fid}/{vid}" for fid, f in d["files"].items() for vid in f["versions"]}
        return out

    assert await leaves("filter=dirs.files.fileid=f1") == {"d1/f1/v1", "d1/f1/v2"}
    assert await leaves("filter=dirs.dirid=d2&filter=dirs.files.fileid=f1") == {"d1/f1/v1", "d1/f1/v2",
                                                                                 "d2/f3/v1"}
    assert await leaves("filter=dirs.dirid=d1&filter=dirs.files.fileid=f1") == {"d1/f1/v1", "d1/f1/v2",
                                                                                 "d1/f2/v1"}
    assert await leaves("filter=dirs.dirid=d1,dirs.files.fileid=f1") == {"d1/f1/v1", "d1/f1/v2"}
    # the ancestors of a match deep down are kept, its siblings are not
    assert await leaves("filter=dirs.files.versions.versionid=v2") == {"d1/f1/v2"}
    r = (await c.get(f"{API}/dirs?inline=files&filter=files.fileid=f3&filter=dirid=d1")).json()
    assert {d: sorted(v["files"]) for d, v in r.items()} == {"d1": ["f1", "f2"], "d2": ["f3"]}


async def test_export_is_the_documented_alias_and_discovery_is_served(wire):
    """core/http.md "GET /export": "The `GET /export` API MUST be an alias for
    `GET /?doc&inline=*,capabilities,modelsource`." (on the built-in model ``modelsource`` is
    ``{}``: "In cases where the Registry's model has never been specified via `modelsource`, this
    operation MUST return `{}`"); "xRegistry Discovery": "If supported, the Registry-based
    discovery file, for an HTTP server, MUST be available at the root of the Registry (e.g. as a
    sibling API to `/model`) via the `/.xregistry` API" in the form of core/spec.md's
    ``{"registries": [URL, *]}``."""
    c = wire
    assert (await c.put(f"{API}/messagegroups/g1", json={"messages": {"m1": {"name": "one"}}})).status_code == 201
    export = (await c.get(f"{API}/export")).json()
    assert export["modelsource"] == {} and "capabilities" in export
    assert export == (await c.get(f"{API}?doc&inline=*,capabilities,modelsource")).json()
    # the gateway's own import takes that `{}` as "no model given" (PUT / would reset the model)
    imported = (await c.post("/graphql", json={"query": IMPORT, "variables": {"doc": export}})).json()
    assert "errors" not in imported, imported
    assert "messagegroups" in (await c.get(f"{API}/model")).json()["groups"]
    assert (await c.delete(f"{API}/messagegroups/g1")).status_code == 204
    await install(c)
    export = (await c.get(f"{API}/export")).json()
    assert export["modelsource"] == DIRS
    assert export == (await c.get(f"{API}?doc&inline=*,capabilities,modelsource")).json()
    r = await c.get(f"{API}/.xregistry")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json() == {"registries": [BASE]}
    assert "GET" in (await c.options(f"{API}/.xregistry")).headers["allow"]
    assert (await c.put(f"{API}/.xregistry", json={})).status_code == 405


async def test_header_values_are_percent_encoded_and_urls_carry_the_ids(wire):
    """core/http.md "HTTP Header Values": "The following characters MUST be percent-encoded: -
    Space (U+0020). - Double-quote (U+0022). - Percent (U+0025). - Any characters outside the
    printable ASCII range of U+0021-U+007E inclusive." with its example ("Euro &#x20AC; &#x1F600;" is
    "Euro%20%E2%82%AC%20%F0%9F%98%80"), "decoding MUST accept lowercase values", and "encoded byte
    sequences which are invalid in UTF-8 MUST generate an error ([header_error](#header_error))";
    core/spec.md "`self` Attribute": "Each entity in the Registry MUST have a unique `self` URL
    value that locates the entity in the Registry hierarchy and from where the entity can be
    retrieved." — with IDs holding ``:``, ``@``, ``~`` (path characters of RFC 3986 that need no
    encoding), the URL reaches the same entity, as does the percent-encoded path."""
    c = wire
    await install(c)
    path = f"{API}/dirs/a:b@c~d/files/x.y_z-1"
    r = await c.put(path, content=b"doc", headers={
        "Content-Type": "text/plain", "xRegistry-description": "Euro%20%e2%82%ac%20%F0%9F%98%80",
        "xRegistry-labels.note": '"100% \\"sure\\""'})
    assert r.status_code == 201, r.text
    details = (await c.get(path + "$details")).json()
    assert details["description"] == "Euro \u20ac \U0001F600" and details["labels"] == {"note": '100% "sure"'}
    got = await c.get(path)
    assert got.headers["xregistry-description"] == "Euro%20%E2%82%AC%20%F0%9F%98%80"
    assert got.headers["xregistry-labels.note"] == "100%25%20%22sure%22"
    assert details["self"] == BASE + "/dirs/a:b@c~d/files/x.y_z-1$details"
    assert r.headers["location"] == got.headers["xregistry-self"] == BASE + "/dirs/a:b@c~d/files/x.y_z-1"
    again = await c.get(API + urlsplit(details["self"]).path.removeprefix(urlsplit(BASE).path))
    assert again.json()["xid"] == "/dirs/a:b@c~d/files/x.y_z-1"
    encoded = await c.get(f"{API}/dirs/a%3Ab%40c%7Ed/files/x.y_z-1$details")
    assert encoded.json()["self"] == details["self"]
    before = (await c.get(path + "$details")).json()
    r = await c.put(path, content=b"doc", headers={"xRegistry-description": "%C0%A0"})
    check_problem(r, 400, "header_error", "/dirs/a:b@c~d/files/x.y_z-1")
    assert (await c.get(path + "$details")).json() == before
