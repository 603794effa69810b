"""Managing webhook subscriptions over HTTP (``/registry/webhook-subscriptions``) and GraphQL:
scopes and the allow-list, the secret shown once, problem documents for bad input, the route
never shadowing the xRegistry API."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.auth import hash_key
from tests.http.support import WRITE_KEY, asgi_client, assert_problem, make_settings, running
from xreg.config import ApiKey

ADMIN_KEY = "admin-key-" + "a" * 32
LISTED_KEY = "listed-key-" + "l" * 32
BASE = "/registry/webhook-subscriptions"
TARGET = "http://127.0.0.1:9/hook"


@pytest.fixture
async def app(tmp_path: Path):
    settings = make_settings(
        tmp_path, webhook_enabled=False, outbound_allow_loopback=True, webhook_admins=["key:listed"],
        api_keys=[ApiKey(name="writer", sha256=hash_key(WRITE_KEY), scopes=["read", "write"]),
                  ApiKey(name="admin", sha256=hash_key(ADMIN_KEY), scopes=["read", "write", "webhooks"]),
                  ApiKey(name="listed", sha256=hash_key(LISTED_KEY), scopes=["read", "write"])])
    async with running(settings) as app:
        yield app


async def test_write_alone_is_not_enough(app) -> None:
    async with asgi_client(app, None) as anon, asgi_client(app, WRITE_KEY) as writer, \
            asgi_client(app, ADMIN_KEY) as admin, asgi_client(app, LISTED_KEY) as listed:
        assert_problem(await anon.get(BASE), 401, "unauthorized")
        refused = await writer.post(BASE, json={"url": TARGET})
        assert_problem(refused, 403, "forbidden")
        assert 'scope="webhooks"' in refused.headers["www-authenticate"]
        assert (await admin.post(BASE, json={"url": TARGET})).status_code == 201
        assert len((await listed.get(BASE)).json()) == 1  # on the allow-list


async def test_the_secret_is_shown_once(app) -> None:
    async with asgi_client(app, ADMIN_KEY) as admin:
        created = await admin.post(BASE, json={"url": TARGET, "types": ["io.xregistry.group.created"],
                                               "subject": "/schemagroups/*", "mode": "binary"})
        assert created.status_code == 201 and created.headers["cache-control"] == "no-store"
        body = created.json()
        secret, sub_id = body["secret"], body["id"]
        assert secret.startswith("whsec_") and created.headers["location"].endswith(f"{BASE}/{sub_id}")
        assert (body["mode"], body["subject"], body["owner"]) == ("binary", "/schemagroups/*", "key:admin")
        reads = [await admin.get(BASE), await admin.get(f"{BASE}/{sub_id}"),
                 await admin.patch(f"{BASE}/{sub_id}", json={"enabled": False, "mode": "structured"}),
                 await admin.get(f"{BASE}/{sub_id}/deadletters"),
                 await admin.post(f"{BASE}/{sub_id}/replay", json={})]
        for response in reads:
            assert response.status_code == 200, response.text
            assert secret not in response.text and "secret" not in response.text
        assert reads[2].json()["enabled"] is False and reads[2].json()["mode"] == "structured"
        assert reads[4].json() == {"replayed": 0}
        graphql = await admin.post("/graphql", json={"query": "{ webhookSubscriptions { id url mode enabled } }"})
        assert graphql.json()["data"]["webhookSubscriptions"][0]["id"] == sub_id and secret not in graphql.text
        assert (await admin.delete(f"{BASE}/{sub_id}")).status_code == 204
        assert_problem(await admin.get(f"{BASE}/{sub_id}"), 404, "not_found")
        assert_problem(await admin.delete(f"{BASE}/{sub_id}"), 404, "not_found")


@pytest.mark.parametrize(("body", "needle"), [
    ({"url": "http://169.254.169.254/latest"}, "link-local"),
    ({"url": "http://[fe80::1]:80/x"}, "link-local"),
    ({"url": TARGET, "mode": "mixed"}, "mode"),
    ({"url": TARGET, "types": "io.xregistry.group.created"}, "types"),
    ({"url": TARGET, "subject": "schemagroups"}, "subject"),
    ({"url": TARGET, "after": "twelve"}, "position"),
    ({"url": TARGET, "secret": "mine"}, "unknown"),
    ({"url": 7}, "url"),
])
async def test_bad_input_is_a_bad_request(app, body, needle) -> None:
    async with asgi_client(app, ADMIN_KEY) as admin:
        problem = assert_problem(await admin.post(BASE, json=body), 400, "bad_request")
        assert needle in problem["detail"]
        assert (await admin.get(BASE)).json() == []


async def test_malformed_requests(app) -> None:
    async with asgi_client(app, ADMIN_KEY) as admin:
        assert_problem(await admin.post(BASE, content=b"{not json"), 400, "bad_request")
        assert_problem(await admin.post(BASE, json=[1]), 400, "bad_request")
        assert_problem(await admin.post(BASE, content=b"x" * 70_000), 413, "payload_too_large")
        refused = await admin.put(BASE, json={})
        assert_problem(refused, 405, "action_not_supported")
        assert refused.headers["allow"] == "GET, POST"
        assert_problem(await admin.get(f"{BASE}/nope/deadletters?limit=x"), 400, "bad_request")


async def test_the_route_does_not_shadow_the_registry(app) -> None:
    async with asgi_client(app, ADMIN_KEY) as admin:
        assert (await admin.put("/registry/schemagroups/g1", json={})).status_code == 201
        assert (await admin.get("/registry/schemagroups")).status_code == 200
        assert_problem(await admin.get("/registry/webhook_subscriptions"), 404, "not_found")


async def test_graphql_management(app) -> None:
    create = """mutation($url: String!) { createWebhookSubscription(url: $url, subject: "/schemagroups/",
                   mode: BINARY) { secret subscription { id mode subject owner cursor } } }"""
    async with asgi_client(app, ADMIN_KEY) as admin, asgi_client(app, WRITE_KEY) as writer:
        refused = (await writer.post("/graphql", json={"query": create, "variables": {"url": TARGET}})).json()
        assert refused["errors"][0]["extensions"]["code"] == "forbidden"
        made = (await admin.post("/graphql", json={"query": create, "variables": {"url": TARGET}})).json()
        created = made["data"]["createWebhookSubscription"]
        sub = created["subscription"]
        assert created["secret"].startswith("whsec_") and sub["mode"] == "BINARY" and sub["owner"] == "key:admin"
        bad = (await admin.post("/graphql", json={"query": create,
                                                  "variables": {"url": "http://169.254.169.254/"}})).json()
        assert bad["errors"][0]["extensions"]["code"] == "bad_request"
        update = """mutation($id: ID!) { updateWebhookSubscription(id: $id, enabled: false, after: "0.0")
                      { enabled cursor } }"""
        updated = (await admin.post("/graphql", json={"query": update, "variables": {"id": sub["id"]}})).json()
        assert updated["data"]["updateWebhookSubscription"] == {"enabled": False, "cursor": "0.0"}
        replay = """mutation($id: ID!) { replayWebhookDeadLetters(id: $id) }"""
        replayed = (await admin.post("/graphql", json={"query": replay, "variables": {"id": sub["id"]}})).json()
        assert replayed["data"]["replayWebhookDeadLetters"] == 0
        letters = """query($id: ID!) { webhookDeadLetters(id: $id) { position } }"""
        assert (await admin.post("/graphql", json={"query": letters, "variables": {"id": sub["id"]}})).json()[
            "data"]["webhookDeadLetters"] == []
        delete = """mutation($id: ID!) { deleteWebhookSubscription(id: $id) }"""
        assert (await admin.post("/graphql", json={"query": delete, "variables": {"id": sub["id"]}})).json()[
            "data"]["deleteWebhookSubscription"] is True
        gone = (await admin.post("/graphql", json={"query": delete, "variables": {"id": sub["id"]}})).json()
        assert gone["errors"][0]["extensions"]["code"] == "not_found"
