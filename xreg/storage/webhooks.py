"""Webhook subscriptions and their delivery state, kept in the registry's store.

One :class:`Subscription` per webhook: where events go (``url``), which (``types``, ``subject``),
how (``mode``: structured or binary CloudEvents), the signing ``secret``, and the delivery state
that makes delivery at-least-once and ordered across restarts and processes:

* ``cursor`` — the position text (``"<revision>.<index>"``) of the last event delivered (or
  dead-lettered); delivery resumes after it;
* ``attempts`` / ``next_attempt`` / ``last_error`` — the failing event's attempts so far and when
  the next one is due (wall-clock seconds);
* ``holder`` / ``lease_until`` — the process delivering the subscription and until when. A lease
  is taken and renewed by compare-and-set in the store (:meth:`WebhookStore.claim`,
  :meth:`WebhookStore.renew`), so several processes on one store never deliver one subscription
  at the same time; every state change names the holder and fails (returns ``False``) when the
  lease was lost.

Events that failed every attempt become :class:`DeadLetter` rows (the CloudEvent as sent, its
position, attempts, last error); :meth:`WebhookStore.replay` marks them for another delivery.

Times are passed in (``now``): this module never reads a clock, so tests drive it. The SQLite
and MongoDB implementations (``webhooks_sqlite.py``, ``webhooks_mongo.py``) share their store's
connection or database. Backups do not carry webhook subscriptions.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

#: CloudEvents HTTP content modes.
ContentMode = Literal["structured", "binary"]


@dataclass(frozen=True)
class Subscription:
    """A webhook subscription and its delivery state (see the module doc)."""

    id: str
    url: str
    types: tuple[str, ...] | None
    subject: str | None
    mode: ContentMode
    secret: str = field(repr=False)
    owner: str
    created: float
    cursor: str | None = None
    attempts: int = 0
    next_attempt: float = 0.0
    last_error: str | None = None
    holder: str | None = None
    lease_until: float = 0.0
    enabled: bool = True

    def public(self) -> dict[str, Any]:
        """What clients may read: everything but the secret."""
        return {"id": self.id, "url": self.url, "types": list(self.types) if self.types is not None else None,
                "subject": self.subject, "mode": self.mode, "owner": self.owner, "created": self.created,
                "cursor": self.cursor, "attempts": self.attempts, "nextattempt": self.next_attempt,
                "lasterror": self.last_error, "enabled": self.enabled}


@dataclass(frozen=True)
class DeadLetter:
    """An event that failed every attempt: ``event`` is the structured CloudEvent as sent."""

    subscription: str
    position: str
    event: dict[str, Any]
    attempts: int
    last_error: str
    failed_at: float
    replay: bool = False


def position_key(text: str | None) -> tuple[int, int]:
    """Sort key of a position text (``None``: before every position)."""
    if not text:
        return (-1, -1)
    rev, _, index = text.partition(".")
    return (int(rev), int(index or 0))


class WebhookStore(abc.ABC):
    """Subscriptions and delivery state on one store (see the module doc)."""

    @abc.abstractmethod
    async def open(self) -> None:
        """Create the tables or collections and indexes (idempotent)."""

    # -- subscriptions ---------------------------------------------------------------------------
    @abc.abstractmethod
    async def create(self, sub: Subscription) -> None:
        """Store a new subscription."""

    @abc.abstractmethod
    async def get(self, sub_id: str) -> Subscription | None:
        """The subscription, or ``None``."""

    @abc.abstractmethod
    async def all(self) -> list[Subscription]:
        """Every subscription, oldest first."""

    @abc.abstractmethod
    async def update(self, sub_id: str, changes: dict[str, Any]) -> Subscription | None:
        """Change ``url``, ``types``, ``subject``, ``mode``, ``enabled`` or ``cursor``; ``None`` if
        the subscription does not exist."""

    @abc.abstractmethod
    async def delete(self, sub_id: str) -> bool:
        """Remove a subscription and its dead letters; whether it existed."""

    # -- leases and progress -------------------------------------------------------------------
    @abc.abstractmethod
    async def due(self, now: float, holder: str, limit: int) -> list[Subscription]:
        """Enabled subscriptions whose next attempt is due and whose lease is free, expired or
        ``holder``'s."""

    @abc.abstractmethod
    async def claim(self, sub_id: str, holder: str, now: float, until: float) -> Subscription | None:
        """Take (or extend) the lease when it is free, expired or ours: the subscription as
        claimed, or ``None`` when another process holds it."""

    @abc.abstractmethod
    async def renew(self, sub_id: str, holder: str, until: float) -> bool:
        """Extend our lease; ``False`` when it is no longer ours."""

    @abc.abstractmethod
    async def release(self, sub_id: str, holder: str, now: float) -> None:
        """Give the lease up (when ours); the next attempt is due no earlier than ``now``, so
        subscriptions served last come last in :meth:`due` (a turn each, in rotation)."""

    @abc.abstractmethod
    async def advance(self, sub_id: str, holder: str, cursor: str) -> bool:
        """An event was delivered: the cursor moves to it and the attempts are reset."""

    @abc.abstractmethod
    async def failed(self, sub_id: str, holder: str, attempts: int, next_attempt: float, error: str) -> bool:
        """An attempt failed: record it and when the next one is due."""

    @abc.abstractmethod
    async def dead_letter(self, letter: DeadLetter, holder: str, *, advance: bool) -> bool:
        """Record ``letter`` (replacing one of the same position) and, when ``advance``, move the
        cursor past it and reset the attempts."""

    # -- dead letters ---------------------------------------------------------------------------
    @abc.abstractmethod
    async def dead_letters(self, sub_id: str, limit: int) -> list[DeadLetter]:
        """The subscription's dead letters in position order."""

    @abc.abstractmethod
    async def replay(self, sub_id: str, positions: Sequence[str] | None) -> int:
        """Mark dead letters (all, or those at ``positions``) for another delivery; how many."""

    @abc.abstractmethod
    async def next_replay(self, sub_id: str) -> DeadLetter | None:
        """The first dead letter marked for replay, in position order."""

    @abc.abstractmethod
    async def replayed(self, sub_id: str, holder: str, position: str) -> bool:
        """A replayed dead letter was delivered: it is removed and the attempts reset (while our
        lease holds)."""
