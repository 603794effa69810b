"""The xRegistry ``filter`` and ``sort`` flags (core spec "Filter Flag", "Sort Flag", "Dot Notation").

Parsing turns flag values into :class:`~xreg.storage.semantics.Condition` / ``Sort``
objects; what they mean (:func:`~xreg.storage.semantics.matches`,
:func:`~xreg.storage.semantics.compare_key`, the reference semantics every store
reproduces) is ``xreg.storage.semantics``, below the registry engine.

Grammar of one ``filter`` value (a :class:`FilterExpression`): ``,``-separated terms, AND'd::

    term  := path | path op value          op := = != <> < <= > >=
    path  := seg ( "." name | "." "*" | "[" index "]" | "[*]" | "['" key "']" | '["' key '"]' )*

A plain ``name`` is any run of characters other than ``. [ ] ' " = < > ! , *`` and white space;
quoted keys (``labels['my.key']``) may hold anything (``\\`` escapes the next character) except
the reserved spellings below. A value runs to the next ``,`` (values cannot contain commas).
Paths become tuples of strings, one per segment:

* a key: the key itself (``"labels"``, ``"my.key"``);
* :data:`ANY_KEY` (``"*"``): any value of an object/map (``labels.*=prod``);
* :data:`ANY_ITEM` (``"[*]"``): any element of an array (``reviewers[*]=joe``);
* ``"[N]"``: element ``N`` (zero-based) of an array.

Keys never equal ``"*"`` nor start with ``"["`` (the spec's naming rules forbid both), so the
encoding is unambiguous; a quoted key that would collide is a ``bad_filter``.

Leading segments that name nested xRegistry collections (``messagegroups.messages.protocol``
at the root) are split off into :attr:`Term.collections`; the caller says which names are
collections through ``collections``: a nested mapping ``{"messagegroups": {"messages":
{"versions": {}}}}`` relative to the request target, or a callable ``(prefix, name) -> bool``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from xreg.errors import XRegistryError
from xreg.storage.semantics import ANY_ITEM, ANY_KEY, Condition, Sort

EXCLUDE_ALL = "excludeall"

Path = tuple[str, ...]
IsCollection = Callable[[Path, str], bool]
Collections = Mapping[str, Any] | IsCollection | None

_PLAIN = re.compile(r"[^.\[\]'\"=<>!,*\s]+")
_INDEX = re.compile(r"\[(\d+)\]")
_OPS = (("!=", "ne"), ("<>", "ne"), ("<=", "le"), (">=", "ge"), ("<", "lt"), (">", "gt"), ("=", "eq"))
_SYMBOL = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_STAR = re.compile(r"(?<!\\)\*")


class _Syntax(ValueError):
    """A grammar error; turned into ``bad_filter`` / ``bad_sort`` by the public parsers."""


# -- terms and expressions -----------------------------------------------------------------


class Term(NamedTuple):
    """One AND'd term: the nested collections it steps through, and the condition on the
    entities of the innermost one (``collections == ()``: the targeted entities themselves)."""

    collections: Path
    condition: Condition

    def __str__(self) -> str:
        path = format_path(self.condition.path)
        if self.collections:
            path = ".".join(self.collections) + ("" if path.startswith("[") else ".") + path
        c = self.condition
        if c.op == "exists":
            return path
        if c.op == "null":
            return path + "=null"
        value = (c.value or "") if c.wildcard else (c.value or "").replace("*", "\\*")
        return path + _SYMBOL[c.op] + value


@dataclass(frozen=True)
class FilterExpression:
    """One ``filter`` value: its terms, AND'd. ``exclude_all`` is the special ``excludeall``."""

    terms: tuple[Term, ...] = ()
    exclude_all: bool = False

    @property
    def conditions(self) -> tuple[Condition, ...]:
        """The conditions on the targeted entities themselves (terms without collections)."""
        return tuple(t.condition for t in self.terms if not t.collections)

    @property
    def nested(self) -> bool:
        """Whether some term reaches into a nested collection."""
        return any(t.collections for t in self.terms)

    def descend(self, name: str) -> FilterExpression | None:
        """The expression for the nested collection ``name`` of a matching entity.

        Own-entity terms are dropped (they constrained the parent). Terms for ``name`` lose
        that leading step. Without nested terms the result is unconstrained (every child of a
        matching entity belongs to the result); with nested terms only for other collections,
        ``None`` (this expression contributes no entity of ``name``).
        """
        if self.exclude_all:
            return self
        if not self.nested:
            return FilterExpression()
        mine = tuple(Term(t.collections[1:], t.condition) for t in self.terms if t.collections[:1] == (name,))
        return FilterExpression(mine) if mine else None

    def __str__(self) -> str:
        return EXCLUDE_ALL if self.exclude_all else ",".join(map(str, self.terms))


