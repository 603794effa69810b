"""Time as the adapters see it, injectable so that tests advance it instead of waiting.

Wall time dates cache entries and status reports; monotonic time drives the circuit breaker,
the remote snapshots' expiry and discovery retries; ``sleep`` waits out back-offs. Everything
that reads time in ``adapters/`` takes a :class:`Clock` (default :data:`SYSTEM_CLOCK`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Clock:
    """Where the adapters read the time and how they wait."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep


#: The real clock.
SYSTEM_CLOCK = Clock()
