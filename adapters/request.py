"""What one request reads, shared by GraphQL's loaders and the bulk rows: a snapshot of the
registries served, their reference rules, and its messages materialised across registries.

The application hands the registries down as a :class:`Served` (the federation, or one registry
alone: :class:`OneRegistry`); a request takes its :class:`RequestSources` once, so a reload does
not change a request under way. :class:`Materialiser` completes the materialisation of the
messages it hands out (``adapters.effective``), each chain once per request, the chains of a
page advancing together through the request's batched entity loads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import cached_property
from typing import Any, Protocol

from adapters.base import Entity, RegistrySource
from adapters.batching import EntityBatcher
from adapters.caller import ANONYMOUS, Caller
from adapters.effective import MESSAGE_TYPES, complete, first_step, needs_completion
from adapters.references import References, rules_over
from xreg.errors import XRegistryError

#: How a request waits for several awaitables at once (``asyncio.gather``, or GraphQL's own).
Gather = Callable[..., Awaitable[list[Any]]]


class Served(Protocol):
    """The registries an application serves: their sources by id in priority order (a live view)
    and the reference rules over some of them."""

    @property
    def sources(self) -> Mapping[str, RegistrySource]: ...

    def references(self, sources: Sequence[RegistrySource] | None = None) -> References: ...


class OneRegistry:
    """:class:`Served` over one registry alone (tools and tests without a federation): references
    point into it through its own base URL."""

    def __init__(self, source: RegistrySource) -> None:
        self.sources: Mapping[str, RegistrySource] = {source.id: source}

    def references(self, sources: Sequence[RegistrySource] | None = None) -> References:
        chosen = list(self.sources.values()) if sources is None else list(sources)
        return rules_over(chosen, {s.id: [s.base_url] for s in chosen if s.base_url})


class RequestSources:
    """One request's registries: a snapshot of what is served, each read on behalf of the
    request's ``caller`` (:meth:`RegistrySource.for_caller`), and their reference rules (made
    once, when first asked for)."""

    def __init__(self, served: Served, caller: Caller = ANONYMOUS) -> None:
        self.served = served
        self.caller = caller
        self._served = dict(served.sources)
        self.sources: dict[str, RegistrySource] = {k: s.for_caller(caller) for k, s in self._served.items()}

    @cached_property
    def references(self) -> References:
        """How references between entities are resolved in this request."""
        return self.served.references(list(self._served.values()))  # the same rules for every caller


class Materialiser:
    """The messages of one request, materialised across registries: each chain completed once,
    its bases loaded through ``batcher`` (inside the owner's registry at its revision, elsewhere at
    the current state) and resolved by the reference rules ``references`` gives."""

    def __init__(self, batcher: EntityBatcher, references: Callable[[], References],
                 gather: Gather = asyncio.gather) -> None:
        self.batcher = batcher
        self.references = references
        self.gather = gather
        self._completed: dict[tuple, asyncio.Future[Entity]] = {}

    def clear(self) -> None:
        """Forget the completed chains (the request is over)."""
        self._completed.clear()

    async def settle(self, entities: list[Entity]) -> list[Entity]:
        """``entities`` with the materialisation of their messages completed across registries."""
        for e in entities:
            if needs_completion(e):
                return await self.gather(*(self.settled(e) for e in entities))
        return entities

    async def settled(self, entity: Entity) -> Entity:
        """``entity`` with its materialisation completed (itself when there is nothing to do)."""
        future = self.completing(entity)
        return entity if future is None else await future

    def completing(self, entity: Entity) -> asyncio.Future[Entity] | None:
        """The completion of ``entity``'s materialisation, started now unless it is under way or
        done; ``None`` when there is nothing to complete."""
        if not needs_completion(entity):
            return None
        key = (entity.registry, entity.as_of, entity.xid.lower())
        future = self._completed.get(key)
        if future is None:
            future = self._completed[key] = asyncio.ensure_future(complete(entity, self._base_of(entity)))
        return future

    def ahead(self, entities: Sequence[Entity]) -> list[tuple[str, int | None, str]]:
        """The ``(registry, as_of, XID)`` each chain of ``entities`` still to be followed loads
        first (its reference's best target, as :meth:`settled` will ask the batcher for it):
        what can be read ahead as soon as the entities are known."""
        references = None
        out: list[tuple[str, int | None, str]] = []
        for entity in entities:
            if not needs_completion(entity) or (entity.registry, entity.as_of, entity.xid.lower()) in self._completed:
                continue
            reference, (registry, subject) = first_step(entity)
            if not reference:
                continue
            references = references or self.references()
            try:
                targets = references.targets(reference, registry, subject)
            except XRegistryError:  # the completion reports it
                continue
            if targets:
                out.append(targets[0].load_key(entity))
        return out

    def _base_of(self, owner: Entity) -> Any:
        async def load(registry: str, xid: str) -> Entity | None:
            return await self.batcher.load(registry, xid, owner.as_of if registry == owner.registry else None)

        async def base(reference: Any, registry: str, subject: str) -> Entity:
            return await self.references().resolve(reference, registry, load, subject, MESSAGE_TYPES)

        return base