@dataclass(frozen=True)
class Filters:
    """All ``filter`` values of a request: the OR of their expressions (``()``: no filter).

    ``reachable_over`` (messages only) is AND'd with the branches: it keeps the messages an
    endpoint matching that condition reaches — the messages of the groups its ``messagegroups``
    references name, and its own messages. It is not part of the xRegistry grammar (the HTTP
    API has no such flag); the GraphQL ``reachableOver`` filter sets it.
    """

    branches: tuple[FilterExpression, ...] = ()
    reachable_over: Condition | None = None

    @property
    def exclude_all(self) -> bool:
        """``excludeall``: nothing matches (an empty collection, or ``not_found`` for an entity)."""
        return any(b.exclude_all for b in self.branches)

    @property
    def nested(self) -> bool:
        """Whether some branch reaches into nested collections (then :attr:`any_of` alone is a
        superset: the caller must also require matching descendants)."""
        return any(b.nested for b in self.branches)

    @property
    def any_of(self) -> tuple[tuple[Condition, ...], ...]:
        """:attr:`Query.any_of <xreg.storage.records.Query.any_of>`: per branch, its conditions
        on the targeted entities. An empty inner group is always true."""
        return tuple(b.conditions for b in self.branches)

    def descend(self, name: str) -> Filters:
        """The filters for nested collection ``name`` (see :meth:`FilterExpression.descend`);
        ``exclude_all`` when no branch contributes an entity of it."""
        if not self.branches or self.exclude_all:
            return self
        out = []
        for branch in self.branches:
            sub = branch.descend(name)
            if sub is None:
                continue
            if not sub.terms:
                return Filters()
            out.append(sub)
        return Filters(tuple(out)) if out else Filters((FilterExpression(exclude_all=True),))

    @property
    def params(self) -> list[str]:
        """The ``filter`` values that express these filters (e.g. for ``<COLLECTION>url``)."""
        return [str(b) for b in self.branches]


# -- parsing -------------------------------------------------------------------------------


def parse_filter(expr: str, *, subject: str = "/", collections: Collections = None) -> FilterExpression:
    """Parse one ``filter`` value; raises ``bad_filter`` (``value=expr``) on bad syntax."""
    try:
        return _parse_expression(expr, _is_collection(collections))
    except _Syntax as exc:
        raise XRegistryError("bad_filter", subject, value=expr, detail=str(exc)) from None


def parse_filters(values: Sequence[str], *, subject: str = "/", collections: Collections = None) -> Filters:
    """Parse all ``filter`` values of a request (OR'd); ``excludeall`` must come alone."""
    branches = tuple(parse_filter(v, subject=subject, collections=collections) for v in values)
    if len(branches) > 1 and any(b.exclude_all for b in branches):
        value = next(v for v, b in zip(values, branches, strict=False) if b.exclude_all)
        raise XRegistryError(
            "bad_filter", subject, value=value, detail='"excludeall" cannot be combined with other filters'
        )
    return Filters(branches)


def parse_sort(value: str, *, subject: str = "/", collections: Collections = None) -> Sort:
    """Parse ``<path>[=asc|desc]``; raises ``bad_sort``. The path must select a plain attribute
    of the collection's entities: no wildcards, array indexes or nested collections."""
    try:
        path, pos = _parse_path(value, 0)
        descending = False
        if pos < len(value):
            order = value[pos + 1:] if value[pos] == "=" else None
            if order not in ("asc", "desc"):
                raise _Syntax('expected "=asc" or "=desc" after the attribute')
            descending = order == "desc"
        if any(s == ANY_KEY or s.startswith("[") for s in path):
            raise _Syntax("wildcards and array indexes are not allowed in a sort path")
        if _is_collection(collections)((), path[0]):
            raise _Syntax(f'cannot sort on the nested collection "{path[0]}"')
    except _Syntax as exc:
        raise XRegistryError("bad_sort", subject, value=value, detail=str(exc)) from None
    return Sort(path=path, descending=descending)


def _is_collection(collections: Collections) -> IsCollection:
    if collections is None:
        return lambda prefix, name: False
    if callable(collections):
        return collections

    def in_tree(prefix: Path, name: str) -> bool:
        node: Any = collections
        for step in prefix:
            node = node.get(step) if isinstance(node, Mapping) else None
        return isinstance(node, Mapping) and name in node

    return in_tree


def _parse_expression(expr: str, is_collection: IsCollection) -> FilterExpression:
    if expr == EXCLUDE_ALL:
        return FilterExpression(exclude_all=True)
    if not expr:
        raise _Syntax("empty filter expression")
    terms, pos = [], 0
    while True:
        if pos == len(expr) or expr[pos] == ",":
            raise _Syntax(f"empty term at position {pos} (stray or trailing comma)")
        term, pos = _parse_term(expr, pos, is_collection)
        terms.append(term)
        if pos == len(expr):
            return FilterExpression(tuple(terms))
        pos += 1  # the ","


