"""Snapshots of a remote registry, kept in the cache backend so that every gateway process and
replica sharing it (Redis, ``cache_url: redis://…``) reads the same ones.

A remote has no revisions; reading its revision *mints* a snapshot (:meth:`SnapshotStore.mint`):
a number from a counter in the backend, increasing per remote from 1. What is read under a
snapshot is *held* (:meth:`SnapshotStore.hold`, :meth:`SnapshotStore.hold_many`): the first
process to need a value fetches it and adds it to the backend only if no other process added it
first (``SET NX``); every process then uses the value the backend holds, so all of them answer
from one state. Held values never change, so each process also keeps the values it read, for
the snapshots it uses, in memory (at most ``most`` snapshots).

Keys, below ``<namespace>:snap`` (the remote's cache namespace): ``seq`` (the counter, no
expiry), ``<n>`` (the snapshot's record: when it was last used), ``<n>:d:<digest>`` (a held
value), ``<n>:count`` and ``<n>:k:<i>`` (the list of held keys, appended with an atomic counter).

A snapshot lives ``ttl`` seconds after its last use — uses are recorded at most every
``ttl / 20`` seconds, so it may go up to a twentieth sooner — and then reads of it are refused;
the backend's own expiry (``ttl`` and a margin, renewed for every held key when a use is
recorded) removes what nobody uses any more. Minting keeps at most ``most`` live: the least
recently used of the ``2 × most`` snapshots minted before go first, and older ones all go. A
backend that cannot be reached fails the read (a snapshot cannot be kept consistent without it).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiocache.base import BaseCache

from adapters.clock import SYSTEM_CLOCK, Clock


class SnapshotGone(LookupError):
    """The snapshot was never minted, or has expired or been dropped."""


class SnapshotStoreError(RuntimeError):
    """The backend holding the snapshots failed."""


class SnapshotStore:
    """One remote's snapshots in a cache backend (see the module documentation)."""

    def __init__(self, backend: BaseCache, namespace: str, *, ttl: float, most: int,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.backend = backend
        self.prefix = namespace + ":snap"
        self.ttl = ttl
        self.most = most
        self.clock = clock
        #: How stale a snapshot's recorded last use may get before a use records it again.
        self.refresh = ttl / 20
        #: The backend's expiry of every key of a snapshot (whole seconds, as Redis wants them),
        #: renewed when a use is recorded.
        self.expiry = math.ceil(ttl + 2 * self.refresh + 1)
        #: Held values this process has read: snapshot -> what -> value (least recently used first).
        self._local: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._inflight: dict[tuple[int, str], asyncio.Future[Any]] = {}

    # -- keys ---------------------------------------------------------------------------------------
    def _record(self, n: int) -> str:
        return f"{self.prefix}:{n}"

    def _data(self, n: int, what: str) -> str:
        return f"{self.prefix}:{n}:d:{hashlib.sha256(what.encode()).hexdigest()[:32]}"

    async def _call(self, op: Awaitable[Any]) -> Any:
        try:
            return await op
        except (SnapshotGone, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise SnapshotStoreError(f"the snapshot store failed: {type(exc).__name__}: {exc}") from exc

    # -- life cycle ---------------------------------------------------------------------------------
    async def mint(self) -> int:
        """A new snapshot's number (dropping what it displaces, see the module doc)."""
        n = int(await self._call(self.backend.increment(f"{self.prefix}:seq")))
        now = self.clock.wall()
        await self._call(self.backend.set(self._record(n), {"used": now}, ttl=self.expiry))
        window = list(range(max(1, n - 2 * self.most), n))
        records = await self._call(self.backend.multi_get([self._record(i) for i in window])) if window else []
        live, dead = [], []
        for i, record in zip(window, records, strict=False):
            if isinstance(record, dict) and now - float(record.get("used", 0)) <= self.ttl:
                live.append((float(record["used"]), i))
            elif record is not None:
                dead.append(i)
        live.sort()
        dead += [i for _, i in live[:max(0, len(live) - (self.most - 1))]]
        if n - 2 * self.most >= 1:
            dead.append(n - 2 * self.most)
        for i in dead:
            await self.drop(i)
        return n

    async def use(self, n: int) -> None:
        """Mark snapshot ``n`` used; :class:`SnapshotGone` when it is not live."""
        record = await self._call(self.backend.get(self._record(n)))
        now = self.clock.wall()
        if not isinstance(record, dict) or now - float(record.get("used", 0)) > self.ttl:
            self._local.pop(n, None)
            raise SnapshotGone(n)
        if n in self._local:
            self._local.move_to_end(n)
        if now - float(record["used"]) > self.refresh:
            await self._call(self.backend.set(self._record(n), {"used": now}, ttl=self.expiry))
            for key in await self._held_keys(n):
                await self._call(self.backend.expire(key, self.expiry))

    async def drop(self, n: int) -> None:
        """Forget snapshot ``n`` and everything held under it."""
        self._local.pop(n, None)
        keys = await self._held_keys(n)
        for key in [self._record(n), *keys]:
            await self._call(self.backend.delete(key))

    async def _held_keys(self, n: int) -> list[str]:
        """Every backend key of snapshot ``n`` but its record: the held values and their list."""
        count = await self._call(self.backend.get(f"{self.prefix}:{n}:count"))
        entries = [f"{self.prefix}:{n}:k:{i}" for i in range(1, int(count or 0) + 1)]
        names = await self._call(self.backend.multi_get(entries)) if entries else []
        return [f"{self.prefix}:{n}:count", *entries, *(name for name in names if isinstance(name, str))]

    # -- held values --------------------------------------------------------------------------------
    def _remember(self, n: int, values: dict[str, Any]) -> None:
        self._local.setdefault(n, {}).update(values)
        self._local.move_to_end(n)
        while len(self._local) > self.most:
            self._local.popitem(last=False)

    async def hold(self, n: int, what: str, fetch: Callable[[], Awaitable[Any]]) -> Any:
        """The value held for ``what`` under snapshot ``n``; fetched and held when it has none
        (concurrent callers in this process share one fetch). A failed fetch holds nothing."""
        local = self._local.get(n)
        if local is not None and what in local:
            return local[what]
        running = self._inflight.get((n, what))
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[(n, what)] = future
        try:
            async def fetch_one(missing: Sequence[str]) -> dict[str, Any]:
                return {what: await fetch()}

            value = (await self.hold_many(n, [what], fetch_one))[what]
            future.set_result(value)
            return value
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved: waiters re-raise it
            raise
        finally:
            del self._inflight[(n, what)]

    async def hold_many(
        self, n: int, whats: Sequence[str], fetch: Callable[[Sequence[str]], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """The values held for ``whats`` under snapshot ``n``; those it has none for are fetched
        together (``fetch`` answers every one of them, or raises) and held."""
        local = self._local.get(n, {})
        out = {w: local[w] for w in whats if w in local}
        rest = [w for w in whats if w not in out]
        if rest:
            stored = await self._call(self.backend.multi_get([self._data(n, w) for w in rest]))
            for w, entry in zip(rest, stored, strict=False):
                if isinstance(entry, dict) and "v" in entry:
                    out[w] = entry["v"]
            missing = [w for w in rest if w not in out]
            if missing:
                fetched = await fetch(missing)
                for w in missing:
                    out[w] = await self._add(n, w, fetched[w])
            self._remember(n, {w: out[w] for w in rest})
        return out

    async def _add(self, n: int, what: str, value: Any) -> Any:
        """Hold ``value`` unless another process held one first; the value held either way."""
        key = self._data(n, what)
        try:
            await self.backend.add(key, {"v": value}, ttl=self.expiry)
        except ValueError:  # held by another process meanwhile: theirs it is
            entry = await self._call(self.backend.get(key))
            if not (isinstance(entry, dict) and "v" in entry):
                raise SnapshotGone(n) from None
            return entry["v"]
        except Exception as exc:
            raise SnapshotStoreError(f"the snapshot store failed: {type(exc).__name__}: {exc}") from exc
        i = int(await self._call(self.backend.increment(f"{self.prefix}:{n}:count")))
        await self._call(self.backend.set(f"{self.prefix}:{n}:k:{i}", key, ttl=self.expiry))
        await self._call(self.backend.expire(f"{self.prefix}:{n}:count", self.expiry))
        return value

    def clear(self) -> None:
        """Forget what this process keeps in memory (the backend keeps its copy)."""
        self._local.clear()
