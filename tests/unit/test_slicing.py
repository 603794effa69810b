"""Pages cut out of a whole collection in memory (adapters/slicing.py), as the remote sources
serve them: the store's order and cursors, both directions, sorts, bounds."""

from __future__ import annotations

import pytest

from adapters.base import Entity, InvalidCursor, Listing
from adapters.slicing import cut
from xreg.storage.semantics import Sort

ENTITIES = [Entity("r", f"/messagegroups/G{i:02d}", "group", "messagegroups",
                   {"messagegroupid": f"G{i:02d}", "name": name})
            for i, name in enumerate(["kilo", "alpha", None, "Bravo", "alpha", "zulu", 7, "charlie"])]


def ids(page) -> list[str]:
    return [e.id for e in page.items]


def test_key_order_pages_forward_and_back() -> None:
    first = cut(ENTITIES, Listing(ctypes=("messagegroups",), limit=3))
    assert ids(first) == ["G00", "G01", "G02"] and first.has_next and not first.has_prev and first.total == 8
    second = cut(ENTITIES, Listing(ctypes=("messagegroups",), limit=3, after=first.cursors[-1]))
    assert ids(second) == ["G03", "G04", "G05"] and second.has_next and second.has_prev
    last = cut(ENTITIES, Listing(ctypes=("messagegroups",), limit=3, after=second.cursors[-1]))
    assert ids(last) == ["G06", "G07"] and not last.has_next
    back = cut(ENTITIES, Listing(ctypes=("messagegroups",), limit=2, backward=True, before=second.cursors[0]))
    assert ids(back) == ["G01", "G02"] and back.has_prev and back.has_next
    tail = cut(ENTITIES, Listing(ctypes=("messagegroups",), limit=2, backward=True))
    assert ids(tail) == ["G06", "G07"] and tail.has_prev and not tail.has_next


def test_sorted_pages_follow_the_reference_order_with_ties_by_key() -> None:
    sort = Sort(("name",))
    whole = cut(ENTITIES, Listing(ctypes=("messagegroups",), sort=sort, limit=100))
    # absent < numbers < strings (case-insensitively); ties by key
    assert ids(whole) == ["G02", "G06", "G01", "G04", "G03", "G07", "G00", "G05"]
    walked, after = [], None
    while True:
        page = cut(ENTITIES, Listing(ctypes=("messagegroups",), sort=sort, limit=3, after=after))
        walked += ids(page)
        if not page.has_next:
            break
        after = page.cursors[-1]
    assert walked == ids(whole)
    desc = cut(ENTITIES, Listing(ctypes=("messagegroups",), sort=Sort(("name",), descending=True), limit=3))
    assert ids(desc) == ["G05", "G00", "G07"]


def test_empty_pages_and_bad_cursors() -> None:
    assert ids(cut(ENTITIES, Listing(ctypes=("messagegroups",), limit=0))) == []
    assert cut([], Listing(ctypes=("messagegroups",))).total == 0
    with pytest.raises(InvalidCursor):
        cut(ENTITIES, Listing(ctypes=("messagegroups",), after="not-a-cursor"))
