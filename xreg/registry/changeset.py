"""A unit of work over the registry: load, change and validate entities, then commit atomically.

Every write of the registry — one HTTP request, one GraphQL mutation, one imported document —
is one :class:`Changeset`. It reads the states it needs from the store (prefetching in bulk),
applies the xRegistry write semantics in memory (ids, epochs, timestamps, defaults, the
resource processing algorithm of core/spec.md, ``maxversions`` pruning, parents' epochs when
children come and go), validates every entity it touched, and only then hands one batch of
:class:`~xreg.storage.records.Write` to the store. A failure anywhere raises before the store
is called, so nothing is written.

The class is a façade: the states and their bookkeeping are :class:`~xreg.registry.write_steps.unit.Unit`'s,
each write step is a function of its module in ``xreg.registry.write_steps`` (registry entity,
groups, resources and versions, documents, settling a resource, ancestors, deletes, checks).

A commit of many entities (an import, the re-materialisation worker's page) builds its store
writes and derives its events in a worker thread (:data:`THREAD_PREPARE`): pure work over states
nothing else touches meanwhile, kept off the event loop so requests and health probes go on.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any, cast

from xreg.errors import ValidationErrors
from xreg.events.derive import EntityChange, derive_events
from xreg.events.record import EventDraft
from xreg.registry.materialise import DERIVED, Materialised, materialise
from xreg.registry.search import search_text
from xreg.registry.write_steps import deletes, groups, registry_entity, resources
from xreg.registry.write_steps.group_constraints import check_xref_constraints
from xreg.registry.write_steps.unit import EntityState, Unit
from xreg.storage.records import Kind, Write

#: Entities a commit writes from which its writes and events are built in a worker thread.
THREAD_PREPARE = 32


@dataclass
class Outcome:
    """What one changeset did: entity keys per outcome."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: Messages whose materialisation changed (a base of theirs was written), not themselves.
    rematerialised: list[str] = field(default_factory=list)
    #: Keys of the messages written whose dependents were too many to re-materialise in this
    #: commit: left to ``xreg.registry.rematerialise`` (recorded with the commit).
    deferred: list[str] = field(default_factory=list)
    #: ``(message XID, reference)`` of the messages written whose ``basemessageuri`` chain ends
    #: at a message that does not exist here (permitted: reported, not refused).
    dangling: list[tuple[str, str]] = field(default_factory=list)
    revision: int | None = None
    #: The interaction's ``xregcorrelationid`` (core/events.md): ``None`` for a dry run or a write
    #: that committed nothing.
    correlation_id: str | None = None
    #: The events the commit stored (``xreg.events.derive``), in their order.
    events: list[EventDraft] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {k: len(getattr(self, k)) for k in ("created", "updated", "unchanged", "deleted")}


