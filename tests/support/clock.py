"""A clock the tests move by hand (``adapters.clock.Clock`` for the adapters)."""

from __future__ import annotations

import asyncio

from adapters.clock import Clock


class ManualClock:
    """Time that stands still until :meth:`advance` (or an adapter's ``sleep``) moves it."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    @property
    def clock(self) -> Clock:
        return Clock(wall=lambda: self.now, monotonic=lambda: self.now, sleep=self.sleep)
