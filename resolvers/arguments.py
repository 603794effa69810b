"""Field arguments as strawberry hands them to a resolver, converted from graphql-core's coerced
values on public objects only (what :mod:`resolvers.execution` calls resolvers with).

Strawberry keeps each definition (the schema, a type, a field, an argument, an input field) in
the public ``extensions`` mapping of the graphql-core object it builds, under
:data:`DEFINITION`: :func:`definition` reads it. graphql-core has already coerced every value
(scalars parsed, enum names turned into their Python values, defaults filled in) and names
them by their GraphQL names; converting them is renaming to Python names, building input
objects from their dicts, and copying lists — what strawberry's own conversion does for these
types. Arguments it would treat otherwise (``GlobalID``, ``Maybe``, input types with their own
``from_input``) are not converted here: :func:`arguments_converter` answers ``None`` and the
field takes strawberry's own resolver.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
)
from strawberry import UNSET
from strawberry.relay import GlobalID

#: The key of strawberry's definition in a graphql-core object's ``extensions``.
DEFINITION = "strawberry-definition"

#: A converter of one value; ``None`` where the value is handed over as it is.
Convert = Callable[[Any], Any] | None


class Unsupported(Exception):
    """An argument type converted otherwise by strawberry (its resolver converts it)."""


def definition(element: Any) -> Any:
    """Strawberry's definition of a graphql-core schema, type, field or argument (``None``: not
    strawberry's)."""
    extensions = getattr(element, "extensions", None)
    return extensions.get(DEFINITION) if extensions else None


def _check_python_type(type_: Any) -> None:
    """Refuse the Python-side types strawberry converts beyond what the GraphQL type says."""
    while type_ is not None:
        if type_ is GlobalID or type(type_).__name__ == "StrawberryMaybe":  # ``Maybe`` wraps in ``Some``
            raise Unsupported(type_)
        type_ = getattr(type_, "of_type", None)


def _converter(type_: Any, python_type: Any) -> Convert:
    """The converter of values of the GraphQL input type ``type_`` (its definition's Python type
    ``python_type``, checked by :func:`_check_python_type`)."""
    _check_python_type(python_type)
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if isinstance(type_, GraphQLList):
        item = _converter(type_.of_type, None)
        if item is None:  # leaves: a copy (graphql-core gives every request the same default)
            return lambda value: value if value is None or value is UNSET else list(value)
        return lambda value: value if value is None or value is UNSET else [item(x) for x in value]
    if isinstance(type_, GraphQLScalarType | GraphQLEnumType):
        return None
    if isinstance(type_, GraphQLInputObjectType):
        return _input_object(type_)
    raise Unsupported(type_)


def _input_object(type_: GraphQLInputObjectType) -> Callable[[Any], Any]:
    """An input object built from its dict, as strawberry builds it."""
    object_definition = definition(type_)
    if object_definition is None or getattr(object_definition, "from_input", None) is not None:
        raise Unsupported(type_)
    cls = object_definition.origin
    defaults = {f.python_name: None for f in object_definition.fields
                if f.default_value is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    fields: list[tuple[str, str, Convert]] = []
    for name, field in type_.fields.items():
        field_definition = definition(field)
        if field_definition is None:
            raise Unsupported(type_)
        fields.append((name, field_definition.python_name, _converter(field.type, field_definition.type)))

    def build(value: Any) -> Any:
        if value is None or value is UNSET:
            return value
        kwargs = dict(defaults)
        for name, python_name, convert in fields:
            if name in value:
                kwargs[python_name] = value[name] if convert is None else convert(value[name])
        return cls(**kwargs)

    return build


def arguments_converter(field_def: GraphQLField) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The converter of a field's coerced arguments (by GraphQL name) to the keyword arguments
    strawberry would pass (by Python name, before field extensions); ``None``: strawberry
    converts them otherwise (see the module)."""
    arguments: list[tuple[str, str, Convert]] = []
    try:
        for name, argument in field_def.args.items():
            arguments.append(_argument(name, argument))
    except Unsupported:
        return None

    def convert(raw: dict[str, Any]) -> dict[str, Any]:
        kwargs = {}
        for name, python_name, converter in arguments:
            if name in raw:
                kwargs[python_name] = raw[name] if converter is None else converter(raw[name])
        return kwargs

    return convert


def _argument(name: str, argument: GraphQLArgument) -> tuple[str, str, Convert]:
    argument_definition = definition(argument)
    if argument_definition is None or not argument_definition.python_name:
        raise Unsupported(argument)
    return name, argument_definition.python_name, _converter(argument.type, argument_definition.type)
