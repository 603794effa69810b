"""A circuit breaker per remote registry: stop calling a registry that keeps failing.

``closed``: requests pass; ``failures`` consecutive failed requests open it. ``open``: requests
fail at once (no network) for ``reset_seconds``. Then ``half_open``: one trial request passes
(the others still fail at once); its success closes the circuit, its failure opens it again.
"""

from __future__ import annotations

import time

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
#: Each state as the number ``xreg_remote_breaker_state`` shows.
STATE_VALUES = {CLOSED: 0, HALF_OPEN: 1, OPEN: 2}


class CircuitOpen(Exception):
    """Raised instead of calling a registry whose circuit is open."""

    def __init__(self, retry_in: float) -> None:
        super().__init__(f"circuit open after repeated failures; next attempt in {retry_in:.1f} s")
        self.retry_in = retry_in


class CircuitBreaker:
    """Consecutive-failure circuit breaker (not thread-safe; one event loop)."""

    def __init__(self, failures: int = 5, reset_seconds: float = 30.0, clock=time.monotonic) -> None:
        self.threshold = failures
        self.reset_seconds = reset_seconds
        self.clock = clock
        self.failures = 0
        self.opened_at: float | None = None
        self._trial = False

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return CLOSED
        return HALF_OPEN if self.clock() - self.opened_at >= self.reset_seconds else OPEN

    def before(self) -> None:
        """Call before a request; raises :class:`CircuitOpen` when it must not be sent."""
        state = self.state
        if state == CLOSED:
            return
        if state == HALF_OPEN and not self._trial:
            self._trial = True
            return
        elapsed = self.clock() - (self.opened_at or 0.0)
        raise CircuitOpen(max(self.reset_seconds - elapsed, 0.0))

    def success(self) -> None:
        self.failures = 0
        self.opened_at = None
        self._trial = False

    def failure(self) -> None:
        self.failures += 1
        if self._trial or self.failures >= self.threshold:
            self.opened_at = self.clock()
        self._trial = False

    def abandon(self) -> None:
        """The trial request ended without a verdict (cancelled): let another one through."""
        self._trial = False
