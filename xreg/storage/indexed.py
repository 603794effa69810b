"""Typed attributes kept in an index beside the documents, so filters on them cost what they return.

Both stores keep, for every *current* (live) state, one index entry per scalar value found at an
*indexed path* of its ``doc`` (:func:`entries`): a path of plain keys, at most
:data:`MAX_DEPTH` long, whose last key names a typed attribute (:data:`NAMES`, or any name ending
in ``id``) or whose key before last is ``labels`` (a label's value), or whose last key is in
:data:`PRESENCE` (``xref``: a presence entry alone, so "which entities under these parents are
cross-references" is one index range in key order). The SQLite store keeps them in
a side table, the MongoDB store in an array field of the state document; both index them by
``(path, value, collection type, key)``, so an equality filter on such a path is one index range
read in key order, and a page matching little reads little.

An entry's value is folded the way :func:`~xreg.storage.semantics.matches` compares: strings
lower-cased, numbers as numbers, booleans as their own type. A list contributes each scalar
element (``matches`` compares lists element-wise); an object or a list also contributes a
presence entry (:data:`PRESENT`): a path is present when it has any entry. Key steps enter
objects only, never lists, as in :func:`~xreg.storage.semantics.resolve`.

:func:`lookup` turns a condition into what to look up; when it answers, the entries it selects
are *exactly* the documents the condition matches (``eq`` without and with wildcards,
``exists``), so the store needs no other check. Negations and ranges are not looked up.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xreg.storage.semantics import Condition, numeric_value, wildcard_parts

#: Attribute names whose values are indexed (besides every name ending in ``id`` and label values).
NAMES = frozenset({"name", "protocol", "envelope", "format", "dataschemaformat", "usage", "deprecated", "labels",
                   "compatibility", "isdefault", "readonly"})
#: Attribute names kept by their presence alone (one :data:`PRESENT` entry, their values not
#: looked up): a cross-reference Resource's ``meta.xref``.
PRESENCE = frozenset({"xref"})
#: Longest indexed path (a message resource's materialised label: default.@materialised.attributes.labels.k).
MAX_DEPTH = 6
_MAX_INT = 2**63 - 1


class _Present:
    """The presence entry of a path (the value is not ``None``)."""

    def __repr__(self) -> str:
        return "PRESENT"


PRESENT = _Present()


@functools.lru_cache(maxsize=4096)
def _indexed(path: tuple[str, ...]) -> bool:
    if not path or len(path) > MAX_DEPTH:
        return False
    if any(not seg or seg[0] == "[" or seg == "*" for seg in path):
        return False
    last = path[-1]
    return last in NAMES or last in PRESENCE or last.endswith("id") or (len(path) >= 2 and path[-2] == "labels")


def indexed(path: Sequence[str]) -> bool:
    """Whether values at ``path`` (a tuple of keys) are in the index."""
    return _indexed(tuple(path))


@functools.lru_cache(maxsize=4096)
def path_text(path: tuple[str, ...]) -> str:
    """The stored form of a path (unambiguous whatever its keys hold)."""
    return json.dumps(list(path), ensure_ascii=False, separators=(",", ":"))


def fold(value: Any) -> Any:
    """A scalar as the index keeps it (strings lower-cased, integers too large for 64 bits as floats)."""
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_INT:
        return float(value)
    return value


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float))


#: What a path holds in the index: 0 nothing, 1 its values, 2 its presence alone (:data:`PRESENCE`).
_KINDS: dict[tuple[str, ...], int] = {}


def _kind(path: tuple[str, ...]) -> int:
    kind = 0 if not _indexed(path) else 2 if path[-1] in PRESENCE else 1
    if len(_KINDS) < 65536:  # documents share few shapes; a bound against odd ones
        _KINDS[path] = kind
    return kind


def _values(path: tuple[str, ...], value: Any, out: list[tuple[tuple[str, ...], Any]]) -> None:
    """The entries of a value at an indexed path (the general case: lists, numbers, odd types)."""
    if isinstance(value, (dict, list)):
        out.append((path, PRESENT))
    seen: set[tuple[type, Any]] = set()
    for item in (value if isinstance(value, list) else (value,)):
        if _scalar(item):
            folded = fold(item)
            mark = (bool if isinstance(folded, bool) else type(folded), folded)
            if mark not in seen:
                seen.add(mark)
                out.append((path, folded))


def entries(doc: dict[str, Any] | None) -> list[tuple[tuple[str, ...], Any]]:
    """Every ``(path, folded value or PRESENT)`` of a document, without duplicates per path.
    (Built for every state a commit writes: the common cases — text, an object — are inline.)"""
    out: list[tuple[tuple[str, ...], Any]] = []
    if not doc:
        return out
    kinds = _KINDS
    stack: list[tuple[tuple[str, ...], dict[str, Any]]] = [((), doc)]
    while stack:
        prefix, node = stack.pop()
        deeper = len(prefix) + 1 < MAX_DEPTH
        for key, value in node.items():
            path = (*prefix, key)
            kind = kinds.get(path)
            if kind is None:
                kind = _kind(path)
            if kind and value is not None:
                if kind == 2:
                    out.append((path, PRESENT))
                elif type(value) is str:
                    out.append((path, value.lower()))
                elif type(value) is dict:
                    out.append((path, PRESENT))
                else:
                    _values(path, value, out)
            if deeper and (type(value) is dict or (type(value) is not str and isinstance(value, dict))):
                stack.append((path, value))
    return out


@dataclass(frozen=True)
class Lookup:
    """What to read from the index for one condition: any entry of the path (``present``), one
    of ``values`` (typed scalars), or text entries matching a wildcard (``prefix``: what every
    match starts with, ``parts``: the pattern's literal pieces, lower-cased)."""

    path: tuple[str, ...]
    present: bool = False
    values: tuple[Any, ...] = ()
    parts: tuple[str, ...] | None = None

    @property
    def prefix(self) -> str:
        return self.parts[0] if self.parts else ""

    @property
    def single(self) -> bool:
        """Whether the entries are one value (an index range in key order, one per state)."""
        return self.parts is None and len(self.values) == 1


def lookup(cond: Condition) -> Lookup | None:
    """The index read that selects exactly what ``cond`` matches (``None``: not answerable)."""
    if not indexed(cond.path):
        return None
    path = tuple(cond.path)
    if path[-1] in PRESENCE:  # one presence entry per state: a single value, one range in key order
        return Lookup(path, values=(PRESENT,)) if cond.op == "exists" else None
    if cond.op == "exists":
        return Lookup(path, present=True)
    if cond.op != "eq":
        return None
    value = cond.value or ""
    if cond.wildcard:
        return Lookup(path, parts=tuple(p.lower() for p in wildcard_parts(value)))
    values: list[Any] = [value.lower()]
    if value in ("true", "false"):
        values.append(value == "true")
    number = numeric_value(value)
    if number is not None:
        values.append(fold(number))
    return Lookup(path, values=tuple(values))


def parent_key(key: str) -> str:
    """The key of an entity's parent (``""`` for the registry and its groups' parent)."""
    return key.rsplit("/", 2)[0] if key != "/" else ""
