"""Per-request batch loaders: every entity and every nested page a query needs, batched
(:class:`~adapters.batch_loader.BatchLoader`).

All loads issued while a level of the query resolves are served together: entities by XID with
one :meth:`~adapters.base.RegistrySource.get_many` per registry and revision, nested pages with
one :meth:`~adapters.base.RegistrySource.list_children` per registry and listing, full views
(collection counts) with one :meth:`~adapters.base.RegistrySource.complete` per registry. So the number
of source (and store) calls grows with the depth of a query, not with the size of its pages.

A paced list completion (``resolvers/pacing.py``) lets the event loop run in the middle of a
level; while it does, the request's :class:`~resolvers.pacing.Hold` is taken and the loaders
(:class:`HeldLoader`) keep their batches open, so that a level's loads still go out together.
The hold is taken too while a level's references are read at once from the gateway's own store
(:meth:`~adapters.batching.EntityBatcher.fetch`), so the loads issued with what they found join
the level's batches however many loop turns the read took; never while a remote's answer is
awaited (its keys join the loop turn's batch instead). References a page's nodes will follow are
read ahead from remote registries (:meth:`settle`'s ``read_ahead``, ``resolvers/types/ahead.py``).

Every message handed out is materialised (:meth:`Loaders.settle`, the request's
:class:`~adapters.request.Materialiser`, shared with the bulk rows): a chain that leaves its
registry is completed through the reference rules, the chains of a page advancing together, one
batch per registry per step (``adapters.effective``).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from adapters.base import Entity, Listing, RegistrySource, SourcePage
from adapters.batch_loader import BatchLoader
from adapters.batching import EntityBatcher
from adapters.references import References
from adapters.request import Materialiser
from resolvers.gathering import BatchFuture, batch_done, gather
from resolvers.pacing import Hold

#: ``(registry, as_of, XID as written)``; matched case-insensitively
EntityKey = tuple[str, "int | None", str]
#: ``(registry, parent XID as written, listing)``
ChildrenKey = tuple[str, str, Listing]


class HeldLoader(BatchLoader[Any, Any]):
    """A batch loader of the request's (:class:`~adapters.batch_loader.BatchLoader`), whose
    batches are not sent while ``hold`` is taken, and whose futures (:class:`BatchFuture`) wake
    the gathers waiting on them once per batch (:func:`batch_done`).

    A batch is sent by a task created with its first load, whose first step runs in the next
    loop turn (so the loads issued in this one join the batch); the task first waits for the hold
    to be released, and the batch takes more loads meanwhile. Without a taken hold the wait
    returns at once.
    """

    def __init__(self, load_fn: Any, hold: Hold, cache_key_fn: Any = None) -> None:
        super().__init__(load_fn, cache_key_fn=cache_key_fn, hold=hold, future=BatchFuture, batch_done=batch_done)


class Loaders:
    """The loaders of one request. A registry that fails (a remote that is down) fails only the
    loads addressed to it. ``hold`` keeps their batches open while it is taken."""

    def __init__(self, sources: Mapping[str, RegistrySource], references: Callable[[], References],
                 hold: Hold | None = None) -> None:
        self.sources = sources
        self.references = references
        hold = hold or Hold()

        def loader(load_fn: Any, **options: Any) -> HeldLoader:
            return HeldLoader(load_fn, hold, **options)

        self.batcher = EntityBatcher(sources, loader, hold)
        self.entities: BatchLoader[EntityKey, Entity | None] = self.batcher.loader
        self.materialiser = Materialiser(self.batcher, references, gather)
        self.children: BatchLoader[ChildrenKey, SourcePage] = loader(self._children)
        self.views: BatchLoader[Entity, dict] = loader(
            self._views, cache_key_fn=lambda e: (e.registry, e.as_of, e.xid.lower()))

    def release(self) -> None:
        """Forget everything loaded, once the request's response is built (the executor) or the
        request ends otherwise (the HTTP layer, :meth:`Context.close`). The loaders and the
        request's context refer to each other, so without this the whole response's entities
        would wait for the cycle collector (a full collection, under load) instead of being
        freed at once."""
        for loader in (self.entities, self.children, self.views):
            loader.clear()
        self.batcher.primed.clear()
        self.materialiser.clear()

    async def entity(self, registry: str, xid: str, as_of: int | None) -> Entity | None:
        """One entity by XID (``None`` when it does not exist), materialised."""
        entity = await self.batcher.load(registry, xid, as_of)
        return await self.materialiser.settled(entity) if entity is not None else None

    async def read(self, keys: list[EntityKey]) -> list[Entity | BaseException | None]:
        """Entities by ``(registry, as_of, XID)``, in order, read now as a step of their own
        (:meth:`EntityBatcher.fetch`: no batch to wait for), materialised: per key the entity,
        ``None`` (it does not exist), or the exception its registry failed with."""
        found = await self.batcher.fetch(keys)
        settled = iter(await self.settle([e for e in found if isinstance(e, Entity)]))
        return [next(settled) if isinstance(e, Entity) else e for e in found]

    async def many(self, registry: str, xids: list[str], as_of: int | None) -> list[Entity | None]:
        """Several entities by XID, in order, materialised."""
        found = await self.batcher.load_many([(registry, as_of, x) for x in xids])
        return await gather(*(self.materialiser.settled(e) if e is not None else _none() for e in found))

    async def settle(self, entities: list[Entity],
                     read_ahead: Callable[[Sequence[Entity]], None] | None = None) -> list[Entity]:
        """``entities`` with the materialisation of their messages completed across registries.

        With ``read_ahead`` (a page's, ``resolvers/types/ahead.py``) the remote loads known from
        the entities alone go out at once, before their chains are followed: the first base of
        each chain and what ``read_ahead`` names for them. A message whose chain was followed
        is given to ``read_ahead`` again as soon as its completion is (what it inherits is known
        then), with the others completed in the same loop turn: a remote's answer brings on the
        loads that depend on it without waiting for the other remotes'."""
        if read_ahead is None:
            return await self.materialiser.settle(entities)
        bases = self.materialiser.ahead(entities)
        if bases:
            self.batcher.read_ahead(bases)
        read_ahead(entities)
        completing = [f for f in map(self.materialiser.completing, entities) if f is not None]
        if not completing:
            return entities
        pending = dict.fromkeys(completing)  # (ordered) not read for yet
        done: list[asyncio.Future[Entity]] = []  # completed, to be read for with this turn's others
        live = [True]  # not once the settling is over: nothing is read for it then

        def ahead() -> None:
            if done and live[0]:
                completed = [f.result() for f in done]
                done.clear()
                read_ahead(completed)

        def completed(future: asyncio.Future[Entity]) -> None:
            if not live[0] or future not in pending:
                return
            del pending[future]
            if future.cancelled() or future.exception() is not None:
                return
            if not done:
                asyncio.get_running_loop().call_soon(ahead)  # after the others of this loop turn
            done.append(future)

        for future in completing:
            if future.done():  # completed for an earlier read
                completed(future)
            else:
                future.add_done_callback(completed)
        try:
            settled = await self.materialiser.settle(entities)
            for future in list(pending):  # done, their callbacks not run yet: read for now, before
                if future.done():         # the page's next level asks for what they reference
                    completed(future)
            ahead()
            return settled
        finally:
            live[0] = False
            for future in completing:
                future.remove_done_callback(completed)

    def prime(self, entities: list[Entity]) -> None:
        """Remember entities read by a page, so that later look-ups of them are free."""
        self.batcher.prime(entities)

    async def _views(self, entities: list[Entity]) -> list[dict | BaseException]:
        groups: dict[str, list[Entity]] = defaultdict(list)
        for e in entities:
            groups[e.registry].append(e)
        found = await gather(*(_outcome(self.sources[r].complete(es)) for r, es in groups.items()))
        by_key: dict[tuple, dict | BaseException] = {}
        for es, vs in zip(groups.values(), found, strict=False):
            for i, e in enumerate(es):
                by_key[(e.registry, e.as_of, e.xid.lower())] = vs if isinstance(vs, BaseException) else vs[i]
        return [by_key[(e.registry, e.as_of, e.xid.lower())] for e in entities]

    async def _children(self, keys: list[ChildrenKey]) -> list[SourcePage | BaseException]:
        groups: dict[tuple[str, Listing], list[str]] = defaultdict(list)
        for registry, parent, listing in keys:
            groups[(registry, listing)].append(parent)
        found = await gather(*(self.children_of(r, listing, parents) for (r, listing), parents in groups.items()))
        by_group = dict(zip(groups, found, strict=False))
        pages: list[SourcePage | BaseException] = []
        for r, parent, listing in keys:
            result = by_group[(r, listing)]
            pages.append(result if isinstance(result, BaseException) else result[parent.lower()])
        return pages

    async def children_of(self, registry: str, listing: Listing, parents: list[str],
                          read_ahead: Callable[[Sequence[Entity]], None] | None = None,
                          ) -> dict[str, SourcePage] | BaseException:
        """The pages of ``parents`` (by lower-case XID) under one listing, read at once (one
        :meth:`~adapters.base.RegistrySource.list_children`; not cached), their entities
        remembered and their messages materialised (``read_ahead``: as :meth:`settle`'s); or the
        exception that failed the read."""
        try:
            pages = await self.sources[registry].list_children(parents, listing)
        except Exception as exc:
            return exc
        for page in pages.values():
            self.prime(page.items)
        settled = iter(await self.settle([e for page in pages.values() for e in page.items],  # all chains at once
                                         read_ahead))
        for page in pages.values():
            page.items = [next(settled) for _ in page.items]
        return pages


async def _none() -> None:
    return None


async def _outcome(awaitable: Awaitable[Any]) -> Any:
    """What ``awaitable`` returns, or the exception it raises (one registry's failure)."""
    try:
        return await awaitable
    except Exception as exc:
        return exc
