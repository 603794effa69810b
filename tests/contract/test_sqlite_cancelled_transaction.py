"""A write cancelled while its ``BEGIN`` is in flight leaves the SQLite writer connection usable.

aiosqlite runs each statement in the connection's thread: a cancelled await does not stop the
statement, so the ``BEGIN`` still opens a transaction. Found as a shutdown that never ended: the
next transaction failed ("cannot start a transaction within a transaction") on every round.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from xreg.storage.sqlite import SQLiteStore


async def test_a_transaction_cancelled_at_its_begin_leaves_none_open(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    await store.open()
    try:
        task = asyncio.ensure_future(store.rematerialise_lease("a", 0.0, 10.0))
        await asyncio.sleep(0)  # one turn: the task now waits on its BEGIN, which the thread runs
        task.cancel()
        await asyncio.wait([task])
        assert task.cancelled()
        # the connection is not left inside that transaction: the next one begins and commits
        assert await store.rematerialise_lease("b", 0.0, 10.0) is True
    finally:
        await store.close()
