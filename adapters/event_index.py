"""The streams of an event feed indexed by their filters: an event finds the streams that ask
for it in time that grows with its subject's length and with those streams, not with every
stream attached — a thousand subscribers watching other entities cost a write nothing per
subscriber.

Streams are grouped by subject filter (:func:`xreg.events.record.subject_filter`: none, an exact
XID, or a prefix), then by their set of types (empty: any type). An event looks up the group
without a subject filter, the group of its exact subject, and the prefix groups whose prefix
length is one a stream uses and whose text starts its subject.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Iterator
from typing import Generic, Protocol, TypeVar

from xreg.events.record import RegistryEvent

#: A subject filter as :func:`~xreg.events.record.subject_filter` parses it (``None``: any subject).
SubjectKey = tuple[str, bool] | None


class Filtered(Hashable, Protocol):
    """What the index reads of a stream (:class:`adapters.events.EventStream`): its filters."""

    @property
    def subject_key(self) -> SubjectKey: ...

    @property
    def type_set(self) -> frozenset[str]: ...


S = TypeVar("S", bound=Filtered)


class StreamIndex(Generic[S]):
    """A feed's streams by filter (see the module); iterating yields every stream."""

    def __init__(self) -> None:
        self._groups: dict[SubjectKey, dict[frozenset[str], set[S]]] = {}
        #: How many prefix filters have each prefix length (the lengths an event's subject is cut at).
        self._prefix_lengths: collections.Counter[int] = collections.Counter()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[S]:
        for by_types in list(self._groups.values()):
            for streams in list(by_types.values()):
                yield from list(streams)

    def add(self, stream: S) -> None:
        key, types = stream.subject_key, stream.type_set
        streams = self._groups.setdefault(key, {}).setdefault(types, set())
        if stream in streams:
            return
        streams.add(stream)
        self._size += 1
        if key is not None and key[1]:
            self._prefix_lengths[len(key[0])] += 1

    def discard(self, stream: S) -> None:
        key, types = stream.subject_key, stream.type_set
        by_types = self._groups.get(key)
        streams = by_types.get(types) if by_types is not None else None
        if by_types is None or streams is None or stream not in streams:
            return
        streams.discard(stream)
        self._size -= 1
        if not streams:
            del by_types[types]
            if not by_types:
                del self._groups[key]
        if key is not None and key[1]:
            self._prefix_lengths[len(key[0])] -= 1
            if not self._prefix_lengths[len(key[0])]:
                del self._prefix_lengths[len(key[0])]

    def clear(self) -> None:
        self._groups.clear()
        self._prefix_lengths.clear()
        self._size = 0

    def matching(self, event: RegistryEvent) -> list[S]:
        """The streams whose filters pass ``event`` (as :func:`xreg.events.record.matches`)."""
        groups = self._groups
        found: list[S] = []
        subject = event.subject.lower()
        keys: list[SubjectKey] = [None, (subject, False)]
        keys.extend((subject[:n], True) for n in self._prefix_lengths if n <= len(subject))
        for key in keys:
            by_types = groups.get(key)
            if by_types is None:
                continue
            for types, streams in by_types.items():
                if not types or event.type in types:
                    found.extend(streams)
        return found
