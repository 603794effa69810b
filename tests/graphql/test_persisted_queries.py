"""Persisted queries over a real uvicorn: Apollo's automatic persisted queries (miss → document →
hit, GET with the hash alone, a wrong hash, documents that are not kept, two gateways sharing
them through a real Redis) and trusted documents (Apollo's manifest and GraphQL Codegen's
persisted-documents.json; listed operations run, others are refused, the bypass scope)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from gateway.auth import hash_key
from resolvers.persisted import PersistedQueries
from resolvers.trusted_documents import TrustedDocuments
from tests.graphql.conftest import READ_KEY, WRITE_KEY, make_settings, open_registry
from tests.support.live import LiveServer
from xreg.config import ApiKey, Settings

GQL = "application/graphql-response+json"
QUERY = "query Groups { registry { messagegroups { totalCount } } }"
OTHER = "query Xid { registry { xid } }"
CREATE = ('mutation Create { createGroup(groupType: "messagegroups", groupId: "made", '
          'attributes: {envelope: "CloudEvents/1.0"}) { node { xid } } }')
ADMIN_KEY = "persisted-test-admin-key-5e1d"
BYPASS = "graphql:any"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def persisted(text: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha(text)}}


def code(response: httpx.Response) -> str:
    return response.json()["errors"][0]["extensions"]["code"]


@contextlib.asynccontextmanager
async def gateway(settings: Settings, db: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with LiveServer(create_app(settings, registry=open_registry(db))) as live, \
            httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        yield client


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with gateway(make_settings(tmp_path), tmp_path / "r.db") as client:
        yield client


# -- automatic persisted queries ----------------------------------------------------------------------


async def test_apq_miss_then_document_then_hit(http):
    miss = await http.post("/graphql", json={"extensions": persisted(QUERY)})
    assert miss.status_code == 200  # application/json: legacy clients read the error
    assert miss.json() == {"errors": [{"message": "PersistedQueryNotFound",
                                       "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}
    assert miss.headers["cache-control"] == "private, no-cache, must-revalidate"
    modern = await http.post("/graphql", json={"extensions": persisted(QUERY)}, headers={"Accept": GQL})
    assert modern.status_code == 404 and code(modern) == "PERSISTED_QUERY_NOT_FOUND"

    full = await http.post("/graphql", json={"query": QUERY, "extensions": persisted(QUERY)})
    assert full.json() == {"data": {"registry": {"messagegroups": {"totalCount": 0}}}}
    hit = await http.post("/graphql", json={"extensions": persisted(QUERY), "operationName": "Groups"})
    assert hit.status_code == 200 and hit.json() == full.json()
    # upper-case hex names the same document
    upper = {"persistedQuery": {"version": 1, "sha256Hash": sha(QUERY).upper()}}
    assert (await http.post("/graphql", json={"extensions": upper})).json() == full.json()


async def test_get_with_the_hash_alone_runs_queries_only(http):
    extensions = json.dumps(persisted(QUERY))
    assert code(await http.get("/graphql", params={"extensions": extensions})) == "PERSISTED_QUERY_NOT_FOUND"
    await http.post("/graphql", json={"query": QUERY, "extensions": persisted(QUERY)})
    got = await http.get("/graphql", params={"extensions": extensions})
    assert got.status_code == 200 and got.json() == {"data": {"registry": {"messagegroups": {"totalCount": 0}}}}
    assert "etag" in got.headers
    assert (await http.get("/graphql", params={"extensions": extensions},
                           headers={"If-None-Match": got.headers["etag"]})).status_code == 304

    # a mutation kept by a POST that ran it is still refused over GET
    writer = {"Authorization": f"Bearer {WRITE_KEY}"}
    ran = await http.post("/graphql", json={"query": CREATE, "extensions": persisted(CREATE)}, headers=writer)
    assert ran.json()["data"] == {"createGroup": {"node": {"xid": "/messagegroups/made"}}}
    refused = await http.get("/graphql", params={"extensions": json.dumps(persisted(CREATE))}, headers=writer)
    assert refused.status_code == 405 and refused.headers["allow"] == "POST"


async def test_a_wrong_hash_is_refused_and_nothing_is_kept(http):
    wrong = await http.post("/graphql", json={"query": QUERY, "extensions": persisted(OTHER)})
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["message"] == "provided sha does not match query"
    assert code(await http.post("/graphql", json={"extensions": persisted(OTHER)})) == "PERSISTED_QUERY_NOT_FOUND"
    for bad in ({"persistedQuery": {"version": 2, "sha256Hash": sha(QUERY)}},
                {"persistedQuery": {"version": 1, "sha256Hash": "abc"}}, {"persistedQuery": "x"}, ["x"]):
        response = await http.post("/graphql", json={"query": QUERY, "extensions": bad})
        assert response.status_code == 400 and code(response) == "BAD_REQUEST", bad


async def test_documents_that_fail_or_are_too_long_are_not_kept(tmp_path: Path):
    invalid = "{ registry { nosuchfield } }"
    long = "query Long { registry { xid " + " ".join(f"alias{i}: xid" for i in range(20)) + " } }"
    assert len(long) > 256
    async with gateway(make_settings(tmp_path, apq_max_bytes=256), tmp_path / "r.db") as http:
        failed = await http.post("/graphql", json={"query": invalid, "extensions": persisted(invalid)})
        assert code(failed) == "GRAPHQL_VALIDATION_FAILED"
        assert code(await http.post("/graphql", json={"extensions": persisted(invalid)})) == "PERSISTED_QUERY_NOT_FOUND"
        ran = await http.post("/graphql", json={"query": long, "extensions": persisted(long)})
        assert ran.json()["data"]["registry"]["alias19"] == "/"
        assert code(await http.post("/graphql", json={"extensions": persisted(long)})) == "PERSISTED_QUERY_NOT_FOUND"


async def test_the_memory_store_never_holds_more_than_its_bounds():
    """Many distinct documents, of many sizes: the per-process store stays within both bounds, and
    what it counts is what it holds (the most recently used documents)."""
    settings = Settings(apq_memory_entries=50, apq_memory_bytes=4096, apq_max_bytes=65536)
    queries = PersistedQueries(settings)
    store = queries.local
    kept: list[tuple[str, str]] = []
    for i in range(2000):
        text = f"query Q{i} {{ registry {{ xid " + "é" * (i % 300) + " }} }}"  # 30 to 630 bytes
        await queries.keep(sha(text), text, None)
        kept.append((sha(text), text))
        assert len(store) <= 50 and store.bytes <= 4096
    held = [text for key, text in kept if store.get(key) is not None]
    assert store.bytes == sum(len(t.encode()) for t in held)
    assert held == [t for _, t in kept[-len(held):]]  # the newest ones, none skipped
    assert await queries.lookup(kept[0][0], None) is None
    huge = "query Huge { registry { xid } } #" + "x" * 5000  # over the whole bound: not kept, nothing dropped
    await queries.keep(sha(huge), huge, None)
    assert store.get(sha(huge)) is None and [t for key, t in kept if store.get(key) is not None] == held


async def test_an_evicted_hash_is_a_miss_and_the_client_sends_the_document_again(tmp_path: Path):
    documents = [f"query Q{i} {{ registry {{ xid }} }}" for i in range(20)]  # 30 bytes each: 8 fit in 256
    async with gateway(make_settings(tmp_path, apq_memory_bytes=256), tmp_path / "r.db") as http:
        for text in documents:
            kept = await http.post("/graphql", json={"query": text, "extensions": persisted(text)})
            assert kept.json() == {"data": {"registry": {"xid": "/"}}}
        assert (await http.post("/graphql", json={"extensions": persisted(documents[-1])})).json()["data"]
        first = persisted(documents[0])
        assert code(await http.post("/graphql", json={"extensions": first})) == "PERSISTED_QUERY_NOT_FOUND"
        again = await http.post("/graphql", json={"query": documents[0], "extensions": first})  # the APQ retry
        assert again.json() == {"data": {"registry": {"xid": "/"}}}
        assert (await http.post("/graphql", json={"extensions": first})).json() == again.json()


async def test_apq_switched_off(tmp_path: Path):
    async with gateway(make_settings(tmp_path, apq_enabled=False), tmp_path / "r.db") as http:
        response = await http.post("/graphql", json={"query": QUERY, "extensions": persisted(QUERY)})
        assert response.json()["errors"][0] == {"message": "PersistedQueryNotSupported",
                                                "extensions": {"code": "PERSISTED_QUERY_NOT_SUPPORTED"}}
        assert (await http.post("/graphql", json={"query": QUERY})).json()["data"]


async def test_two_gateways_share_persisted_queries_through_redis(tmp_path: Path, redis):
    db = tmp_path / "shared.db"
    shared = make_settings(tmp_path, cache_url=redis.url)
    async with gateway(shared, db) as first, gateway(shared, db) as second:
        assert code(await second.post("/graphql", json={"extensions": persisted(OTHER)})) == "PERSISTED_QUERY_NOT_FOUND"
        await first.post("/graphql", json={"query": OTHER, "extensions": persisted(OTHER)})
        hit = await second.get("/graphql", params={"extensions": json.dumps(persisted(OTHER))})
        assert hit.json() == {"data": {"registry": {"xid": "/"}}}
    # per-process memory (the default) is not shared: the second replica misses
    apart = make_settings(tmp_path)
    async with gateway(apart, db) as first, gateway(apart, db) as second:
        await first.post("/graphql", json={"query": QUERY, "extensions": persisted(QUERY)})
        assert (await first.post("/graphql", json={"extensions": persisted(QUERY)})).json()["data"]
        assert code(await second.post("/graphql", json={"extensions": persisted(QUERY)})) == "PERSISTED_QUERY_NOT_FOUND"


async def test_a_failing_redis_is_a_miss_not_an_error(tmp_path: Path):
    async with gateway(make_settings(tmp_path, cache_url="redis://127.0.0.1:9/0"), tmp_path / "r.db") as http:
        assert code(await http.post("/graphql", json={"extensions": persisted(QUERY)})) == "PERSISTED_QUERY_NOT_FOUND"
        ran = await http.post("/graphql", json={"query": QUERY, "extensions": persisted(QUERY)})
        assert ran.json() == {"data": {"registry": {"messagegroups": {"totalCount": 0}}}}


# -- trusted documents -----------------------------------------------------------------------------------


def apollo_manifest(*bodies: tuple[str, str, str]) -> dict[str, Any]:
    return {"format": "apollo-persisted-query-manifest", "version": 1,
            "operations": [{"id": sha(body), "name": name, "type": kind, "body": body} for name, kind, body in bodies]}


def trusted_settings(tmp_path: Path, manifest: Any) -> Settings:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return make_settings(tmp_path, trusted_documents=path, trusted_documents_bypass_scope=BYPASS, api_keys=[
        ApiKey(name="writer", sha256=hash_key(WRITE_KEY), scopes=["read", "write"]),
        ApiKey(name="reader", sha256=hash_key(READ_KEY), scopes=["read"]),
        ApiKey(name="admin", sha256=hash_key(ADMIN_KEY), scopes=["read", "write", BYPASS])])


@pytest.mark.parametrize("kind", ["apollo", "codegen"])
async def test_trusted_documents_run_only_listed_operations(tmp_path: Path, kind: str):
    if kind == "apollo":
        manifest: Any = apollo_manifest(("Groups", "query", QUERY), ("Create", "mutation", CREATE))
        query_id = sha(QUERY)
    else:  # the client preset's persisted-documents.json: {hash: document}
        manifest = {"sha1:" + hashlib.sha1(QUERY.encode()).hexdigest(): QUERY, "c-create": CREATE}
        query_id = next(iter(manifest))
    expected = {"data": {"registry": {"messagegroups": {"totalCount": 0}}}}
    async with gateway(trusted_settings(tmp_path, manifest), tmp_path / "r.db") as http:
        by_id = await http.post("/graphql", json={"documentId": query_id})
        assert by_id.json() == expected
        assert (await http.get("/graphql", params={"documentId": query_id})).json() == expected
        assert (await http.post("/graphql", json={"extensions": persisted(QUERY)})).json() == expected
        assert (await http.post("/graphql", json={"query": QUERY})).json() == expected  # its exact text

        for accept, status in ((GQL, 403), ("application/json", 403)):
            unlisted = await http.post("/graphql", json={"query": OTHER}, headers={"Accept": accept})
            assert unlisted.status_code == status and code(unlisted) == "PERSISTED_QUERY_NOT_ALLOWED"
        assert code(await http.post("/graphql", json={"documentId": "nope"})) == "PERSISTED_QUERY_NOT_FOUND"
        # APQ cannot smuggle an unlisted document in: the miss, then the refusal
        assert code(await http.post("/graphql", json={"extensions": persisted(OTHER)})) == "PERSISTED_QUERY_NOT_FOUND"
        smuggled = await http.post("/graphql", json={"query": OTHER, "extensions": persisted(OTHER)})
        assert smuggled.status_code == 403 and code(smuggled) == "PERSISTED_QUERY_NOT_ALLOWED"
        assert code(await http.post("/graphql", json={"extensions": persisted(OTHER)})) == "PERSISTED_QUERY_NOT_FOUND"
        # credentials do not help without the bypass scope
        writer = {"Authorization": f"Bearer {WRITE_KEY}"}
        assert code(await http.post("/graphql", json={"query": OTHER}, headers=writer)) == "PERSISTED_QUERY_NOT_ALLOWED"
        listed_mutation = await http.post("/graphql", json={"query": CREATE}, headers=writer)
        assert listed_mutation.json()["data"] == {"createGroup": {"node": {"xid": "/messagegroups/made"}}}


async def test_the_bypass_scope_runs_anything_and_keeps_apq_to_itself(tmp_path: Path):
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with gateway(trusted_settings(tmp_path, apollo_manifest(("Groups", "query", QUERY))), tmp_path / "r.db") as http:
        assert (await http.post("/graphql", json={"query": OTHER}, headers=admin)).json() == {
            "data": {"registry": {"xid": "/"}}}
        kept = await http.post("/graphql", json={"query": OTHER, "extensions": persisted(OTHER)}, headers=admin)
        assert kept.json() == {"data": {"registry": {"xid": "/"}}}
        assert (await http.post("/graphql", json={"extensions": persisted(OTHER)}, headers=admin)).json() == kept.json()
        # what the admin kept is not a trusted document for others
        assert code(await http.post("/graphql", json={"extensions": persisted(OTHER)})) == "PERSISTED_QUERY_NOT_FOUND"


@pytest.mark.parametrize("manifest, problem", [
    ([], "expected a JSON object"),
    ({"format": "apollo-persisted-query-manifest", "version": 2, "operations": []}, "version 1"),
    ({"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{"id": "a"}]}, "has no body"),
    ({"format": "apollo-persisted-query-manifest", "version": 1,
      "operations": [{"id": "a", "body": "{ x }", "type": "fragment"}]}, "unknown type"),
    ({"abc": 3}, "not a non-empty string"),
])
def test_a_bad_allowlist_stops_the_gateway_from_starting(tmp_path: Path, manifest: Any, problem: str):
    with pytest.raises(ValueError, match=problem):
        create_app(trusted_settings(tmp_path, manifest), registry=open_registry(tmp_path / "r.db"))


def test_allowlist_lookups():
    docs = TrustedDocuments.parse({"k1": QUERY})
    assert docs.find("k1") == QUERY and docs.find(sha(QUERY)) == QUERY and docs.find("sha256:" + sha(QUERY)) == QUERY
    assert docs.find("k2") is None and docs.allows(QUERY) and not docs.allows(QUERY + " ")


def test_a_relative_allowlist_path_is_read_next_to_the_settings_file(tmp_path: Path):
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "docs.json").write_text(json.dumps({"k1": QUERY}), encoding="utf-8")
    (folder / "gateway.yaml").write_text("trusted_documents: docs.json\n", encoding="utf-8")
    settings = Settings(config=folder / "gateway.yaml", data_dir=tmp_path)
    assert settings.trusted_documents == folder / "docs.json"
    assert TrustedDocuments.load(settings.trusted_documents).find("k1") == QUERY
