"""The values the :class:`~xreg.storage.base.Store` interface takes and returns.

:class:`EntityRecord` (one stored state of an entity), :class:`Write` (what a commit changes),
:class:`Query` / :class:`Page` (reads), :class:`Change` (the change feed), and what a backup
moves between stores: :class:`RevisionEntry`, :class:`StoredState`, :class:`Dump`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Literal

from xreg.storage.semantics import Condition, Cursor, Sort, cursor_for
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.events.record import EventPosition, RegistryEvent
    from xreg.storage.rematerialise import Rematerialisation

Kind = Literal["registry", "group", "resource", "version"]

@dataclass(frozen=True)
class EntityRecord:
    """One stored state of an entity.

    ``doc`` holds the entity's own attributes (never its child collections). For a resource,
    ``doc`` is ``{"meta": {...meta attributes...}, "default": {...default version...}}``
    so that resource reads and filters on default-version attributes need one row.
    """

    xid: str
    kind: Kind
    ctype: str
    doc: dict[str, Any]
    revision: int = 0
    deleted: bool = False
    #: How well the record matched a text search (lower is better; ``None`` without one).
    rank: float | None = None

    @property
    def key(self) -> str:
        """The case-insensitive identity of the entity (its XID in lower case)."""
        return self.xid.lower()

    @property
    def parent_xid(self) -> str | None:
        """The XID of the entity this one belongs to (``None`` for the registry)."""
        return None if self.xid == "/" else str(Xid.parse(self.xid).parent)

    @property
    def id(self) -> str:
        """The entity's own id (``""`` for the registry)."""
        return Xid.parse(self.xid).id or ""


@dataclass(frozen=True)
class Write:
    """Create, replace or delete (``doc is None``) the current state of one entity.

    ``expect`` guards against lost updates: ``None`` means the entity must not exist (or be
    deleted), an int means its current state must have that revision, ``...`` skips the check.
    ``links`` are the keys (lower-cased XIDs) of the entities the new state depends on: the
    store indexes them so that :meth:`Store.referrers` finds the state from any of them.
    ``text`` is what a text search finds the state by: ``(title, body)`` (ids and names; the
    rest), the title weighing more (see :attr:`Query.search`).
    """

    xid: str
    kind: Kind
    ctype: str
    doc: dict[str, Any] | None
    expect: int | EllipsisType | None = ...
    links: tuple[str, ...] = ()
    text: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        return self.xid.lower()


@dataclass(frozen=True)
class Query:
    """Which entities to read, in which order, and which page of them.

    ``any_of`` is an OR of AND-groups of conditions (the xRegistry filter semantics: repeated
    ``filter`` parameters OR, expressions within one parameter AND). ``parent`` restricts to
    the descendants of one XID (``None``: across the whole registry); ``parents`` to the
    descendants of any of a set of keys. ``keys`` restricts to a set of entity keys.
    ``after`` / ``before`` are keyset cursors: the page starts after, or ends before, the
    cursor's row. ``as_of`` reads the registry as it was at that revision.
    ``search`` keeps the entities whose :attr:`Write.text` holds every one of its words (case
    and accents folded; English stemming); each record found carries its :attr:`EntityRecord.rank`,
    and sorting by :data:`~xreg.storage.semantics.RANK` orders by relevance.
    """

    ctype: str
    parent: str | None = None
    any_of: tuple[tuple[Condition, ...], ...] = ()
    sort: Sort | None = None
    limit: int | None = None
    after: Cursor | None = None
    before: Cursor | None = None
    keys: tuple[str, ...] | None = None
    as_of: int | None = None
    search: tuple[str, ...] | None = None
    parents: tuple[str, ...] | None = None


@dataclass
class Page:
    """A page of records in query order, and whether there are more before / after it."""

    items: list[EntityRecord]
    has_next: bool = False
    has_prev: bool = False

    def cursor_of(self, record: EntityRecord, sort: Sort | None) -> Cursor:
        return cursor_for(record, sort)


@dataclass(frozen=True)
class Change:
    """The latest state of an entity changed after some revision (``deleted`` for removals)."""

    record: EntityRecord

    @property
    def type(self) -> str:
        return "deleted" if self.record.deleted else "upserted"


@dataclass(frozen=True)
class RevisionEntry:
    """One commit as the store records it: its revision, when (seconds since the epoch), its note."""

    rev: int
    at: float
    note: str = ""


@dataclass(frozen=True)
class StoredState:
    """One state exactly as a store keeps it (what :meth:`Store.dump` reads and :meth:`Store.load`
    writes): visible for revisions ``rev_from <= R < rev_to`` (``rev_to`` ``None``: the current
    state); ``doc`` ``None`` is a tombstone; ``links`` and ``text`` as :class:`Write` gave them
    (a backend may keep ``links`` of current states only)."""

    xid: str
    kind: Kind
    ctype: str
    doc: dict[str, Any] | None
    rev_from: int
    rev_to: int | None = None
    links: tuple[str, ...] = ()
    text: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        return self.xid.lower()

    @property
    def deleted(self) -> bool:
        return self.doc is None

    @property
    def live(self) -> bool:
        """Current and not deleted."""
        return self.rev_to is None and self.doc is not None


@dataclass
class Dump:
    """A consistent read of everything a store holds (see :meth:`Store.dump`): its instance id,
    revision and history horizon, and the commits and states of that revision, each read as
    the caller iterates (``revisions()`` in revision order, ``states()`` in the order written,
    ``events()`` in position order); ``events_horizon`` is the last event position pruned;
    ``rematerialisations`` the deferred re-materialisation items pending at that revision (read
    with it: a few per base written, never the dependents)."""

    instance_id: str
    revision: int
    oldest: int
    revisions: Callable[[], AsyncIterator[RevisionEntry]]
    states: Callable[[], AsyncIterator[StoredState]]
    events: Callable[[], AsyncIterator[RegistryEvent]] = field(default=lambda: _no_events())
    events_horizon: EventPosition | None = None
    rematerialisations: list[Rematerialisation] = field(default_factory=list)


async def _no_events() -> AsyncIterator[RegistryEvent]:
    return
    yield

