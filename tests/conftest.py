"""Shared fixtures: the real documents beside the repository, and a fresh local registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.registry.service import LocalRegistry
from gateway.storage.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[1]
XREG_DATA = REPO.parent / "shared" / "data" / "xreg"
CORPUS_117 = XREG_DATA / "rts__ALL-117-feeders-merged.xreg.json"
SAMPLES = REPO / "samples"


@pytest.fixture
async def registry(tmp_path: Path):
    """An opened local registry on a fresh SQLite file."""
    reg = LocalRegistry(SQLiteStore(tmp_path / "registry.db"), registry_id="test", base_url="http://gw/registry")
    await reg.open()
    try:
        yield reg
    finally:
        await reg.close()
