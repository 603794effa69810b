"""The async ``Store`` interface: entity states, revisions, history, queries.

A store holds the *states* of registry entities. Each entity (the registry itself, a group, a
resource with its ``meta``, a version) is one :class:`EntityRecord` keyed by its XID. Every
:meth:`Store.commit` writes a batch atomically and stamps it with a new registry-wide revision
that is strictly greater than every earlier one. Superseded states and deletions (tombstones)
are kept until pruned, so a store can answer "as of revision R" and "changes since R".

Queries (:class:`Query`) name a collection type (``messagegroups/messages``), optionally a
parent XID, conditions, a sort and a keyset cursor; implementations push all of it into the
database. Conditions are :class:`Condition` objects (see ``xreg.registry.filters`` for the
xRegistry filter grammar that produces them and for their reference semantics).

Every call of the interface (:data:`OBSERVED_CALLS`) is timed in one place, whatever the backend:
:meth:`Store.__init_subclass__` wraps the backend's methods (``xreg_store_call_duration_seconds``
by call; a span per call when tracing is on). A call made inside another is not counted again.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import contextlib
import functools
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Literal

from xreg import metrics, tracing
from xreg.storage.semantics import Condition, Cursor, Sort, cursor_for
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.events.record import EventDraft, EventPosition, RegistryEvent
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


#: Set while a caller reads for its own upkeep rather than for the request it serves (the local
#: registry checking its model at most once a second): those calls are not counted in
#: :class:`StoreStats`, whose counts per request then do not depend on timing.
_UPKEEP: ContextVar[bool] = ContextVar("xreg_store_upkeep", default=False)


@contextlib.contextmanager
def upkeep() -> Iterator[None]:
    """Store calls made inside are upkeep (not counted in :class:`StoreStats`; this task only)."""
    token = _UPKEEP.set(True)
    try:
        yield
    finally:
        _UPKEEP.reset(token)


@dataclass
class StoreStats:
    """Counters a store keeps, read by tests and benchmarks (calls per method; :func:`upkeep`
    calls excluded)."""

    calls: dict[str, int] = field(default_factory=dict)

    def hit(self, name: str) -> None:
        if not _UPKEEP.get():
            self.calls[name] = self.calls.get(name, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())


class StoreError(Exception):
    """A store refused a request for a reason its caller can explain to a client."""


class EventsGone(StoreError):
    """A read of the event log asked for the events after a position whose successors were
    pruned: ``horizon`` is the last position dropped (resume from ``None``, the oldest retained)."""

    def __init__(self, after: EventPosition, horizon: EventPosition) -> None:
        super().__init__(f"the events after {after} are no longer retained (events up to {horizon} were pruned)")
        self.after = after
        self.horizon = horizon


class RevisionGone(Exception):
    """An as-of read asked for a revision older than the retained history."""

    def __init__(self, revision: int, oldest: int) -> None:
        super().__init__(f"revision {revision} is older than the retained history (oldest readable: {oldest})")
        self.revision = revision
        self.oldest = oldest


class RevisionAhead(Exception):
    """A change feed asked for the changes since a revision the store has not reached: the
    checkpoint was taken against another store, or before a restore that lost the history."""

    def __init__(self, revision: int, current: int) -> None:
        super().__init__(f"revision {revision} is ahead of this registry's current revision {current}")
        self.revision = revision
        self.current = current


class StoreNotEmpty(Exception):
    """:meth:`Store.load` refused: the store already holds revisions or states."""


class HistoryChanged(Exception):
    """:meth:`Store.dump` found the history pruned while it read it: the dump is incomplete."""


class Conflict(Exception):
    """A :class:`Write`'s ``expect`` did not hold: someone else wrote the entity first."""

    def __init__(self, xid: str, expected: Any, found: Any) -> None:
        super().__init__(f"{xid}: expected revision {expected}, found {found}")
        self.xid = xid


@dataclass(frozen=True)
class CurrentState:
    """The current state of an entity as a commit finds it: the revision that wrote it and
    whether it is a tombstone. ``handle`` is the store's own reference to its row."""

    rev_from: int
    deleted: bool
    handle: Any = None


