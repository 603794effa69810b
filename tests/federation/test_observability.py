"""Operations with remote registries in play: traces that follow a request into a remote (our
own gateway in another process receives the ``traceparent``), the remote metrics (requests by
outcome, breaker state, cache), and no credential — API key, JWT, a remote's bearer secret —
in any log line, whatever succeeds or fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.app import create_app
from gateway.auth import hash_key
from tests.federation.test_federation import remote_entry
from tests.support.observing import captured_logs, parse_metrics, value
from xreg import tracing
from xreg.config import ApiKey, Settings

BASE = "http://gw.test/registry"
INCOMING_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
INCOMING_PARENT = "00f067aa0ba902b7"


async def serving(settings: Settings):
    """The app of ``settings`` with its lifespan entered (to exit), and an ASGI client on it."""
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    return lifespan, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")


async def test_traces_cover_request_operation_store_and_remote_and_continue_at_the_remote(tmp_path, remotes) -> None:
    exporter = InMemorySpanExporter()
    tracing.start(exporter=exporter)
    try:
        erp = remotes["erp"]
        settings = Settings(data_dir=tmp_path, registry_id="test", base_url=BASE, config_watch_seconds=0,
                            registries=[remote_entry("erp", erp.base_url, cache_ttl=0)])
        lifespan, client = await serving(settings)
        try:
            erp.wrapper.clear()
            exporter.clear()
            query = 'query Both { registry { messagegroups { totalCount } } erp: registry(id: "erp") { ' \
                    'messagegroups(first: 2) { nodes { xid } } } }'
            response = await client.post("/graphql", json={"query": query, "operationName": "Both"},
                                         headers={"traceparent": f"00-{INCOMING_TRACE}-{INCOMING_PARENT}-01"})
            assert response.status_code == 200 and "errors" not in response.json()
            spans = exporter.get_finished_spans()  # the request's (closing the store comes later)
        finally:
            await client.aclose()
            await lifespan.__aexit__(None, None, None)
    finally:
        tracing.stop()
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (server,) = by_name["POST /graphql"]
    assert format(server.context.trace_id, "032x") == INCOMING_TRACE  # the caller's trace continues
    assert format(server.parent.span_id, "016x") == INCOMING_PARENT
    assert server.attributes["http.route"] == "/graphql" and server.attributes["http.response.status_code"] == 200
    (operation,) = by_name["query Both"]
    assert operation.parent.span_id == server.context.span_id
    assert operation.attributes["graphql.operation.name"] == "Both"
    assert operation.attributes["xreg.graphql.outcome"] == "ok"
    store = [s for s in spans if s.name.startswith("store.") and s.parent is not None]  # (the pruner's are roots)
    assert store and all(s.parent.span_id == operation.context.span_id for s in store)
    assert {"store.list", "store.count"} <= {s.name for s in store}
    remote = by_name["xregistry.remote GET"]
    assert remote and all(s.attributes["xreg.registry"] == "erp" for s in remote)
    assert all(s.context.trace_id == server.context.trace_id for s in remote)
    received = erp.wrapper.traceparents
    assert received, "the remote received no traceparent"
    sent_from = {format(s.context.span_id, "016x") for s in remote}
    assert len(received) == len(erp.wrapper.log) == len(remote)  # every request to it carried one
    for header in received:
        version, trace_id, parent_id, _flags = header.split("-")
        assert version == "00" and trace_id == INCOMING_TRACE and parent_id in sent_from


def test_tracing_is_not_even_loaded_when_off(tmp_path: Path) -> None:
    program = """
import asyncio, sys, httpx
from gateway.app import create_app
from xreg.config import Settings

async def main():
    app = create_app(Settings(data_dir=sys.argv[1], config_watch_seconds=0))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test") as c:
            assert (await c.post("/graphql", json={"query": "{ registry { id } }"})).status_code == 200
            assert (await c.get("/registry/")).status_code == 200
    # redis-py loads OpenTelemetry's metrics API by itself when it is installed; what tracing
    # would load (the trace SDK, propagation, exporters) must not be there
    print(sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk.trace", "opentelemetry.propagat",
                                                        "opentelemetry.exporter"))))

asyncio.run(main())
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "XREG_"))}
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], env={**env, "PYTHONPATH": str(repo)},
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert tracing.wanted(False, {}) is False
    assert tracing.wanted(True, {"OTEL_SDK_DISABLED": "true"}) is False
    assert tracing.wanted(False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) is True
    assert tracing.wanted(False, {"OTEL_TRACES_EXPORTER": "none"}) is False


