"""Fixtures of the security tests: those of the HTTP API tests (the gateway app on a fresh SQLite
file, clients through ASGI, a real uvicorn server), the federation tests' remote sources, and
``local``: an opened local registry on each embedded store (SQLite, mongomock)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mongomock_motor import AsyncMongoMockClient

from gateway.registry.service import LocalRegistry
from gateway.storage.mongo import MongoStore
from gateway.storage.sqlite import SQLiteStore
from tests.federation.conftest import open_remote
from tests.http.conftest import anon, app, client, live, settings

__all__ = ["anon", "app", "client", "live", "local", "open_remote", "settings"]


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
