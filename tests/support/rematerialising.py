"""Driving a running re-materialisation worker from a test: run it for a block, wait until it
has drained everything its registry knows of."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from xreg.registry.rematerialise import Rematerialiser
from xreg.registry.service import LocalRegistry


async def drained(worker: Rematerialiser, registry: LocalRegistry) -> None:
    """Return once a round of ``worker`` ended with nothing known pending in ``registry``.

    A round that ended before the last write's commit set ``idle`` already, so wait for one that
    leaves nothing known (no await between the check and the clear: the worker cannot finish in
    between)."""
    while registry.rematerialising:
        worker.idle.clear()
        await worker.idle.wait()


@contextlib.asynccontextmanager
async def running(worker: Rematerialiser, poll: float = 3600.0) -> AsyncIterator[asyncio.Task[None]]:
    """``worker.run(poll)`` as a task for the block; cancelled and awaited on the way out."""
    task = asyncio.ensure_future(worker.run(poll))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