async def test_remote_metrics_count_outcomes_breaker_and_cache(tmp_path, faulty) -> None:
    served, _ = faulty
    settings = Settings(data_dir=tmp_path, registry_id="test", base_url=BASE, config_watch_seconds=0, registries=[
        remote_entry("obs-ok", served.origin + "/ok/registry", cache_ttl=60),
        remote_entry("obs-down", served.origin + "/500/registry", breaker={"failures": 1, "reset_seconds": 600}),
    ])
    lifespan, client = await serving(settings)
    try:
        before = parse_metrics((await client.get("/metrics")).text)
        query = '{ ok: registry(id: "obs-ok") { messagegroups { nodes { xid } } } ' \
                'down: registry(id: "obs-down") { messagegroups { nodes { xid } } } }'
        scrapes = []
        for _ in range(2):
            body = (await client.post("/graphql", json={"query": query})).json()
            assert body["data"]["ok"]["messagegroups"]["nodes"] == [{"xid": "/messagegroups/g1"}]
            scrapes.append(parse_metrics((await client.get("/metrics")).text))
        first, after = scrapes
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    def moved(name: str, since=before, until=after, **labels: str) -> float:
        return value(until, name, **labels) - value(since, name, **labels)

    # the first query misses the cache and asks the remote; the second is served from the cache
    assert moved("xreg_remote_requests_total", until=first, registry="obs-ok", outcome="ok") >= 1
    assert moved("xreg_remote_cache_total", until=first, registry="obs-ok", result="miss") >= 1
    assert moved("xreg_remote_requests_total", since=first, registry="obs-ok", outcome="ok") == 0
    assert moved("xreg_remote_cache_total", since=first, registry="obs-ok", result="miss") == 0
    assert moved("xreg_remote_cache_total", since=first, registry="obs-ok", result="hit") >= 1
    # its discovery at start failed (the circuit opened); the queries were refused without a request
    assert value(after, "xreg_remote_requests_total", registry="obs-down", outcome="error") >= 1
    assert moved("xreg_remote_requests_total", registry="obs-down", outcome="error") == 0
    assert moved("xreg_remote_requests_total", registry="obs-down", outcome="breaker_open") >= 2
    assert value(after, "xreg_remote_breaker_state", registry="obs-down") == 2
    assert value(after, "xreg_remote_breaker_state", registry="obs-ok") == 0


REMOTE_SECRET = "remote-bearer-" + "s" * 24
API_KEY = "observed-api-key-" + "k" * 24
UNKNOWN_KEY = "unknown-api-key-" + "u" * 24
JWT_SECRET = "jwt-shared-secret-" + "j" * 32


async def test_no_credential_reaches_any_log_line(tmp_path, remotes) -> None:
    token = jwt.encode({"sub": "ci-job", "scope": "read write", "exp": int(time.time()) + 600}, JWT_SECRET,
                       algorithm="HS256")
    forged = jwt.encode({"sub": "intruder", "scope": "read write", "exp": int(time.time()) + 600},
                        "another-secret-" + "f" * 32, algorithm="HS256")
    settings = Settings(
        data_dir=tmp_path, registry_id="test", base_url=BASE, config_watch_seconds=0, anonymous_read=False,
        api_keys=[ApiKey(name="ops-writer", sha256=hash_key(API_KEY), scopes=["read", "write"])],
        jwt_secret=JWT_SECRET,
        registries=[remote_entry("erp", remotes["erp"].base_url, cache_ttl=0, auth={"bearer": REMOTE_SECRET}),
                    remote_entry("iot", remotes["iot"].base_url, cache_ttl=0, auth={"forward": True})],
    )
    secrets = [API_KEY, UNKNOWN_KEY, JWT_SECRET, REMOTE_SECRET, token, forged]
    query = '{ erp: registry(id: "erp") { messagegroups { nodes { xid } } } ' \
            'iot: registry(id: "iot") { messagegroups { nodes { xid } } } }'
    with captured_logs() as logs:
        lifespan, client = await serving(settings)
        try:
            for credential in (API_KEY, token):
                auth = {"Authorization": f"Bearer {credential}"}
                assert (await client.put("/registry/messagegroups/g", json={}, headers=auth)).status_code in (200, 201)
                body = (await client.post("/graphql", json={"query": query}, headers=auth)).json()
                assert {e["extensions"]["code"] for e in body["errors"]} == {"data_retrieval_error"}  # both refuse
            for credential in (UNKNOWN_KEY, forged):
                refused = await client.get("/registry/", headers={"Authorization": f"Bearer {credential}"})
                assert refused.status_code == 401
                refused = await client.post("/graphql", json={"query": query},
                                            headers={"Authorization": f"Bearer {credential}"})
                assert refused.status_code == 401
            basic = await client.get("/registry/", headers={"Authorization": f"Basic {API_KEY}"})
            assert basic.status_code == 401
            assert (await client.get("/readyz")).status_code == 200
        finally:
            await client.aclose()
            await lifespan.__aexit__(None, None, None)
    callers = {json.loads(line).get("caller") for line in logs.json if '"xreg.access"' in line}
    assert {"key:ops-writer", "jwt:|ci-job"} <= callers  # the log names callers ...
    assert any("registry erp: answered HTTP 401" in line for line in logs.text)  # ... and the remotes' refusals
    leaked = [s for s in secrets if s in logs.everything]
    assert leaked == [], "credentials in the logs"
