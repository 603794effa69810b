"""Per-request batching of entity loads across registries (a :class:`~adapters.batch_loader.BatchLoader`).

Every ``load(registry, xid)`` issued while one step of a request runs — the references of a
page of entities, the bases of a page of messages — is served together: one
:meth:`~adapters.base.RegistrySource.get_many` per registry and revision, all registries in
parallel. So resolving references costs one round trip per step, about the latency of the
slowest registry, and each entity is asked for at most once per request.

XIDs are matched case-insensitively but handed to the sources as written (a remote's paths are
case-sensitive). A registry that fails fails only its own loads.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from adapters.base import Entity, RegistrySource
from adapters.batch_loader import BatchLoader, Hold

#: ``(registry, as_of, XID as written)``
Key = tuple[str, "int | None", str]


class EntityBatcher:
    """Batched, cached entity loads of one request."""

    def __init__(self, sources: Mapping[str, RegistrySource],
                 loader: Callable[..., BatchLoader[Any, Any]] = BatchLoader, hold: Hold | None = None) -> None:
        """``loader`` makes the batch loader (the request's, whose batches ``hold`` keeps open);
        ``hold``, the loaders' hold, is taken while :meth:`fetch` reads."""
        self.sources = sources
        self.hold = hold
        self.loader: BatchLoader[Key, Entity | None] = loader(
            self._load, cache_key_fn=lambda k: (k[0], k[1], k[2].lower()))
        #: entities read otherwise (pages), by ``(registry, as_of, lower-case XID)``
        self.primed: dict[Key, Entity] = {}

    async def load(self, registry: str, xid: str, as_of: int | None = None) -> Entity | None:
        """One entity (``None``: it does not exist); :class:`~adapters.base.SourceUnavailable`
        when its registry cannot be read."""
        found = self.primed.get((registry, as_of, xid.lower()))
        return found if found is not None else await self.loader.load((registry, as_of, xid))

    async def load_many(self, keys: list[Key]) -> list[Entity | None]:
        """Several entities by ``(registry, as_of, XID)``, in order, in one batch."""
        found = self.lookup(keys)
        loading = [e for e in found if isinstance(e, asyncio.Future)]
        if loading:
            await asyncio.gather(*loading)  # the first failure is raised (and every one retrieved)
        return [e.result() if isinstance(e, asyncio.Future) else e for e in found]

    def lookup(self, keys: list[Key]) -> list[Entity | asyncio.Future[Entity | None]]:
        """Per ``(registry, as_of, XID)``: the entity when it is known already, else the future
        of its load (joining the running batch), for a caller that waits for them all at once."""
        primed = self.primed
        out: list[Entity | asyncio.Future[Entity | None]] = []
        for key in keys:
            found = primed.get((key[0], key[1], key[2].lower()))
            out.append(found if found is not None else self.loader.load(key))
        return out

    def read_ahead(self, keys: list[Key]) -> None:
        """Start loading ``(registry, as_of, XID)`` keys a later step will ask for (references
        read ahead): those the request does not know yet go out in the next loop turn, with the
        others read ahead in this one, one batch per registry and revision
        (:meth:`~adapters.batch_loader.BatchLoader.load_now`: a registry's loads are set as soon
        as it answers, not when the slowest registry does), and the later loads find them under
        way. Only the keys of remote registries (:attr:`~adapters.base.RegistrySource.round_trip`)
        are read ahead: a registry of this process answers when asked. A failure is left to the
        load that asks for it."""
        primed, sources = self.primed, self.sources
        groups: dict[tuple[str, int | None], list[Key]] = {}
        for key in keys:
            source = sources.get(key[0])
            if source is not None and source.round_trip and (key[0], key[1], key[2].lower()) not in primed:
                groups.setdefault((key[0], key[1]), []).append(key)
        for group, members in groups.items():
            for future in self.loader.load_now(members, group):
                future.add_done_callback(_retrieved)

    async def fetch(self, keys: list[Key]) -> list[Entity | BaseException | None]:
        """Per ``(registry, as_of, XID)``, in order: the entity (``None``: it does not exist), or
        the exception its registry failed with. For a caller that has every load of a step at
        once (the references of a whole level). Those the request knows already (read by a page,
        loaded, or being loaded) come from there. The others of a registry in this process are
        read now, as a batch of their own (no loader batch gathers them over a loop turn), with
        one :meth:`~adapters.base.RegistrySource.get_many` per registry and revision, and
        remembered for the rest of the request; while they are read, the request's loaders keep
        their batches open (``hold``), so the loads the caller then issues with what it found (a
        schema's version after the schema) join the loads of the same step instead of following
        them in a batch of their own. Those of a remote registry
        (:attr:`~adapters.base.RegistrySource.round_trip`) join the loader's batch instead (one
        request per remote collection with the other loads of the same loop turn), and nothing
        is held meanwhile: a step's other loads never wait for a remote's answer."""
        primed, loader = self.primed, self.loader
        out: list[Any] = [None] * len(keys)
        loading: list[tuple[int, asyncio.Future[Entity | None]]] = []
        reading: dict[Key, list[int]] = {}  # by case-folded key: the places that want it
        written: list[Key] = []  # the first of each as written (a remote's paths are case-sensitive)
        for index, key in enumerate(keys):
            folded = (key[0], key[1], key[2].lower())
            found = primed.get(folded)
            if found is not None:
                out[index] = found
                continue
            future = loader.cached(key)
            if future is None or future.cancelled():
                source = self.sources.get(key[0])
                if source is not None and source.round_trip:
                    future = loader.load(key)
            if future is not None and not future.cancelled():
                loading.append((index, future))
            elif folded in reading:
                reading[folded].append(index)
            else:
                reading[folded] = [index]
                written.append(key)
        if reading:
            hold = self.hold
            if hold is not None:
                hold.take()
            try:
                read = await self._load(written)
            finally:
                if hold is not None:
                    hold.give()  # released one loop turn later: the caller's next loads join first
            loop = asyncio.get_running_loop()
            for folded, value in zip(reading, read, strict=True):
                for index in reading[folded]:
                    out[index] = value
                if isinstance(value, Entity):
                    primed[folded] = value
                    continue
                remembered = loop.create_future()  # that it does not exist, or why it failed
                if isinstance(value, BaseException):
                    remembered.set_exception(value)
                    remembered.exception()  # retrieved: a later load raises it itself
                else:
                    remembered.set_result(None)
                loader.remember(folded, remembered)
        if loading:
            await asyncio.gather(*(f for _, f in loading), return_exceptions=True)
            for index, future in loading:
                out[index] = future.exception() or future.result()
        return out

    def prime(self, entities: list[Entity]) -> None:
        """Remember entities read otherwise (a page), so that loading them again is free."""
        primed = self.primed
        for e in entities:
            primed.setdefault((e.registry, e.as_of, e.xid.lower()), e)

    async def _load(self, keys: list[Key]) -> list[Entity | BaseException | None]:
        groups: dict[tuple[str, int | None], list[str]] = defaultdict(list)
        for registry, as_of, xid in keys:
            groups[(registry, as_of)].append(xid)

        async def one(registry: str, as_of: int | None, xids: list[str]) -> dict[str, Entity] | BaseException:
            source = self.sources.get(registry)
            if source is None:
                return {}
            try:
                return await source.get_many(xids, as_of)
            except Exception as exc:
                return exc

        if len(groups) == 1:  # one registry (and revision), the usual case: no task to gather
            ((registry, as_of), xids), = groups.items()
            found = [await one(registry, as_of, xids)]
        else:
            found = await asyncio.gather(*(one(r, a, xs) for (r, a), xs in groups.items()))
        by_group = dict(zip(groups, found, strict=False))
        out: list[Entity | BaseException | None] = []
        for registry, as_of, xid in keys:
            result = by_group[(registry, as_of)]
            out.append(result if isinstance(result, BaseException) else result.get(xid.lower()))
        return out


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A load read ahead that failed: the load that asks for it reports the failure (if the
    request still wants it), not an unretrieved exception meanwhile."""
    if not future.cancelled():
        future.exception()
