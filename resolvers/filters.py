"""Filter and sort inputs of the connections, mapped onto the xRegistry filter grammar.

Typed fields (``protocol``, ``usage``, ``labels`` …) are AND'd; each ``raw`` value is one
xRegistry ``filter`` expression (``envelopemetadata.type.value=*Position*``, nested collections
such as ``messages.protocol=KAFKA`` included) and several are OR'd, each AND'd with the typed
fields — exactly the ``?filter=`` semantics of the HTTP API. Values match case-insensitively;
``*`` matches any run of characters (``\\*`` a literal star); a list attribute (``usage``)
matches when one of its elements does.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

import strawberry

from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry.filters import FilterExpression, Filters, Term, parse_filters, parse_sort
from xreg.registry.reads import collection_tree
from xreg.storage.semantics import Condition, Sort

_STAR = re.compile(r"(?<!\\)\*")


@strawberry.input(description="Entities carrying a label: any value, or one matching `value`.")
class LabelFilter:
    key: str
    value: str | None = None


@strawberry.input(description="Filters every collection supports.")
class Filter:
    name: str | None = strawberry.field(default=None, description="`name` matches.")
    labels: list[LabelFilter] | None = strawberry.field(default=None, description="Every label matches.")
    raw: list[str] | None = strawberry.field(
        default=None, description="xRegistry filter expressions, OR'd; each is AND'd with the typed fields.")


@strawberry.input(description="Filters of endpoints.")
class EndpointFilter(Filter):
    usage: str | None = None
    protocol: str | None = None
    envelope: str | None = None


@strawberry.input(description="Filters of message groups.")
class MessageGroupFilter(Filter):
    protocol: str | None = None
    envelope: str | None = None


@strawberry.input(description="Filters of messages; `format` is the `dataschemaformat`. Typed fields, `raw` "
                              "expressions and the sort match the materialised message (its `basemessageuri` "
                              "chain merged) unless `declared` is true.")
class MessageFilter(Filter):
    protocol: str | None = None
    envelope: str | None = None
    format: str | None = None
    declared: bool = strawberry.field(
        default=False, description="Match (and sort by) what each message declares itself, not its materialised "
                                   "attributes.")
    reachable_over: str | None = strawberry.field(
        default=None, description="Messages reachable over this protocol (e.g. `KAFKA`; `*` wildcards, case "
                                  "ignored): those of the message groups that an endpoint with this `protocol` "
                                  "references in its `messagegroups` (XIDs and `#/` pointers into the same "
                                  "registry), and an endpoint's own messages. It asks about the endpoints, not "
                                  "the messages: a message that declares no `protocol` of its own is reachable "
                                  "over its endpoints' protocol. AND'd with the other fields; a remote registry "
                                  "that cannot answer it is left out and reported.")


@strawberry.input(description="Filters of schema groups, schemas and schema versions.")
class SchemaFilter(Filter):
    format: str | None = None


#: Typed filter fields whose attribute has another name, per input type.
_ATTRIBUTE: dict[type, dict[str, str]] = {MessageFilter: {"format": "dataschemaformat"}}
_TYPED = ("name", "usage", "protocol", "envelope", "format")


@strawberry.enum(description="Sort direction.")
class SortOrder(Enum):
    ASC = "asc"
    DESC = "desc"


@strawberry.input(description="Order by one attribute (dot notation, e.g. `envelopemetadata.type.value`); "
                              "ties and unsorted collections go by XID.")
class SortBy:
    attribute: str
    order: SortOrder = SortOrder.ASC


def _term(path: tuple[str, ...], value: str | None) -> Term:
    if value is None:
        return Term((), Condition(path, "exists"))
    if _STAR.search(value):
        return Term((), Condition(path, "eq", value, wildcard=True))
    return Term((), Condition(path, "eq", value.replace("\\*", "*")))


def to_filters(given: Filter | None, model: RegistryModel, ctype: str, subject: str) -> Filters | None:
    """The :class:`Filters` of a filter input (``None``: no filter); raises ``bad_filter``."""
    if given is None:
        return None
    names = _ATTRIBUTE.get(type(given), {})
    typed: list[Term] = []
    for field in _TYPED:
        value: Any = getattr(given, field, None)
        if value is not None:
            typed.append(_term((names.get(field, field),), value))
    for label in given.labels or ():
        typed.append(_term(("labels", label.key), label.value))
    raw = parse_filters(given.raw, subject=subject, collections=collection_tree(model, ctype)) if given.raw else None
    if raw is not None:
        _refuse_plain_words(raw, given.raw or [], model, ctype, subject)
    over = getattr(given, "reachable_over", None)
    reachable = _term(("protocol",), over).condition if over is not None else None
    if raw is not None and raw.exclude_all:
        return raw
    branches: tuple[FilterExpression, ...]
    if raw is None:
        branches = (FilterExpression(tuple(typed)),) if typed else ()
    else:
        branches = tuple(FilterExpression((*typed, *branch.terms)) for branch in raw.branches)
    return Filters(branches, reachable_over=reachable) if branches or reachable is not None else None


#: Attributes every entity may have (core/spec.md), beside those its model defines.
CORE_ATTRIBUTES = frozenset({
    "name", "description", "documentation", "icon", "labels", "epoch", "xid", "self", "shortself", "createdat",
    "modifiedat", "deprecated", "versionid", "isdefault", "ancestorid", "contenttype", "meta", "metaurl",
    "versionsurl", "versionscount", "registryid", "specversion",
    # the message, endpoint and schema domains' nested objects
    "envelopemetadata", "envelopeoptions", "protocoloptions", "messagegroups", "usage", "channel", "deployed",
    "format", "schema", "schemauri", "schemaurl", "xref", "defaultversionid", "defaultversionsticky",
})


def _refuse_plain_words(raw: Filters, given: list[str], model: RegistryModel, ctype: str, subject: str) -> None:
    """A raw expression that is one word naming no attribute (``earthquake``) is a search typed
    as a filter — it would test that such an attribute exists, and match nothing: refused, with
    how to search instead."""
    parts = ctype.split("/")
    definition = (model.group(parts[0]) if len(parts) == 1 else model.resource(parts[0], parts[1])
                  if len(parts) >= 2 else None)
    if definition is None or "*" in definition.attributes:
        return
    id_attribute = f"{definition.singular}id"
    for branch, text in zip(raw.branches, given, strict=False):
        for term in branch.terms:
            cond = term.condition
            word = cond.path[0] if cond.path else ""
            if (not term.collections and cond.op == "exists" and len(cond.path) == 1 and word not in CORE_ATTRIBUTES
                    and word not in definition.attributes and word != id_attribute):
                raise XRegistryError(
                    "bad_filter", subject, value=text,
                    detail=f'"{word}" is not an attribute of {parts[-1]}, so this filter (an attribute test) matches '
                           f'nothing; to find entities by text, use the search argument: {parts[-1]}(search: '
                           f'"{word}")')


def to_sort(given: SortBy | None, model: RegistryModel, ctype: str, subject: str) -> Sort | None:
    """The :class:`Sort` of a sort input; raises ``bad_sort``."""
    if given is None:
        return None
    value = given.attribute + ("=desc" if given.order is SortOrder.DESC else "")
    return parse_sort(value, subject=subject, collections=collection_tree(model, ctype))
