"""Fixtures of the HTTP API tests: the gateway app on a fresh SQLite file (``store_client``: on
each embedded store), httpx clients through ASGI, and a real uvicorn server (see ``support.py``);
``wire``: a client of a real uvicorn server once per store (SQLite, and MongoDB through
``mongomock_motor``, as tests/contract/ runs its contract)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from mongomock_motor import AsyncMongoMockClient

from gateway.app import create_app
from tests.http.support import SEED, WRITE_KEY, asgi_client, bearer, make_settings, running
from tests.support.live import LiveServer
from xreg.config import Settings
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
async def app(settings: Settings):
    async with running(settings) as app:
        yield app


@pytest.fixture
async def client(app):
    """A client holding the writer key."""
    async with asgi_client(app) as c:
        yield c


@pytest.fixture
async def anon(app):
    """A client without credentials."""
    async with asgi_client(app, None) as c:
        yield c


@pytest.fixture
async def seeded(client):
    """``client`` on a registry holding :data:`SEED`."""
    response = await client.post("/registry", json=SEED)
    assert response.status_code == 200, response.text
    return client


@pytest.fixture
def live(settings: Settings) -> Iterator[LiveServer]:
    """A real uvicorn server of a fresh gateway (writer key as for ``client``)."""
    with LiveServer(create_app(settings)) as server:
        yield server


@pytest.fixture(params=["sqlite", "mongomock"])
async def wire(request, settings: Settings):
    """A client (writer key) of a fresh gateway served by uvicorn on 127.0.0.1, once on each
    store: the SQLite file of ``settings`` and a ``MongoStore`` on an in-memory
    ``mongomock_motor`` client."""
    if request.param == "sqlite":
        registry = LocalRegistry.from_settings(settings)
    else:
        registry = LocalRegistry(MongoStore(client=AsyncMongoMockClient(), database=f"http_{uuid.uuid4().hex[:12]}"),
                                 registry_id=settings.registry_id, name=settings.registry_name,
                                 base_url=settings.base_url, model_limits=settings.model_limits)
    async with LiveServer(create_app(settings, registry=registry)) as server, \
            httpx.AsyncClient(base_url=server.url, headers=bearer(WRITE_KEY), timeout=30, trust_env=False) as c:
        yield c


@contextlib.asynccontextmanager
async def client_on(store: str, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A writer's client of a fresh gateway on ``store``: ``sqlite`` (its file in the settings'
    data directory), or ``mongomock`` (``MongoStore`` on an in-memory ``mongomock_motor`` client)."""
    registry = None
    if store == "mongomock":
        registry = LocalRegistry(MongoStore(client=AsyncMongoMockClient(), database=f"http_{uuid.uuid4().hex[:12]}"),
                                 registry_id=settings.registry_id, base_url=settings.base_url,
                                 model_limits=settings.model_limits)
    app = create_app(settings, registry=registry)
    async with app.router.lifespan_context(app), asgi_client(app) as c:
        yield c


@pytest.fixture(params=["sqlite", "mongomock"])
async def store_client(request, settings: Settings):
    """``client`` (writer key) on a fresh gateway over each embedded store: SQLite, and
    ``MongoStore`` on an in-memory ``mongomock_motor`` client."""
    async with client_on(request.param, settings) as c:
        yield c
