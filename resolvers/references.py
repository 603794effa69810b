"""Resolving the references of an entity inside a GraphQL request.

The rules are :mod:`adapters.references` (XIDs, ``#/`` pointers, URLs of configured registries
only); entities load through the request's batching loader, so the references of one level of
a query are one batch per registry. A reference that does not resolve gives ``None`` and an
``unresolved_reference`` error naming the registry and the reference — the query goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from strawberry.types import Info

from adapters.base import Entity, SourceUnavailable
from adapters.effective import needs_completion
from adapters.references import Target
from resolvers.gathering import gather, settled
from xreg.errors import XRegistryError


def loader_for(info: Info, owner: Entity):
    """``load(registry, xid)`` for references made by ``owner``: inside its registry at its
    revision, elsewhere at the current state."""
    loaders = info.context.loaders

    async def load(registry: str, xid: str) -> Entity | None:
        return await loaders.entity(registry, xid, owner.as_of if registry == owner.registry else None)

    return load


async def resolve_strict(info: Info, owner: Entity, reference: Any, expect: Sequence[str] | None = None) -> Entity:
    """The entity ``reference`` (made by ``owner``) points at; raises ``unresolved_reference``."""
    return await info.context.references.resolve(reference, owner.registry, loader_for(info, owner), owner.xid,
                                                  expect)


async def resolve(info: Info, owner: Entity, reference: Any, expect: Sequence[str] | None = None) -> Entity | None:
    """The entity ``reference`` points at, or ``None`` with the error reported."""
    try:
        return await resolve_strict(info, owner, reference, expect)
    except XRegistryError as exc:
        info.context.report(exc, info)
        return None


def ahead_keys(ctx: Any, owner: Entity, references: Sequence[Any]) -> list[tuple[str, int | None, str]]:
    """The loads of ``owner``'s references that have one candidate target, as :func:`resolve_each`
    makes them (for reading ahead, ``resolvers/types/ahead.py``); a reference that does not
    resolve is left to its resolver, which reports it."""
    rules = ctx.references
    keys: list[tuple[str, int | None, str]] = []
    for reference in references:
        try:
            targets = rules.targets(reference, owner.registry, owner.xid)
        except XRegistryError:
            continue
        if len(targets) == 1:
            keys.append(targets[0].load_key(owner))
    return keys


def only(values: list[Any]) -> Any:
    """The one value of a form for many objects called for one (its failure raised)."""
    value = values[0]
    if isinstance(value, Exception):
        raise value
    return value


async def resolve_each(infos: Sequence[Info], owners: Sequence[Entity], references: Sequence[Sequence[Any]],
                       expect: Sequence[str] | None = None, *,
                       at_once: bool = False) -> list[list[Entity | None] | Exception]:
    """For each owner (its ``info`` and its references, in order): :func:`resolve` of each of its
    references, or the exception that failed it. Those with one candidate target (XIDs, ``#/``
    pointers, URLs inside one registry: nearly all) are looked up together, for every owner at
    once, and awaited once, without a coroutine each; the others, and entities whose
    materialisation has still to be completed, take :func:`resolve`. The loads go through the
    request's loader (batched with other loads of them), or, ``at_once`` (every owner of a level
    is here), are read at once (:meth:`~adapters.batching.EntityBatcher.fetch`)."""
    ctx = infos[0].context
    rules = ctx.references
    outs: list[list[Entity | None]] = []
    single: list[tuple[int, int, Target]] = []  # owner, reference, its target
    one_by_one: list[tuple[int, int]] = []
    for k, (owner, refs) in enumerate(zip(owners, references, strict=True)):
        outs.append([None] * len(refs))
        for index, reference in enumerate(refs):
            try:
                targets = rules.targets(reference, owner.registry, owner.xid)
            except XRegistryError as exc:
                ctx.report(exc, infos[k])
                continue
            if len(targets) == 1:
                single.append((k, index, targets[0]))
            else:
                one_by_one.append((k, index))
    keys = [t.load_key(owners[k]) for k, _, t in single]
    if at_once:
        loads = await ctx.loaders.batcher.fetch(keys)
    else:
        found = ctx.loaders.batcher.lookup(keys)
        await settled([load for load in found if isinstance(load, asyncio.Future)])
        loads = [(load.exception() or load.result()) if isinstance(load, asyncio.Future) else load for load in found]
    failed: dict[int, Exception] = {}
    for (k, index, target), entity in zip(single, loads, strict=True):
        owner = owners[k]
        if isinstance(entity, SourceUnavailable):
            ctx.report(rules.error(references[k][index], owner.registry, owner.xid, entity.reason), infos[k])
            continue
        if isinstance(entity, XRegistryError):
            ctx.report(entity, infos[k])
            continue
        if isinstance(entity, BaseException):
            if not isinstance(entity, Exception):
                raise entity
            failed.setdefault(k, entity)
            continue
        reason = rules.mismatch(entity, target, expect)
        if reason is not None:
            ctx.report(rules.error(references[k][index], owner.registry, owner.xid, reason), infos[k])
        elif needs_completion(entity):
            one_by_one.append((k, index))  # loaded: :func:`resolve` finds it in the request's cache
        else:
            outs[k][index] = entity
    if one_by_one:
        one_by_one.sort()
        found = await gather(*(resolve(infos[k], owners[k], references[k][index], expect)
                               for k, index in one_by_one), settle=True)
        for (k, index), entity in zip(one_by_one, found, strict=True):
            if isinstance(entity, Exception):
                failed.setdefault(k, entity)
            else:
                outs[k][index] = entity
    return [failed.get(k, out) for k, out in enumerate(outs)]
