"""The unit of work under every changeset: the entity states it loaded and changed.

:class:`Unit` reads states from the store (once each; versions per resource in one query),
keeps what a write did to each (created, updated, deleted, unchanged), stamps ``epoch`` /
``createdat`` / ``modifiedat`` and collects the errors found. The write steps
(``xreg.registry.write_steps``) work on it; :class:`~xreg.registry.changeset.Changeset` is the
unit with those steps as its methods and the commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from xreg import json_limits
from xreg.errors import XRegistryError
from xreg.model.registry_model import GroupDef, RegistryModel, ResourceDef
from xreg.registry.materialise import DERIVED, Materialised
from xreg.registry.timestamps import utc_now
from xreg.registry.write_steps.attributes import check_depth, ts_changed, user_view
from xreg.registry.write_steps.documents import upgrade_document_link
from xreg.storage.base import Store
from xreg.storage.records import EntityRecord, Query
from xreg.xid import Xid


@dataclass
class EntityState:
    """One entity as a changeset sees it: its stored state and what the changeset made of it."""

    xid: str
    kind: str  # "" while the entity does not exist
    ctype: str
    doc: dict[str, Any] | None
    stored_rev: int | None  # revision of the stored state, None when it did not exist
    #: The materialisation of a message (``DERIVED``, kept out of ``doc``), see ``materialise``.
    derived: dict[str, Any] | None = None
    #: The stored state as read (never changed here): what the commit's events compare against.
    stored: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        """The entity's own id (a version's ``versionid``)."""
        return Xid.parse(self.xid).id or ""

    @property
    def body(self) -> dict[str, Any]:
        """The attributes of an entity that exists (in the store or in this changeset)."""
        if self.doc is None:
            raise AssertionError(f"{self.xid} has no state here")
        return self.doc


class Unit:
    """Entity states loaded and changed by one changeset (see :class:`~xreg.registry.changeset.Changeset`)."""

    def __init__(
        self, store: Store, model: RegistryModel, *, touch: bool = True, ignore_epoch: bool = False,
        now: str | None = None, validate: bool = True, capability_settings: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.touch = touch
        self.ignore_epoch = ignore_epoch
        #: ``False``: schema documents are not checked against their format and compatibility
        #: rule (their versions record that); see ``xreg.registry.schema_checks``.
        self.skip_validation = not validate
        #: The ``formats`` / ``compatibilities`` a client narrowed (``None``: all supported ones).
        settings = capability_settings or {}
        self.enabled_formats: list[str] | None = settings.get("formats")
        self.enabled_compatibilities: dict[str, list[str]] | None = settings.get("compatibilities")
        self.now = now or utc_now()
        self.states: dict[str, EntityState] = {}
        self._versions_loaded: set[str] = set()
        self._versions_of: dict[str, dict[str, EntityState]] = {}  # resource key -> version key -> state
        self.dirty: dict[str, str] = {}  # key -> "created" | "updated" | "deleted"
        #: Entities this changeset created, then deleted again (never stored): their event is
        #: ``deleted`` (core/events.md precedence), though nothing is written for them.
        self.transient: dict[str, EntityState] = {}
        self.unchanged: set[str] = set()
        self.children_changed: dict[str, str] = {}  # parent key -> XID, collections gained/lost
        self.errors: list[XRegistryError] = []
        self.bumped: set[str] = set()  # keys whose epoch this changeset already increased
        self.rederived: set[str] = set()  # keys only re-materialised (their own state unchanged)
        #: Version key -> the XID its errors name: a default version written through its
        #: resource's attributes is reported as the resource (the entity the request addressed).
        self.reported_as: dict[str, str] = {}
        #: Whether this changeset changed the registry's model (``put_model_source``) or its
        #: capability settings (``put_capabilities``).
        self.model_changed = False
        self.capabilities_changed = False

    async def prefetch(self, xids: Iterable[str]) -> None:
        """Load the stored states of many entities in one store call."""
        wanted = [x for x in dict.fromkeys(xids) if x.lower() not in self.states]
        if not wanted:
            return
        found = await self.store.get_many(wanted)
        for xid in wanted:
            rec = found.get(xid.lower())
            self.load_record(xid, rec)

    def load_record(self, xid: str, rec: EntityRecord | None) -> EntityState:
        """Take a stored record (or its absence) as the state of ``xid``, unless already loaded."""
        key = xid.lower()
        if key in self.states:
            return self.states[key]
        if rec is None:
            state = EntityState(xid, "", "", None, None)
        else:
            doc = json_limits.copy(rec.doc)  # (no recursion: a poisoned entity stays deletable)
            holder = doc.get("default") if rec.kind == "resource" else doc
            derived = holder.pop(DERIVED, None) if isinstance(holder, dict) else None
            rdef = self._rdef_of(rec) if isinstance(holder, dict) else None
            if rdef is not None and rdef.hasdocument and isinstance(holder, dict):
                upgrade_document_link(holder, rdef.singular)
            state = EntityState(rec.xid, rec.kind, rec.ctype, doc, rec.revision, derived, rec.doc)
        self.states[key] = state
        try:
            parsed = Xid.parse(key)
        except XRegistryError:  # not an XID: the write naming it fails its id checks
            return state
        if parsed.level == "version":
            self._versions_of.setdefault(parsed.resource.key, {})[key] = state
        return state

    def _rdef_of(self, rec: EntityRecord) -> ResourceDef | None:
        """The resource type of a resource or version record (``None`` for anything else)."""
        if rec.kind not in ("resource", "version"):
            return None
        parts = rec.ctype.split("/")
        return self.model.resource(parts[0], parts[1]) if len(parts) >= 2 else None

    async def state(self, xid: str) -> EntityState:
        """The state of an entity (loaded from the store on first use)."""
        key = xid.lower()
        if key not in self.states:
            self.load_record(xid, await self.store.get(xid))
        return self.states[key]

    async def version_states(self, resource_xid: str, ctype: str) -> list[EntityState]:
        """The live versions of a resource (stored ones merged with this changeset's)."""
        rkey = resource_xid.lower()
        if rkey not in self._versions_loaded:
            self._versions_loaded.add(rkey)
            rstate = await self.state(resource_xid)
            if rstate.stored_rev is not None:
                page = await self.store.list(Query(ctype=ctype, parent=resource_xid))
                for rec in page.items:
                    self.load_record(rec.xid, rec)
        return [s for s in self._versions_of.get(rkey, {}).values() if s.doc is not None]

    def put_state(self, state: EntityState, kind: str, ctype: str, doc: dict[str, Any] | None) -> None:
        """Give an entity a new state (``doc`` ``None``: deleted) and record what that was."""
        key = state.xid.lower()
        existed_before = state.doc is not None
        state.kind, state.ctype, state.doc = kind, ctype, doc
        if doc is None:
            if state.stored_rev is None:
                if self.dirty.pop(key, None) == "created":
                    self.transient[key] = state
            else:
                self.dirty[key] = "deleted"
        elif state.stored_rev is None:
            self.dirty[key] = "created"
        else:
            self.dirty[key] = "updated"
        self.unchanged.discard(key)
        if existed_before != (doc is not None) and state.xid != "/":
            parent = Xid.parse(state.xid).parent
            self.children_changed[parent.key] = str(parent)

    def check_epoch(self, subject: str, requested: Any, existing: dict[str, Any] | None) -> None:
        """``mismatched_epoch`` when a request's ``epoch`` is not the entity's (unless ignored)."""
        if self.ignore_epoch or existing is None or requested is None:
            return
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 0:
            raise XRegistryError("invalid_attribute", subject, path="epoch", name="epoch",
                                 detail="epoch must be an unsigned integer")
        if requested != existing.get("epoch"):
            raise XRegistryError("mismatched_epoch", subject, bad_epoch=requested, epoch=existing.get("epoch"))

    def stamp(self, doc: dict[str, Any], request: dict[str, Any], existing: dict[str, Any] | None) -> None:
        """Set ``epoch`` (raised once per changeset), ``createdat``, ``modifiedat`` per core/spec.md."""
        key = str(doc["xid"]).lower()
        if existing is None:
            doc["epoch"] = 1
        elif key in self.bumped:
            doc["epoch"] = int(existing.get("epoch", 0))
        else:
            doc["epoch"] = int(existing.get("epoch", 0)) + 1
        self.bumped.add(key)
        created = request.get("createdat")
        if created is not None:
            doc["createdat"] = created
        else:
            doc["createdat"] = (existing or {}).get("createdat") or self.now
        modified = request.get("modifiedat")
        if modified is not None and modified != (existing or {}).get("modifiedat"):
            doc["modifiedat"] = modified
        else:
            doc["modifiedat"] = self.now

    def finish(
        self, state: EntityState, kind: str, ctype: str, user: dict[str, Any], request: dict[str, Any],
        ids: dict[str, Any],
    ) -> bool:
        """Write ``ids`` + ``user`` attributes as the entity's new state, unless unchanged.

        Returns whether the entity was written."""
        check_depth(user, state.xid)
        existing = state.doc
        if existing is not None and not self.touch:
            if user_view(existing) == user_view({**ids, **user}) and not ts_changed(request, existing):
                self.unchanged.add(state.xid.lower())
                return False
        doc = {**ids, **user}
        self.stamp(doc, request, existing)
        self.put_state(state, kind, ctype, doc)
        return True

    def group_def(self, gtype: str) -> GroupDef:
        """The group type ``gtype`` of the model (``unknown_group_type`` otherwise)."""
        gdef = self.model.group(gtype)
        if gdef is None:
            raise XRegistryError("unknown_group_type", f"/{gtype}", name=gtype)
        return gdef

    def resource_def(self, gtype: str, rtype: str) -> ResourceDef:
        """The resource type ``rtype`` of ``gtype`` (``unknown_resource_type`` otherwise)."""
        rdef = self.group_def(gtype).resources.get(rtype)
        if rdef is None:
            raise XRegistryError("unknown_resource_type", f"/{gtype}/{{id}}/{rtype}", name=rtype)
        return rdef

    def loaded(self, xid: str) -> EntityState:
        """The state of an entity this changeset has already loaded."""
        return self.states[xid.lower()]

    def remember(self, rec: EntityRecord) -> EntityState:
        """Take a record read elsewhere as the entity's state (unless already loaded)."""
        return self.load_record(rec.xid, rec)

    def rewrite(self, state: EntityState) -> None:
        """Write an entity's state again as it is (its materialisation and search text renewed)."""
        if state.doc is not None and state.xid.lower() not in self.dirty:
            self.rederived.add(state.xid.lower())

    def set_derived(self, state: EntityState, derived: Materialised | None) -> None:
        """Give a message its (re)computed materialisation (``materialise`` calls this)."""
        new = derived.to_doc() if derived is not None else None
        if new != state.derived:
            state.derived = new
            if state.xid.lower() not in self.dirty:
                self.rederived.add(state.xid.lower())