@dataclass(frozen=True)
class NewState:
    """A state a commit adds: one per written entity (``doc`` ``None``: a tombstone)."""

    key: str
    xid: str
    kind: Kind
    ctype: str
    doc: dict[str, Any] | None
    links: tuple[str, ...] = ()
    text: tuple[str, str] | None = None

    @property
    def deleted(self) -> bool:
        return self.doc is None


@dataclass
class CommitPlan:
    """What a commit does: the current states it closes (by key) and the states it adds."""

    closing: list[str]
    new: dict[str, NewState]


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
    ``events()`` in position order); ``events_horizon`` is the last event position pruned."""

    instance_id: str
    revision: int
    oldest: int
    revisions: Callable[[], AsyncIterator[RevisionEntry]]
    states: Callable[[], AsyncIterator[StoredState]]
    events: Callable[[], AsyncIterator[RegistryEvent]] = field(default=lambda: _no_events())
    events_horizon: EventPosition | None = None


async def _no_events() -> AsyncIterator[RegistryEvent]:
    return
    yield


def plan_commit(writes: Sequence[Write], current: dict[str, CurrentState], rev: int) -> CommitPlan:
    """Check every write's ``expect`` against the current states (and the batch's earlier
    writes), and plan the commit at revision ``rev``. Raises :class:`Conflict` on the first
    write whose expectation does not hold. Deleting what does not exist records nothing;
    several writes of one entity leave its last state."""
    closing: list[str] = []
    new: dict[str, NewState] = {}
    for w in writes:
        k = w.key
        if k in new:  # written earlier in this batch
            found: int | None = None if new[k].deleted else rev
        elif k in current:
            found = None if current[k].deleted else current[k].rev_from
        else:
            found = None
        if w.expect is not ... and w.expect != found:
            raise Conflict(w.xid, w.expect, found)
        if w.doc is None and found is None and k not in new:
            continue
        if k not in new and k in current:
            closing.append(k)
        links = tuple(dict.fromkeys(x.lower() for x in w.links)) if w.doc is not None else ()
        new[k] = NewState(k, w.xid, w.kind, w.ctype, w.doc, links, w.text if w.doc is not None else None)
    return CommitPlan(closing, new)


def batches(items: Iterable[Any], size: int = 500) -> Iterator[builtins.list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter), read as they are needed."""
    batch: builtins.list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def retention_horizon(
    current: int, oldest: int, *, keep_revisions: int | None, keep_seconds: float | None,
    newest_before_cutoff: int | None,
) -> int:
    """The new history horizon of :meth:`Store.prune`: ``keep_revisions=N`` keeps the last N
    revisions (horizon ``current - N``), ``keep_seconds`` keeps those committed within that
    time (horizon: ``newest_before_cutoff``, the newest revision committed before the cutoff,
    or no move when there is none); both given: the older horizon; neither: ``current``. The
    horizon never moves back and never passes ``current``."""
    horizons = []
    if keep_revisions is not None:
        horizons.append(current - max(0, keep_revisions))
    if keep_seconds is not None:
        horizons.append(newest_before_cutoff if newest_before_cutoff is not None else oldest)
    return min(max(min(horizons, default=current), oldest), current)


#: The calls of the :class:`Store` interface that are timed (and traced).
OBSERVED_CALLS = ("open", "close", "check_ready", "current_revision", "oldest_revision", "get_many", "list", "count",
                  "count_children", "changes", "referrers", "explain", "commit", "prune", "events_after")
_in_call: ContextVar[bool] = ContextVar("xreg_store_call", default=False)


