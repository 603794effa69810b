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


#: The shapes met so far, a tree by key: ``{key: (kind, path, path text, {child key: ...})}``,
#: ``kind`` what the path holds in the index (0 nothing, 1 its values, 2 its presence alone,
#: :data:`PRESENCE`). Documents share few shapes: a walk looks each key up once, building no path.
_Shape = tuple[int, tuple[str, ...], str | None, dict[str, Any]]
_ROOT: dict[str, _Shape] = {}
_SHAPES = [0]
_MAX_SHAPES = 65536  # a bound against odd documents (beyond it, shapes are built and not kept)


def _shape(children: dict[str, _Shape], prefix: tuple[str, ...], key: str) -> _Shape:
    path = (*prefix, key)
    kind = 0 if not _indexed(path) else 2 if path[-1] in PRESENCE else 1
    shape: _Shape = (kind, path, path_text(path) if kind else None, {})
    if _SHAPES[0] < _MAX_SHAPES:
        children[key] = shape
        _SHAPES[0] += 1
    return shape


def _values(path: Any, value: Any, out: list[tuple[Any, Any]]) -> None:
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


def _walk(doc: dict[str, Any] | None, name: int) -> list[tuple[Any, Any]]:
    """The entries of a document, each path named by the item ``name`` of its shape (1: the
    tuple, 2: its text). Built for every state a commit writes: the common cases — text, an
    object — are inline."""
    out: list[tuple[Any, Any]] = []
    if not doc:
        return out
    stack: list[tuple[dict[str, Any], tuple[str, ...], int, dict[str, Any]]] = [(_ROOT, (), 1, doc)]
    while stack:
        children, prefix, depth, node = stack.pop()
        deeper = depth < MAX_DEPTH
        for key, value in node.items():
            shape = children.get(key)
            if shape is None:
                shape = _shape(children, prefix, key)
            kind = shape[0]
            if kind and value is not None:
                if kind == 2:
                    out.append((shape[name], PRESENT))
                elif type(value) is str:
                    out.append((shape[name], value.lower()))
                elif type(value) is dict:
                    out.append((shape[name], PRESENT))
                else:
                    _values(shape[name], value, out)
            if deeper and isinstance(value, dict):
                stack.append((shape[3], shape[1], depth + 1, value))
    return out


def entries(doc: dict[str, Any] | None) -> list[tuple[tuple[str, ...], Any]]:
    """Every ``(path, folded value or PRESENT)`` of a document, without duplicates per path."""
    return _walk(doc, 1)


def entry_texts(doc: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """:func:`entries` with each path as its stored form (:func:`path_text`)."""
    return _walk(doc, 2)


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
