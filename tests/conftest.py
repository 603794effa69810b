"""Shared fixtures: a fresh local registry. The real documents are in ``tests/corpus.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.registry.service import LocalRegistry
from gateway.storage.sqlite import SQLiteStore


@pytest.fixture
async def registry(tmp_path: Path):
    """An opened local registry on a fresh SQLite file."""
    reg = LocalRegistry(SQLiteStore(tmp_path / "registry.db"), registry_id="test", base_url="http://gw/registry")
    await reg.open()
    try:
        yield reg
    finally:
        await reg.close()
