"""Typed attributes kept in an index beside the documents, so filters on them cost what they return.

Both stores keep, for every *current* (live) state, one index entry per scalar value found at an
*indexed path* of its ``doc`` (:func:`entries`): a path of plain keys, at most
:data:`MAX_DEPTH` long, whose last key names a typed attribute (:data:`NAMES`, or any name ending
in ``id``) or whose key before last is ``labels`` (a label's value). The SQLite store keeps them in
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xreg.storage.semantics import Condition, numeric_value, wildcard_parts

#: Attribute names whose values are indexed (besides every name ending in ``id`` and label values).
#: ``xref``: every write of a Version looks up the cross-references of its collection type
#: (``meta.xref`` present), which must not read every Resource of a large registry.
NAMES = frozenset({"name", "protocol", "envelope", "format", "dataschemaformat", "usage", "deprecated", "labels",
                   "compatibility", "isdefault", "readonly", "xref"})
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
    return last in NAMES or last.endswith("id") or (len(path) >= 2 and path[-2] == "labels")


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


def entries(doc: dict[str, Any] | None) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every ``(path, folded value or PRESENT)`` of a document, without duplicates per path."""
    if not doc:
        return
    stack: list[tuple[tuple[str, ...], dict[str, Any]]] = [((), doc)]
    while stack:
        prefix, node = stack.pop()
        for key, value in node.items():
            path = (*prefix, key)
            if indexed(path) and value is not None:
                if isinstance(value, (dict, list)):
                    yield path, PRESENT
                seen: set[tuple[type, Any]] = set()
                for item in (value if isinstance(value, list) else (value,)):
                    if _scalar(item):
                        folded = fold(item)
                        mark = (bool if isinstance(folded, bool) else type(folded), folded)
                        if mark not in seen:
                            seen.add(mark)
                            yield path, folded
            if isinstance(value, dict) and len(path) < MAX_DEPTH:
                stack.append((path, value))


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
