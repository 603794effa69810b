"""The circuit breaker (adapters/breaker.py), on a clock moved by hand."""

from __future__ import annotations

import pytest

from adapters.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker, CircuitOpen
from tests.support.clock import ManualClock


def test_opens_after_consecutive_failures_and_lets_one_trial_through() -> None:
    time = ManualClock()
    breaker = CircuitBreaker(failures=3, reset_seconds=30, clock=time.clock.monotonic)
    for _ in range(2):
        breaker.before()
        breaker.failure()
    breaker.before()
    breaker.success()  # a success resets the count
    for _ in range(3):
        breaker.before()
        breaker.failure()
    assert breaker.state == OPEN
    with pytest.raises(CircuitOpen) as refused:
        breaker.before()
    assert refused.value.retry_in == pytest.approx(30)
    time.advance(30)
    assert breaker.state == HALF_OPEN
    breaker.before()  # the one trial
    with pytest.raises(CircuitOpen):
        breaker.before()  # the others wait for its verdict
    breaker.failure()  # the trial failed: open again for a whole period
    assert breaker.state == OPEN
    time.advance(30)
    breaker.before()
    breaker.success()
    assert breaker.state == CLOSED and breaker.failures == 0


def test_an_abandoned_trial_lets_another_one_through() -> None:
    time = ManualClock()
    breaker = CircuitBreaker(failures=1, reset_seconds=5, clock=time.clock.monotonic)
    breaker.failure()
    time.advance(5)
    breaker.before()
    breaker.abandon()
    breaker.before()  # not refused
    assert breaker.state == HALF_OPEN
