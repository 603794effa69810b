"""What a client sees on the wire, over a real uvicorn server on each store (``wire``):
``Content-Length`` on every response (xRegistry API, GraphQL, bulk read, probes, refusals), the
percent-encoding of ``xRegistry-*`` header values (core/http.md "HTTP Header Values"), and the
``self`` URLs of entities whose ids a request spelt percent-encoded (core/spec.md ``self``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from tests.http.support import BASE
from tests.http.test_http_rc4_scenarios import API, install

F1 = f"{API}/dirs/d1/files/f1"


async def test_every_response_says_its_length(wire):
    """RFC 9110 §8.6 (core/http.md "Adherence to HTTP Standards"): every response that may carry
    content says how long it is — ``Content-Length`` equal to the bytes sent (``0`` for an
    empty body: a redirect, ``OPTIONS``), never chunked; ``HEAD`` the length ``GET`` would send;
    ``204`` and ``304`` none."""
    c = wire
    await install(c)
    assert (await c.put(F1, content=b"one", headers={"Content-Type": "text/plain"})).status_code == 201
    link = f"{API}/dirs/d1/files/linked"
    assert (await c.put(link + "$details", json={"fileurl": "https://example.com/x"})).status_code == 201
    etag = (await c.get(f"{API}/dirs/d1")).headers["etag"]
    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", API, {}), ("GET", F1, {}), ("GET", link, {}),                      # 200, document, 303
        ("OPTIONS", F1, {}), ("GET", f"{API}/dirs/d9", {}), ("PATCH", F1, {"json": {}}),  # 404, 405
        ("GET", f"{API}/dirs?filter=a<null", {}), ("PUT", f"{API}/dirs/d1", {"json": {}, "headers": {
            "authorization": "Bearer wrong"}}),                                    # 400, 401
        ("PUT", f"{API}/dirs/big", {"content": b"{" + b" " * (17 * 1024 * 1024) + b"}",
                                     "headers": {"content-type": "application/json"}}),  # 413
        ("POST", "/graphql", {"json": {"query": "{ registry { id } }"}}), ("GET", "/graphql", {}),
        ("GET", "/healthz", {}), ("GET", "/readyz", {}), ("GET", "/metrics", {}),
        ("GET", "/bulk/rows", {}), ("GET", "/nowhere", {}),
    ]
    for method, path, kwargs in requests:
        r = await c.request(method, path, **kwargs)
        assert r.status_code < 500, (method, path, r.status_code, r.text[:200])
        assert "chunked" not in r.headers.get("transfer-encoding", ""), (method, path)
        assert r.headers.get("content-length") == str(len(r.content)), (method, path, r.status_code, r.headers)
    got = await c.get(F1)
    head = await c.head(F1)
    assert head.headers["content-length"] == got.headers["content-length"] and head.content == b""
    gone = await c.delete(link)
    assert gone.status_code == 204 and "content-length" not in gone.headers
    same = await c.get(f"{API}/dirs/d1", headers={"if-none-match": etag})
    if same.status_code == 304:  # unchanged since the ETag
        assert same.content == b""


async def test_header_values_are_percent_encoded_both_ways(wire):
    """core/http.md "HTTP Header Values": "The following characters MUST be percent-encoded: -
    Space (U+0020). - Double-quote (U+0022). - Percent (U+0025). - Any characters outside the
    printable ASCII range of U+0021-U+007E inclusive"; "Percent-encoding is performed by
    considering each Unicode character within the attribute's canonical string representation
    [...] encoding each of those bytes as %xy". Control characters (tab, newline, DEL) and every
    printable character in between: a value read back through the headers is the value written,
    and only those characters are encoded."""
    c = wire
    await install(c)
    printable = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"%')
    value = f"a b\t\"c\"\n100%\x7f€ {printable}"
    r = await c.put(F1 + "$details", json={"description": value, "labels": {"k": value}})
    assert r.status_code == 201, r.text
    got = await c.get(F1)
    expected = quote(value.encode(), safe=printable.replace("%", ""))
    assert got.headers["xregistry-description"] == expected
    assert got.headers["xregistry-labels.k"] == expected
    assert all(0x21 <= ord(ch) <= 0x7E for ch in expected)
    for ch, code in ((" ", "%20"), ('"', "%22"), ("%", "%25"), ("\t", "%09"), ("\n", "%0A"), ("\x7f", "%7F")):
        assert code in expected and (ch == "%" or ch not in expected), ch
    # written back through the headers (a document write keeps what it is not given)
    r = await c.put(F1, content=b"doc", headers={"content-type": "text/plain", "xRegistry-description": expected,
                                                 "xRegistry-labels.k": expected})
    assert r.status_code == 200, r.text
    details = (await c.get(F1 + "$details")).json()
    assert details["description"] == value and details["labels"] == {"k": value}


async def test_self_urls_of_ids_given_percent_encoded(wire):
    """core/spec.md ``self``: "a unique self URL value that locates the entity [...] and from
    where the entity can be retrieved" — ids spelt percent-encoded in a request (``%3A`` for
    ``:``, ``%40`` for ``@``, ``%7E`` for ``~``: characters RFC 3986 allows in a path segment as
    they are) name the same entity, and every URL the server answers with (``self``,
    ``Location``, ``xRegistry-self``, ``Content-Location``, ``metaurl``, ``<COLLECTION>url``,
    ``defaultversionurl``, paging ``Link``) spells them in one canonical form that reaches it."""
    c = wire
    await install(c)
    encoded = f"{API}/dirs/g%3A1%40x/files/f%7E1"
    canonical = BASE + "/dirs/g:1@x/files/f~1"
    r = await c.put(encoded + "$details", json={})
    assert r.status_code == 201 and r.headers["location"] == canonical + "$details", r.text
    view = r.json()
    assert view["xid"] == "/dirs/g:1@x/files/f~1" and view["self"] == canonical + "$details"
    assert view["metaurl"] == canonical + "/meta" and view["versionsurl"] == canonical + "/versions"
    r = await c.post(encoded + "$details", json={"versionid": "v:2"})
    assert r.status_code == 201 and r.headers["location"] == canonical + "/versions/v:2$details", r.text
    doc = await c.get(encoded)
    assert doc.headers["xregistry-self"] == canonical
    assert doc.headers["content-location"] == canonical + "/versions/v:2"
    meta = (await c.get(encoded + "/meta")).json()
    assert meta["defaultversionurl"] == canonical + "/versions/v:2$details"
    group = (await c.get(f"{API}/dirs/g%3a1%40x")).json()  # lower-case escapes too
    assert group["self"] == BASE + "/dirs/g:1@x" and group["filesurl"] == BASE + "/dirs/g:1@x/files"
    page = await c.get(encoded + "/versions?limit=1")
    following = page.links["next"]["url"]
    assert following.startswith(canonical + "/versions?"), following
    assert list((await c.get(API + following.removeprefix(BASE))).json()) == ["v:2"]
    for url in (view["self"], meta["defaultversionurl"], group["filesurl"]):
        assert (await c.get(API + url.removeprefix(BASE))).status_code == 200, url
