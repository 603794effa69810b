"""What a filter condition and a sort mean: the reference semantics every store reproduces.

A :class:`Condition` compares one attribute path of an entity's ``doc``; a :class:`Sort`
orders by one; a :class:`Cursor` is a keyset position. :func:`matches` and
:func:`compare_key` are the *reference semantics* — the SQLite store compiles them to SQL, the
MongoDB store to query operators, and both are checked against these functions by the
contract suite; :func:`cursor_sort_value`, :func:`sort_value` and :func:`cursor_for` give every
reader (the stores, the local source, the remote sources' in-memory slicing) the same keyset
positions. The xRegistry filter and sort *grammar* that produces these objects is
``xreg.registry.filters``; this module depends on nothing but the standard library.

Paths are tuples of strings, one per segment: a key (``"labels"``), :data:`ANY_KEY` (``"*"``,
any value of an object), :data:`ANY_ITEM` (``"[*]"``, any element of an array) or ``"[N]"``
(element ``N`` of an array).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: Ops a :class:`Condition` may carry.
OPS = ("eq", "ne", "lt", "le", "gt", "ge", "exists", "null")
ANY_KEY = "*"
ANY_ITEM = "[*]"

_STAR = re.compile(r"(?<!\\)\*")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class Condition:
    """One comparison on an attribute path of the entity's ``doc``.

    ``path`` is a tuple of keys (``("meta", "defaultversionid")``, ``("labels", "team")``;
    ``"*"`` any map value, ``"[*]"`` / ``"[N]"`` list elements). ``op`` is one of :data:`OPS`;
    ``value`` the string written in the filter; ``wildcard`` means ``*`` in ``value`` matches
    any run of characters. The reference semantics — numbers numerically, booleans exactly,
    strings case-insensitively, lists element-wise, ``ne`` as the negation of ``eq`` — are
    :func:`matches`; every store reproduces them.
    """

    path: tuple[str, ...]
    op: str
    value: str | None = None
    wildcard: bool = False


@dataclass(frozen=True)
class Sort:
    """Order by an attribute path; ties (and the default order) go by XID, case-insensitively."""

    path: tuple[str, ...]
    descending: bool = False


#: ``json.dumps(..., separators=(",", ":"))`` without building an encoder per call (cursors are
#: encoded for every row of every page).
_COMPACT = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True)
class Cursor:
    """A keyset position: the sort value and the entity key of the last row seen."""

    key: str
    value: Any = None

    def encode(self) -> str:
        raw = _COMPACT.encode([self.key, self.value]).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> Cursor:
        """Parse an opaque cursor; raises ``ValueError`` when it is not one of ours."""
        try:
            pad = "=" * (-len(token) % 4)
            key, value = json.loads(base64.urlsafe_b64decode(token + pad))
        except Exception as exc:
            raise ValueError(f"malformed cursor {token!r}") from exc
        if not isinstance(key, str):
            raise ValueError(f"malformed cursor {token!r}")
        return cls(key=key, value=value)


class Keyed(Protocol):
    """What a keyset cursor is taken from: a stored record (its key and its ``doc``)."""

    @property
    def key(self) -> str: ...

    @property
    def doc(self) -> dict[str, Any]: ...


#: The sort path of relevance: a text search's rank (lower is better; see ``Query.search``).
RANK: tuple[str, ...] = ("@rank",)


def record_sort_value(record: Any, path: Sequence[str]) -> Any:
    """The value a record sorts by: its search rank for :data:`RANK`, else :func:`sort_value`."""
    if tuple(path) == RANK:
        return getattr(record, "rank", None)
    return sort_value(record.doc, path)


def sort_value(doc: dict[str, Any], path: Sequence[str]) -> Any:
    """The value a sort path selects in ``doc`` (``None`` when absent)."""
    node: Any = doc
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def cursor_for(record: Keyed, sort: Sort | None) -> Cursor:
    """The keyset cursor that points at ``record`` under ``sort``."""
    if sort is None:
        return Cursor(key=record.key)
    value = record_sort_value(record, sort.path)
    if isinstance(value, (dict, list)):
        value = json.dumps(value, sort_keys=True)
    return Cursor(key=record.key, value=value)


def cursor_sort_value(value: Any) -> Any:
    """The value a cursor's sort value stands for: :func:`cursor_for` writes a container as its
    canonical JSON text, so a string that *is* such a text is read back as the container (the
    spec only sorts on scalars; this keeps container positions exact anyway)."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, (dict, list)) and json.dumps(parsed, sort_keys=True) == value:
            return parsed
    return value


