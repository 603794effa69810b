"""Which registries answered the current request from a stale cache, and since when.

(The local registry reports here too while messages of the answer wait for their
re-materialisation: ``xreg.registry.rematerialise``.)

A remote that fails while its cached answers are still within ``stale_if_error`` is served from
the cache (:mod:`adapters.cache`). Whoever answers a request (the GraphQL operation) opens a
:class:`StaleReport` with :func:`collecting`; the sources :func:`note` every stale answer they
serve into it (a context variable, so batched loads in tasks of the request report too), and the
report names each registry once: ``since`` — when the oldest answer served was fetched from the
registry (what the answer shows is as of then) — and the registry's last error.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass
class Stale:
    """One registry's stale part of an answer."""

    registry: str
    since: float
    reason: str | None = None
    unreachable_since: float | None = None
    #: The oldest answer's remaining freshness when it was served (negative: seconds past it).
    ttl: float | None = None
    #: Why: ``unreachable`` (a remote's cache served), ``rematerialising`` (the local registry's
    #: messages whose re-materialisation is pending, ``xreg.registry.rematerialise``).
    detail: str = "unreachable"

    def as_json(self) -> dict[str, Any]:
        return {"registry": self.registry, "since": rfc3339(self.since), "reason": self.reason,
                "unreachableSince": rfc3339(self.unreachable_since) if self.unreachable_since is not None else None}


class StaleReport:
    """The stale answers of one request, by registry."""

    def __init__(self) -> None:
        self.by_registry: dict[str, Stale] = {}

    def note(self, registry: str, since: float, reason: str | None, unreachable_since: float | None,
             ttl: float | None = None, detail: str = "unreachable") -> None:
        seen = self.by_registry.get(registry)
        if seen is None:
            self.by_registry[registry] = Stale(registry, since, reason, unreachable_since, ttl, detail)
            return
        if since < seen.since:
            seen.since, seen.ttl = since, ttl
        seen.reason = reason or seen.reason
        seen.unreachable_since = unreachable_since if unreachable_since is not None else seen.unreachable_since

    def __bool__(self) -> bool:
        return bool(self.by_registry)

    def as_json(self) -> list[dict[str, Any]]:
        return [s.as_json() for _, s in sorted(self.by_registry.items())]


_current: contextvars.ContextVar[StaleReport | None] = contextvars.ContextVar("xreg_stale_report", default=None)


@contextmanager
def collecting() -> Iterator[StaleReport]:
    """Collect the stale answers served in this context (and the tasks it starts) until the end
    (inside another :func:`collecting`: into the same report)."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    report = StaleReport()
    token = _current.set(report)
    try:
        yield report
    finally:
        _current.reset(token)


def note(registry: str, since: float, reason: str | None = None, unreachable_since: float | None = None,
         ttl: float | None = None, detail: str = "unreachable") -> None:
    """Report that ``registry`` answered from a cache entry fetched at ``since`` (wall seconds),
    with ``ttl`` seconds of freshness left (negative: past); ``detail``: see :attr:`Stale.detail`."""
    report = _current.get()
    if report is not None:
        report.note(registry, since, reason, unreachable_since, ttl, detail)


def cache_status(report: StaleReport) -> str:
    """The ``Cache-Status`` field (RFC 9211) of an answer with stale parts: per registry, a
    ``hit`` whose negative ``ttl`` says how long ago it stopped being fresh, and its ``detail``
    (``unreachable``, ``rematerialising``)."""
    members = []
    for rid, s in sorted(report.by_registry.items()):
        ttl = f"; ttl={round(s.ttl)}" if s.ttl is not None else ""
        members.append(f'"xreg/{rid}"; hit{ttl}; detail={s.detail}')
    return ", ".join(members)


def rfc3339(seconds: float) -> str:
    """Wall seconds as an RFC 3339 UTC timestamp."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
