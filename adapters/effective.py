"""Materialising messages at read time, across registries.

The local registry keeps each message's materialisation in its store (see
``xreg.registry.materialise``): a chain that stays inside it needs nothing here. What is
left is a chain that leaves a registry — a remote registry's message naming its
``basemessageuri`` (remotes keep no materialised view), or a local chain ending at an absolute
URL of another registry. :func:`complete` follows it through the federation's reference rules,
one load per step (the request's batching loader: the chains of a page of messages advance
together, one batch per registry per step), and lays the message over what it found. A base
from a registry that keeps a materialised view contributes that view whole. Nothing here is an
error for the query (message/spec.md: dangling references are permitted); the problems met are
kept on the materialisation for the fields that report them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from adapters.base import Entity, Materialisation
from xreg.errors import XRegistryError
from xreg.registry.materialise import BASE, IDENTITY, MAX_DEPTH, merge

#: Resolves a reference made in a registry by an entity (``unresolved_reference`` on failure).
Resolve = Callable[[Any, str, str], Awaitable[Entity]]
#: The collection types a base message may be of.
MESSAGE_TYPES = ("messages", "messages/versions")


def is_message(entity: Entity) -> bool:
    """Whether ``entity`` is a message (resource or version)."""
    return entity.ctype.endswith("messages") or entity.ctype.endswith("messages/versions")


def needs_completion(entity: Entity) -> bool:
    """Whether :func:`complete` has anything to do for ``entity``."""
    pending = entity.pending_chain()
    if pending is not None:
        return pending
    return is_message(entity) and bool(entity.declared(BASE))


def contribution(entity: Entity) -> dict[str, Any]:
    """What an entity contributes to the messages based on it: its (materialised) attributes,
    its identity and its own id left out."""
    own_id = entity.id
    return {k: v for k, v in entity.attributes.items()
            if k not in IDENTITY and not (k.endswith("id") and v == own_id)}


def first_step(entity: Entity) -> tuple[Any, tuple[str, str]]:
    """Where :func:`complete` starts following ``entity``'s chain: the reference, and the
    registry and XID that make it."""
    m = entity.materialised
    reference = m.unresolved[0] if m is not None and m.unresolved else entity.view.get(BASE)
    return reference, (entity.registry, m.chain[-1][1] if m is not None and m.chain else entity.xid)


async def complete(entity: Entity, resolve: Resolve) -> Entity:
    """``entity`` with its materialisation completed through the other registries (unchanged
    when there is nothing to complete)."""
    if not needs_completion(entity):
        return entity
    m = entity.materialised
    over = contribution(entity)
    inherited = dict(m.inherited) if m is not None else {}
    chain = list(m.chain) if m is not None else []
    reference, referrer = first_step(entity)
    seen = {(entity.registry, entity.xid.lower()), *((r, x.lower()) for r, x in chain)}
    layers: list[tuple[tuple[str, str], dict[str, Any], dict[str, tuple[str, str]]]] = []
    problems: list[XRegistryError] = []
    unresolved: tuple[str, str] | None = None
    while reference:
        if len(chain) >= MAX_DEPTH:
            unresolved = (str(reference), "too_deep")
            problems.append(XRegistryError("unresolved_reference", referrer[1], registry=referrer[0],
                                           reference=reference,
                                           detail=f"the basemessageuri chain is longer than {MAX_DEPTH}"))
            break
        try:
            base = await resolve(reference, referrer[0], referrer[1])
        except XRegistryError as exc:
            unresolved = (str(reference), "unresolved")
            problems.append(exc)
            break
        key = (base.registry, base.xid.lower())
        if key in seen:
            passed = [(entity.registry, entity.xid), *chain, (base.registry, base.xid)]
            path = " -> ".join(f"{r}:{x}" for r, x in passed)
            unresolved = (str(reference), "circular")
            problems.append(XRegistryError("unresolved_reference", referrer[1], registry=referrer[0],
                                           reference=reference, detail=f"basemessageuri cycle: {path}"))
            break
        seen.add(key)
        chain.append((base.registry, base.xid))
        bm = base.materialised
        layers.append(((base.registry, base.xid), contribution(base), dict(bm.inherited) if bm else {}))
        if bm is not None:  # a materialised base stands for its whole chain (as far as it resolved)
            chain.extend(bm.chain)
            seen.update((r, x.lower()) for r, x in bm.chain)
            if not bm.pending:
                unresolved = bm.unresolved
                break
            reference = bm.unresolved[0] if bm.unresolved else None
            referrer = (base.registry, bm.chain[-1][1] if bm.chain else base.xid)
        else:
            reference = base.view.get(BASE)
            referrer = (base.registry, base.xid)
    merged: dict[str, Any] = {}
    origin: dict[str, tuple[str, str]] = {}
    for where, attrs, their_inherited in reversed(layers):
        merged = merge(merged, attrs)
        origin.update({a: their_inherited.get(a, where) for a in attrs})
    inherited.update({a: origin[a] for a in merged if a not in over})
    materialised = Materialisation(
        attributes={**entity.view, **merge(merged, over)}, inherited=inherited, chain=tuple(chain),
        unresolved=unresolved, pending=False, problems=tuple(problems))
    return replace(entity, materialised=materialised)
