"""Shared fixtures: a fresh local registry. The real documents are in ``tests/corpus.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.registry.service import LocalRegistry
from gateway.storage.sqlite import SQLiteStore
from tests.federation.servers import redis_or_skip


@pytest.fixture
async def registry(tmp_path: Path):
    """An opened local registry on a fresh SQLite file."""
    reg = LocalRegistry(SQLiteStore(tmp_path / "registry.db"), registry_id="test", base_url="http://gw/registry")
    await reg.open()
    try:
        yield reg
    finally:
        await reg.close()


@pytest.fixture(scope="module")
def redis():
    """A real redis-server on a free loopback port for the module's tests (skipped outside CI when
    the Debian package is missing)."""
    server = redis_or_skip()
    try:
        yield server
    finally:
        server.stop()
