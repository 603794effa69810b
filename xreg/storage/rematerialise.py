"""Work items of deferred re-materialisation, as each backend keeps them.

A write of a message with many dependents (``xreg.registry.rematerialise``) commits the message
alone and records, in the same transaction, a :class:`Rematerialisation`: "the messages whose
``basemessageuri`` chain passes through ``key`` and whose state is older than ``revision`` are to
be re-materialised". A later commit of the same key replaces the item (its progress reset). A
worker takes the one lease on the items (compare-and-set, so one process at a time across the
replicas of a store), re-materialises the dependents in pages in key order, records how far it
got (``after``) and removes the item when done — both only while the item is still the one of
its revision.

SQLite (in the store's file, the store's connection and transactions)::

    rematerialise(key PRIMARY KEY, rev, at, after)
    rematerialise_lease(id = 0, holder, until)

MongoDB: collection ``rematerialise`` (``{_id: key, rev, at, after}``) and the lease as
``meta`` document ``{_id: "rematerialise_lease", holder, until}``. A backup carries the items
pending at its revision, their progress included (``xreg.storage.backup``); never the lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rematerialisation:
    """One work item: the dependents of ``key`` older than ``revision`` (written at ``at``, wall
    seconds; the earliest such write when items were replaced) are stale; those up to key
    ``after`` are done."""

    key: str
    revision: int
    at: float
    after: str | None = None


# -- SQLite -------------------------------------------------------------------------------------

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS rematerialise (
    key TEXT PRIMARY KEY, rev INTEGER NOT NULL, at REAL NOT NULL, after TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rematerialise_lease (
    id INTEGER PRIMARY KEY CHECK (id = 0), holder TEXT, until REAL NOT NULL DEFAULT 0);
INSERT OR IGNORE INTO rematerialise_lease(id, holder, until) VALUES (0, NULL, 0);
"""

SQLITE_ENQUEUE = ("INSERT INTO rematerialise(key, rev, at, after) VALUES (?, ?, ?, NULL) ON CONFLICT(key) DO UPDATE "
                  "SET rev = excluded.rev, at = min(at, excluded.at), after = NULL")
SQLITE_PENDING = "SELECT key, rev, at, after FROM rematerialise ORDER BY rev, key"
SQLITE_PROGRESS = "UPDATE rematerialise SET after = ? WHERE key = ? AND rev = ?"
SQLITE_DONE = "DELETE FROM rematerialise WHERE key = ? AND rev = ?"
SQLITE_LEASE = ("UPDATE rematerialise_lease SET holder = ?, until = ? "
                "WHERE id = 0 AND (holder IS NULL OR holder = ? OR until < ?)")
SQLITE_RELEASE = "UPDATE rematerialise_lease SET holder = NULL, until = 0 WHERE id = 0 AND holder = ?"


def enqueue_rows(keys: Sequence[str], rev: int, at: float) -> list[tuple[str, int, float]]:
    """The rows :data:`SQLITE_ENQUEUE` inserts for a commit (keys lower-cased, once each)."""
    return [(k, rev, at) for k in dict.fromkeys(k.lower() for k in keys)]


SQLITE_LOAD = "INSERT INTO rematerialise(key, rev, at, after) VALUES (?, ?, ?, ?)"


def from_row(row: Sequence[Any]) -> Rematerialisation:
    return Rematerialisation(str(row[0]), int(row[1]), float(row[2]), row[3])


def to_row(item: Rematerialisation) -> tuple[str, int, float, str | None]:
    """The row of :data:`SQLITE_LOAD` (a restored item)."""
    return (item.key, item.revision, item.at, item.after)


# -- MongoDB ------------------------------------------------------------------------------------

#: The ``meta`` document holding the lease.
MONGO_LEASE = "rematerialise_lease"


def from_document(doc: dict[str, Any]) -> Rematerialisation:
    return Rematerialisation(str(doc["_id"]), int(doc["rev"]), float(doc["at"]), doc.get("after"))


def to_document(item: Rematerialisation) -> dict[str, Any]:
    """The document of a restored item."""
    return {"_id": item.key, "rev": item.revision, "at": item.at, "after": item.after}
