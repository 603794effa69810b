"""The ``store`` fixture: every contract test runs once per storage backend.

* ``sqlite``: :class:`~gateway.storage.sqlite.SQLiteStore` on a fresh file under ``tmp_path``.
* ``mongomock``: ``gateway.storage.mongo.MongoStore`` on an in-memory ``mongomock_motor`` client
  (skipped while that module does not exist).
* ``mongo``: ``MongoStore`` on the live server at ``XREG_TEST_MONGODB_URL`` (skipped when the
  variable is unset), in a database of its own that is dropped afterwards.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import uuid
from pathlib import Path

import pytest

from gateway.storage.sqlite import SQLiteStore

MONGO_URL_ENV = "XREG_TEST_MONGODB_URL"


def _mongo_module():
    if importlib.util.find_spec("gateway.storage.mongo") is None:
        pytest.skip("gateway.storage.mongo does not exist yet (MongoStore not implemented)")
    return importlib.import_module("gateway.storage.mongo")


def _database_name() -> str:
    return f"xreg_contract_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["sqlite", "mongomock", pytest.param("mongo", marks=pytest.mark.mongo_live)])
def backend(request) -> str:
    """The name of the backend under test (for the few backend-aware assertions)."""
    return request.param


@pytest.fixture
async def store(backend: str, tmp_path: Path):
    """An opened, empty store of the parametrized backend."""
    if backend == "sqlite":
        async with SQLiteStore(tmp_path / "contract.db") as s:
            yield s
        return
    if backend == "mongomock":
        mongo = _mongo_module()
        from mongomock_motor import AsyncMongoMockClient

        async with mongo.MongoStore(client=AsyncMongoMockClient(), database=_database_name()) as s:
            yield s
        return
    url = os.environ.get(MONGO_URL_ENV)
    if not url:
        pytest.skip(f"{MONGO_URL_ENV} is not set (no live MongoDB to test against)")
    mongo = _mongo_module()
    name = _database_name()
    try:
        async with mongo.MongoStore(url, database=name) as s:
            yield s
    finally:
        from pymongo import AsyncMongoClient

        client = AsyncMongoClient(url)
        try:
            await client.drop_database(name)
        finally:
            await client.close()
