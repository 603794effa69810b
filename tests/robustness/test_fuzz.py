"""Property-based fuzzing of both APIs, in process (httpx over ASGI, the real app on a real
SQLite file seeded with a small registry): whatever the request — any method, path, flag,
header, body or GraphQL document — the answer is never a 5xx (nor an ``INTERNAL_SERVER_ERROR``
in GraphQL), and a refused request leaves the store's revision where it was.

:data:`HTTP_CASES` + :data:`GRAPHQL_CASES` (10,000 together) ran in 4 minutes on 2 CPUs shared with
other jobs (load average 10);
``XREG_TEST_FUZZ_CASES`` multiplies them for a longer campaign.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.app import create_app
from tests.http.support import READ_KEY, SEED, WRITE_KEY, bearer, make_settings

SCALE = int(os.environ.get("XREG_TEST_FUZZ_CASES", "1"))
HTTP_CASES = 6000 * SCALE
GRAPHQL_CASES = 4000 * SCALE


def fuzz(cases: int) -> settings:
    return settings(max_examples=cases, deadline=None, database=None, suppress_health_check=list(HealthCheck))


class Gateway:
    """The app with its lifespan, driven from one event loop of its own."""

    def __init__(self, tmp: Path) -> None:
        self.runner = asyncio.Runner()
        self.app = create_app(make_settings(tmp, admission_enabled=False))
        self._lifespan = self.app.router.lifespan_context(self.app)
        self.runner.run(self._lifespan.__aenter__())
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://gw.test")
        seeded = self.run(self.client.post("/registry", json=SEED, headers=bearer(WRITE_KEY)))
        assert seeded.status_code == 200, seeded.text

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)

    def revision(self) -> int:
        return self.run(self.app.state.registry.store.current_revision())

    def close(self) -> None:
        self.run(self.client.aclose())
        self.run(self._lifespan.__aexit__(None, None, None))
        self.runner.close()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[Gateway]:
    gw = Gateway(tmp_path_factory.mktemp("fuzz"))
    yield gw
    gw.close()


# -- strategies -----------------------------------------------------------------------------------

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
ids = st.sampled_from(["orders", "Billing", "empty", "sg1", "s1", "s2", "e1", "created", "1.0", "2.0", "nope"]) | text
segments = st.sampled_from(["messagegroups", "messages", "schemagroups", "schemas", "endpoints", "versions", "meta",
                            "capabilities", "model", "export", "openapi.json", "$details", "s1$details"]) | ids
paths = st.lists(segments, max_size=6).map(lambda parts: "/registry/" + "/".join(parts))
flag_names = st.sampled_from(["inline", "filter", "sort", "limit", "epoch", "doc", "collections", "binary", "ignore",
                              "setdefaultversionid", "specversion", "dryrun", "offset"]) | text
flag_values = st.sampled_from(["", "*", "messages", "name=Orders", "labels.team=sales", "name", "name=desc", "0",
                               "1", "-1", "99999999999", "request", "1.0-rc4", "messagegroups.messages.protocol=KAFKA",
                               "epoch", "model"]) | text
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text | ids | segments, children, max_size=4),
    max_leaves=20)
entities = st.dictionaries(st.sampled_from(["name", "description", "epoch", "labels", "messagegroupid", "versionid",
                                            "format", "schema", "envelope", "protocol", "meta", "messages",
                                            "versions", "defaultversionid", "xid", "self", "createdat"]) | text,
                           json_values, max_size=5)
bodies = st.one_of(
    st.none(),
    entities.map(lambda e: json.dumps(e).encode()),
    st.dictionaries(ids, entities, max_size=3).map(lambda e: json.dumps(e).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
)
credentials = st.sampled_from([WRITE_KEY, READ_KEY, None, "not-a-key", "a.b.c"])
content_types = st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", "",
                                 "application/octet-stream"])


def headers_of(key: str | None, content_type: str, extra: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v.encode("utf-8") for k, v in extra.items()}  # (any bytes may come in a header)
    if key:
        out.update(bearer(key))
    if content_type:
        out["Content-Type"] = content_type
    return out


@fuzz(HTTP_CASES)
@given(method=st.sampled_from(["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS"]), path=paths,
       flags=st.lists(st.tuples(flag_names, flag_values), max_size=3), body=bodies, key=credentials,
       content_type=content_types,
       extra=st.dictionaries(st.sampled_from(["xRegistry-format", "xRegistry-epoch", "xRegistry-name",
                                              "If-Match", "Accept"]), text, max_size=2))
def test_the_http_api_never_fails_and_refusals_change_nothing(gateway, method, path, flags, body, key, content_type,
                                                              extra):
    before = gateway.revision()
    try:
        response = gateway.run(gateway.client.request(method, path, params=flags, content=body,
                                                      headers=headers_of(key, content_type, extra)))
    except httpx.InvalidURL:  # (a URL the client itself will not send)
        return
    assert response.status_code < 500, (method, path, flags, body, response.text[:500])
    if response.status_code >= 400:
        assert gateway.revision() == before, (method, path, flags, body, response.status_code)
        if method != "HEAD":
            assert response.headers["content-type"].startswith("application/json"), response.text[:200]
            json.loads(response.content)


# -- GraphQL --------------------------------------------------------------------------------------

xids = st.sampled_from(["/messagegroups/orders", "/messagegroups/orders/messages/created", "/schemagroups/sg1",
                        "/schemagroups/sg1/schemas/s1/versions/1.0", "/endpoints/e1", "/", "/nope/x"]) | text
page_sizes = st.none() | st.integers(min_value=-5, max_value=2000)
queries = st.sampled_from([
    "query($n: Int, $a: String, $f: [String!]) { registry { messagegroups(first: $n, after: $a, filter: {raw: $f}) "
    "{ totalCount nodes { xid name labels { key value } messages(first: $n) { nodes { xid envelope } } } } } }",
    "query($n: Int, $a: String) { registry { schemas(last: $n, before: $a) { nodes { xid versions { nodes { xid } } } } } }",
    "query($x: String!) { lookup(xid: $x) { __typename ... on Message { xid effective declared { name } } } }",
    "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
    "query($s: String, $n: Int) { registry { messages(search: $s, first: $n) { nodes { xid } } } }",
    "query($n: Int!) { registry { changes(since: $n) { nodes { xid type } } } }",
    "query($n: Int) { registry(asOf: $n) { endpoints { nodes { xid messagegroups { xid } } } } }",
    "mutation($x: String!, $e: Int) { deleteEntity(xid: $x, epoch: $e) }",
    "mutation($g: String!, $a: JSON) { createGroup(groupType: \"messagegroups\", groupId: $g, attributes: $a) "
    "{ revision } }",
    "mutation($g: String!, $a: JSON) { updateGroup(groupType: \"schemagroups\", groupId: $g, attributes: $a, "
    "replace: true) { revision } }",
    "mutation($a: JSON!) { importDocument(document: $a) { revision } }",
]) | text
variables = st.fixed_dictionaries({}, optional={
    "n": page_sizes, "a": st.none() | text, "f": st.none() | st.lists(flag_values, max_size=2), "x": xids,
    "ids": st.lists(text | xids, max_size=3), "s": st.none() | text, "e": st.none() | st.integers(),
    "g": ids, "a2": json_values}).map(lambda v: {**v, "a": v.pop("a2", v.get("a"))})


@fuzz(GRAPHQL_CASES)
@given(query=queries, variables=variables, key=credentials, get=st.booleans())
def test_graphql_never_fails_and_refusals_change_nothing(gateway, query, variables, key, get):
    before = gateway.revision()
    headers = headers_of(key, "application/json", {})
    if get:
        request = gateway.client.get("/graphql", params={"query": query, "variables": json.dumps(variables)},
                                     headers=headers)
    else:
        request = gateway.client.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
    try:
        response = gateway.run(request)
    except httpx.InvalidURL:
        return
    assert response.status_code < 500, (query, variables, response.text[:500])
    body = response.json()
    codes = [e.get("extensions", {}).get("code") for e in body.get("errors", [])]
    assert "INTERNAL_SERVER_ERROR" not in codes, (query, variables, body)
    if response.status_code >= 400 or not (body.get("data") or {}) or all(v is None for v in body["data"].values()):
        assert gateway.revision() == before, (query, variables, body)
