"""A per-request batch loader: the loads one step of a request issues, served by one call.

:meth:`BatchLoader.load` returns a future. Every load issued before the loader's batch goes out
joins it: the batch goes out in the next turn of the event loop — or, while the loader's ``hold``
is taken, once it is given back — and is served by one call of ``load_fn`` with its keys in
order. ``load_fn`` answers one value per key (an exception for a key that failed); when it
raises, every load of the batch fails with that. Each key is loaded once per request (cached by
``cache_key_fn``), unless its load was cancelled. :meth:`BatchLoader.load_now` sends keys read
ahead as a batch of their own per *group* (the keys one call of ``load_fn`` serves apart from the
others: a registry's), in the next turn whatever the ``hold``, each group's loads set as soon as
its own call answers.

The GraphQL layer makes the futures (``future``, a subclass of ``asyncio.Future``) and is told
when a batch's futures are all set (``batch_done``): its gathers are woken once per batch
(``resolvers/gathering.py``), not by a callback per load.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, Generic, Protocol, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Hold(Protocol):
    """What keeps a request's batches open while it is taken (``resolvers.pacing.Hold``)."""

    def take(self) -> None: ...

    def give(self) -> None: ...

    def released(self) -> Awaitable[None]: ...


class _Batch:
    """The loads waiting to go out together: keys and futures, in the order they were issued."""

    __slots__ = ("dispatched", "futures", "keys", "task")

    def __init__(self) -> None:
        self.keys: list[Any] = []
        self.futures: list[asyncio.Future[Any]] = []
        self.dispatched = False
        #: the task sending it (kept while it runs)
        self.task: asyncio.Task[None] | None = None


class BatchLoader(Generic[K, V]):
    """Batched, cached loads through ``load_fn`` (see the module)."""

    def __init__(
        self, load_fn: Callable[[list[K]], Awaitable[Sequence[V | BaseException]]], *,
        cache_key_fn: Callable[[K], Hashable] | None = None, hold: Hold | None = None,
        future: type[asyncio.Future[Any]] = asyncio.Future,
        batch_done: Callable[[asyncio.AbstractEventLoop], None] | None = None,
    ) -> None:
        self.load_fn = load_fn
        self.hold = hold
        self._key_of = cache_key_fn
        self._future = future
        self._batch_done = batch_done
        #: the loads of the request, by cache key
        self._futures: dict[Hashable, asyncio.Future[V]] = {}
        #: the batch that takes the next load (``None``, or dispatched: a new one is started)
        self.batch: _Batch | None = None
        #: per group, the batch of loads read ahead that takes the next ones (:meth:`load_now`)
        self._now: dict[Hashable, _Batch] = {}

    def _cache_key(self, key: K) -> Hashable:
        return key if self._key_of is None else self._key_of(key)

    def load(self, key: K) -> asyncio.Future[V]:
        """The future of ``key``'s value: the one cached, or a new load joining the open batch."""
        cache_key = self._cache_key(key)
        cached = self._futures.get(cache_key)
        if cached is not None and not cached.cancelled():
            return cached
        loop = asyncio.get_running_loop()
        future: asyncio.Future[V] = self._future(loop=loop)
        self._futures[cache_key] = future
        batch = self.batch
        if batch is None or batch.dispatched:
            batch = self.batch = _Batch()
            # its first step is in the next loop turn: the loads issued in this one join the batch
            batch.task = loop.create_task(self._dispatch(batch))
        batch.keys.append(key)
        batch.futures.append(future)
        return future

    def load_now(self, keys: Sequence[K], group: Hashable = None) -> list[asyncio.Future[V]]:
        """Load those of ``keys`` not loaded yet apart from :meth:`load`'s batches, sent in the
        next loop turn even while the ``hold`` is taken (loads read ahead, all known at once: what
        the hold waits for would not join them); their futures are cached as :meth:`load`'s. The
        keys of one ``group`` given in the same loop turn go out together, each group in a batch
        of its own (answered as soon as its own ``load_fn`` call is: a registry's loads do not wait
        for another's). Returns the futures of the loads it started."""
        loop = asyncio.get_running_loop()
        running = self._now.get(group)
        batch = running if running is not None and not running.dispatched else _Batch()
        fresh = batch is not running
        started: list[asyncio.Future[V]] = []
        for key in keys:
            cache_key = self._cache_key(key)
            cached = self._futures.get(cache_key)
            if cached is not None and not cached.cancelled():
                continue
            future: asyncio.Future[V] = self._future(loop=loop)
            self._futures[cache_key] = future
            batch.keys.append(key)
            batch.futures.append(future)
            started.append(future)
        if fresh and batch.keys:
            self._now[group] = batch
            batch.task = loop.create_task(self._dispatch(batch, held=False))
        return started

    def cached(self, key: K) -> asyncio.Future[V] | None:
        """The future of ``key``'s load when it was loaded (or is being loaded) or remembered."""
        return self._futures.get(self._cache_key(key))

    def remember(self, key: K, future: asyncio.Future[V]) -> None:
        """Take ``future`` as ``key``'s load (a value read otherwise, or why it failed)."""
        self._futures[self._cache_key(key)] = future

    def clear(self) -> None:
        """Forget every load (the request is over)."""
        self._futures.clear()
        self._now.clear()
        self.batch = None

    async def _dispatch(self, batch: _Batch, held: bool = True) -> None:
        loop = asyncio.get_running_loop()
        try:
            if held and self.hold is not None:
                await self.hold.released()
            batch.dispatched = True
            futures = batch.futures
            if all(f.cancelled() for f in futures):  # nobody waits: no call
                return
            try:
                values = list(await self.load_fn(batch.keys))
                if len(values) != len(futures):
                    raise ValueError(f"the batch load answered {len(values)} values for {len(futures)} keys")
            except Exception as exc:
                for f in futures:
                    if not f.done():
                        f.set_exception(exc)
                return
            for f, value in zip(futures, values, strict=True):
                if f.done():
                    continue
                if isinstance(value, BaseException):
                    f.set_exception(value)
                else:
                    f.set_result(value)
        finally:
            batch.task = None
            if self._batch_done is not None:
                self._batch_done(loop)  # its futures are set: the gathers waiting on them go on
