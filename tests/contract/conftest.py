"""The ``store`` fixture: every contract test runs once per storage backend.

* ``sqlite``: :class:`~xreg.storage.sqlite.SQLiteStore` on a fresh file under ``tmp_path``.
* ``mongomock``: :class:`~xreg.storage.mongo.MongoStore` on an in-memory ``mongomock_motor``
  client.
* ``mongo``: ``MongoStore`` on the live server at ``XREG_TEST_MONGODB_URL`` (skipped when the
  variable is unset), in a database of its own that is dropped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mongomock_motor import AsyncMongoMockClient

from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

MONGO_URL_ENV = "XREG_TEST_MONGODB_URL"


def _database_name(prefix: str = "xreg_contract") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@contextlib.asynccontextmanager
async def live_mongo_store(prefix: str = "xreg_contract") -> AsyncIterator[MongoStore]:
    """A MongoStore on the live server at ``XREG_TEST_MONGODB_URL`` in a database of its own,
    dropped afterwards; skips the test when the variable is unset."""
    url = os.environ.get(MONGO_URL_ENV)
    if not url:
        pytest.skip(f"{MONGO_URL_ENV} is not set (no live MongoDB to test against)")
    name = _database_name(prefix)
    try:
        async with MongoStore(url, database=name) as s:
            yield s
    finally:
        from pymongo import AsyncMongoClient

        client = AsyncMongoClient(url)
        try:
            await client.drop_database(name)
        finally:
            await client.close()


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
        async with MongoStore(client=AsyncMongoMockClient(), database=_database_name()) as s:
            yield s
        return
    async with live_mongo_store() as s:
        yield s