def numeric_value(value: str) -> int | float | None:
    """The number a filter value denotes (``int`` when integral in form), or ``None``."""
    if not _NUMBER.fullmatch(value):
        return None
    return int(value) if re.fullmatch(r"[+-]?\d+", value) else float(value)


def wildcard_parts(value: str) -> list[str]:
    """The literal pieces of a wildcard value, split at its unescaped ``*`` (escapes removed):
    a string matches when it is ``parts[0] + <any> + parts[1] + ... + parts[-1]`` as a whole."""
    return [p.replace("\\*", "*") for p in _STAR.split(value)]


def resolve(doc: Any, path: Sequence[str]) -> list[Any]:
    """The values ``path`` selects in ``doc`` (``[]``: absent). Keys step into dicts only,
    ``[N]`` / ``[*]`` into lists only, ``*`` over the values of a dict; a list met by a key
    step selects nothing (arrays are only implicit at the end of the path, see :func:`matches`)."""
    nodes = [doc]
    for segment in path:
        nxt: list[Any] = []
        for node in nodes:
            if segment == ANY_KEY:
                nxt.extend(node.values() if isinstance(node, dict) else ())
            elif segment == ANY_ITEM:
                nxt.extend(node if isinstance(node, list) else ())
            elif segment.startswith("["):
                i = int(segment[1:-1])
                if isinstance(node, list) and i < len(node):
                    nxt.append(node[i])
            elif isinstance(node, dict) and segment in node:
                nxt.append(node[segment])
        nodes = nxt
    return nodes


def _scalar_match(stored: Any, op: str, value: str, wildcard: bool) -> bool:
    """``stored <op> value`` for one stored scalar, ``op`` one of eq/lt/le/gt/ge."""
    if wildcard:
        if not isinstance(stored, str):
            return False
        pattern = ".*".join(re.escape(p.lower()) for p in wildcard_parts(value))
        return re.fullmatch(pattern, stored.lower(), re.DOTALL) is not None
    a: Any
    b: Any
    if isinstance(stored, bool):
        if value not in ("true", "false"):
            return False
        a, b = int(stored), int(value == "true")
    elif isinstance(stored, (int, float)):
        a, b = stored, numeric_value(value)
        if b is None:
            return False
    elif isinstance(stored, str):
        a, b = stored.lower(), value.lower()
    else:
        return False
    return {"eq": a == b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def matches_condition(doc: dict[str, Any], cond: Condition) -> bool:
    """Whether ``doc`` satisfies one condition (see :func:`matches` for the rules)."""
    values = resolve(doc, cond.path)
    if cond.op in ("exists", "null"):
        return any(v is not None for v in values) == (cond.op == "exists")
    op = "eq" if cond.op == "ne" else cond.op
    value = cond.value or ""
    hit = any(
        any(_scalar_match(e, op, value, cond.wildcard) for e in v)
        if isinstance(v, list) else _scalar_match(v, op, value, cond.wildcard)
        for v in values
    )
    return hit != (cond.op == "ne")


def matches(doc: dict[str, Any], any_of: Sequence[Sequence[Condition]]) -> bool:
    """The reference filter semantics, which every store reproduces exactly.

    ``any_of`` is an OR of AND groups (``()``: no filter, matches; an empty group is true).
    For one condition, :func:`resolve` selects the values at its path, then:

    * ``exists``: some selected value is not ``None`` (an empty string, list or dict counts);
      ``null``: the opposite (absent, or only ``None``).
    * ``eq``/``lt``/``le``/``gt``/``ge``: some selected value matches; a selected *list*
      matches when one of its elements (scalars only, no deeper) matches. A stored scalar
      matches by type: **bool** only against exactly ``true``/``false`` (case-sensitive, per
      spec; false < true); **number** (int/float, not bool) only when the filter value is a
      number (:func:`numeric_value`), compared numerically; **string**: ``str.lower()`` of
      both, compared by code point. ``None``, dicts and other types never match.
    * ``wildcard`` (eq/ne only): strings only, the whole lower-cased string against the
      lower-cased pattern, ``*`` = any run of characters (:func:`wildcard_parts`).
    * ``ne`` is exactly ``NOT eq`` (spec): it matches absent and null attributes, and a list
      only when *no* element equals the value.
    """
    return not any_of or any(all(matches_condition(doc, c) for c in group) for group in any_of)


def compare_key(value: Any) -> tuple:
    """A sort key giving the reference order of attribute values (ascending):

    absent/``None`` < numbers (numerically) < strings (``lower()``, by code point) <
    dicts and lists (by ``json.dumps(value, sort_keys=True)``) < ``false`` < ``true``.
    This follows MongoDB's type order for scalars. Equal keys tie; ties go by XID.
    """
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (4, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value.lower())
    return (3, json.dumps(value, sort_keys=True))
