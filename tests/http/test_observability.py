"""What the served gateway tells its operators: ``/metrics`` moving with traffic (by route
template, never raw paths), ``/readyz`` turning 503 when the store cannot be written, one JSON
log line per request carrying its ``X-Request-Id``, and that id in the xRegistry problems."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from mongomock_motor import AsyncMongoMockClient
from pymongo import AsyncMongoClient

from gateway import readiness
from gateway.app import create_app
from gateway.logs import redact
from gateway.request_context import request_id_from
from tests.http.support import BASE, WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer, bound_socket
from tests.support.observing import captured_logs, scrape, value
from xreg import metrics
from xreg.config import Settings
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore

IMPORT = "mutation Load($doc: JSON!) { importDocument(document: $doc) { revision } }"


@pytest.fixture
def operation_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh budget of operation names (the process's is shared: other tests may have spent it)."""
    monkeypatch.setattr(metrics, "_operations", set())


def gql(c: httpx.Client, query: str, name: str | None = None, **variables) -> httpx.Response:
    return c.post("/graphql", json={"query": query, "operationName": name, "variables": variables or None})


@pytest.mark.usefixtures("operation_names")
def test_metrics_move_with_traffic_by_route_template_operation_and_store_call(settings: Settings) -> None:
    with LiveServer(create_app(settings)) as live, \
            httpx.Client(base_url=live.url, headers=bearer(WRITE_KEY), timeout=30, trust_env=False) as c:
        before = scrape(live.url)
        for gid in ("a1", "b2", "c3"):
            assert c.get(f"/registry/messagegroups/{gid}").status_code == 404
        assert c.put("/registry/messagegroups/orders", json={"name": "Orders"}).status_code == 201
        assert gql(c, "query Groups { registry { messagegroups { totalCount } } }", "Groups").json()["data"]
        assert gql(c, "{ registry { nosuchfield } }").json()["errors"]  # not executed
        assert gql(c, 'query Broken { lookup(xid: "nope") { xid } }', "Broken").json()["errors"]  # executed, failed
        doc = {"messagegroups": {"imported": {"messages": {"m1": {"name": "one"}, "m2": {"name": "two"}}}}}
        assert gql(c, IMPORT, "Load", doc=doc).json()["data"]["importDocument"]["revision"] > 0
        assert gql(c, IMPORT, "Load", doc={"messagegroups": {"bad": {"messages": {"m": {"name": 5}}}}}
                   ).json()["errors"]
        refused = c.post("/graphql", json={"query": "{ registry { id } }"}, headers={"Authorization": "Bearer nope"})
        assert refused.status_code == 401
        revision = c.get("/healthz").json()["revision"]
        after = scrape(live.url)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    route = "/registry/messagegroups/{gid}"
    assert moved("xreg_http_requests_total", route=route, method="GET", status="404") == 3
    assert moved("xreg_http_requests_total", route=route, method="PUT", status="201") == 1
    assert moved("xreg_http_request_duration_seconds_count", route=route, method="GET") == 3
    assert moved("xreg_http_requests_total", route="/graphql", method="POST", status="200") == 5
    assert moved("xreg_http_requests_total", route="/graphql", method="POST", status="401") == 1
    assert not any("a1" in v or "b2" in v for (_, labels) in after for _, v in labels), "raw ids became labels"
    assert moved("xreg_graphql_operations_total", operation="Groups", outcome="ok") == 1
    assert moved("xreg_graphql_operations_total", operation="anonymous", outcome="refused") == 1
    assert moved("xreg_graphql_operations_total", operation="Broken", outcome="error") == 1
    assert moved("xreg_graphql_operations_total", operation="Load", outcome="ok") == 1
    assert moved("xreg_graphql_operations_total", operation="Load", outcome="error") == 1
    assert moved("xreg_graphql_operations_total", operation="unknown", outcome="refused") == 1
    assert moved("xreg_graphql_operation_duration_seconds_count", operation="Load") == 2
    assert moved("xreg_store_call_duration_seconds_count", call="get_many") > 0
    assert moved("xreg_store_call_duration_seconds_count", call="commit") >= 2
    # the group, its two messages and their versions; the refused document names a group and a message
    assert moved("xreg_import_entities_total", outcome="created") == 5
    assert moved("xreg_import_entities_total", outcome="rejected") == 2
    assert value(after, "xreg_registry_revision") == revision


@pytest.mark.usefixtures("operation_names")
def test_graphql_operation_names_are_bounded_labels() -> None:
    assert metrics.operation_label(None) == "anonymous"
    assert metrics.operation_label("x" * 65) == "other"
    assert metrics.operation_label("not a name") == "other"
    named = [metrics.operation_label(f"Op{i}") for i in range(metrics.MAX_OPERATION_NAMES + 10)]
    assert named[-1] == "other" and len(set(named)) <= metrics.MAX_OPERATION_NAMES + 1


