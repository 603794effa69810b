"""The effective definition of a message: its ``basemessageuri`` chain merged.

A message may name a base message (``basemessageuri``), which may name its own, in any
registry. The effective definition starts from the last base and lays each message of the chain
over it, ending with the message itself: objects (``envelopemetadata``, ``protocoloptions``, …)
merge key by key, anything else is replaced. A base's identity (its ids, ``xid``, ``self``,
``epoch``, timestamps, links) never leaks into the result. A chain that comes back to a message
already in it is a cycle: reported, not followed; a base that cannot be resolved ends the chain
(reported too). Each step is one load, so the chains of a page of messages advance together,
one batch per registry per step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from adapters.base import Entity
from gateway.errors import XRegistryError
from gateway.xid import Xid

#: Resolves a reference made in a registry by an entity (``unresolved_reference`` on failure).
Resolve = Callable[[Any, str, str], Awaitable[Entity]]

#: Longest chain followed.
MAX_DEPTH = 32
#: A base's attributes that describe that base, not the definition it contributes.
IDENTITY = frozenset({
    "xid", "self", "shortself", "epoch", "createdat", "modifiedat", "versionid", "isdefault", "ancestorid",
    "metaurl", "versionsurl", "versionscount", "basemessageuri", "name", "description", "documentation", "icon",
})


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid over ``base``: objects merged recursively, other values replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


async def effective_message(message: Entity, resolve: Resolve) -> tuple[dict[str, Any], list[XRegistryError]]:
    """The merged definition of ``message`` and the problems met on its chain."""
    chain, problems = [message], []
    seen = {(message.registry, message.xid.lower())}
    current = message
    while current.view.get("basemessageuri"):
        if len(chain) > MAX_DEPTH:
            problems.append(XRegistryError("unresolved_reference", current.xid, registry=current.registry,
                                           reference=current.view["basemessageuri"],
                                           detail=f"the basemessageuri chain is longer than {MAX_DEPTH}"))
            break
        try:
            base = await resolve(current.view["basemessageuri"], current.registry, current.xid)
        except XRegistryError as exc:
            problems.append(exc)
            break
        key = (base.registry, base.xid.lower())
        if key in seen:
            path = " -> ".join(f"{e.registry}:{e.xid}" for e in [*chain, base])
            problems.append(XRegistryError("unresolved_reference", current.xid, registry=current.registry,
                                           reference=current.view["basemessageuri"],
                                           detail=f"basemessageuri cycle: {path}"))
            break
        seen.add(key)
        chain.append(base)
        current = base
    result: dict[str, Any] = {}
    for entity in reversed(chain[1:]):
        result = merge(result, {k: v for k, v in entity.view.items() if k not in IDENTITY and not _own_id(entity, k)})
    return merge(result, message.view), problems


def _own_id(entity: Entity, key: str) -> bool:
    """``messageid`` and the like: a base's own id."""
    xid = Xid.parse(entity.xid)
    return key.endswith("id") and entity.view.get(key) == (xid.resource_id if xid.level == "version" else xid.id)
