"""A registry whose opening fails closes its store again: the store's connection threads would
otherwise keep the process from exiting (found as a bench hanging at interpreter shutdown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore


class _Refused(Exception):
    pass


async def test_a_failed_open_closes_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[bool] = []
    store = SQLiteStore(tmp_path / "r.db")
    real_close = store.close

    async def close() -> None:
        closed.append(True)
        await real_close()

    monkeypatch.setattr(store, "close", close)

    async def refuse(self: LocalRegistry) -> None:
        raise _Refused

    monkeypatch.setattr(LocalRegistry, "_start", refuse)
    try:
        with pytest.raises(_Refused):
            async with LocalRegistry(store):
                pass
        assert closed == [True]
    finally:
        if not closed:  # the behaviour under test is broken: do not leave this worker unable to exit
            await real_close()
