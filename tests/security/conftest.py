"""Fixtures of the security tests: those of the HTTP API tests (the gateway app on a fresh SQLite
file, clients through ASGI, a real uvicorn server), the federation tests' remote sources,
``local``: an opened local registry on each embedded store (SQLite, mongomock); ``gateway``: the
GraphQL app over an empty SQLite registry (a writer's client), a loopback HTTP server that counts
the requests it gets (``trap``), and helpers to store a message and validate a payload against
it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mongomock_motor import AsyncMongoMockClient

from tests.federation.conftest import open_remote
from tests.graphql.conftest import GraphQL, make_settings, open_registry, serve_asgi
from tests.http.conftest import anon, app, client, live, settings
from tests.support.live import LiveServer
from xreg.formats import default
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

__all__ = ["anon", "app", "client", "live", "local", "open_remote", "settings"]

IMPORT = "mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"
VALIDATE = """query($xid: String!, $data: JSON!) {
  validateMessage(xid: $xid, data: $data) { valid validated reason violations { path message } } }"""


class Trap:
    """An ASGI app answering every request with ``body`` and counting the requests."""

    def __init__(self) -> None:
        self.hits = 0
        self.body = b'{"type": "string"}'

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        self.hits += 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/schema+json")]})
        await send({"type": "http.response.body", "body": self.body})


@pytest.fixture
def trap() -> Iterator[tuple[Trap, str]]:
    """A loopback HTTP server counting the requests it gets, and its URL (served from a thread of
    its own: a fetch that blocked the test's event loop would still be answered, and counted)."""
    app = Trap()
    with LiveServer(app) as live:
        yield app, live.url


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[GraphQL]:
    """A writer's client of the app over an empty registry (default evaluator bounds)."""
    async with open_registry(tmp_path / "registry.db") as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        yield gql.as_writer()


async def store_message(gql: GraphQL, name: str, fmt: str, schema: Any) -> str:
    """Store a message whose ``dataschema`` is ``schema`` (inline) and return its XID."""
    await gql.data(IMPORT, doc={"messagegroups": {"m": {"messages": {
        name: {"dataschemaformat": fmt, "dataschema": schema}}}}})
    return f"/messagegroups/m/messages/{name}"


async def validate_anonymously(gql: GraphQL, xid: str, data: Any) -> dict[str, Any]:
    """``validateMessage`` as an anonymous caller; the result (no GraphQL error allowed)."""
    response = await gql.client.post("/graphql", json={"query": VALIDATE, "variables": {"xid": xid, "data": data}})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body["errors"]
    result: dict[str, Any] = body["data"]["validateMessage"]
    return result


async def probe_while(client: httpx.AsyncClient, work: asyncio.Task[Any]) -> int:
    """``/healthz`` round trips completed, one after another, while ``work`` is not done."""
    trips = 0
    while not work.done():
        response = await client.get("/healthz")
        assert response.status_code == 200
        if not work.done():
            trips += 1
    return trips


def evaluator_kills() -> int:
    """Workers the process's evaluator has killed or lost so far."""
    return default().kills


@pytest.fixture(params=["sqlite", "mongomock"])
async def local(request, tmp_path: Path) -> AsyncIterator[LocalRegistry]:
    """An opened local registry (built-in model) on each embedded store."""
    store = (SQLiteStore(tmp_path / "registry.db") if request.param == "sqlite"
             else MongoStore(client=AsyncMongoMockClient(), database=f"security_{uuid.uuid4().hex[:12]}"))
    registry = LocalRegistry(store, registry_id="test", base_url="http://gw/registry")
    await registry.open()
    try:
        yield registry
    finally:
        await registry.close()
