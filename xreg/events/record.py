"""Registry events as the gateway keeps them (core/events.md): positions, drafts, events.

An event is written by the commit that causes it: the write path derives :class:`EventDraft` s
(``xreg.events.derive``) and the store stamps each with its :class:`EventPosition` — the
commit's revision and the event's index within it — in the commit's transaction. Positions are
totally ordered and never reused by a registry instance, so ``"<revision>.<index>"`` is a resume
point for any consumer. The CloudEvent ``source`` is not stored: it is the registry's root URL,
which the consumer serving the event knows (``Settings.base_url``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xreg.errors import XRegistryError

#: ``<ENTITY>`` and ``<ACTION>`` of ``io.xregistry.<ENTITY>.<ACTION>`` (core/events.md, ``type``).
ENTITIES = ("registry", "model", "modelsource", "capabilities", "group", "resource", "version")
ACTIONS = ("created", "updated", "deprecation", "deleted")
TYPE_PREFIX = "io.xregistry."
#: The CloudEvents extension attribute naming an event's position (``GET /events``).
POSITION_ATTRIBUTE = "xregposition"
CORRELATION_ATTRIBUTE = "xregcorrelationid"
_POSITION = re.compile(r"(0|[1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,8})")
#: The largest index a position's text holds: above any commit's event count, so ``R.MAX_INDEX``
#: (:meth:`EventPosition.end_of`) means "after every event of revision R" and parses back.
MAX_INDEX = 999_999_999


def event_type(entity: str, action: str) -> str:
    """``io.xregistry.<entity>.<action>``."""
    return f"{TYPE_PREFIX}{entity}.{action}"


@dataclass(frozen=True, order=True)
class EventPosition:
    """Where an event is in the registry's log: the commit's revision, then the event's index in it."""

    revision: int
    index: int

    def __str__(self) -> str:
        return f"{self.revision}.{self.index}"

    @classmethod
    def parse(cls, text: str) -> EventPosition:
        """``"<revision>.<index>"`` (both non-negative integers); ``bad_request`` otherwise."""
        m = _POSITION.fullmatch(text) if isinstance(text, str) else None
        if m is None:
            raise XRegistryError("bad_request", "/events", path="after",
                                 detail=f"an event position is '<revision>.<index>' (e.g. '42.0'), not {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    @classmethod
    def end_of(cls, revision: int) -> EventPosition:
        """A position after every event of ``revision`` and before those of the next one."""
        return cls(revision, MAX_INDEX)


@dataclass(frozen=True)
class EventDraft:
    """An event as the write path derives it, before the store gives it a position."""

    type: str
    subject: str
    time: str
    correlation_id: str
    changed: tuple[str, ...] | None = None

    def at(self, position: EventPosition, instance_id: str) -> RegistryEvent:
        """The stored event: this draft at ``position`` of registry instance ``instance_id``."""
        return RegistryEvent(position, event_id(instance_id, position), self.type, self.subject, self.time,
                             self.correlation_id, self.changed)


def event_id(instance_id: str, position: EventPosition) -> str:
    """The CloudEvent ``id`` of the event at ``position``: unique for the registry's lifetime
    (an instance id names one registry's history; a position is never reused in it)."""
    return f"{instance_id}.{position}"


@dataclass(frozen=True)
class RegistryEvent:
    """One event of the registry's log (core/events.md), at its position."""

    position: EventPosition
    id: str
    type: str
    subject: str
    time: str
    correlation_id: str
    changed: tuple[str, ...] | None = None

    @property
    def entity(self) -> str:
        """The ``<ENTITY>`` of the type (``group``, ``version``, …)."""
        return self.type.removeprefix(TYPE_PREFIX).split(".")[0]

    @property
    def action(self) -> str:
        """The ``<ACTION>`` of the type (``created``, ``updated``, ``deprecation``, ``deleted``)."""
        return self.type.rsplit(".", 1)[-1]

    def to_cloudevent(self, source: str) -> dict[str, Any]:
        """The structured JSON CloudEvent (specversion 1.0) of this event from the registry whose
        root URL is ``source``; ``data`` holds ``changed`` when the event has it."""
        out: dict[str, Any] = {
            "specversion": "1.0", "type": self.type, "source": source, "subject": self.subject, "id": self.id,
            "time": self.time, CORRELATION_ATTRIBUTE: self.correlation_id,
        }
        if self.changed is not None:
            out["datacontenttype"] = "application/json"
            out["data"] = {"changed": list(self.changed)}
        return out

    def matches(self, types: Sequence[str] | None, subject: str | None) -> bool:
        """Whether the event passes a consumer's filters (see :func:`matches`)."""
        return matches(self.type, self.subject, types, subject)


def subject_filter(subject: str | None) -> tuple[str, bool] | None:
    """A subject filter as ``(lower-cased text, is_prefix)`` (``None``: no filter).

    ``/dirs/d1`` is exactly that entity; a filter ending in ``*`` is a prefix (the text before
    it): ``/dirs/d1/*`` is everything below ``/dirs/d1``, ``/dirs/d1*`` that group as well (and
    ``/dirs/d10``…), ``*`` everything; a filter ending in ``/`` other than ``/`` itself is a
    prefix too (``/dirs/d1/`` = ``/dirs/d1/*``). ``/`` is the registry entity alone. XIDs
    compare case-insensitively."""
    if subject is None or subject == "":
        return None
    if subject.endswith("*"):
        return subject[:-1].lower(), True
    if subject.endswith("/") and subject != "/":
        return subject.lower(), True
    return subject.lower(), False


def matches(type_: str, subject: str, types: Sequence[str] | None, subject_wanted: str | None) -> bool:
    """Whether an event of ``type_`` about ``subject`` passes the filters: ``types`` (any of these
    full type names; ``None`` or empty: any type) and ``subject_wanted`` (see
    :func:`subject_filter`)."""
    if types and type_ not in types:
        return False
    wanted = subject_filter(subject_wanted)
    if wanted is None:
        return True
    text, prefix = wanted
    key = subject.lower()
    return key.startswith(text) if prefix else key == text
