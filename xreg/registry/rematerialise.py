"""Deferred re-materialisation: the dependents of a message written with many of them.

Writing a message re-materialises every message whose ``basemessageuri`` chain passes through it
(:mod:`xreg.registry.materialise`). Up to the inline limit (``XREG_REMATERIALISE_INLINE``) that
happens in the write's own commit, as it always did. Beyond it the write commits the message
alone, with a work item per message written (:class:`~xreg.storage.rematerialise.Rematerialisation`,
in the same transaction): the request costs the same whatever the number of dependents.

:class:`Rematerialiser` then works the items off in the background: it takes the store's one
lease on them (so one process at a time across the replicas of a store), reads the dependents a
page at a time in key order (the reverse index, ``Store.referrers``), and re-materialises each page
as one unit of work through the one write path (:meth:`LocalRegistry.write
<xreg.registry.service.LocalRegistry.write>`), recording its progress after each. Dependents
written at or after the item's revision are current already and are skipped. A crash or a restart
resumes after the last page recorded; a page done twice changes nothing the second time (the same
materialisation is not written again), so the work is idempotent. A later write of the same
message replaces its item and restarts it.

Until a dependent is re-materialised its stored materialisation is stale. Reads do not serve it
silently: :func:`stale_since` tells a record whose materialisation predates a pending item
naming one of its links, and the sources report such an answer stale (GraphQL's
``extensions.stale`` and ``Cache-Status``, with reason ``rematerialising``). Filters and sorts
on inherited attributes read the stored materialisations, so meanwhile they match the values as
they were before the write (the answer is flagged all the same when it holds such a dependent).

Events: each page's commit is an interaction of its own (internal processing, core/events.md
"Event Definition"): every dependent whose materialisation changed is ``updated`` with the
materialised attributes that changed, as the inline path reports them, under the page's
``xregcorrelationid`` and time. A dependent is reported once per page that changes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping

from xreg.registry.changeset import Changeset
from xreg.registry.materialise import Materialised, derived_of, rematerialise
from xreg.registry.service import LocalRegistry
from xreg.storage.observe import upkeep
from xreg.storage.records import EntityRecord
from xreg.storage.rematerialise import Rematerialisation

log = logging.getLogger(__name__)

#: Dependents re-materialised per commit of the worker.
BATCH = 100
#: Seconds a lease on the work items lasts unless renewed (each page renews it).
LEASE_SECONDS = 30.0


def stale_since(rec: EntityRecord, pending: Mapping[str, Rematerialisation]) -> float | None:
    """When the materialisation stored in ``rec`` (a current state) went stale: the earliest
    write (wall seconds) of a pending item on one of its links made after ``rec`` was written;
    ``None``: it is current (or ``rec`` is no materialised message)."""
    if not pending:
        return None
    derived = derived_of(rec.kind, rec.doc)
    if not derived:
        return None
    found = [item.at for key in Materialised.from_doc(derived).links
             if (item := pending.get(key)) is not None and rec.revision < item.revision]
    return min(found) if found else None


class Rematerialiser:
    """Works off the store's re-materialisation items for ``registry`` (see the module doc).

    ``clock`` (wall seconds) times the lease; ``holder`` names this process in it."""

    def __init__(self, registry: LocalRegistry, *, batch: int = BATCH, lease_seconds: float = LEASE_SECONDS,
                 clock: Callable[[], float] = time.time, holder: str | None = None) -> None:
        self.registry = registry
        self.batch = max(1, batch)
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.holder = holder or f"rematerialiser-{uuid.uuid4()}"
        self._wake = asyncio.Event()
        self._asked = False  # :meth:`wake` was called since the round began
        #: Set by :meth:`run` whenever a round leaves no work known to this process.
        self.idle = asyncio.Event()
        registry.commit_listeners.append(self._committed)

    def _committed(self, revision: int) -> None:
        """Wake for a commit of this process that deferred work (the registry notes its revision):
        other commits, the worker's own pages among them, leave it asleep."""
        if self.registry.last_deferred_revision == revision:
            self._wake.set()

    def wake(self) -> None:
        """Look for work now (rather than at the next poll)."""
        self._asked = True
        self._wake.set()

    async def _lease(self) -> bool:
        now = self.clock()
        return await self.registry.store.rematerialise_lease(self.holder, now, now + self.lease_seconds)

    async def run_until_idle(self) -> int:
        """Work off every item there is (items recorded meanwhile too); stop early when another
        process holds the lease. Returns how many dependents were re-materialised.

        The store is read again only while work is known after a round (an item this process
        recorded meanwhile, or one replaced under it): a round that drained everything known ends
        here, and an item committed later wakes :meth:`run` (this process's) or is found at its
        next poll (another process's)."""
        done = 0
        with upkeep():
            try:
                while True:
                    items = await self.registry.refresh_rematerialising()
                    if not items or not await self._lease():
                        return done
                    for item in items:
                        count = await self._work(item)
                        if count is None:
                            return done
                        done += count
                    if not self.registry.rematerialising:  # drained: no read of the store to learn it
                        return done
            finally:  # give the lease back; failing that, it expires by itself (never hide why we stop)
                now = self.clock()
                try:
                    await self.registry.store.rematerialise_lease(self.holder, now, now)
                except Exception:
                    log.warning("re-materialisation lease not released; it expires by itself", exc_info=True)

    async def _work(self, item: Rematerialisation) -> int | None:
        """Re-materialise the dependents of one item, a page per commit, from its progress on;
        ``None`` when the lease was lost."""
        after, done = item.after, 0
        while True:
            page, changed = await self._page(item, after)
            done += changed
            last = len(page) < self.batch
            after = page[-1].key if page else after
            if not await self.registry.store.rematerialised(item.key, item.revision, after, done=last):
                return done  # a later write replaced the item: the next round starts it again
            if last:
                if self._current(item):
                    del self.registry.rematerialising[item.key]
                return done
            await asyncio.sleep(0)  # let requests (and health probes) run between pages
            if not await self._lease():
                return None

    def _current(self, item: Rematerialisation) -> bool:
        known = self.registry.rematerialising.get(item.key)
        return known is not None and known.revision == item.revision

    async def _page(self, item: Rematerialisation, after: str | None) -> tuple[list[EntityRecord], int]:
        """One page of dependents after key ``after``, re-materialised in one unit of work."""

        async def build(cs: Changeset) -> list[EntityRecord]:
            page = await cs.store.referrers([item.key], after=after, limit=self.batch)
            await rematerialise(cs, [r for r in page if r.revision < item.revision])
            return page

        # a failure (server_busy: other writers kept conflicting) records no progress: the page is
        # done again at the next round, so no dependent is left stale with its item gone
        page, outcome = await self.registry.write(build, subject=item.key, note=f"rematerialise {item.key}",
                                                  touch=False)
        return page, len(outcome.rematerialised)

    async def run(self, poll_seconds: float) -> None:
        """Forever: work off what there is, then wait for a write that defers work (or a poll:
        another replica's writes, an expired lease)."""
        while True:
            self._wake.clear()
            self._asked = False
            try:
                await self.run_until_idle()
            except Exception:  # keep the worker alive; the items stay for the next round
                task = asyncio.current_task()
                if task is not None and task.cancelling():  # stopping: an error on the way out ends it
                    raise
                log.exception("re-materialisation failed; retrying at the next poll")
            if not self.registry.rematerialising:
                self.idle.set()
                # every item this process noted is worked off (one committed since would be known):
                # a wake by those commits is spent, and only an explicit one calls for a round
                if not self._asked:
                    self._wake.clear()
            try:
                async with asyncio.timeout(poll_seconds):
                    await self._wake.wait()
            except TimeoutError:
                pass

