"""The executor's field markers: attribute fields (:func:`attr`) and how they are read
(:func:`read_field`, :func:`attribute_reader`), resolvers that only read a path (:func:`reads`),
and resolvers with a form for many objects (:func:`batched`). ``resolvers/execution.py`` plans
its reads from them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import strawberry

from adapters.base import Entity as SourceEntity

_NO_ATTRIBUTES: dict[str, Any] = {}


def attr(description: str | None = None) -> Any:
    """An attribute field: read from the entity's view of the same name by :func:`read_field`
    (a resolver-less field, the cheapest kind to resolve)."""
    return strawberry.field(default=None, description=description)


def read_field(obj: Any, name: str) -> Any:
    """The default resolver: an entity's attribute fields read its attributes (a message's
    materialised view, any other entity's view), anything else is getattr."""
    entity = getattr(obj, "__dict__", _NO_ATTRIBUTES).get("entity")
    if isinstance(entity, SourceEntity):
        return entity.attribute(name)
    return getattr(obj, name)


F = TypeVar("F", bound=Callable[..., Any])


def reads(path: str) -> Callable[[F], F]:
    """Marks a resolver method that only returns ``self.<path>`` (dotted): the executor reads
    the path itself (``operator.attrgetter``) instead of calling the method."""
    def mark(method: F) -> F:
        method.reads = path  # type: ignore[attr-defined]
        return method
    return mark


def batched(many: Callable[..., Awaitable[list[Any]]], *, each: bool = False) -> Callable[[F], F]:
    """Marks a resolver method with its form for many objects: ``many(objects, infos, **arguments)``
    gives each object's value, in order (an exception for an object that failed). Executing a
    query level by level, the executor calls it once for all the objects of a level that give the
    field the same arguments (``resolvers/execution.py``); the method itself serves one object.

    With ``each``, the form takes each call's arguments, ``many(objects, infos, arguments)``
    (a list of keyword dictionaries), and is called once for all the calls of a level whatever
    their arguments: a root field (one object) called under several aliases."""
    if each:
        many.each = True  # type: ignore[attr-defined]

    def mark(method: F) -> F:
        method.many = many  # type: ignore[attr-defined]
        return method
    return mark


def attribute_reader(origin: type | None, name: str) -> Callable[[Any], Any]:
    """:func:`read_field` of the attribute ``name`` for objects of ``origin``, specialised: an
    object type wrapping an ``entity`` reads the entity's attribute directly."""
    if origin is not None and dataclasses.is_dataclass(origin) and any(
            f.name == "entity" for f in dataclasses.fields(origin)):
        def read(obj: Any) -> Any:
            entity = obj.entity
            return entity.attribute(name) if isinstance(entity, SourceEntity) else getattr(obj, name)
        read.entity_attribute = name  # type: ignore[attr-defined]  # what the executor may read in place
        return read
    return lambda obj: read_field(obj, name)
