"""Observation of store calls, whatever the backend: each call of the interface
(:data:`OBSERVED_CALLS`) is timed (``xreg_store_call_duration_seconds`` by call; a span per call
when tracing is on) by :func:`observe_calls`, which :class:`~xreg.storage.base.Store` applies to
every backend class; :class:`StoreStats` counts calls (and a backend's statements) for tests and
benchmarks (:func:`upkeep` calls excluded)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from xreg import metrics, tracing

#: Set while a caller reads for its own upkeep rather than for the request it serves (the local
#: registry checking its model at most once a second): those calls are not counted in
#: :class:`StoreStats`, whose counts per request then do not depend on timing.
_UPKEEP: ContextVar[bool] = ContextVar("xreg_store_upkeep", default=False)


@contextlib.contextmanager
def upkeep() -> Iterator[None]:
    """Store calls made inside are upkeep (not counted in :class:`StoreStats`; this task only)."""
    token = _UPKEEP.set(True)
    try:
        yield
    finally:
        _UPKEEP.reset(token)


@dataclass
class StoreStats:
    """Counters a store keeps, read by tests and benchmarks (calls per method; :func:`upkeep`
    calls excluded)."""

    calls: dict[str, int] = field(default_factory=dict)
    #: Database statements the calls ran (backends that count them: SQLite), and how many of
    #: those were handed to the connection's thread (each a round trip through the event loop).
    statements: int = 0
    thread_hops: int = 0

    def hit(self, name: str) -> None:
        if not _UPKEEP.get():
            self.calls[name] = self.calls.get(name, 0) + 1

    def statement(self, *, thread: bool) -> None:
        if not _UPKEEP.get():
            self.statements += 1
            self.thread_hops += thread

    @property
    def total(self) -> int:
        return sum(self.calls.values())


#: The calls of the :class:`~xreg.storage.base.Store` interface that are timed (and traced).
OBSERVED_CALLS = ("open", "close", "check_ready", "current_revision", "oldest_revision", "get_many", "list", "count",
                  "count_children", "changes", "referrers", "explain", "commit", "prune", "events_after")
_in_call: ContextVar[bool] = ContextVar("xreg_store_call", default=False)


def _observed(call: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``fn`` (a store method) timed as ``call``; a call within another is not counted again."""
    histogram = metrics.STORE_CALL_DURATION.labels(call)

    @functools.wraps(fn)
    async def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _in_call.get():
            result = await fn(self, *args, **kwargs)
        else:
            token = _in_call.set(True)
            started = time.perf_counter()
            try:
                if not tracing.active():
                    result = await fn(self, *args, **kwargs)
                else:
                    with tracing.span(f"store.{call}",
                                      {"db.system.name": type(self).__name__, "xreg.store.call": call}):
                        result = await fn(self, *args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - started)
                _in_call.reset(token)
        if call == "commit":  # what health probes answer while the store is busy (Store.probe_revision)
            self._seen_revision, self._seen_at = result, self.monotonic()
        return result

    observed.__observed__ = True  # type: ignore[attr-defined]
    return observed


def observe_calls(cls: type) -> None:
    """Wrap the interface methods ``cls`` defines itself (see :data:`OBSERVED_CALLS`)."""
    for call in OBSERVED_CALLS:
        fn = cls.__dict__.get(call)
        if callable(fn) and not getattr(fn, "__isabstractmethod__", False) and not hasattr(fn, "__observed__"):
            setattr(cls, call, _observed(call, fn))