class Changeset(Unit):
    """Collects validated changes and commits them as one store revision.

    ``touch`` follows the API semantics (every write bumps ``epoch`` / ``modifiedat`` even when
    nothing changed); import runs with ``touch=False`` so an identical entity stays unchanged.
    ``ignore_epoch`` skips the request-epoch check (the ``ignore=epoch`` flag; import uses it
    because documents carry epochs of the registry they came from).
    """

    #: How many dependents of the messages written are re-materialised in the commit; beyond it,
    #: none are and they are left to ``xreg.registry.rematerialise`` (``None``: no limit).
    rematerialise_inline: int | None = None

    # -- the registry entity ------------------------------------------------------------------
    async def put_registry(self, registry_id: str, attrs: dict[str, Any], *, patch: bool) -> None:
        """Update the registry entity's own attributes (name, description, labels, …)."""
        await registry_entity.put_registry(self, registry_id, attrs, patch=patch)

    async def put_model_source(self, source: dict[str, Any]) -> bool:
        """Make ``source`` (a checked modelsource) the registry's model; see
        :func:`~xreg.registry.write_steps.registry_entity.put_model_source`."""
        return await registry_entity.put_model_source(self, source)

    async def put_capabilities(self, settings: dict[str, Any]) -> bool:
        """Make ``settings`` the registry's capability settings; see
        :func:`~xreg.registry.write_steps.registry_entity.put_capabilities`."""
        return await registry_entity.put_capabilities(self, settings)

    async def ensure_registry(self, registry_id: str, name: str | None = None) -> None:
        """Create the registry entity unless it exists."""
        await registry_entity.ensure_registry(self, registry_id, name)

    # -- groups, resources, versions, documents -----------------------------------------------
    async def put_group(self, gtype: str, gid: str, attrs: dict[str, Any], *, patch: bool = False) -> str:
        """Create or update a group (its own attributes; nested collections are not touched)."""
        return await groups.put_group(self, gtype, gid, attrs, patch=patch)

    async def put_resource(
        self, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool = False,
    ) -> str:
        """Create or update a resource from its serialization (core/spec.md's resource
        processing algorithm); see :func:`~xreg.registry.write_steps.resources.put_resource`."""
        return await resources.put_resource(self, gtype, gid, rtype, rid, body, patch=patch)

    async def put_meta(self, gtype: str, gid: str, rtype: str, rid: str, attrs: dict[str, Any], *, patch: bool) -> None:
        """Replace or patch the ``meta`` entity of a resource; see
        :func:`~xreg.registry.write_steps.resources.put_meta`."""
        await resources.put_meta(self, gtype, gid, rtype, rid, attrs, patch=patch)

    async def put_version(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str, body: dict[str, Any], *, patch: bool,
    ) -> None:
        """Create or update one version (the resource and group are created when missing)."""
        await resources.put_versions(self, gtype, gid, rtype, rid, {vid: body}, patch=patch)

    async def put_versions(
        self, gtype: str, gid: str, rtype: str, rid: str, versions: dict[str, Any], *, patch: bool,
    ) -> None:
        """Create or update several versions of one resource (a ``versions`` map), then settle the
        resource: ancestors, default version, ``maxversions``."""
        await resources.put_versions(self, gtype, gid, rtype, rid, versions, patch=patch)

    async def post_version(
        self, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool = False,
    ) -> str:
        """Create a version (a new ``versionid`` unless ``body`` names one) and return its id."""
        return await resources.post_version(self, gtype, gid, rtype, rid, body, patch=patch)

    async def set_default_version(self, gtype: str, gid: str, rtype: str, rid: str, vid: str | None) -> None:
        """The ``setdefaultversionid`` flag: make ``vid`` the sticky default version, or with
        ``None`` go back to "default = newest"."""
        await resources.set_default_version(self, gtype, gid, rtype, rid, vid)

    async def put_document(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str | None, attrs: dict[str, Any],
        content: bytes, content_type: str | None, *, new_version: bool = False,
    ) -> str | None:
        """Write a version's document from raw bytes, with metadata ``attrs`` patched in; see
        :func:`~xreg.registry.write_steps.resources.put_document`."""
        return await resources.put_document(self, gtype, gid, rtype, rid, vid, attrs, content, content_type,
                                            new_version=new_version)

    async def delete(self, xid: str, *, epoch: Any = None) -> None:
        """Delete an entity and everything below it."""
        await deletes.delete(self, xid, epoch=epoch)

    # -- commit -------------------------------------------------------------------------------
    async def _bump_parents(self) -> None:
        """Groups and the registry whose collections gained or lost members get a new epoch and
        modifiedat (resources do this in their meta: ``xreg.registry.write_steps.settle``)."""
        for pkey, pxid in sorted(self.children_changed.items()):
            state = await self.state(pxid)
            if state.doc is None or state.kind == "resource":
                continue
            if self.dirty.get(pkey) == "created":
                continue
            doc = dict(state.doc)
            self.stamp(doc, {}, state.doc)
            self.put_state(state, state.kind, state.ctype, doc)

    def _written(self) -> list[str]:
        return [*self.dirty, *(k for k in sorted(self.rederived) if k not in self.dirty)]

    def writes(self) -> list[Write]:
        """The store writes this changeset amounts to (after validation)."""
        return [_write(self.states[key]) for key in self._written()]

    def _prepare(self, correlation_id: str) -> tuple[list[Write], list[EventDraft]]:
        """The store writes and the events of the commit."""
        writes = self.writes()
        changes = [EntityChange(w.xid, w.kind, w.ctype, self.states[w.key].stored, w.doc) for w in writes]
        changes += [EntityChange(s.xid, s.kind, s.ctype, None, None) for k, s in self.transient.items()
                    if s.doc is None and k not in self.dirty]
        return writes, derive_events(changes, time=self.now, correlation_id=correlation_id)

    async def commit(self, note: str = "", *, dry_run: bool = False, correlation_id: str | None = None) -> Outcome:
        """Validate, then write everything in one store revision, with the events it amounts to
        (``xreg.events.derive``, stamped with :attr:`now` and ``correlation_id``) in the same
        transaction. Raises on any violation. ``dry_run``: everything but the write (the outcome's
        ``revision`` and ``correlation_id`` stay ``None``, no event is derived)."""
        if not self.errors:
            await check_xref_constraints(self)
        if self.errors:
            unique = {(e.type, e.subject, e.path, e.detail): e for e in self.errors}
            raise ValidationErrors(list(unique.values()))
        await self._bump_parents()
        outcome = Outcome(deferred=await materialise(self, list(self.dirty), inline=self.rematerialise_inline))
        for key, what in self.dirty.items():
            getattr(outcome, "deleted" if what == "deleted" else what).append(self.states[key].xid)
        outcome.unchanged = [self.states[k].xid for k in self.unchanged if k not in self.dirty]
        outcome.rematerialised = [self.states[k].xid for k in sorted(self.rederived) if k not in self.dirty]
        for key in [*self.dirty, *outcome.rematerialised]:
            state = self.states[key.lower()]
            unresolved = (state.derived or {}).get("unresolved") if state.doc is not None else None
            if unresolved and unresolved["reason"] == "dangling" and state.kind == "resource":
                outcome.dangling.append((state.xid, unresolved["reference"]))
        written = len(self.dirty.keys() | self.rederived)  # as many as _written() lists
        if dry_run or not written:  # building the writes checks nothing: a dry run leaves them out
            return outcome
        correlation_id = correlation_id or new_correlation_id()
        if written < THREAD_PREPARE:
            writes, outcome.events = self._prepare(correlation_id)
        else:
            writes, outcome.events = await asyncio.to_thread(self._prepare, correlation_id)
        outcome.revision = await self.store.commit(writes, note=note, events=outcome.events,
                                                   rematerialise=outcome.deferred)
        outcome.correlation_id = correlation_id
        return outcome


# -- helpers ----------------------------------------------------------------------------------
def new_correlation_id() -> str:
    """An interaction's ``xregcorrelationid``: a random UUID (lower case), so unique,
    case-insensitively, for the registry's lifetime whatever the process or replica."""
    return str(uuid.uuid4())


def _write(state: EntityState) -> Write:
    """The store write of a state: its doc with its materialisation (and the links of it)."""
    doc = state.doc
    links: tuple[str, ...] = ()
    text = search_text(state.kind, state.xid, doc, state.derived) if doc is not None else None
    if doc is not None and state.derived is not None:
        if state.kind == "resource":
            if doc.get("default"):
                doc = {**doc, "default": {**doc["default"], DERIVED: state.derived}}
        else:
            doc = {**doc, DERIVED: state.derived}
        links = Materialised.from_doc(state.derived).links
    return Write(xid=state.xid, kind=cast(Kind, state.kind), ctype=state.ctype, doc=doc, expect=state.stored_rev,
                 links=links, text=text)
