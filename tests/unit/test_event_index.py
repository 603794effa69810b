"""``adapters.event_index.StreamIndex``: an event finds exactly the streams whose filters pass it
(the same answer as :func:`xreg.events.record.matches`), without a look at the others."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from adapters.event_index import StreamIndex
from adapters.events import EventStream
from xreg.events.record import EventPosition, RegistryEvent, matches

SUBJECTS = [None, "", "/", "*", "/dirs/*", "/dirs/", "/dirs/d1", "/dirs/d1*", "/dirs/d1/", "/DIRS/D1/files/*",
            "/dirs/d1/files/f1", "/other/*", "/dirs/d1/files/f1/versions/v1*"]
TYPES: list[list[str]] = [[], ["io.xregistry.resource.created"],
                          ["io.xregistry.resource.created", "io.xregistry.group.updated"]]
EVENTS = [(t, s) for t in ("io.xregistry.resource.created", "io.xregistry.group.updated",
                           "io.xregistry.registry.updated")
          for s in ("/", "/dirs", "/dirs/d1", "/dirs/d10", "/Dirs/D1/Files/F1", "/dirs/d1/files/f1/versions/v1",
                    "/other/x")]


def stream(types: list[str], subject: str | None) -> EventStream:
    return EventStream(feed=None, after=None, types=types, subject=subject, max_buffer=10)  # type: ignore[arg-type]


def event(type_: str, subject: str, n: int = 1) -> RegistryEvent:
    return RegistryEvent(EventPosition(n, 0), f"e{n}", type_, subject, "2026-01-01T00:00:00Z", "c")


def test_an_event_finds_exactly_the_streams_whose_filters_pass_it() -> None:
    index, streams = StreamIndex(), []
    for types, subject in itertools.product(TYPES, SUBJECTS):
        for _ in range(2):  # two streams with the same filters: both found
            streams.append(s := stream(types, subject))
            index.add(s)
    assert len(index) == len(streams) == len(set(index))
    for type_, subject in EVENTS:
        found = index.matching(event(type_, subject))
        assert len(found) == len(set(found))  # each stream once
        wanted = {s for s in streams if matches(type_, subject, s.types, s.subject)}
        assert set(found) == wanted, (type_, subject)


def test_streams_that_left_are_not_found_and_leave_nothing_behind() -> None:
    index = StreamIndex()
    a, b, c = stream([], "/dirs/*"), stream([], "/dirs/*"), stream(["io.xregistry.group.updated"], "/dirs/d1")
    for s in (a, b, c, a):  # adding twice counts once
        index.add(s)
    assert len(index) == 3
    index.discard(a)
    index.discard(a)  # gone already: nothing happens
    assert index.matching(event("io.xregistry.group.updated", "/dirs/d1")) in ([b, c], [c, b])
    index.discard(b)
    index.discard(c)
    assert len(index) == 0 and not list(index)
    assert index.matching(event("io.xregistry.group.updated", "/dirs/d1")) == []
    index.add(a)
    assert index.matching(event("io.xregistry.group.updated", "/dirs/d1")) == [a]
    index.clear()
    assert len(index) == 0 and index.matching(event("io.xregistry.group.updated", "/dirs/d1")) == []


@pytest.mark.parametrize("watchers", [10, 1000])
def test_an_event_nobody_watches_looks_at_no_stream(watchers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand streams watching other entities cost an event nothing per stream: it consults
    a number of groups that does not grow with them."""
    index = StreamIndex()
    for n in range(watchers):
        index.add(stream(["io.xregistry.group.created"], f"/schemagroups/g{n}"))  # each its own group
        index.add(stream(["io.xregistry.group.created"], "/schemagroups/*"))  # all in one group
    looked: list[Any] = []
    groups = index._groups
    monkeypatch.setattr(index, "_groups", _Counting(groups, looked))
    assert index.matching(event("io.xregistry.group.created", "/messagegroups/m1")) == []
    assert len(looked) <= 3  # no subject filter, the exact subject, the one prefix length in use
    looked.clear()
    found = index.matching(event("io.xregistry.group.created", "/schemagroups/g7"))
    assert len(found) == watchers + 1 and len(looked) <= 3


class _Counting(dict):  # type: ignore[type-arg]
    """A dict recording each key looked up with ``get``."""

    def __init__(self, data: dict[Any, Any], looked: list[Any]) -> None:
        super().__init__(data)
        self.looked = looked

    def get(self, key: Any, default: Any = None) -> Any:
        self.looked.append(key)
        return super().get(key, default)
