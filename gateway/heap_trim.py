"""Hand freed heap pages back to the system, now and then (glibc's ``malloc_trim``).

A serving process frees most of what a request allocated, but glibc keeps freed pages of its
arenas for reuse; with requests on several threads (the store's readers, the evaluator's pool
clients) the kept pages grow slowly with uptime although live memory does not (measured by
``bench/bench_soak.py --probe``). :class:`HeapTrimmer` calls ``malloc_trim(0)`` every
``interval`` seconds in a worker thread (it takes the arenas' locks, never the event loop's time).
Where the C library is not glibc there is nothing to call and nothing runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


def glibc_trim() -> Callable[[], object] | None:
    """``malloc_trim(0)`` of the process's C library, or ``None`` where it is not glibc."""
    try:  # the C library the process has loaded (no ``find_library``: it runs ``ldconfig``)
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


class HeapTrimmer:
    """Calls ``trim`` every ``interval`` seconds until cancelled; ``interval`` 0 or no ``trim``: never."""

    def __init__(self, interval: float, trim: Callable[[], object] | None,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        self.interval = interval
        self.trim = trim
        self.sleep = sleep
        self.trims = 0

    @property
    def enabled(self) -> bool:
        return self.interval > 0 and self.trim is not None

    async def run(self) -> None:
        """The trimming loop: sleep, trim (in a thread), again."""
        if not self.enabled:
            return
        assert self.trim is not None
        while True:
            await self.sleep(self.interval)
            try:
                await asyncio.to_thread(self.trim)
                self.trims += 1
            except Exception:  # a failed trim costs memory, never the process
                log.exception("malloc_trim failed")