def _parse_term(s: str, pos: int, is_collection: IsCollection) -> tuple[Term, int]:
    start = pos
    path, pos = _parse_path(s, pos)
    if s[start:pos] == EXCLUDE_ALL and (pos == len(s) or s[pos] == ","):
        raise _Syntax('"excludeall" cannot be combined with other expressions')
    n = 0
    while n < len(path) and not _special(path[n]) and is_collection(path[:n], path[n]):
        n += 1
    if n == len(path):
        raise _Syntax(f'"{s[start:pos]}" names a collection, not an attribute')
    collections, path = path[:n], path[n:]
    if pos == len(s) or s[pos] == ",":
        return Term(collections, Condition(path, "exists")), pos
    op = next(((sym, name) for sym, name in _OPS if s.startswith(sym, pos)), None)
    if op is None:
        if s[pos] == "!":
            raise _Syntax(f"unknown operator at position {pos}")
        raise _Syntax(f"unexpected character {s[pos]!r} at position {pos} in attribute path")
    pos += len(op[0])
    if pos < len(s) and s[pos] in "=<>":
        raise _Syntax(f"unknown operator {op[0] + s[pos]!r} at position {pos - len(op[0])}")
    end = s.find(",", pos)
    end = len(s) if end < 0 else end
    return Term(collections, _condition(path, op[1], s[pos:end])), end


def _condition(path: Path, op: str, value: str) -> Condition:
    if op in ("eq", "ne"):
        if value == "null" or re.fullmatch(r"\*+", value):
            # "=null" is absence; "=*" is presence with any value; != negates either.
            present = value != "null"
            return Condition(path, "exists" if present == (op == "eq") else "null")
        if _STAR.search(value):
            return Condition(path, op, value, wildcard=True)
    elif value == "null":
        raise _Syntax(f'"null" cannot be used with {_SYMBOL[op]}')
    elif _STAR.search(value):
        raise _Syntax(f"wildcards can only be used with =, != or <> (not {_SYMBOL[op]})")
    return Condition(path, op, value.replace("\\*", "*"))


def _special(segment: str) -> bool:
    return segment == ANY_KEY or segment.startswith("[")


def _parse_path(s: str, pos: int) -> tuple[Path, int]:
    """Parse a dot-notation path starting at ``pos``; returns it and the position after it."""
    segments: list[str] = []
    need_name = True  # at the start or right after a "."
    while True:
        if need_name:
            m = _PLAIN.match(s, pos)
            if m:
                segments.append(m.group())
                pos = m.end()
            elif s.startswith("*", pos):
                segments.append(ANY_KEY)
                pos += 1
            elif s.startswith("[", pos) and not segments:
                segment, pos = _parse_bracket(s, pos)
                segments.append(segment)
            elif pos == len(s) or s[pos] in ".,=<>!":
                raise _Syntax(f"empty attribute path segment at position {pos}")
            else:
                raise _Syntax(f"unexpected character {s[pos]!r} at position {pos} in attribute path")
            need_name = False
        elif s.startswith(".", pos):
            pos += 1
            need_name = True
        elif s.startswith("[", pos):
            segment, pos = _parse_bracket(s, pos)
            segments.append(segment)
        else:
            return tuple(segments), pos


def _parse_bracket(s: str, pos: int) -> tuple[str, int]:
    if s.startswith("[*]", pos):
        return ANY_ITEM, pos + 3
    m = _INDEX.match(s, pos)
    if m:
        return f"[{int(m.group(1))}]", m.end()
    quote = s[pos + 1:pos + 2]
    if quote not in ("'", '"'):
        raise _Syntax(f"malformed [...] segment at position {pos}: expected [N], [*], ['key'] or [\"key\"]")
    key, i = [], pos + 2
    while i < len(s) and s[i] != quote:
        if s[i] == "\\" and i + 1 < len(s):
            i += 1
        key.append(s[i])
        i += 1
    if not s.startswith(quote + "]", i):
        raise _Syntax(f"unterminated [{quote}...{quote}] segment at position {pos}")
    name = "".join(key)
    if not name:
        raise _Syntax(f"empty attribute path segment at position {pos}")
    if _special(name):
        raise _Syntax(f"key {name!r} is not a valid attribute or map key name")
    return name, i + 2


def format_path(path: Sequence[str]) -> str:
    """Render a parsed path back into dot notation (inverse of the path parser)."""
    out = ""
    for segment in path:
        if segment.startswith("["):
            out += segment
        elif segment == ANY_KEY or _PLAIN.fullmatch(segment):
            out += ("." if out else "") + segment
        else:
            out += "['" + segment.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out
