"""The async ``Store`` interface: entity states, revisions, history, queries.

A store holds the *states* of registry entities. Each entity (the registry itself, a group, a
resource with its ``meta``, a version) is one :class:`~xreg.storage.records.EntityRecord` keyed by
its XID. Every :meth:`Store.commit` writes a batch atomically and stamps it with a new
registry-wide revision that is strictly greater than every earlier one. Superseded states and
deletions (tombstones) are kept until pruned, so a store can answer "as of revision R" and
"changes since R".

Queries (:class:`~xreg.storage.records.Query`) name a collection type (``messagegroups/messages``),
optionally a parent XID, conditions, a sort and a keyset cursor; implementations push all of it
into the database. Conditions are :class:`~xreg.storage.semantics.Condition` objects (see
``xreg.registry.filters`` for the xRegistry filter grammar that produces them and for their
reference semantics).

The values the interface exchanges are in ``xreg.storage.records``, its exceptions in
``xreg.storage.errors``, the algorithms backends share in ``xreg.storage.algorithms``. Every call
of the interface is timed in one place (``xreg.storage.observe``): :meth:`Store.__init_subclass__`
wraps the backend's methods. A call made inside another is not counted again.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import contextlib
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from xreg.storage.errors import EventsGone, RevisionAhead, RevisionGone
from xreg.storage.observe import StoreStats, observe_calls
from xreg.storage.records import Change, Dump, EntityRecord, Page, Query, RevisionEntry, StoredState, Write

if TYPE_CHECKING:
    from xreg.events.record import EventDraft, EventPosition, RegistryEvent
    from xreg.storage.rematerialise import Rematerialisation


#: How long a health probe waits for the store's current revision before it answers the last one read.
PROBE_WAIT_SECONDS = 0.01
#: How old that last revision may be; when older, the probe waits for the store.
PROBE_STALE_SECONDS = 10.0
#: A page of more than this many referrers (the dependents of a message, :meth:`Store.referrers`)
#: is decoded into records in a worker thread, on every backend: such pages come in while requests
#: are served (``xreg.registry.rematerialise``).
THREAD_DECODE_REFERRERS = 16


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
        observe_calls(cls)

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
        state kept (history and tombstones included, with their links and search text), its
        instance id and the re-materialisation items pending at that revision. Commits made
        meanwhile are not in it. Raises :class:`HistoryChanged` when the history was pruned while
        it was read."""

    @abc.abstractmethod
    async def load(self, *, instance_id: str, revision: int, oldest: int, revisions: Iterable[RevisionEntry],
                   states: Iterable[StoredState], events: Iterable[RegistryEvent] = (),
                   events_horizon: EventPosition | None = None,
                   rematerialise: Iterable[Rematerialisation] = ()) -> None:
        """Fill an empty store with what :meth:`dump` read from another (of any backend): the
        commits, the states, the events (with their positions and ids), the history horizon
        ``oldest``, the last event position pruned, the revision counter (the next commit
        gets ``revision + 1``), the instance id and the pending re-materialisation items
        (``rematerialise``, their progress kept; the lease is left free); ``revisions`` is read
        to its end before ``states`` is read, ``states`` before ``events``. Raises :class:`StoreNotEmpty` (and changes
        nothing) when the store holds any revision or state; when anything else fails, what was
        loaded is removed again."""

    @abc.abstractmethod
    async def prune(self, *, keep_revisions: int | None = None, keep_seconds: float | None = None) -> int:
        """Drop superseded states and tombstones older than the retention window, and the events of
        the revisions before the new horizon; returns how many states were dropped. Afterwards
        :meth:`oldest_revision` reflects the new horizon."""


observe_calls(Store)