def _observed(call: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``fn`` (a store method) timed as ``call``; a call within another is not counted again."""
    histogram = metrics.STORE_CALL_DURATION.labels(call)

    @functools.wraps(fn)
    async def observed(self: Store, *args: Any, **kwargs: Any) -> Any:
        if _in_call.get():
            result = await fn(self, *args, **kwargs)
        else:
            token = _in_call.set(True)
            started = time.perf_counter()
            try:
                if not tracing.active():
                    result = await fn(self, *args, **kwargs)
                else:
                    with tracing.span(f"store.{call}",
                                      {"db.system.name": type(self).__name__, "xreg.store.call": call}):
                        result = await fn(self, *args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - started)
                _in_call.reset(token)
        if call == "commit":  # what health probes answer while the store is busy (Store.probe_revision)
            self._seen_revision, self._seen_at = result, self.monotonic()
        return result

    observed.__observed__ = True  # type: ignore[attr-defined]
    return observed


def _observe_calls(cls: type) -> None:
    """Wrap the interface methods ``cls`` defines itself (see :data:`OBSERVED_CALLS`)."""
    for call in OBSERVED_CALLS:
        fn = cls.__dict__.get(call)
        if callable(fn) and not getattr(fn, "__isabstractmethod__", False) and not hasattr(fn, "__observed__"):
            setattr(cls, call, _observed(call, fn))


#: How long a health probe waits for the store's current revision before it answers the last one read.
PROBE_WAIT_SECONDS = 0.01
#: How old that last revision may be; when older, the probe waits for the store.
PROBE_STALE_SECONDS = 10.0


def _consume_error(read: asyncio.Future[int]) -> None:
    if not read.cancelled():
        read.exception()


class Store(abc.ABC):
    """Async storage of entity states with revisions, history and pushed-down queries.

    Backends implement the primitives (``_current``, ``_oldest``, ``_reading``) and the
    queries; the revision getters and the readability check are here, once.

    Every store has an *instance id*: a UUID created with the store (or when a store made before
    instance ids existed is first opened) and kept in its metadata. It names this registry's
    history: revisions mean something only together with it. :meth:`load` (a restore with
    history) carries it over; a store filled any other way has its own.
    """

    stats: StoreStats
    _instance: str | None = None
    #: The monotonic clock the probe measures a revision's age with (tests set their own).
    monotonic: Callable[[], float] = time.monotonic
    #: The last revision this process read, when (:attr:`monotonic`), and the probe's read under way.
    _seen_revision: int | None = None
    _seen_at: float = 0.0
    _probe_read: asyncio.Future[int] | None = None

    @property
    def instance_id(self) -> str:
        """The store's instance id (known once the store is open)."""
        if self._instance is None:
            raise RuntimeError(f"{type(self).__name__} is not open: its instance id is not known yet")
        return self._instance

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _observe_calls(cls)

    # -- primitives of a backend --------------------------------------------------------------
    @abc.abstractmethod
    async def _current(self) -> int:
        """The last committed revision (no locking, no counting)."""

    @abc.abstractmethod
    async def _oldest(self) -> int:
        """The history horizon (no locking, no counting)."""

    @abc.abstractmethod
    def _reading(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """What a read holds so that it never sees a commit half done."""

    async def _check(self, as_of: int | None) -> None:
        """Raise :class:`RevisionGone` when ``as_of`` is older than the retained history."""
        if as_of is not None:
            oldest = await self._oldest()
            if as_of < oldest:
                raise RevisionGone(as_of, oldest)

    # -- lifecycle ----------------------------------------------------------------------------
    @abc.abstractmethod
    async def open(self) -> None:
        """Connect, create the schema / indexes if missing."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections."""

    @abc.abstractmethod
    async def check_ready(self) -> None:
        """Raise unless the store answers and can write now (the readiness probe); changes
        nothing the registry reads."""

    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _check_feed(self, since: int, until: int | None) -> None:
        """Raise :class:`RevisionGone` when a change feed from ``since`` (as of ``until``) could
        not be complete: tombstones at or before the horizon are gone (``since == 0``,
        "everything", needs none); :class:`RevisionAhead` when ``since`` is past the current
        revision: a checkpoint of another store (or of this one before a restore without history),
        whose feed would silently miss changes until the counter caught up."""
        oldest = await self._oldest()
        if 0 < since < oldest:
            raise RevisionGone(since, oldest)
        current = await self._current()
        if since > current:
            raise RevisionAhead(since, current)
        await self._check(until)

    # -- reads --------------------------------------------------------------------------------
    async def current_revision(self) -> int:
        """The revision of the last commit (0 for an empty store)."""
        self.stats.hit("current_revision")
        async with self._reading():
            revision = await self._current()
            self._seen_revision, self._seen_at = revision, self.monotonic()
        return revision

    async def probe_revision(self, *, busy: bool = False) -> int:
        """For health probes, which must answer at once however busy the process is. Every probe
        starts a read of the store's revision (one at a time). When the process is ``busy`` (it
        has requests at work) the probe answers, without waiting, the last revision this process
        read or committed, as any wait lets the event loop's other work run first; otherwise it
        waits up to :data:`PROBE_WAIT_SECONDS` for the read, then answers that last revision.
        Once no read has come back for :data:`PROBE_STALE_SECONDS`, it waits for the store (its
        error, if it fails), so a store that stopped answering still fails the liveness probe."""
        seen = self._seen_revision
        age = self.monotonic() - self._seen_at if seen is not None else math.inf
        read = self._probe_read
        if read is None or read.done():
            read = self._probe_read = asyncio.ensure_future(self.current_revision())
            read.add_done_callback(_consume_error)  # the probe that waits for it raises it
        if age > PROBE_STALE_SECONDS:
            return await asyncio.shield(read)
        if busy:
            return seen  # type: ignore[return-value]
        try:
            async with asyncio.timeout(PROBE_WAIT_SECONDS):
                return await asyncio.shield(read)
        except TimeoutError:  # the store's thread waits for the interpreter behind the work of others
            return seen  # type: ignore[return-value]

    async def oldest_revision(self) -> int:
        """The oldest revision that as-of reads can still reconstruct."""
        self.stats.hit("oldest_revision")
        async with self._reading():
            return await self._oldest()

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

    async def changes(
        self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
        limit: int | None = None, after: str | None = None, by_revision: bool = False,
        after_revision: int | None = None,
    ) -> builtins.list[Change]:
        """Entities whose latest state (as of ``until``) was written after revision ``since``,
        tombstones included, ordered by entity key — or, ``by_revision``, by the revision that
        wrote them, then key. ``after`` is the last key already seen (``by_revision``: with its
        revision, ``after_revision``). Raises :class:`RevisionGone` when history older than the
        feed needs was pruned."""
        self.stats.hit("changes")
        if by_revision and after is not None and after_revision is None:
            raise ValueError("a feed in revision order continues after a key and its revision")
        async with self._reading():
            await self._check_feed(since, until)
            return await self._changes(since, until, ctypes, limit, after,
                                       after_revision if by_revision else None, by_revision)

    @abc.abstractmethod
    async def _changes(
        self, since: int, until: int | None, ctypes: Sequence[str] | None, limit: int | None, after: str | None,
        after_revision: int | None, by_revision: bool,
    ) -> builtins.list[Change]:
        """The feed of :meth:`changes` (the read guard is held, the horizon checked)."""

    @abc.abstractmethod
    async def referrers(self, keys: Sequence[str], *, after: str | None = None, limit: int | None = None,
                        ordered: bool = True) -> builtins.list[EntityRecord]:
        """The live entities whose current state links to any of ``keys`` (see
        :attr:`Write.links`; matched case-insensitively), in key order: a reverse index, one
        index lookup per key whatever the size of the store. ``after`` / ``limit``: the page of
        at most ``limit`` of them whose keys follow ``after``; ``ordered=False``: any ``limit``
        of them (what a bound check needs: they are not all read to find the first by key)."""

    @abc.abstractmethod
    async def explain(self, query: Query) -> str:
        """How the database will run ``query`` (SQLite's query plan; Mongo's filter/sort/hint)."""

    # -- events -------------------------------------------------------------------------------
    async def events_after(
        self, after: EventPosition | None, *, limit: int, types: Sequence[str] | None = None,
        subject: str | None = None,
    ) -> builtins.list[RegistryEvent]:
        """At most ``limit`` events after position ``after`` (``None``: from the oldest retained),
        in position order, of any of ``types`` (``None``/empty: all) about ``subject`` (see
        :func:`xreg.events.record.subject_filter`). Raises :class:`EventsGone` when events
        after ``after`` were pruned."""
        self.stats.hit("events_after")
        if limit <= 0:
            return []
        async with self._reading():
            horizon = await self._events_horizon()
            if after is not None and horizon is not None and after < horizon:
                raise EventsGone(after, horizon)
            return await self._events_after(after, limit, tuple(types or ()), subject)

    @abc.abstractmethod
    async def _events_after(self, after: EventPosition | None, limit: int, types: tuple[str, ...],
                            subject: str | None) -> builtins.list[RegistryEvent]:
        """The read of :meth:`events_after` (the read guard is held, the horizon checked)."""

    @abc.abstractmethod
    async def _events_horizon(self) -> EventPosition | None:
        """The last event position pruned (``None``: none was)."""

    # -- writes -------------------------------------------------------------------------------
    @abc.abstractmethod
    async def commit(self, writes: Sequence[Write], *, note: str = "", events: Sequence[EventDraft] = (),
                     rematerialise: Sequence[str] = ()) -> int:
        """Apply ``writes`` atomically under a new revision and return it; ``events`` are stored in
        the same transaction at positions ``(revision, 0..n-1)`` in the order given, and so is a
        :class:`~xreg.storage.rematerialise.Rematerialisation` of this revision per key of
        ``rematerialise`` (replacing one of the same key, its progress reset).

        Raises :class:`Conflict` (and writes nothing) when an ``expect`` does not hold.
        An empty batch writes nothing and returns the current revision (``events`` need writes).
        """

    # -- deferred re-materialisation (xreg.storage.rematerialise) ------------------------------
    @abc.abstractmethod
    async def rematerialisations(self) -> builtins.list[Rematerialisation]:
        """The work items :meth:`commit` recorded and no one finished, oldest revision first."""

    @abc.abstractmethod
    async def rematerialised(self, key: str, revision: int, after: str | None, *, done: bool) -> bool:
        """Record progress on the work item of ``key`` while it is still the one of ``revision``:
        the dependents up to key ``after`` are done, or (``done``) all are and the item goes.
        ``False`` when a later commit replaced the item (its progress was reset)."""

    @abc.abstractmethod
    async def rematerialise_lease(self, holder: str, now: float, until: float) -> bool:
        """Take or extend the one lease on the work items (free, expired at ``now``, or
        ``holder``'s) until ``until``; ``until <= now`` gives it up. Whether ``holder`` holds it."""

    # -- backups ------------------------------------------------------------------------------
    @abc.abstractmethod
    def dump(self) -> contextlib.AbstractAsyncContextManager[Dump]:
        """Everything the store holds, as of one revision: its commits (revision, time, note), every
        state kept (history and tombstones included, with their links and search text) and its
        instance id. Commits made meanwhile are not in it. Raises :class:`HistoryChanged` when
        the history was pruned while it was read."""

    @abc.abstractmethod
    async def load(self, *, instance_id: str, revision: int, oldest: int, revisions: Iterable[RevisionEntry],
                   states: Iterable[StoredState], events: Iterable[RegistryEvent] = (),
                   events_horizon: EventPosition | None = None) -> None:
        """Fill an empty store with what :meth:`dump` read from another (of any backend): the
        commits, the states, the events (with their positions and ids), the history horizon
        ``oldest``, the last event position pruned, the revision counter (the next commit
        gets ``revision + 1``) and the instance id; ``revisions`` is read to its end before
        ``states`` is read, ``states`` before ``events``. Raises :class:`StoreNotEmpty` (and changes
        nothing) when the store holds any revision or state; when anything else fails, what was
        loaded is removed again."""

    @abc.abstractmethod
    async def prune(self, *, keep_revisions: int | None = None, keep_seconds: float | None = None) -> int:
        """Drop superseded states and tombstones older than the retention window, and the events of
        the revisions before the new horizon; returns how many states were dropped. Afterwards
        :meth:`oldest_revision` reflects the new horizon."""


_observe_calls(Store)
