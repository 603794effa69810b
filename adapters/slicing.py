"""Filters, order and keyset pages over collections held in memory (a remote registry's, read
whole), with exactly the store's semantics (``xreg.registry.filters``): rows sort by the
reference order of their sort value, ties by key; cursors are
:class:`~xreg.storage.semantics.Cursor` positions, so pages of a remote collection merge with
pages of any other source.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from adapters.base import Entity, InvalidCursor, Listing, SourcePage
from xreg.registry.filters import FilterExpression, Filters
from xreg.storage.semantics import (
    Condition,
    Cursor,
    Sort,
    compare_key,
    cursor_sort_value,
    matches_condition,
    sort_value,
)

#: A key after every XID key (keys are ASCII).
KEY_END = "\U0010ffff"


def entity_doc(entity: Entity) -> dict[str, Any]:
    """What filters and sorts of an entity see: its view, with a resource's ``meta``."""
    if entity.meta is None:
        return entity.view
    return {**entity.view, "meta": entity.meta}


def cursor_of(entity: Entity, sort: Sort | None) -> Cursor:
    """The keyset position of ``entity`` under ``sort`` (as the store makes them)."""
    if sort is None:
        return Cursor(entity.xid.lower())
    value = sort_value(entity_doc(entity), sort.path)
    if isinstance(value, (dict, list)):
        value = json.dumps(value, sort_keys=True)
    return Cursor(entity.xid.lower(), value)


def order_key(cursor: Cursor, sort: Sort | None) -> tuple:
    """Where a position sorts, ascending (a cursor's container values are canonical JSON text)."""
    if sort is None:
        return ((), cursor.key.lower())
    return (compare_key(cursor_sort_value(cursor.value)), cursor.key.lower())


def decode(token: str | None) -> Cursor | None:
    if token is None:
        return None
    try:
        return Cursor.decode(token)
    except ValueError as exc:
        raise InvalidCursor(str(exc)) from None


def cut(entities: Iterable[Entity], listing: Listing) -> SourcePage:
    """The page ``listing`` asks for out of a whole (filtered) collection; ``total`` included."""
    sort, desc = listing.sort, bool(listing.sort and listing.sort.descending)
    rows = sorted(((order_key(cursor_of(e, sort), sort), e) for e in entities), key=lambda r: r[0], reverse=desc)
    total = len(rows)
    after, before = decode(listing.after), decode(listing.before)

    def past(position: tuple, cursor: Cursor) -> bool:  # after the cursor in query order
        mark = order_key(cursor, sort)
        return position < mark if desc else position > mark

    dropped_before = dropped_after = False
    if after is not None:
        kept = [r for r in rows if past(r[0], after)]
        dropped_before, rows = len(kept) < len(rows), kept
    if before is not None:
        mark = order_key(before, sort)
        kept = [r for r in rows if not past(r[0], before) and r[0] != mark]
        dropped_after, rows = len(kept) < len(rows), kept
    limit = listing.limit
    if listing.backward:
        page = rows[-limit:] if limit else []
        has_next, has_prev = dropped_after, dropped_before or len(rows) > limit
    else:
        page = rows[:limit]
        has_next, has_prev = dropped_after or len(rows) > limit, dropped_before
    items = [e for _, e in page]
    return SourcePage(items, [cursor_of(e, sort).encode() for e in items], has_next, has_prev, total=total)


# -- filters -------------------------------------------------------------------------------------


def matches(tree: dict[str, Any], filters: Filters | None) -> bool:
    """Whether an entity satisfies ``filters``: ``tree`` is its view with its ``meta`` and, for
    filters reaching into nested collections, those collections inlined (maps of id to view)."""
    if filters is None or not filters.branches:
        return True
    if filters.exclude_all:
        return False
    return any(_branch(tree, b) for b in filters.branches)


def _branch(tree: dict[str, Any], branch: FilterExpression) -> bool:
    if not all(matches_condition(tree, c) for c in branch.conditions):
        return False
    nested: dict[tuple[str, ...], list[Condition]] = {}
    for term in branch.terms:
        if term.collections:
            nested.setdefault(term.collections, []).append(term.condition)
    return all(any(all(matches_condition(d, c) for c in conds) for d in descendants(tree, path))
               for path, conds in nested.items())


def descendants(tree: dict[str, Any], path: Sequence[str]) -> list[dict[str, Any]]:
    """The entities of nested collection ``path`` inlined in ``tree``."""
    level = [tree]
    for name in path:
        below: list[dict[str, Any]] = []
        for node in level:
            children = node.get(name)
            if isinstance(children, dict):
                below.extend(c for c in children.values() if isinstance(c, dict))
        level = below
    return level


def nested_paths(filters: Filters | None) -> list[str]:
    """The nested collections ``filters`` reach into, as ``inline`` paths (``messages.versions``)."""
    if filters is None:
        return []
    paths = {".".join(t.collections) for b in filters.branches for t in b.terms if t.collections}
    return sorted(paths)
