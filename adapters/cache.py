"""The cache of remote answers (aiocache): in memory by default, Redis when ``cache_url`` is
``redis://…`` so that replicas share it.

Every entry remembers when it was stored; per registry (:class:`RegistryCache`):

* younger than ``cache_ttl``: *fresh*, served as is (a hit);
* up to ``stale_while_revalidate`` later: served at once while a background task fetches it anew
  (a stale hit);
* up to ``stale_if_error`` later: fetched anew, but served when the registry fails (stale on error);
* older: gone (the backend's own expiry).

Keys are ``xreg:<registry>:<fingerprint of its URL>[@<generation>]:<caller>:<what>``; the
*generation* moves when the registry reports a change (:mod:`adapters.remote_events`: the position
of its last event), so every entry stored before it is left unread; ``<caller>`` is a digest
of the caller's credentials for registries whose answers depend on them (``auth.forward``), else
``*``. Concurrent misses of one key in a process share one fetch. A failing backend (Redis down)
never fails a read: it counts as a miss and in ``errors``.

Keys follow what callers ask for (XIDs, filters, cursors) and entries live up to ``cache_ttl +
stale_if_error`` (an hour by default), so the in-process backend holds at most
``cache_memory_entries`` of them: storing one more drops the one stored longest ago.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from aiocache import RedisCache, SimpleMemoryCache
from aiocache.base import BaseCache

from adapters.base import SourceUnavailable
from adapters.clock import SYSTEM_CLOCK, Clock
from xreg import metrics

log = logging.getLogger("xreg.cache")

Fetch = Callable[[], Awaitable[Any]]


class BoundedMemoryCache(SimpleMemoryCache):
    """aiocache's in-process cache holding at most ``max_entries`` keys: a set past the bound
    drops the keys stored longest ago (a key set again counts as stored anew)."""

    def __init__(self, max_entries: int, **kwargs: Any) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        super().__init__(**kwargs)
        self.max_entries = max_entries

    @property
    def entries(self) -> int:
        """How many keys are held (no ``__len__``: an empty cache must stay truthy)."""
        return len(self._cache)

    async def _set(self, key: str, value: Any, ttl: float | None = None, _cas_token: Any = None,
                   _conn: Any = None) -> Any:
        if _cas_token is None:
            self._cache.pop(key, None)  # stored anew: the youngest (its expiry is replaced below)
        done = await super()._set(key, value, ttl=ttl, _cas_token=_cas_token, _conn=_conn)
        while len(self._cache) > self.max_entries:
            await self._delete(next(iter(self._cache)))
        return done


def create_backend(url: str, memory_entries: int = 10_000) -> BaseCache:
    """The aiocache backend of ``cache_url`` (``memory_entries``: the bound of ``memory://``)."""
    if url == "memory://":
        return BoundedMemoryCache(memory_entries)
    parts = urlsplit(url)
    db = parts.path.strip("/") or "0"
    return RedisCache(endpoint=parts.hostname or "127.0.0.1", port=parts.port or 6379, db=int(db),
                      password=unquote(parts.password) if parts.password else None,
                      ssl=parts.scheme == "rediss", timeout=2, create_connection_timeout=2)


#: Each figure of :class:`CacheStats` and its ``result`` label in ``xreg_remote_cache_total``.
RESULTS = {"hits": "hit", "stale_hits": "stale_hit", "misses": "miss", "stale_on_error": "stale_on_error",
           "revalidations": "revalidation", "errors": "error", "invalidations": "invalidation"}


@dataclass
class CacheStats:
    """Figures of one registry's cache since the gateway started (also exported as metrics,
    labelled with ``registry``, when one is named)."""

    hits: int = 0
    stale_hits: int = 0
    misses: int = 0
    stale_on_error: int = 0
    revalidations: int = 0
    errors: int = 0
    #: Times the registry's event log said it changed (see :meth:`RegistryCache.invalidate`).
    invalidations: int = 0
    registry: str | None = field(default=None, repr=False, compare=False)

    def add(self, figure: str, n: int = 1) -> None:
        """Count ``n`` more of ``figure`` (a field name: ``hits``, ``misses``, …)."""
        if n <= 0:
            return
        setattr(self, figure, getattr(self, figure) + n)
        if self.registry is not None:
            metrics.REMOTE_CACHE.labels(self.registry, RESULTS[figure]).inc(n)

    def as_dict(self) -> dict[str, int]:
        out = asdict(self)
        del out["registry"]
        return out


@dataclass(frozen=True)
class Entry:
    """A cached value and whether it is still fresh (else: stale, to be revalidated)."""

    value: Any
    fresh: bool
    revalidate: bool
    #: When it was fetched (wall seconds).
    at: float = 0.0


class RegistryCache:
    """One registry's part of the cache (see the module documentation)."""

    def __init__(self, backend: BaseCache, namespace: str, *, ttl: float, stale_while_revalidate: float,
                 stale_if_error: float, clock: Clock = SYSTEM_CLOCK, registry: str | None = None) -> None:
        """``registry``: the id its figures are exported under (none: not exported)."""
        self.backend = backend
        self.clock = clock
        self.namespace = namespace
        self.ttl = ttl
        self.swr = stale_while_revalidate
        self.sie = max(stale_if_error, stale_while_revalidate)
        self.stats = CacheStats(registry=registry)
        self._inflight: dict[str, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        #: Moved by :meth:`invalidate`: part of every key (``""``: none yet).
        self.generation = ""
        #: Told of every stale answer served: ``(when it was fetched, whether the registry just failed)``.
        self.on_stale: Callable[[float, bool], None] | None = None

    @property
    def enabled(self) -> bool:
        return self.ttl > 0

    def key(self, what: str, caller: str = "*") -> str:
        generation = f"@{self.generation}" if self.generation else ""
        return f"{self.namespace}{generation}:{caller}:{what}"

    def invalidate(self, generation: str) -> None:
        """Leave every entry stored so far unread: keys from now on name ``generation`` (the
        registry's state, e.g. the position of its last event — replicas that saw the same
        event share their entries). A fetch under way stores under the key it was asked with,
        which is no longer read."""
        if generation != self.generation:
            self.generation = generation
            self.stats.add("invalidations")

    # -- raw entries ----------------------------------------------------------------------------
    async def lookup(self, keys: Iterable[str]) -> dict[str, Entry]:
        """The usable entries among ``keys`` (absent: a miss, or too old even for errors)."""
        keys = list(keys)
        if not self.enabled or not keys:
            return {}
        try:
            raw = await self.backend.multi_get(keys)
        except Exception as exc:
            self._backend_error("read", exc)
            return {}
        now, out = self.clock.wall(), {}
        for key, stored in zip(keys, raw, strict=False):
            if not isinstance(stored, dict) or "at" not in stored:
                continue
            age = now - float(stored["at"])
            if age <= self.ttl + self.sie:
                out[key] = Entry(stored.get("v"), age <= self.ttl, self.ttl < age <= self.ttl + self.swr,
                                 float(stored["at"]))
        return out

    async def store(self, values: dict[str, Any]) -> None:
        """Remember ``values`` (JSON-compatible) from now on."""
        if not self.enabled or not values:
            return
        now = self.clock.wall()
        try:
            await self.backend.multi_set([(k, {"at": now, "v": v}) for k, v in values.items()],
                                         ttl=float(self.ttl + self.sie))
        except Exception as exc:
            self._backend_error("write", exc)

    def count(self, entries: dict[str, Entry], wanted: int) -> None:
        """Count the hits, stale hits and misses of a :meth:`lookup` of ``wanted`` keys."""
        self.stats.add("hits", sum(1 for e in entries.values() if e.fresh))
        self.stats.add("stale_hits", sum(1 for e in entries.values() if not e.fresh and e.revalidate))
        self.stats.add("misses", wanted - sum(1 for e in entries.values() if e.fresh or e.revalidate))

    # -- one value ------------------------------------------------------------------------------
    async def get(self, key: str, fetch: Fetch) -> Any:
        """The value of ``key``: cached (fresh, or stale while revalidating), else fetched and
        stored; a stale value when the fetch fails with :class:`SourceUnavailable`."""
        if not self.enabled:
            return await fetch()
        entry = (await self.lookup([key])).get(key)
        self.count({key: entry} if entry else {}, 1)
        if entry is not None and entry.fresh:
            return entry.value
        if entry is not None and entry.revalidate:
            self.background(key, fetch)
            self.served_stale(entry, failed=False)
            return entry.value
        try:
            return await self._single_flight(key, fetch)
        except SourceUnavailable:
            if entry is None:
                raise
            self.stats.add("stale_on_error")
            self.served_stale(entry, failed=True)
            return entry.value

    def served_stale(self, entry: Entry, *, failed: bool) -> None:
        """Tell :attr:`on_stale` that ``entry`` was served stale (``failed``: because the registry failed)."""
        if self.on_stale is not None:
            self.on_stale(entry.at, failed)

    def background(self, key: str, fetch: Fetch) -> None:
        """Fetch ``key`` anew in the background (once at a time), keeping the old value on failure."""
        if key in self._inflight:
            return
        self.stats.add("revalidations")

        async def run() -> None:
            try:
                await self._single_flight(key, fetch)
            except SourceUnavailable as exc:
                log.info("revalidating %s failed: %s", key, exc.reason)
            except Exception:
                log.exception("revalidating %s failed", key)

        self.spawn(run())

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` in the background (cancelled by :meth:`close`)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _single_flight(self, key: str, fetch: Fetch) -> Any:
        running = self._inflight.get(key)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            value = await fetch()
            await self.store({key: value})
            future.set_result(value)
            return value
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody else needs to
            raise
        finally:
            del self._inflight[key]

    async def settle(self) -> None:
        """Wait for the background revalidations under way."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """Stop background revalidation."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _backend_error(self, what: str, exc: Exception) -> None:
        self.stats.add("errors")
        if self.stats.errors == 1 or self.stats.errors % 100 == 0:
            log.warning("cache %s failed (%d so far): %s: %s", what, self.stats.errors, type(exc).__name__, exc)


def caller_digest(credentials: str | None) -> str:
    """The cache-key part naming a caller: a digest of their credentials (never the credentials)."""
    if not credentials:
        return "anonymous"
    return hashlib.sha256(credentials.encode()).hexdigest()[:24]


def fingerprint(*parts: str) -> str:
    """A short digest of a registry's identity (its URL): entries of an old URL are never reused."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
