"""Resolving the references of an entity inside a GraphQL request.

The rules are :mod:`adapters.references` (XIDs, ``#/`` pointers, URLs of configured registries
only); entities load through the request's batching loader, so the references of one level of
a query are one batch per registry. A reference that does not resolve gives ``None`` and an
``unresolved_reference`` error naming the registry and the reference — the query goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strawberry.types import Info

from adapters.base import Entity
from gateway.errors import XRegistryError


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
