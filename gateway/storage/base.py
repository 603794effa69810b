"""The async ``Store`` interface: entity states, revisions, history, queries.

A store holds the *states* of registry entities. Each entity (the registry itself, a group, a
resource with its ``meta``, a version) is one :class:`EntityRecord` keyed by its XID. Every
:meth:`Store.commit` writes a batch atomically and stamps it with a new registry-wide revision
that is strictly greater than every earlier one. Superseded states and deletions (tombstones)
are kept until pruned, so a store can answer "as of revision R" and "changes since R".

Queries (:class:`Query`) name a collection type (``messagegroups/messages``), optionally a
parent XID, conditions, a sort and a keyset cursor; implementations push all of it into the
database. Conditions are :class:`Condition` objects (see ``gateway.registry.filters`` for the
xRegistry filter grammar that produces them and for their reference semantics).
"""

from __future__ import annotations

import abc
import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.xid import Xid

Kind = Literal["registry", "group", "resource", "version"]

#: Ops a :class:`Condition` may carry.
OPS = ("eq", "ne", "lt", "le", "gt", "ge", "exists", "null")


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
    """

    xid: str
    kind: Kind
    ctype: str
    doc: dict[str, Any] | None
    expect: int | type(Ellipsis) | None = ...

    @property
    def key(self) -> str:
        return self.xid.lower()


@dataclass(frozen=True)
class Condition:
    """One comparison on an attribute path of the entity's ``doc``.

    ``path`` is a tuple of keys (``("meta", "defaultversionid")``, ``("labels", "team")``;
    ``"*"`` any map value, ``"[*]"`` / ``"[N]"`` list elements). ``op`` is one of :data:`OPS`;
    ``value`` the string written in the filter; ``wildcard`` means ``*`` in ``value`` matches
    any run of characters. The reference semantics — numbers numerically, booleans exactly,
    strings case-insensitively, lists element-wise, ``ne`` as the negation of ``eq`` — are
    :func:`gateway.registry.filters.matches`; every store reproduces them.
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


@dataclass(frozen=True)
class Cursor:
    """A keyset position: the sort value and the entity key of the last row seen."""

    key: str
    value: Any = None

    def encode(self) -> str:
        raw = json.dumps([self.key, self.value], separators=(",", ":")).encode()
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


@dataclass(frozen=True)
class Query:
    """Which entities to read, in which order, and which page of them.

    ``any_of`` is an OR of AND-groups of conditions (the xRegistry filter semantics: repeated
    ``filter`` parameters OR, expressions within one parameter AND). ``parent`` restricts to
    the descendants of one XID (``None``: across the whole registry). ``keys`` restricts to a
    set of entity keys. ``after`` / ``before`` are keyset cursors: the page starts after, or
    ends before, the cursor's row. ``as_of`` reads the registry as it was at that revision.
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


@dataclass
class Page:
    """A page of records in query order, and whether there are more before / after it."""

    items: list[EntityRecord]
    has_next: bool = False
    has_prev: bool = False

    def cursor_of(self, record: EntityRecord, sort: Sort | None) -> Cursor:
        return cursor_for(record, sort)


def sort_value(doc: dict[str, Any], path: Sequence[str]) -> Any:
    """The value a sort path selects in ``doc`` (``None`` when absent)."""
    node: Any = doc
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def cursor_for(record: EntityRecord, sort: Sort | None) -> Cursor:
    """The keyset cursor that points at ``record`` under ``sort``."""
    if sort is None:
        return Cursor(key=record.key)
    value = sort_value(record.doc, sort.path)
    if isinstance(value, (dict, list)):
        value = json.dumps(value, sort_keys=True)
    return Cursor(key=record.key, value=value)


@dataclass(frozen=True)
class Change:
    """The latest state of an entity changed after some revision (``deleted`` for removals)."""

    record: EntityRecord

    @property
    def type(self) -> str:
        return "deleted" if self.record.deleted else "upserted"


@dataclass
class StoreStats:
    """Counters a store keeps, read by tests and benchmarks (calls per method)."""

    calls: dict[str, int] = field(default_factory=dict)

    def hit(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())


class RevisionGone(Exception):
    """An as-of read asked for a revision older than the retained history."""

    def __init__(self, revision: int, oldest: int) -> None:
        super().__init__(f"revision {revision} is older than the retained history (oldest readable: {oldest})")
        self.revision = revision
        self.oldest = oldest


class Conflict(Exception):
    """A :class:`Write`'s ``expect`` did not hold: someone else wrote the entity first."""

    def __init__(self, xid: str, expected: Any, found: Any) -> None:
        super().__init__(f"{xid}: expected revision {expected}, found {found}")
        self.xid = xid


class Store(abc.ABC):
    """Async storage of entity states with revisions, history and pushed-down queries."""

    stats: StoreStats

    # -- lifecycle ----------------------------------------------------------------------------
    @abc.abstractmethod
    async def open(self) -> None:
        """Connect, create the schema / indexes if missing."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections."""

    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- reads --------------------------------------------------------------------------------
    @abc.abstractmethod
    async def current_revision(self) -> int:
        """The revision of the last commit (0 for an empty store)."""

    @abc.abstractmethod
    async def oldest_revision(self) -> int:
        """The oldest revision that as-of reads can still reconstruct."""

    @abc.abstractmethod
    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, EntityRecord]:
        """Live entities by XID (matched case-insensitively), keyed by :attr:`EntityRecord.key`."""

    async def get(self, xid: str, as_of: int | None = None) -> EntityRecord | None:
        """One live entity by XID, or ``None``."""
        return (await self.get_many([xid], as_of)).get(xid.lower())

    @abc.abstractmethod
    async def list(self, query: Query) -> Page:
        """A page of live entities matching ``query``, in its order."""

    @abc.abstractmethod
    async def count(self, query: Query) -> int:
        """How many live entities match ``query`` (ignoring its limit and cursors)."""

    @abc.abstractmethod
    async def count_children(
        self, parents: Sequence[str], ctype: str, as_of: int | None = None
    ) -> dict[str, int]:
        """For each parent XID, how many live children of type ``ctype`` it has (by parent key)."""

    @abc.abstractmethod
    async def changes(
        self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
        limit: int | None = None, after: str | None = None,
    ) -> list[Change]:
        """Entities whose latest state (as of ``until``) was written after revision ``since``,
        tombstones included, ordered by entity key; ``after`` is the last key already seen."""

    @abc.abstractmethod
    async def explain(self, query: Query) -> str:
        """How the database will run ``query`` (SQLite's query plan; Mongo's filter/sort/hint)."""

    # -- writes -------------------------------------------------------------------------------
    @abc.abstractmethod
    async def commit(self, writes: Sequence[Write], *, note: str = "") -> int:
        """Apply ``writes`` atomically under a new revision and return it.

        Raises :class:`Conflict` (and writes nothing) when an ``expect`` does not hold.
        An empty batch writes nothing and returns the current revision.
        """

    @abc.abstractmethod
    async def prune(self, *, keep_revisions: int | None = None, keep_seconds: float | None = None) -> int:
        """Drop superseded states and tombstones older than the retention window; returns how
        many rows were dropped. Afterwards :meth:`oldest_revision` reflects the new horizon."""
