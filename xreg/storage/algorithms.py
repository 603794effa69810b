"""Algorithms every store backend shares: planning a commit (:func:`plan_commit`, the
``expect`` checks of its writes), the history horizon of a prune (:func:`retention_horizon`),
reading in batches (:func:`batches`)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xreg.storage.errors import Conflict
from xreg.storage.records import Kind, Write


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
        links = tuple(dict.fromkeys(x.lower() for x in w.links)) if w.doc is not None and w.links else ()
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