def test_request_ids_are_taken_returned_and_name_problems(settings: Settings) -> None:
    with LiveServer(create_app(settings)) as live, httpx.Client(base_url=live.url, trust_env=False) as c:
        mine = c.get("/registry/messagegroups/missing", headers={"X-Request-Id": "trace-42:abc.DEF_1"})
        assert mine.headers["x-request-id"] == "trace-42:abc.DEF_1" == mine.json()["instance"]
        for hostile in ("x" * 129, "with space", "new\\nline", "<script>", ""):
            response = c.get("/registry/messagegroups/missing", headers={"X-Request-Id": hostile})
            made = response.headers["x-request-id"]
            assert made != hostile and made.startswith("urn:uuid:") and response.json()["instance"] == made
        first, second = c.get("/graphql?query={registry{id}}"), c.get("/healthz")
        assert first.headers["x-request-id"] != second.headers["x-request-id"]
        assert request_id_from(None).startswith("urn:uuid:")


def test_each_request_logs_one_json_line_with_its_request_id(settings: Settings) -> None:
    with captured_logs() as logs, LiveServer(create_app(settings)) as live, \
            httpx.Client(base_url=live.url, headers=bearer(WRITE_KEY), trust_env=False) as c:
        c.put("/registry/messagegroups/g1", json={}, headers={"X-Request-Id": "put-1"})
        graphql_id = gql(c, "query Which { registry { id } }", "Which").headers["x-request-id"]
    # (the server has stopped: every line is written)
    lines = [json.loads(line) for line in logs.json]
    put = [e for e in lines if e.get("request_id") == "put-1" and e["logger"] == "xreg.access"]
    assert len(put) == 1
    assert put[0] | {"duration_ms": 0, "time": ""} == {
        "time": "", "level": "info", "logger": "xreg.access", "message": put[0]["message"], "request_id": "put-1",
        "method": "PUT", "route": "/registry/messagegroups/{gid}", "path": "/registry/messagegroups/g1",
        "status": 201, "duration_ms": 0, "caller": "key:writer"}
    assert put[0]["duration_ms"] > 0
    access = [e for e in lines if e["logger"] == "xreg.access"]
    graphql = [e for e in access if e["route"] == "/graphql"]
    assert len(graphql) == 1 and graphql[0]["operation"] == "Which" and graphql[0]["outcome"] == "ok"
    assert graphql[0]["request_id"] == graphql_id and graphql[0]["caller"] == "key:writer"
    assert len(access) == 2


def test_readyz_is_503_when_the_sqlite_file_is_gone_and_reports_remotes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with bound_socket() as closed:  # a port nobody listens on
        nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}/registry"
    settings = make_settings(data, registries=[{"id": "down", "kind": "xregistry", "url": nowhere, "retries": 0,
                                                "timeouts": {"connect": 0.5, "read": 0.5, "total": 1}}])
    with LiveServer(create_app(settings)) as live:
        ready = httpx.get(live.url + "/readyz", trust_env=False)
        body = ready.json()
        assert ready.status_code == 200 and body["status"] == "ready" and body["checks"]["store"]["ok"] is True
        assert [r["id"] for r in body["registries"]] == ["down"]  # reported, not gating
        assert body["registries"][0]["healthy"] is False and body["registries"][0]["last_error"]
        shutil.rmtree(data)  # the volume is gone (root ignores permissions: a chmod would prove nothing)
        gone = httpx.get(live.url + "/readyz", trust_env=False)
        assert gone.status_code == 503 and gone.json()["status"] == "unavailable"
        assert "is gone" in gone.json()["checks"]["store"]["error"]
        assert httpx.get(live.url + "/healthz", trust_env=False).status_code == 200  # alive, just not ready


async def test_readyz_is_503_when_mongodb_is_unreachable(tmp_path: Path) -> None:
    store = MongoStore(client=AsyncMongoMockClient(), database="xreg")
    settings = Settings(data_dir=tmp_path, registry_id="test", base_url=BASE, config_watch_seconds=0)
    app = create_app(settings, registry=LocalRegistry(store, registry_id="test"))
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test") as c:
        ok = await c.get("/readyz")
        assert ok.status_code == 200 and ok.json()["checks"]["store"]["backend"] == "MongoStore"
    with bound_socket() as closed:
        port = closed.getsockname()[1]
    nowhere = AsyncMongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=300, connectTimeoutMS=300)
    try:
        down = await readiness.check(MongoStore(client=nowhere, database="xreg"), [])
        assert down.ready is False and "ServerSelectionTimeoutError" in down.body["checks"]["store"]["error"]
        slow = AsyncMongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=5000)
        late = await readiness.check(MongoStore(client=slow, database="xreg"), [], store_seconds=0.3)
        assert late.ready is False and "did not answer within 0.3 s" in late.body["checks"]["store"]["error"]
        await slow.close()
    finally:
        await nowhere.close()


@pytest.mark.parametrize("line, shown", [
    ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"),
    ("basic dXNlcjpwdw==", "basic [redacted]"),
    ("mongodb://user:s3cret@db:27017/x", "mongodb://[redacted]@db:27017/x"),
    ("no credentials here", "no credentials here"),
])
def test_log_lines_are_redacted(line: str, shown: str) -> None:
    assert redact(line) == shown
