"""Fixtures of the GraphQL tests: real SQLite registries, the real app over ASGI or uvicorn;
``store_client``: the HTTP tests' client of a fresh gateway on each embedded store (SQLite,
mongomock), for tests that run on both.

``corpus_db`` imports the 117-feed corpus once per session into an SQLite file; tests that only
read open their own registry on it. Tests that write use a fresh file (``registry`` from the
top-level conftest, or a copy of the corpus).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from gateway.auth import hash_key
from tests.corpus import CORPUS_117
from tests.http.conftest import client_on
from tests.http.support import make_settings as http_settings
from tests.support.live import LiveServer
from xreg.config import ApiKey, Settings
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore

REGISTRY_ID = "test"
BASE_URL = "http://gw/registry"
WRITE_KEY = "graphql-test-write-key-0c41"
READ_KEY = "graphql-test-read-key-77e2"


def make_settings(tmp: Path, **overrides: Any) -> Settings:
    """Settings for a test app: a read-only and a read-write API key, anonymous reads."""
    base: dict[str, Any] = {
        "data_dir": tmp, "registry_id": REGISTRY_ID, "base_url": BASE_URL,
        "api_keys": [ApiKey(name="writer", sha256=hash_key(WRITE_KEY), scopes=["read", "write"]),
                     ApiKey(name="reader", sha256=hash_key(READ_KEY), scopes=["read"])],
    }
    return Settings(**{**base, **overrides})


def open_registry(path: Path) -> LocalRegistry:
    return LocalRegistry(SQLiteStore(path), registry_id=REGISTRY_ID, base_url=BASE_URL)


class GraphQL:
    """A client of one app: ``await gql(query, **variables)`` returns the response's JSON."""

    def __init__(self, client: httpx.AsyncClient, registry: LocalRegistry) -> None:
        self.client = client
        self.registry = registry
        self.headers: dict[str, str] = {}

    async def post(self, query: str, variables: dict[str, Any] | None = None, **kw: Any) -> httpx.Response:
        headers = {**self.headers, **kw.pop("headers", {})}
        return await self.client.post("/graphql", json={"query": query, "variables": variables}, headers=headers, **kw)

    async def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        response = await self.post(query, variables or None)
        assert response.status_code == 200, response.text
        return response.json()

    async def data(self, query: str, **variables: Any) -> dict[str, Any]:
        """The ``data`` of a query that must succeed."""
        body = await self(query, **variables)
        assert "errors" not in body, body["errors"]
        return body["data"]

    async def error(self, query: str, **variables: Any) -> dict[str, Any]:
        """The first error of a query that must fail."""
        body = await self(query, **variables)
        assert body.get("errors"), body
        return body["errors"][0]

    def as_writer(self) -> GraphQL:
        self.headers = {"Authorization": f"Bearer {WRITE_KEY}"}
        return self


@contextlib.contextmanager
def recorded_reads(store: SQLiteStore) -> Iterator[list[list[str]]]:
    """The XIDs of each ``get_many`` call ``store`` serves meanwhile (the real store underneath)."""
    reads: list[list[str]] = []
    get_many = store.get_many

    async def recorded(xids: Any, as_of: int | None = None) -> Any:
        reads.append(list(xids))
        return await get_many(xids, as_of)

    store.get_many = recorded  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        del store.get_many


@contextlib.asynccontextmanager
async def serve_asgi(registry: LocalRegistry, settings: Settings) -> AsyncIterator[GraphQL]:
    """The real app, its lifespan included, over ``httpx.ASGITransport``."""
    app = create_app(settings, registry=registry)
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        yield GraphQL(client, registry)


@pytest.fixture(scope="session")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file holding the 117-feed corpus (imported once)."""
    path = tmp_path_factory.mktemp("corpus") / "registry.db"

    async def load() -> None:
        async with open_registry(path) as reg:
            await reg.apply_document(normalise(read_document(CORPUS_117))[0])

    asyncio.run(load())
    return path


@pytest.fixture
async def corpus(corpus_db: Path, tmp_path: Path) -> AsyncIterator[GraphQL]:
    """A client of the app over the corpus (read-only use)."""
    async with open_registry(corpus_db) as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        yield gql


@pytest.fixture
async def writable_corpus(corpus_db: Path, tmp_path: Path) -> AsyncIterator[GraphQL]:
    """A client of the app over a private copy of the corpus, authenticated as a writer."""
    path = tmp_path / "copy.db"
    shutil.copy(corpus_db, path)
    async with open_registry(path) as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        yield gql.as_writer()


@pytest.fixture
async def empty(tmp_path: Path) -> AsyncIterator[GraphQL]:
    """A client of the app over an empty registry, authenticated as a writer."""
    async with open_registry(tmp_path / "registry.db") as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        yield gql.as_writer()


@contextlib.asynccontextmanager
async def serve_uvicorn(settings: Settings, registry: LocalRegistry) -> AsyncIterator[str]:
    """The real app on a real uvicorn at 127.0.0.1, in this event loop; yields its base URL."""
    async with LiveServer(create_app(settings, registry=registry)) as live:
        yield live.url


@pytest.fixture(params=["sqlite", "mongomock"])
async def store_client(request, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A writer's client of a fresh gateway (the xRegistry API and ``/graphql``) on each embedded
    store, as the HTTP tests' ``store_client``."""
    async with client_on(request.param, http_settings(tmp_path)) as c:
        yield c
