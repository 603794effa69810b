"""The exceptions of the stores: what a :class:`~xreg.storage.base.Store` call raises for a
reason its caller handles (a lost update, pruned history, a store that is not empty, …)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xreg.events.record import EventPosition


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
