"""Which GraphQL object type stands for a source entity (:func:`to_node`).

An object type declares the entities it stands for with :func:`stands_for`: a typed group or
resource by its collection type, a typed version by its resource type, and for each kind of
entity one generic type for the rest. The domain modules of this package declare theirs as they
are defined; the package's ``__init__`` imports them all, so every declaration is in before
anything is resolved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from strawberry.types import Info

from adapters.base import Entity as SourceEntity

#: The typed object types by (kind, collection type or resource type), and each kind's generic one.
_TYPED: dict[tuple[str, str], type] = {}
_GENERIC: dict[str, type] = {}

_T = TypeVar("_T", bound=type)


def stands_for(kind: str, name: str | None = None) -> Callable[[_T], _T]:
    """Declares the object type of the entities of ``kind`` (``registry``, ``group``,
    ``resource``, ``version`` or ``meta``) in the collections ``name`` (a group's or a resource's
    collection type, a version's resource type), or, without ``name``, of the entities of
    ``kind`` that no typed object type stands for."""
    def declare(cls: _T) -> _T:
        if name is None:
            _GENERIC[kind] = cls
        else:
            _TYPED[(kind, name)] = cls
        return cls
    return declare


def node_of(cls: type, entity: SourceEntity) -> Any:
    """``cls(entity=entity)`` for an entity's object type, made without the dataclass's
    ``__init__``: only ``entity`` is set on the object. Its attribute fields (``attr()``, default
    ``None``) are read from the entity, never from the object, so the per-object copies of
    their defaults that ``__init__`` would store are left to the class's (the same ``None``)."""
    obj: Any = _new(cls)
    obj.__dict__["entity"] = entity
    return obj


_new = object.__new__


def _node_class(kind: str, ctype: str) -> type:
    """The object type of entities of ``kind`` in collections of ``ctype``."""
    parts, name = ctype.split("/"), ""
    if kind == "group":
        name = ctype
    elif kind == "resource":
        name = parts[-1]
    elif kind == "version":
        name = parts[-2] if len(parts) > 2 else ""
    elif kind != "registry":
        kind = "meta"
    return _TYPED.get((kind, name)) or _GENERIC[kind]


#: :func:`_node_class` by ``(kind, ctype)``: a registry model has a few collection types
_NODE_CLASSES: dict[tuple[str, str], type] = {}


def node_class(entity: SourceEntity) -> type:
    """The object type standing for a source entity."""
    key = (entity.kind, entity.ctype)
    cls = _NODE_CLASSES.get(key)
    if cls is None:
        if len(_NODE_CLASSES) >= 256:  # models are few, but a remote registry's types are its own
            _NODE_CLASSES.clear()
        cls = _NODE_CLASSES[key] = _node_class(*key)
    return cls


def to_node(entity: SourceEntity) -> Any:
    """The GraphQL object for a source entity."""
    return node_of(node_class(entity), entity)


def bare_registry(rid: str, as_of: int | None = None) -> Any:
    """The registry ``rid`` without its record read: its ids alone (a ``Registry``)."""
    return to_node(SourceEntity(rid, "/", "registry", "", {"registryid": rid, "xid": "/"}, as_of=as_of))


async def load_node(info: Info, owner: SourceEntity, xid: str) -> Any:
    """The object of the entity ``xid`` in ``owner``'s registry, at ``owner``'s revision (``None``:
    there is none), read through the request's loader."""
    entity = await info.context.loaders.entity(owner.registry, xid, owner.as_of)
    return to_node(entity) if entity is not None else None
