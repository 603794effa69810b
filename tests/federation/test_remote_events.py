"""A remote that offers its event log (a gateway like this one): the federating gateway follows it
and drops its cached answers when the remote changes, without waiting for ``cache_ttl``; a remote
without one keeps the TTL. Two real gateways on 127.0.0.1, one federating the other; the test
waits on the follower's positions, never on time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.remote import RemoteSource
from adapters.remote_events import events_url
from gateway.app import create_app
from gateway.auth import hash_key
from tests.support.live import LiveServer
from xreg.config import ApiKey, RegistryConfig, Settings

TOKEN = "remote-events-writer"
#: Far longer than the test: an answer that changes came from the event log, not from expiry.
TTL = 3600.0
WAIT = 60.0


def _remote_settings(tmp: Path) -> Settings:
    return Settings(data_dir=tmp, registry_id="origin", anonymous_read=True, history_keep_days=None,
                    api_keys=[ApiKey(name="writer", sha256=hash_key(TOKEN), scopes=["read", "write"])])


class HideEvents:
    """The remote without an event log: ``/events`` answers 404."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/events":
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"not here"})
            return
        await self.app(scope, receive, send)


@pytest.fixture
async def gateways(tmp_path: Path) -> AsyncIterator[tuple[list[str], str, httpx.AsyncClient]]:
    """Two remotes (their origins; the second hides ``/events``), a gateway federating them as
    ``followed`` and ``ttl`` (its GraphQL URL), and a client for all three."""
    async with LiveServer(create_app(_remote_settings(tmp_path / "remote"))) as remote, \
            LiveServer(HideEvents(create_app(_remote_settings(tmp_path / "hidden")))) as hidden:
        settings = Settings(
            data_dir=tmp_path / "federating", registry_id="main", anonymous_read=True, history_keep_days=None,
            registries=[RegistryConfig(id="followed", kind="xregistry", url=f"{remote.url}/registry", cache_ttl=TTL,
                                       events_poll_seconds=0.05),
                        RegistryConfig(id="ttl", kind="xregistry", url=f"{hidden.url}/registry", cache_ttl=TTL,
                                       events_poll_seconds=0.05)])
        app = create_app(settings)
        async with LiveServer(app) as federating, httpx.AsyncClient(timeout=30) as http:
            http.app_state = app.state  # type: ignore[attr-defined]
            yield [remote.url, hidden.url], f"{federating.url}/graphql", http


async def _name(http: httpx.AsyncClient, graphql: str, registry: str, xid: str) -> str | None:
    resp = await http.post(graphql, json={
        "query": "query($r: String!, $x: String!) { registry(id: $r) { lookup(xid: $x) { json } } }",
        "variables": {"r": registry, "x": xid}})
    body = resp.json()
    assert not body.get("errors"), body
    found = body["data"]["registry"]["lookup"]
    return found["json"].get("name") if found else None


async def _last_position(http: httpx.AsyncClient, origin: str) -> str:
    events = (await http.get(f"{origin}/events", params={"limit": "1000"})).json()
    return str(events[-1]["xregposition"])


async def test_a_write_on_the_remote_is_seen_at_once_through_its_event_log(gateways):
    (origin, hidden), graphql, http = gateways
    auth = {"authorization": f"Bearer {TOKEN}"}

    async def write(method: str, path: str, **body: Any) -> None:
        for base in (origin, hidden):
            resp = await http.request(method, f"{base}/registry{path}", json=body or None, headers=auth)
            assert resp.status_code in (200, 201, 204), resp.text

    sources = http.app_state.federation.sources  # type: ignore[attr-defined]
    followed: RemoteSource = sources["followed"]
    unfollowed: RemoteSource = sources["ttl"]
    assert followed.events is not None and unfollowed.events is not None
    await asyncio.wait_for(followed.events.probed.wait(), WAIT)
    await asyncio.wait_for(unfollowed.events.probed.wait(), WAIT)
    assert followed.events.offered is True and unfollowed.events.offered is False

    await write("PUT", "/messagegroups/g1", name="before")
    await asyncio.wait_for(followed.events.reached(await _last_position(http, origin)), WAIT)
    assert await _name(http, graphql, "followed", "/messagegroups/g1") == "before"
    assert await _name(http, graphql, "ttl", "/messagegroups/g1") == "before"  # both cached now

    invalidations = followed.cache.stats.invalidations
    await write("PATCH", "/messagegroups/g1", name="after")
    await asyncio.wait_for(followed.events.reached(await _last_position(http, origin)), WAIT)
    assert followed.cache.stats.invalidations > invalidations
    assert await _name(http, graphql, "followed", "/messagegroups/g1") == "after"
    # the remote without an event log: the cached answer lives for cache_ttl
    assert await _name(http, graphql, "ttl", "/messagegroups/g1") == "before"
    assert unfollowed.cache.stats.invalidations == 0

    await write("DELETE", "/messagegroups/g1")
    await asyncio.wait_for(followed.events.reached(await _last_position(http, origin)), WAIT)
    assert await _name(http, graphql, "followed", "/messagegroups/g1") is None


def test_the_event_log_is_found_beside_the_registry_root():
    assert events_url("http://h:1/registry") == "http://h:1/events"
    assert events_url("http://h/x/registry/") == "http://h/x/events"
    assert events_url("http://h/registry", "http://h/log") == "http://h/log"
    assert RegistryConfig(id="r", kind="xregistry", url="http://h/registry").follow_events
