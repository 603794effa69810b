"""Readiness (``/readyz``): whether this gateway process should get traffic.

Ready when the store answers and takes a write now (:meth:`~xreg.storage.base.Store.check_ready`:
SQLite's file still in place and writable and a write transaction rolled back; MongoDB's ``ping``
and a small write) and the settings are loaded. Remote registries are reported with their
health and circuit breaker but never make the gateway unready: their failures cost only their
own data. ``/healthz`` stays the liveness probe (the process serves).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.base import SourceStatus
from gateway.logs import redact
from xreg.storage.base import Store

#: Seconds the store may take to answer the readiness check.
STORE_TIMEOUT_SECONDS = 3.0


@dataclass
class Readiness:
    """The verdict and the body of ``/readyz``."""

    ready: bool
    body: dict[str, Any]


async def check(store: Store, sources: Sequence[SourceStatus], *, last_reload_error: str | None = None,
                store_seconds: float = STORE_TIMEOUT_SECONDS) -> Readiness:
    """Check the store (given ``store_seconds`` to answer); report the settings and the remote
    registries (not gating)."""
    started = time.perf_counter()
    store_check: dict[str, Any] = {"backend": type(store).__name__}
    probe = asyncio.ensure_future(store.check_ready())
    probe.add_done_callback(lambda t: t.cancelled() or t.exception())  # a late failure is not "unretrieved"
    try:
        async with asyncio.timeout(store_seconds):  # the probe itself runs to its end: never cut a transaction short
            await asyncio.shield(probe)
        store_check["ok"] = True
    except TimeoutError:
        store_check["ok"] = False
        store_check["error"] = f"the store did not answer within {store_seconds:g} s"
    except Exception as exc:
        store_check["ok"] = False
        store_check["error"] = redact(f"{type(exc).__name__}: {exc}")[:500]
    store_check["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
    settings_check: dict[str, Any] = {"ok": True}
    if last_reload_error:
        settings_check["last_reload_error"] = redact(last_reload_error)[:500]
    registries = [{"id": s.registry, "kind": s.kind, "healthy": s.healthy, "breaker": s.breaker,
                   "last_error": redact(s.last_error) if s.last_error else None}
                  for s in sources if s.kind != "local"]
    ready = bool(store_check["ok"]) and settings_check["ok"]
    return Readiness(ready, {"status": "ready" if ready else "unavailable",
                             "checks": {"store": store_check, "settings": settings_check},
                             "registries": registries})
