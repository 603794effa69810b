"""A unit of work over the registry: load, change and validate entities, then commit atomically.

Every write of the registry — one HTTP request, one GraphQL mutation, one imported document —
is one :class:`Changeset`. It reads the states it needs from the store (prefetching in bulk),
applies the xRegistry write semantics in memory (ids, epochs, timestamps, defaults, the
resource processing algorithm of core/spec.md, ``maxversions`` pruning, parents' epochs when
children come and go), validates every entity it touched, and only then hands one batch of
:class:`~xreg.storage.base.Write` to the store. A failure anywhere raises before the store
is called, so nothing is written.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from xreg import json_limits
from xreg.errors import ValidationErrors, XRegistryError, invalid
from xreg.events.derive import EntityChange, derive_events
from xreg.events.record import EventDraft
from xreg.ids import check_id
from xreg.model.modelsource import STORED_KEY as MODEL_SOURCE_KEY
from xreg.model.modelsource import model_of_source
from xreg.model.registry_model import ANCESTOR_ID, AttributeDef, GroupDef, RegistryModel, ResourceDef
from xreg.registry import constraints
from xreg.registry.capabilities import STORED_KEY as CAPABILITIES_KEY
from xreg.registry.compliance import check_compliance
from xreg.registry.materialise import DERIVED, Materialised, materialise
from xreg.registry.schema_checks import RESULT_ATTRIBUTES, check_resource
from xreg.registry.search import search_text
from xreg.registry.timestamps import utc_now
from xreg.registry.validation import (
    ATTRIBUTE_NAME,
    MAP_KEY,
    registry_definitions,
    validate_attributes,
    validate_entity,
    validate_values,
)
from xreg.registry.versionmodes import ORDERED_MODES, chained_ancestors, newest, order_key
from xreg.storage.base import EntityRecord, Kind, Query, Store, Write
from xreg.storage.semantics import Condition, Cursor
from xreg.xid import Xid

#: Attributes the server computes; ignored when a request carries them.
#: ``$schema`` may head any single entity of a request and may be ignored (core/spec.md, "Design:
#: JSON ``$schema`` keyword"); it is never stored.
SERVER_ATTRIBUTES = frozenset({"self", "shortself", "xid", "epoch", "createdat", "modifiedat", "isdefault",
                               "$schema", *RESULT_ATTRIBUTES})
#: Resource-level attributes that are not the default version's.
RESOURCE_VIEW_ATTRIBUTES = frozenset({"metaurl", "meta", "versionsurl", "versionscount", "versions"})
META_READONLY = frozenset({"readonly", "defaultversionurl", "self", "shortself", "xid"})


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


@dataclass
class _State:
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


class Changeset:
    """Collects validated changes and commits them as one store revision.

    ``touch`` follows the API semantics (every write bumps ``epoch`` / ``modifiedat`` even when
    nothing changed); import runs with ``touch=False`` so an identical entity stays unchanged.
    ``ignore_epoch`` skips the request-epoch check (the ``ignore=epoch`` flag; import uses it
    because documents carry epochs of the registry they came from).
    """

    #: How many dependents of the messages written are re-materialised in the commit; beyond it,
    #: none are and they are left to ``xreg.registry.rematerialise`` (``None``: no limit).
    rematerialise_inline: int | None = None

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
        self._states: dict[str, _State] = {}
        self._versions_loaded: set[str] = set()
        self._versions_of: dict[str, dict[str, _State]] = {}  # resource key -> version key -> state
        self._dirty: dict[str, str] = {}  # key -> "created" | "updated" | "deleted"
        #: Entities this changeset created, then deleted again (never stored): their event is
        #: ``deleted`` (core/events.md precedence), though nothing is written for them.
        self._transient: dict[str, _State] = {}
        self._unchanged: set[str] = set()
        self._children_changed: dict[str, str] = {}  # parent key -> XID, collections gained/lost
        self._errors: list[XRegistryError] = []
        self._bumped: set[str] = set()  # keys whose epoch this changeset already increased
        self._rederived: set[str] = set()  # keys only re-materialised (their own state unchanged)
        #: Version key -> the XID its errors name: a default version written through its
        #: resource's attributes is reported as the resource (the entity the request addressed).
        self._reported_as: dict[str, str] = {}
        #: Whether this changeset changed the registry's model (``put_model_source``) or its
        #: capability settings (``put_capabilities``).
        self.model_changed = False
        self.capabilities_changed = False

    # -- loading ------------------------------------------------------------------------------
    async def prefetch(self, xids: Iterable[str]) -> None:
        """Load the stored states of many entities in one store call."""
        wanted = [x for x in dict.fromkeys(xids) if x.lower() not in self._states]
        if not wanted:
            return
        found = await self.store.get_many(wanted)
        for xid in wanted:
            rec = found.get(xid.lower())
            self._remember(xid, rec)

    def _remember(self, xid: str, rec: EntityRecord | None) -> _State:
        key = xid.lower()
        if key in self._states:
            return self._states[key]
        if rec is None:
            state = _State(xid, "", "", None, None)
        else:
            doc = json_limits.copy(rec.doc)  # (no recursion: a poisoned entity stays deletable)
            holder = doc.get("default") if rec.kind == "resource" else doc
            derived = holder.pop(DERIVED, None) if isinstance(holder, dict) else None
            rdef = self._rdef_of(rec) if isinstance(holder, dict) else None
            if rdef is not None and rdef.hasdocument and isinstance(holder, dict):
                upgrade_document_link(holder, rdef.singular)
            state = _State(rec.xid, rec.kind, rec.ctype, doc, rec.revision, derived, rec.doc)
        self._states[key] = state
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

    async def _state(self, xid: str) -> _State:
        key = xid.lower()
        if key not in self._states:
            self._remember(xid, await self.store.get(xid))
        return self._states[key]

    async def _version_states(self, resource_xid: str, ctype: str) -> list[_State]:
        """The live versions of a resource (stored ones merged with this changeset's)."""
        rkey = resource_xid.lower()
        if rkey not in self._versions_loaded:
            self._versions_loaded.add(rkey)
            rstate = await self._state(resource_xid)
            if rstate.stored_rev is not None:
                page = await self.store.list(Query(ctype=ctype, parent=resource_xid))
                for rec in page.items:
                    self._remember(rec.xid, rec)
        return [s for s in self._versions_of.get(rkey, {}).values() if s.doc is not None]

    # -- writing states -----------------------------------------------------------------------
    def _set(self, state: _State, kind: str, ctype: str, doc: dict[str, Any] | None) -> None:
        key = state.xid.lower()
        existed_before = state.doc is not None
        state.kind, state.ctype, state.doc = kind, ctype, doc
        if doc is None:
            if state.stored_rev is None:
                if self._dirty.pop(key, None) == "created":
                    self._transient[key] = state
            else:
                self._dirty[key] = "deleted"
        elif state.stored_rev is None:
            self._dirty[key] = "created"
        else:
            self._dirty[key] = "updated"
        self._unchanged.discard(key)
        if existed_before != (doc is not None) and state.xid != "/":
            parent = Xid.parse(state.xid).parent
            self._children_changed[parent.key] = str(parent)

    def _error(self, err: XRegistryError) -> None:
        self._errors.append(err)

    def _check_epoch(self, subject: str, requested: Any, existing: dict[str, Any] | None) -> None:
        if self.ignore_epoch or existing is None or requested is None:
            return
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 0:
            raise XRegistryError("invalid_attribute", subject, path="epoch", name="epoch",
                                 detail="epoch must be an unsigned integer")
        if requested != existing.get("epoch"):
            raise XRegistryError("mismatched_epoch", subject, bad_epoch=requested, epoch=existing.get("epoch"))

    def _stamp(self, doc: dict[str, Any], request: dict[str, Any], existing: dict[str, Any] | None) -> None:
        """Set ``epoch`` (raised once per changeset), ``createdat``, ``modifiedat`` per core/spec.md."""
        key = str(doc["xid"]).lower()
        if existing is None:
            doc["epoch"] = 1
        elif key in self._bumped:
            doc["epoch"] = int(existing.get("epoch", 0))
        else:
            doc["epoch"] = int(existing.get("epoch", 0)) + 1
        self._bumped.add(key)
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

    def _finish(
        self, state: _State, kind: str, ctype: str, user: dict[str, Any], request: dict[str, Any],
        ids: dict[str, Any],
    ) -> bool:
        """Write ``ids`` + ``user`` attributes as the entity's new state, unless unchanged.

        Returns whether the entity was written."""
        _check_depth(user, state.xid)
        existing = state.doc
        if existing is not None and not self.touch:
            if _user_view(existing) == _user_view({**ids, **user}) and not _ts_changed(request, existing):
                self._unchanged.add(state.xid.lower())
                return False
        doc = {**ids, **user}
        self._stamp(doc, request, existing)
        self._set(state, kind, ctype, doc)
        return True

    # -- the registry entity ------------------------------------------------------------------
    async def put_registry(self, registry_id: str, attrs: dict[str, Any], *, patch: bool) -> None:
        """Update the registry entity's own attributes (name, description, labels, …)."""
        state = await self._state("/")
        self._check_epoch("/", attrs.get("epoch"), state.doc)
        kept = {k: v for k, v in (state.doc or {}).items()
                if k in (MODEL_SOURCE_KEY, CAPABILITIES_KEY)}  # not attributes
        base = {k: v for k, v in _user_view(state.doc or {}).items() if k not in kept} if patch else {}
        user = _merge(base, _strip(attrs, set(self.model.groups) | _collection_attrs(self.model.groups)
                                   | {"registryid", "specversion", "model", "capabilities", "modelsource"}),
                      patch)
        ids = {"registryid": registry_id, "xid": "/", **kept}
        if self._finish(state, "registry", "", user, attrs, ids):
            attributes = {k: v for k, v in state.body.items() if k not in (MODEL_SOURCE_KEY, CAPABILITIES_KEY)}
            self._errors.extend(validate_attributes(attributes, registry_definitions(self.model), subject="/",
                                                    extensible=True, model=self.model))

    # -- the model ----------------------------------------------------------------------------
    async def put_model_source(self, source: dict[str, Any]) -> bool:
        """Make ``source`` (a checked modelsource, ``xreg.model.modelsource``) the registry's
        model, stored in the registry entity's state so it has the registry's revisions. Every
        entity already in the registry must comply with it, else ``model_compliance_error``
        (nothing is changed). Later changes of this changeset are validated against it.
        Returns whether the model changed."""
        state = await self._state("/")
        if state.doc is None:
            raise XRegistryError("server_error", "/", detail="the registry entity is missing; open the registry first")
        if state.doc.get(MODEL_SOURCE_KEY) == source:
            return False
        model = model_of_source(source)
        await check_compliance(self.store, self.model, model)
        doc = {**state.doc, MODEL_SOURCE_KEY: source}
        self._stamp(doc, {}, state.doc)
        self._set(state, "registry", "", doc)
        self.model = model
        self.model_changed = True
        return True

    async def put_capabilities(self, settings: dict[str, Any]) -> bool:
        """Make ``settings`` (checked by ``xreg.registry.capabilities.update``) the registry's
        capability settings, kept in the registry entity's state; the registry's ``epoch`` and
        ``modifiedat`` move when they change (core/spec.md, Registry entity: "when those attributes
        are modified the Registry entity is considered to be updated"). Returns whether they changed."""
        state = await self._state("/")
        if state.doc is None:
            raise XRegistryError("server_error", "/", detail="the registry entity is missing; open the registry first")
        if (state.doc.get(CAPABILITIES_KEY) or {}) == settings:
            return False
        doc = {k: v for k, v in state.doc.items() if k != CAPABILITIES_KEY}
        if settings:
            doc[CAPABILITIES_KEY] = settings
        self._stamp(doc, {}, state.doc)
        self._set(state, "registry", "", doc)
        self.capabilities_changed = True
        return True

    async def ensure_registry(self, registry_id: str, name: str | None = None) -> None:
        state = await self._state("/")
        if state.doc is None:
            doc = {"registryid": registry_id, "xid": "/"}
            if name:
                doc["name"] = name
            self._stamp(doc, {}, None)
            self._set(state, "registry", "", doc)

    # -- groups -------------------------------------------------------------------------------
    def group_def(self, gtype: str) -> GroupDef:
        gdef = self.model.group(gtype)
        if gdef is None:
            raise XRegistryError("unknown_group_type", f"/{gtype}", name=gtype)
        return gdef

    def resource_def(self, gtype: str, rtype: str) -> ResourceDef:
        rdef = self.group_def(gtype).resources.get(rtype)
        if rdef is None:
            raise XRegistryError("unknown_resource_type", f"/{gtype}/{{id}}/{rtype}", name=rtype)
        return rdef

    async def put_group(self, gtype: str, gid: str, attrs: dict[str, Any], *, patch: bool = False) -> str:
        """Create or update a group (its own attributes; nested collections are not touched)."""
        gdef = self.group_def(gtype)
        xid = str(Xid(gtype, gid))
        check_id(gid, subject=xid, attribute=gdef.id_attribute)
        _check_same_id(attrs, gdef.id_attribute, gid, xid)
        state = await self._state(xid)
        _check_case(state, xid)
        self._check_epoch(xid, attrs.get("epoch"), state.doc)
        existed = state.stored_rev is not None and state.doc is not None
        request = _strip(attrs, set(gdef.resources) | _collection_attrs(gdef.resources))
        base = _user_view(state.doc or {}) if patch else {}
        user = _merge(base, _strip(request, {gdef.id_attribute}), patch)
        _keep_readonly(user, gdef.attributes, state.doc)
        wrote = self._finish(state, "group", gtype, user, attrs, {gdef.id_attribute: gid, "xid": xid})
        if wrote:
            self._validate("group", state, gtype)
            if existed:
                await self._recheck_constraints(gdef, state)
        await self._implicit_registry()
        return xid

    async def _recheck_constraints(self, gdef: GroupDef, state: _State) -> None:
        """The stored Versions of an updated Group against its constraints (its own
        ``constraints`` or an ``equals``-named attribute may have changed): core/model.md "The
        constraints MUST be applied to all Versions of all Resources in the Group instances"."""
        for rtype in gdef.resources:
            in_force = constraints.in_force(gdef, state.doc, rtype)
            if not any(c.enum or c.equals for c in in_force):
                continue
            key = state.xid.lower()
            page = await self.store.list(Query(ctype=f"{gdef.plural}/{rtype}/versions", after=Cursor(key + "/"),
                                               before=Cursor(key + "0")))
            for rec in page.items:
                if rec.key.startswith(key + "/") and rec.key not in self._dirty:
                    self._errors += constraints.violations(rec.doc, in_force, state.doc, rec.xid)
            # and the Versions its cross-references show (core/model.md: xref'd Resources "MUST" adhere)
            sources = await self.store.list(Query(ctype=f"{gdef.plural}/{rtype}", parent=state.xid,
                                                  any_of=((Condition(("meta", "xref"), "exists"),),)))
            for source in sources.items:
                target = str((source.doc.get("meta") or {}).get("xref") or "").lower()
                if target.count("/") != 4:
                    continue
                versions = await self.store.list(Query(ctype=f"{target.split('/')[1]}/{rtype}/versions", parent=target))
                for rec in versions.items:
                    self._errors += constraints.violations(rec.doc, in_force, state.doc, rec.xid)

    async def _check_xref_constraints(self) -> None:
        """core/model.md: "The enum and equals constraints, if specified, MUST be adhered to by
        the [xref'd] Resource. Note that this includes changes to the Resource in its original
        location that would then violate any of the Groups' constraints that xref that
        Resource" (``default`` is not applied: the source is a reference). The Versions written
        here, of Resources some cross-reference names, against the Groups of those sources;
        a source written here (its ``xref`` set or changed) against all its target's Versions.
        One store query per resource collection type involved, none when nothing is involved."""
        written: dict[str, list[_State]] = {}  # target resource key -> its Versions written here
        ctypes: set[str] = set()
        for key, what in self._dirty.items():
            state = self._states[key]
            if what == "deleted" or state.doc is None:
                continue
            if state.kind == "version":
                written.setdefault(key.rsplit("/", 2)[0], []).append(state)
            elif state.kind == "resource" and (state.doc.get("meta") or {}).get("xref"):
                written.setdefault("", [])
            else:
                continue
            rtype = state.ctype.split("/")[1]
            ctypes |= {f"{g}/{rtype}" for g, gdef in self.model.groups.items() if rtype in gdef.resources}
        sources: dict[str, _State] = {}
        for ctype in sorted(ctypes):
            page = await self.store.list(Query(ctype=ctype, any_of=((Condition(("meta", "xref"), "exists"),),)))
            for rec in page.items:
                sources[rec.key] = self._states.get(rec.key) or _State(rec.xid, rec.kind, rec.ctype, rec.doc,
                                                                         rec.revision)
        sources |= {k: st for k, st in self._states.items()
                    if st.kind == "resource" and k in self._dirty and (st.doc or {}).get("meta", {}).get("xref")}
        for key, source in sorted(sources.items()):
            xref = str(((source.doc or {}).get("meta") or {}).get("xref") or "").lower()
            if not xref:
                continue
            if key in self._dirty:  # a new or changed reference: every Version of its target
                page = await self.store.list(Query(ctype=f"{xref.split('/')[1]}/{xref.split('/')[3]}/versions",
                                                   parent=xref))
                versions = [self._states.get(r.key) or _State(r.xid, r.kind, r.ctype, r.doc, r.revision)
                            for r in page.items]
                versions += [v for v in written.get(xref, ()) if v.xid.lower() not in {r.key for r in page.items}]
            else:
                versions = written.get(xref, [])
            if not versions:
                continue
            parts = Xid.parse(source.xid)
            group = await self._state(str(parts.group))
            in_force = [c for c in constraints.in_force(self.group_def(parts.group_type or ""), group.doc,
                                                        parts.resource_type or "") if c.enum or c.equals]
            for version in versions:
                if in_force and version.doc is not None:
                    self._errors += constraints.violations(version.doc, in_force, group.doc, version.xid)

    async def _implicit_group(self, gtype: str, gid: str) -> None:
        state = await self._state(str(Xid(gtype, gid)))
        if state.doc is None:
            await self.put_group(gtype, gid, {})

    async def _implicit_registry(self) -> None:
        state = await self._state("/")
        if state.doc is None:
            raise XRegistryError("server_error", "/", detail="the registry entity is missing; open the registry first")

    # -- resources ----------------------------------------------------------------------------
    async def put_resource(
        self, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool = False,
    ) -> str:
        """Create or update a resource from its serialization (default version attributes,
        optional ``meta`` and ``versions``), following core/spec.md's resource processing
        algorithm."""
        rdef = self.resource_def(gtype, rtype)
        rxid = str(Xid(gtype, gid, rtype, rid))
        check_id(rid, subject=rxid, attribute=rdef.id_attribute)
        _check_same_id(body, rdef.id_attribute, rid, rxid)
        _check_version_id(body, rxid)
        await self._implicit_group(gtype, gid)
        rstate = await self._state(rxid)
        _check_case(rstate, rxid)
        vctype = f"{gtype}/{rtype}/versions"
        existing_versions = await self._version_states(rxid, vctype)
        meta_in = body.get("meta")
        if meta_in is not None and not isinstance(meta_in, dict):
            raise XRegistryError("invalid_attribute", rxid, path="meta", name="meta", detail="meta must be an object")
        versions_in = body.get("versions")
        if versions_in is not None and not isinstance(versions_in, dict):
            raise XRegistryError("invalid_attribute", rxid, path="versions", name="versions",
                                 detail="versions must be a map of versions")
        meta_old = (rstate.doc or {}).get("meta")
        xref = (meta_in or {}).get("xref", (meta_old or {}).get("xref") if patch else None)
        default_attrs = _strip(body, RESOURCE_VIEW_ATTRIBUTES | {rdef.id_attribute})
        for name in ("epoch", "createdat", "modifiedat"):  # a resource's own are its default version's
            if body.get(name) is not None:
                default_attrs[name] = body[name]

        if xref:
            if default_attrs.keys() - {"versionid", "epoch"} or versions_in:
                raise XRegistryError("extra_xref_attribute", rxid, name=next(iter(default_attrs or versions_in or {})))
            for vstate in existing_versions:
                self._set(vstate, "version", vctype, None)
        else:
            # 1. versions in the request
            requested = versions_in or {}
            for vid in sorted(requested, key=str.lower):
                vbody = requested[vid]
                if not isinstance(vbody, dict):
                    raise XRegistryError("invalid_attribute", str(Xid(gtype, gid, rtype, rid, vid)), path="versions",
                                         name="versions", detail="each version must be an object")
                await self._put_version(gtype, gid, rtype, rid, vid, vbody, rdef, patch=patch)
            # 2. default version attributes, unless that version was in the request
            target = default_attrs.get("versionid")
            if target is None:
                if rstate.doc is not None:
                    target = (meta_old or {}).get("defaultversionid")
                elif (meta_in or {}).get("defaultversionid"):
                    _check_default_version_id(meta_in or {}, str(Xid.parse(rxid).meta_of()))
                    target = (meta_in or {})["defaultversionid"]
                elif not versions_in:
                    target = await self._next_version_id(rxid, vctype)
            # a resource without versions (new, or an xref turned back into a normal resource)
            # gets its default version from the resource-level attributes
            needs_version = not existing_versions and not versions_in
            if target is None and needs_version:
                target = await self._next_version_id(rxid, vctype)
            # a PATCH naming nothing is a touch of the default version (core/spec.md, epoch: "even
            # if no attributes were explicitly updated, such as a "patch" type of operation when no
            # attributes are specified"); one naming only ``meta`` updates the meta alone
            wants_update = (needs_version or rstate.doc is None or not patch or meta_in is None
                            or bool(default_attrs.keys() - {"versionid", "epoch"}))
            if target is not None and target not in (versions_in or {}) and wants_update:
                # the request addressed the resource: its default version's errors name the resource
                self._reported_as[str(Xid(gtype, gid, rtype, rid, target)).lower()] = rxid
                await self._put_version(gtype, gid, rtype, rid, target, default_attrs, rdef, patch=patch)
            else:
                # step 2 ignores them (the versions in the request win), but a request is refused
                # for an invalid value wherever it is
                self._check_ignored(default_attrs, gtype, rtype, rxid)
        await self._settle_resource(gtype, gid, rtype, rid, rdef, meta_in, patch=patch)
        return rxid

    def _check_ignored(self, attrs: dict[str, Any], gtype: str, rtype: str, rxid: str) -> None:
        """Check the values of default-version attributes that are not applied (see
        :func:`~xreg.registry.validation.validate_values`); violations are this changeset's errors."""
        try:
            validate_values(_strip(attrs, {"versionid", "epoch"}), model=self.model, group_type=gtype,
                            resource_type=rtype, subject=rxid)
        except ValidationErrors as errs:
            self._errors.extend(errs.errors)

    async def _next_version_id(self, rxid: str, vctype: str) -> str:
        ids = {s.id for s in await self._version_states(rxid, vctype)}
        n = 1
        numeric = [int(v) for v in ids if v.isdigit()]
        if numeric:
            n = max(numeric) + 1
        while str(n) in ids:
            n += 1
        return str(n)

    async def _put_version(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str, body: dict[str, Any], rdef: ResourceDef,
        *, patch: bool,
    ) -> None:
        vxid = str(Xid(gtype, gid, rtype, rid, vid))
        check_id(vid, subject=vxid, attribute="versionid")
        _check_version_id(body, vxid)
        _check_same_id(body, "versionid", vid, vxid)
        if body.get(rdef.id_attribute) not in (None, rid):
            raise XRegistryError("mismatched_id", vxid, singular=rdef.singular, expected_id=rid,
                                 invalid_id=body.get(rdef.id_attribute))
        state = await self._state(vxid)
        _check_case(state, vxid)
        self._check_epoch(vxid, body.get("epoch"), state.doc)
        request = _strip(body, RESOURCE_VIEW_ATTRIBUTES | {rdef.id_attribute})
        _alias_document_link(request, rdef)
        _check_one_document(request, rdef, vxid)
        if rdef.hasdocument and request.get(rdef.singular) is not None and "contenttype" not in request \
                and (not patch or not (state.doc or {}).get("contenttype")):
            # a document given inline in JSON metadata is JSON: its media type is the request's
            # (core/spec.md, "<RESOURCE>* Attribute Processing")
            request["contenttype"] = "application/json"
        base = _user_view(state.doc or {}) if patch else {}
        if not patch and state.doc is not None and ANCESTOR_ID not in request:
            request[ANCESTOR_ID] = state.doc.get(ANCESTOR_ID)
        user = _merge(base, _strip(request, {"versionid"}), patch)
        _keep_readonly(user, rdef.attributes, state.doc)
        if rdef.hasdocument:
            _drop_other_documents(user, request, rdef)
        group = self._states.get(Xid(gtype, gid).key)
        constraints.apply_defaults(user, constraints.in_force(self.group_def(gtype), group.doc if group else None,
                                                              rtype))
        ids = {rdef.id_attribute: rid, "versionid": vid, "xid": vxid}
        self._finish(state, "version", f"{gtype}/{rtype}/versions", user, body, ids)

    # -- versions, meta, default version and documents, one at a time -------------------------
    async def _open_resource(self, gtype: str, gid: str, rtype: str, rid: str, *, create: bool) -> tuple[ResourceDef,
                                                                                                         _State]:
        """Checks shared by the single-version / meta writes; the resource's state, its versions loaded.

        ``create``: the resource (and its group) may be created implicitly; otherwise it must exist.
        A cross-reference resource has no versions of its own: writing one is refused."""
        rdef = self.resource_def(gtype, rtype)
        rxid = str(Xid(gtype, gid, rtype, rid))
        check_id(rid, subject=rxid, attribute=rdef.id_attribute)
        rstate = await self._state(rxid)
        _check_case(rstate, rxid)
        if rstate.doc is None:
            if not create:
                raise XRegistryError("not_found", rxid)
            await self._implicit_group(gtype, gid)
        elif create and (rstate.doc.get("meta") or {}).get("xref"):
            raise XRegistryError("bad_request", rxid, detail="the resource is a cross-reference (meta.xref): "
                                 "write to its target, or remove the xref first")
        await self._version_states(rxid, f"{gtype}/{rtype}/versions")
        return rdef, rstate

    async def put_meta(self, gtype: str, gid: str, rtype: str, rid: str, attrs: dict[str, Any], *, patch: bool) -> None:
        """Replace (``patch=False``) or patch the ``meta`` entity of a resource (created, with its
        group, when it does not exist: a first version unless the meta sets ``xref``).

        Removing ``xref`` turns a cross-reference back into a normal resource with a new default
        version; setting it deletes the resource's versions."""
        rdef = self.resource_def(gtype, rtype)
        rxid = str(Xid(gtype, gid, rtype, rid))
        check_id(rid, subject=rxid, attribute=rdef.id_attribute)
        rstate = await self._state(rxid)
        _check_case(rstate, rxid)
        if rstate.doc is None:  # missing parents are created implicitly (core/spec.md)
            await self._implicit_group(gtype, gid)
        if not isinstance(attrs, dict):
            raise XRegistryError("invalid_attribute", str(Xid.parse(rxid).meta_of()), path="meta", name="meta",
                                 detail="meta must be an object")
        _check_default_version_id(attrs, str(Xid.parse(rxid).meta_of()))
        old_xref = ((rstate.doc or {}).get("meta") or {}).get("xref")
        new_xref = attrs.get("xref", old_xref if patch else None)
        vctype = f"{gtype}/{rtype}/versions"
        if new_xref:
            for vstate in await self._version_states(rxid, vctype):
                self._set(vstate, "version", vctype, None)
        elif not await self._version_states(rxid, vctype):
            vid = attrs.get("defaultversionid") or await self._next_version_id(rxid, vctype)
            await self._put_version(gtype, gid, rtype, rid, vid, {}, rdef, patch=False)
        await self._settle_resource(gtype, gid, rtype, rid, rdef, attrs, patch=patch)

    async def put_version(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str, body: dict[str, Any], *, patch: bool,
    ) -> None:
        """Create or update one version (the resource and group are created when missing)."""
        await self.put_versions(gtype, gid, rtype, rid, {vid: body}, patch=patch)

    async def put_versions(
        self, gtype: str, gid: str, rtype: str, rid: str, versions: dict[str, Any], *, patch: bool,
    ) -> None:
        """Create or update several versions of one resource (a ``versions`` map), then settle the
        resource: ancestors, default version, ``maxversions``."""
        rdef, rstate = await self._open_resource(gtype, gid, rtype, rid, create=True)
        if not versions and rstate.doc is None:
            raise XRegistryError("bad_request", rstate.xid, detail="a resource needs at least one version")
        for vid in sorted(versions, key=str.lower):
            vbody = versions[vid]
            if not isinstance(vbody, dict):
                raise XRegistryError("bad_request", str(Xid.parse(rstate.xid).version(vid)),
                                     detail="a version must be an object")
            await self._put_version(gtype, gid, rtype, rid, vid, vbody, rdef, patch=patch)
        await self._settle_resource(gtype, gid, rtype, rid, rdef, None, patch=True)

    async def post_version(
        self, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool = False,
    ) -> str:
        """Create a version (a new ``versionid`` unless ``body`` names one; an existing one is
        updated) and return its id. Resource-level attributes in ``body`` are ignored."""
        rdef, rstate = await self._open_resource(gtype, gid, rtype, rid, create=True)
        _check_version_id(body, rstate.xid)
        vid = body.get("versionid")
        if vid is None:
            vid = await self._next_version_id(rstate.xid, f"{gtype}/{rtype}/versions")
        elif not rdef.setversionid:
            raise XRegistryError("versionid_not_allowed", rstate.xid, plural=rtype)
        check_id(vid, subject=str(Xid.parse(rstate.xid).version(vid)), attribute="versionid")
        await self.put_versions(gtype, gid, rtype, rid, {vid: body}, patch=patch)
        return vid

    async def set_default_version(self, gtype: str, gid: str, rtype: str, rid: str, vid: str | None) -> None:
        """The ``setdefaultversionid`` flag: make ``vid`` the sticky default version, or with
        ``None`` go back to "default = newest"."""
        rdef, rstate = await self._open_resource(gtype, gid, rtype, rid, create=False)
        if vid is None:
            meta: dict[str, Any] = {"defaultversionsticky": False}
        else:
            ids = {s.id for s in await self._version_states(rstate.xid, f"{gtype}/{rtype}/versions")}
            if vid not in ids:
                raise XRegistryError("unknown_id", rstate.xid, singular="version", id=vid,
                                     detail=f"setdefaultversionid names no version of {rstate.xid}")
            meta = {"defaultversionid": vid, "defaultversionsticky": True}
        await self._settle_resource(gtype, gid, rtype, rid, rdef, meta, patch=True)

    async def put_document(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str | None, attrs: dict[str, Any],
        content: bytes, content_type: str | None, *, new_version: bool = False,
    ) -> str | None:
        """Write a version's document from raw bytes, with metadata ``attrs`` patched in.

        The target is version ``vid``, or a new version (``new_version``; ``attrs`` may name
        its ``versionid``), or else the resource's default version. JSON content is kept as the
        ``<RESOURCE>`` attribute, anything else as ``<RESOURCE>base64``; a ``<RESOURCE>uri`` in
        ``attrs`` (alias ``<RESOURCE>url``) links an external document and needs empty content.
        ``contenttype`` becomes ``content_type`` (removed when ``None``). Returns the id of the
        version created by ``new_version``."""
        rdef = self.resource_def(gtype, rtype)
        subject = str(Xid(gtype, gid, rtype, rid, vid or None))
        if not rdef.hasdocument:
            raise XRegistryError("bad_request", subject, detail=f"{rtype} have no documents (hasdocument is false)")
        body = {**attrs, **document_attributes(rdef, content, content_type, attrs, subject=subject)}
        if new_version:
            return await self.post_version(gtype, gid, rtype, rid, body, patch=True)
        if vid is not None:
            await self.put_version(gtype, gid, rtype, rid, vid, body, patch=True)
        else:
            await self.put_resource(gtype, gid, rtype, rid, body, patch=True)
        return None

    async def _settle_resource(
        self, gtype: str, gid: str, rtype: str, rid: str, rdef: ResourceDef, meta_in: dict[str, Any] | None,
        *, patch: bool,
    ) -> None:
        """Ancestors, default version, maxversions, then the resource row (meta + default copy)."""
        resource = Xid(gtype, gid, rtype, rid)
        rxid, mxid = str(resource), str(resource.meta_of())
        vctype = f"{gtype}/{rtype}/versions"
        rstate = await self._state(rxid)
        versions = await self._version_states(rxid, vctype)
        meta_old = dict((rstate.doc or {}).get("meta") or {})
        meta_req = dict(meta_in or {})
        _check_depth(meta_req, mxid)
        self._check_epoch(mxid, meta_req.get("epoch"), meta_old if rstate.doc else None)
        _check_same_id(meta_req, rdef.id_attribute, rid, mxid)
        xref = meta_req.get("xref", meta_old.get("xref") if patch else None)
        if xref:
            _check_xref(xref, gtype, rtype, rxid, self.model)

        if not xref:
            if not versions:
                raise XRegistryError("bad_request", rxid, detail="a resource must have at least one version")
            self._assign_ancestors(versions, rxid, rdef)
            await self._check_documents(rdef, versions, meta_old, meta_req, patch=patch or meta_in is None)
            keep_old = patch or meta_in is None
            was_sticky = bool(meta_old.get("defaultversionsticky", False)) if keep_old else False
            _check_default_version_id(meta_req, rxid)
            explicit = meta_req.get("defaultversionid")
            if "defaultversionsticky" in meta_req:
                given = meta_req["defaultversionsticky"]
                if given is not None and not isinstance(given, bool):  # core/spec.md: a Boolean
                    raise XRegistryError("invalid_attribute", mxid, path="defaultversionsticky",
                                         name="defaultversionsticky", detail="must be a boolean")
                sticky = bool(given)
            elif patch and "defaultversionid" in meta_req:  # patched id alone: sticky unless null
                sticky = explicit is not None
            else:
                sticky = was_sticky
            by_id = {s.id for s in versions}
            if sticky:
                # sticky without an id: the version the versionmode picks, unless already pinned
                # (core/spec.md, "defaultversionid Attribute")
                wanted = explicit if explicit is not None else (
                    meta_old.get("defaultversionid") if was_sticky else None) or newest(versions, rdef.versionmode)
                if wanted not in by_id:
                    raise XRegistryError("unknown_id", rxid, singular="version", id=wanted,
                                         detail=f"defaultversionid names no version of {rxid}")
                default_id = wanted
            else:
                default_id = newest(versions, rdef.versionmode)
            if sticky and rdef.maxversions == 1 and meta_req.get("defaultversionsticky"):
                # core/spec.md, defaultversionsticky: setting it to true when maxversions is 1
                raise XRegistryError("setdefaultversionsticky_false", mxid)
            # maxversions: prune the oldest versions (per the versionmode) that are not the
            # default; with maxversions 1 the default is not skipped (core/model.md)
            if rdef.maxversions and len(versions) > rdef.maxversions:
                if rdef.maxversions == 1:
                    default_id, sticky = newest(versions, rdef.versionmode), False
                removable = sorted((s for s in versions if s.id != default_id), key=order_key(rdef.versionmode))
                for victim in removable[: len(versions) - rdef.maxversions]:
                    self._set(victim, "version", vctype, None)
                versions = [s for s in versions if s.doc is not None]
                self._repair_ancestors(versions, rdef)
            if self.model.closed:  # the built-in schema model's format: see _check_matchversions
                _check_matchversions(rdef, versions, rxid, self._dirty)
            default_state = next(s for s in versions if s.id == default_id)
            default_copy = json_limits.copy(default_state.doc)
        else:
            default_id, sticky, default_copy = None, False, {}

        # meta attributes
        user_meta = _merge(_user_view(meta_old) if patch or meta_in is None else {},
                           _strip(meta_req, META_READONLY | {rdef.id_attribute, "defaultversionid"}),
                           patch or meta_in is None)
        user_meta.pop("defaultversionsticky", None)
        user_meta.pop("defaultversionid", None)  # set below; a cross-reference has none
        if xref:
            user_meta["xref"] = xref
        else:
            user_meta.pop("xref", None)
        if default_id is not None:
            user_meta["defaultversionid"] = default_id
            user_meta["defaultversionsticky"] = bool(sticky)
        meta_ids = {rdef.id_attribute: rid, "xid": mxid}
        key = rxid.lower()
        collection_changed = key in self._children_changed
        old_meta_user = _user_view(meta_old)
        meta_changed = rstate.doc is None or old_meta_user != _user_view({**meta_ids,
                                                                          **user_meta}) or collection_changed
        if meta_changed or (self.touch and meta_in is not None):
            meta_doc = {**meta_ids, **user_meta}
            self._stamp(meta_doc, meta_req, meta_old if rstate.doc else None)
            if meta_old.get("xref") and not xref:
                # core/spec.md, converting a cross-reference back into a normal Resource: "The
                # Resource's meta.epoch value MUST be greater than the original Resource's
                # previously known value (if any) and greater than the target Resource's
                # meta.epoch value", "epoch = max(original_Epoch, target_Resource_Epoch) + 1"
                # (a target that no longer exists counts as zero)
                target = await self._state(str(meta_old["xref"]))
                target_meta = (target.doc or {}).get("meta") if target.kind == "resource" else None
                target_epoch = int((target_meta or {}).get("epoch", 0) or 0)
                meta_doc["epoch"] = max(int(meta_old.get("epoch", 0)), target_epoch) + 1
        else:
            meta_doc = meta_old
        new_doc = {"meta": meta_doc, "default": default_copy}
        if rstate.doc != new_doc:
            self._set(rstate, "resource", f"{gtype}/{rtype}", new_doc)
        elif rstate.stored_rev is not None:
            self._unchanged.add(key)
        for vstate in versions:
            if vstate.doc is not None and vstate.xid.lower() in self._dirty:
                self._validate("version", vstate, gtype, rtype)
        if meta_doc is not meta_old:  # written: changed, or touched (with the request's timestamps)
            self._validate_meta(rstate, gtype, rtype)
        await self._implicit_registry()

    async def _check_documents(
        self, rdef: ResourceDef, versions: list[_State], meta_old: dict[str, Any], meta_req: dict[str, Any], *,
        patch: bool,
    ) -> None:
        """Format and compatibility checks of the written versions (all of them when the
        resource's ``meta.compatibility`` changes); see ``xreg.registry.schema_checks``."""
        old_mode = meta_old.get("compatibility")
        mode = meta_req.get("compatibility", old_mode if patch else None)
        written = [s for s in versions if s.xid.lower() in self._dirty]
        checked = versions if (mode or "none") != (old_mode or "none") else written
        self._errors.extend(await check_resource(self, rdef, checked, mode))
        for state in checked:
            if state.xid.lower() not in self._dirty and state.doc is not None:
                self._set(state, state.kind, state.ctype, state.doc)  # its recorded outcome changed

    def _set_ancestor(self, state: _State, ancestor: str) -> None:
        """Give a version a new ``ancestorid``: "Any modification to the ancestorid attribute MUST
        result in the owning Version's epoch and modifiedat attributes be updated appropriately,
        regardless of whether the change [...] was explicitly part of a request or indirectly
        changed due to changes to other Versions" (core/spec.md)."""
        if state.body.get(ANCESTOR_ID) == ancestor:
            return
        doc = {**state.body, ANCESTOR_ID: ancestor}
        if state.stored_rev is not None and state.xid.lower() not in self._bumped:
            self._stamp(doc, {}, state.body)
        self._set(state, state.kind, state.ctype, doc)

    def _assign_ancestors(self, versions: list[_State], rxid: str, rdef: ResourceDef) -> None:
        """``ancestorid`` per the versionmode (core/model.md): in ``manual`` mode for versions
        that lack one, in the ordered modes for all; then a cycle check and, when the resource
        type has ``singleversionroot``, the one-root rule."""
        by_id = {s.id: s for s in versions}
        for s in versions:  # checked before any is compared or ordered by it
            if s.body.get(ANCESTOR_ID) and not isinstance(s.body[ANCESTOR_ID], str):
                raise invalid(s.xid, ANCESTOR_ID, "must be a string")
        if rdef.versionmode in ORDERED_MODES:
            for vid, ancestor in chained_ancestors(versions, rdef.versionmode).items():
                self._set_ancestor(by_id[vid], ancestor)
            return
        fresh = sorted((s for s in versions if not s.body.get(ANCESTOR_ID)), key=lambda s: s.xid.lower())
        settled = [s for s in versions if s.body.get(ANCESTOR_ID)]
        for s in fresh:
            vid = s.id
            s.body[ANCESTOR_ID] = newest(settled, "manual") if settled else vid
            settled.append(s)
        for s in versions:
            anc = s.body.get(ANCESTOR_ID)
            vid = s.id
            if anc == "request":
                s.body[ANCESTOR_ID] = anc = vid
            if not isinstance(anc, str):  # checked here: it is used before the entity's validation
                raise invalid(s.xid, ANCESTOR_ID, "must be a string")
            if anc not in by_id:
                raise XRegistryError("unknown_id", s.xid, singular="version", id=anc,
                                     detail=f"ancestorid {anc!r} names no version of {rxid}")
        for s in versions:  # cycles: walking ancestors must reach a root
            seen: list[str] = []
            cur = s.id
            while True:
                nxt = by_id[cur].body[ANCESTOR_ID]
                if nxt == cur:
                    break
                if cur in seen:
                    raise XRegistryError("ancestor_circular_reference", rxid, list=", ".join(seen))
                seen.append(cur)
                cur = nxt
        roots = sorted(s.id for s in versions if s.body.get(ANCESTOR_ID) == s.id)
        if rdef.singleversionroot and len(roots) > 1:
            # core/model.md, singleversionroot: "the server MUST generate an error
            # (multiple_roots) if any request results in a state where more than one Version of a
            # Resource is a root"
            raise XRegistryError("multiple_roots", rxid, plural=rdef.plural,
                                 detail=f"versions {', '.join(roots)} would all be roots")

    def _repair_ancestors(self, versions: list[_State], rdef: ResourceDef) -> None:
        """Ancestors after versions were deleted (core/model.md, "Deleted Ancestor"): in
        ``manual`` mode an orphan becomes a root, in the ordered modes the chain is recomputed."""
        if rdef.versionmode in ORDERED_MODES:
            by_id = {s.id: s for s in versions}
            for vid, ancestor in chained_ancestors(versions, rdef.versionmode).items():
                self._set_ancestor(by_id[vid], ancestor)
            return
        ids = {s.id for s in versions}
        for s in versions:
            if s.body.get(ANCESTOR_ID) not in ids:
                self._set_ancestor(s, s.id)

    # -- deletes ------------------------------------------------------------------------------
    async def delete(self, xid: str, *, epoch: Any = None) -> None:
        """Delete an entity and everything below it."""
        state = await self._state(xid)
        if state.doc is None or state.xid != xid:
            raise XRegistryError("not_found", xid)
        if state.kind == "registry":
            raise XRegistryError("action_not_supported", xid, action="DELETE")
        check = state.doc.get("meta", state.doc) if state.kind == "resource" else state.doc
        self._check_epoch(xid, epoch, check)
        for ctype in self._descendant_ctypes(state):
            page = await self.store.list(Query(ctype=ctype, parent=xid))
            for rec in page.items:
                self._set(self._remember(rec.xid, rec), rec.kind, rec.ctype, None)
        self._set(state, state.kind, state.ctype, None)
        if state.kind == "version":
            vxid = Xid.parse(xid)
            gtype, gid, rtype, rid, _ = vxid.parts
            rdef = self.resource_def(gtype, rtype)
            rxid = str(vxid.resource)
            remaining = await self._version_states(rxid, state.ctype)
            if not remaining:
                raise XRegistryError("bad_request", xid,
                                     detail="the last version of a resource cannot be deleted; delete the resource")
            rstate = await self._state(rxid)
            meta = (rstate.doc or {}).get("meta") or {}
            keep_sticky = meta.get("defaultversionsticky") and meta.get("defaultversionid") != vxid.version_id
            self._repair_ancestors(remaining, rdef)
            await self._settle_resource(gtype, gid, rtype, rid, rdef,
                                        {"defaultversionsticky": bool(keep_sticky),
                                         **({"defaultversionid": meta.get("defaultversionid")} if keep_sticky else {})},
                                        patch=True)

    def _descendant_ctypes(self, state: _State) -> list[str]:
        if state.kind == "group":
            gdef = self.group_def(state.ctype)
            return [c for r in gdef.resources for c in (f"{state.ctype}/{r}/versions", f"{state.ctype}/{r}")]
        if state.kind == "resource":
            return [f"{state.ctype}/versions"]
        return []

    # -- validation and commit ----------------------------------------------------------------
    def _validate(self, level: str, state: _State, gtype: str, rtype: str | None = None) -> None:
        group_attrs = None
        if rtype is not None:
            gstate = self._states.get(Xid.parse(state.xid).group.key)
            group_attrs = gstate.doc if gstate else None
        try:
            validate_entity(level, state.body, model=self.model, group_type=gtype, resource_type=rtype,
                            subject=self._reported_as.get(state.xid.lower(), state.xid), group_attrs=group_attrs)
        except ValidationErrors as errs:
            self._errors.extend(errs.errors)
        except XRegistryError as err:
            self._errors.append(err)

    def _validate_meta(self, rstate: _State, gtype: str, rtype: str) -> None:
        meta = rstate.body["meta"]
        try:
            validate_entity("meta", meta, model=self.model, group_type=gtype, resource_type=rtype,
                            subject=meta["xid"])
        except ValidationErrors as errs:
            self._errors.extend(errs.errors)
        except XRegistryError as err:
            self._errors.append(err)

    async def _bump_parents(self) -> None:
        """Groups and the registry whose collections gained or lost members get a new epoch and
        modifiedat (resources do this in their meta, see :meth:`_settle_resource`)."""
        for pkey, pxid in sorted(self._children_changed.items()):
            state = await self._state(pxid)
            if state.doc is None or state.kind == "resource":
                continue
            if self._dirty.get(pkey) == "created":
                continue
            doc = dict(state.doc)
            self._stamp(doc, {}, state.doc)
            self._set(state, state.kind, state.ctype, doc)

    # -- what materialisation uses (xreg.registry.materialise.Workspace) -------------------
    def loaded(self, xid: str) -> _State:
        """The state of an entity this changeset has already loaded."""
        return self._states[xid.lower()]

    async def state(self, xid: str) -> _State:
        """The state of an entity (loaded from the store on first use)."""
        return await self._state(xid)

    def remember(self, rec: EntityRecord) -> _State:
        """Take a record read elsewhere as the entity's state (unless already loaded)."""
        return self._remember(rec.xid, rec)

    def rewrite(self, state: _State) -> None:
        """Write an entity's state again as it is (its materialisation and search text renewed)."""
        if state.doc is not None and state.xid.lower() not in self._dirty:
            self._rederived.add(state.xid.lower())

    def set_derived(self, state: _State, derived: Materialised | None) -> None:
        """Give a message its (re)computed materialisation (``materialise`` calls this)."""
        new = derived.to_doc() if derived is not None else None
        if new != state.derived:
            state.derived = new
            if state.xid.lower() not in self._dirty:
                self._rederived.add(state.xid.lower())

    def writes(self) -> list[Write]:
        """The store writes this changeset amounts to (after validation)."""
        keys = [*self._dirty, *(k for k in sorted(self._rederived) if k not in self._dirty)]
        return [_write(self._states[key]) for key in keys]

    async def commit(self, note: str = "", *, dry_run: bool = False, correlation_id: str | None = None) -> Outcome:
        """Validate, then write everything in one store revision, with the events it amounts to
        (``xreg.events.derive``, stamped with :attr:`now` and ``correlation_id``) in the same
        transaction. Raises on any violation. ``dry_run``: everything but the write (the outcome's
        ``revision`` and ``correlation_id`` stay ``None``, no event is derived)."""
        if not self._errors:
            await self._check_xref_constraints()
        if self._errors:
            unique = {(e.type, e.subject, e.path, e.detail): e for e in self._errors}
            raise ValidationErrors(list(unique.values()))
        await self._bump_parents()
        outcome = Outcome(deferred=await materialise(self, list(self._dirty), inline=self.rematerialise_inline))
        for key, what in self._dirty.items():
            getattr(outcome, "deleted" if what == "deleted" else what).append(self._states[key].xid)
        outcome.unchanged = [self._states[k].xid for k in self._unchanged if k not in self._dirty]
        outcome.rematerialised = [self._states[k].xid for k in sorted(self._rederived) if k not in self._dirty]
        for key in [*self._dirty, *outcome.rematerialised]:
            state = self._states[key.lower()]
            unresolved = (state.derived or {}).get("unresolved") if state.doc is not None else None
            if unresolved and unresolved["reason"] == "dangling" and state.kind == "resource":
                outcome.dangling.append((state.xid, unresolved["reference"]))
        writes = self.writes()
        if dry_run or not writes:
            return outcome
        correlation_id = correlation_id or new_correlation_id()
        changes = [EntityChange(w.xid, w.kind, w.ctype, self._states[w.key].stored, w.doc) for w in writes]
        changes += [EntityChange(s.xid, s.kind, s.ctype, None, None) for k, s in self._transient.items()
                    if s.doc is None and k not in self._dirty]
        outcome.events = derive_events(changes, time=self.now, correlation_id=correlation_id)
        outcome.revision = await self.store.commit(writes, note=note, events=outcome.events,
                                                   rematerialise=outcome.deferred)
        outcome.correlation_id = correlation_id
        return outcome

# -- helpers ----------------------------------------------------------------------------------
def new_correlation_id() -> str:
    """An interaction's ``xregcorrelationid``: a random UUID (lower case), so unique,
    case-insensitively, for the registry's lifetime whatever the process or replica."""
    return str(uuid.uuid4())


def _write(state: _State) -> Write:
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


def _strip(attrs: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    drop = set(names) | SERVER_ATTRIBUTES
    return {k: v for k, v in attrs.items() if k not in drop}


def _collection_attrs(collections: Iterable[str]) -> set[str]:
    return {f"{c}{suffix}" for c in collections for suffix in ("url", "count")}


def _no_name(name: object) -> bool:
    """Whether ``name`` is no attribute name under any charset (such a null is kept: validation refuses it)."""
    return not isinstance(name, str) or not (ATTRIBUTE_NAME.fullmatch(name) or MAP_KEY.fullmatch(name))


def _merge(base: dict[str, Any], update: dict[str, Any], patch: bool) -> dict[str, Any]:
    """``update`` over ``base`` (``patch``) or instead of it; null deletes an attribute, but a null
    under a name no attribute can have is kept for validation to refuse, not silently dropped."""
    if not patch:
        return {k: v for k, v in update.items() if v is not None or _no_name(k)}
    out = dict(base)
    for k, v in update.items():
        if v is None and not _no_name(k):
            out.pop(k, None)
        else:
            out[k] = v
    return out



def _check_depth(attrs: dict[str, Any], subject: str) -> None:
    """``invalid_attribute`` for a value of ``attrs`` beyond the one depth rule
    (:func:`xreg.json_limits.check_attributes`) or holding a string that is not Unicode."""
    try:
        json_limits.check_attributes(attrs)
    except json_limits.JSONLimitError as exc:
        path = exc.path.lstrip("/")
        raise XRegistryError("invalid_attribute", subject, path=path.replace("/", ".") or None,
                             name=path.split("/")[0] or subject, detail=exc.detail) from None

def _user_view(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _NOT_USER}


#: What a writer does not set: timestamps, epochs, the format checks' results.
_NOT_USER = frozenset({"epoch", "modifiedat", "createdat", *RESULT_ATTRIBUTES})


def _ts_changed(request: dict[str, Any], existing: dict[str, Any]) -> bool:
    for name in ("createdat", "modifiedat"):
        value = request.get(name)
        if value is not None and value != existing.get(name):
            return True
    return False


def _check_same_id(attrs: dict[str, Any], id_attr: str, expected: str, subject: str) -> None:
    given = attrs.get(id_attr)
    if given is not None and given != expected:
        raise XRegistryError("mismatched_id", subject, singular=id_attr.removesuffix("id"), expected_id=expected,
                             invalid_id=given, detail=f"{id_attr} {given!r} does not match {expected!r}")


def _check_version_id(body: dict[str, Any], subject: str) -> None:
    """A ``versionid`` in a request must be a string (an id), whatever else it is checked for."""
    value = body.get("versionid")
    if value is not None and not isinstance(value, str):
        raise XRegistryError("invalid_attribute", subject, path="versionid", name="versionid",
                             detail=f"versionid must be a string, not a JSON {type(value).__name__}")


def _check_default_version_id(meta: dict[str, Any], subject: str) -> None:
    """A ``defaultversionid`` in a request must be a string (a version's id) or null."""
    value = meta.get("defaultversionid")
    if value is not None and not isinstance(value, str):
        raise XRegistryError("invalid_attribute", subject, path="defaultversionid", name="defaultversionid",
                             detail=f"defaultversionid must be a string, not a JSON {type(value).__name__}")


def _check_case(state: _State, xid: str) -> None:
    if state.doc is not None and state.xid != xid:
        raise XRegistryError("bad_request", xid,
                             detail=f"{state.xid} already exists; ids are unique case-insensitively")


def _check_one_document(request: dict[str, Any], rdef: ResourceDef, subject: str) -> None:
    if not rdef.hasdocument:
        return
    present = [n for n in (rdef.singular, f"{rdef.singular}base64", f"{rdef.singular}uri", f"{rdef.singular}url")
               if n in request and request[n] is not None]
    if len(present) > 1:
        raise XRegistryError("one_resource", subject, list=", ".join(present),
                             detail=f"only one of {', '.join(present)} may be given")


def _alias_document_link(request: dict[str, Any], rdef: ResourceDef) -> None:
    """``<RESOURCE>uri`` (the name older registries used) is taken as ``<RESOURCE>url``, the
    1.0-rc4 name, which is what is stored and served."""
    url, uri = f"{rdef.singular}url", f"{rdef.singular}uri"
    if rdef.hasdocument and uri in request and url not in request:
        request[url] = request.pop(uri)


def upgrade_document_link(doc: dict[str, Any], singular: str) -> None:
    """A version state stored by an older gateway keeps its external document's link as
    ``<RESOURCE>uri``: rename it to ``<RESOURCE>url`` (in place)."""
    uri, url = f"{singular}uri", f"{singular}url"
    if uri in doc and url not in doc:
        doc[url] = doc.pop(uri)


JSON_MEDIA_TYPES = ("application/json", "text/json")


def is_json_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` names JSON (``application/json``, ``…+json``, ``text/json``)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media in JSON_MEDIA_TYPES or media.endswith("+json")


def document_attributes(
    rdef: ResourceDef, content: bytes, content_type: str | None, attrs: dict[str, Any], *, subject: str,
) -> dict[str, Any]:
    """The version attributes that hold a raw document: ``<RESOURCE>`` for JSON content,
    ``<RESOURCE>base64`` otherwise (empty content: an empty document), and ``contenttype``.
    With a link (``<RESOURCE>uri`` / ``url``) in ``attrs`` the content must be empty."""
    s = rdef.singular
    out: dict[str, Any] = {"contenttype": content_type}
    if attrs.get(f"{s}uri") is not None or attrs.get(f"{s}url") is not None:
        if content:
            raise XRegistryError("bad_request", subject,
                                 detail=f"the body must be empty when {s}url links the document")
        return out
    if content and (content_type is None or is_json_media_type(content_type)):
        try:  # kept as JSON within the depth of attribute values: the export shows it as one
            out[s] = json_limits.loads(content.decode("utf-8"), max_depth=json_limits.MAX_VALUE_DEPTH)
            return out
        except (UnicodeDecodeError, ValueError):  # kept as bytes (the format check judges them)
            pass
    out[f"{s}base64"] = base64.b64encode(content).decode("ascii")
    return out


def _drop_other_documents(user: dict[str, Any], request: dict[str, Any], rdef: ResourceDef) -> None:
    names = [rdef.singular, f"{rdef.singular}base64", f"{rdef.singular}uri", f"{rdef.singular}url"]
    given = [n for n in names if n in request]
    if given:
        for n in names:
            if n not in given:
                user.pop(n, None)


def _check_xref(xref: Any, gtype: str, rtype: str, rxid: str, model: RegistryModel) -> None:
    try:
        target = Xid.parse(xref)
    except XRegistryError:
        target = None
    if target is None or target.level != "resource" or (target.group_type, target.resource_type) != (gtype, rtype):
        raise XRegistryError("malformed_xref", rxid, xref=xref,
                             detail=f"xref must be the XID of a {rtype[:-1] if rtype.endswith('s') else rtype} "
                                    f"(/{gtype}/<id>/{rtype}/<id>)")
    if xref.lower() == rxid.lower():
        raise XRegistryError("malformed_xref", rxid, xref=xref, detail="a resource cannot reference itself")


def _check_matchversions(rdef: ResourceDef, versions: list[_State], rxid: str, dirty: dict[str, str]) -> None:
    """core/model.md ``matchversions``: "all Versions of a Resource instance MUST have the same
    value for this attribute (or MUST be missing from all Versions). If an inconsistency is found
    then an error (mismatched_version_attribute) MUST be generated" — checked when a write
    touched a Version of the Resource, for models given through ``modelsource``: the built-in
    schema model marks ``format`` so, while real schema registries (schemastore.org's) hold
    Versions of one schema in several formats; there it is not enforced."""
    if not any(s.xid.lower() in dirty for s in versions):
        return
    for name, defn in rdef.attributes.items():
        if defn.matchversions and len({repr(s.body.get(name)) for s in versions}) > 1:
            raise XRegistryError("mismatched_version_attribute", rxid, name=name, path=name,
                                 detail=f"every version of {rxid} must have the same {name}")


def _keep_readonly(user: dict[str, Any], defs: dict[str, AttributeDef], existing: dict[str, Any] | None) -> None:
    """core/model.md ``readonly``: "during creation, or update, of an entity if this attribute is
    specified, then its value MUST be silently ignored by the server" — a model's read-only
    attributes keep their stored value (in place)."""
    for name, defn in defs.items():
        if not defn.readonly or name == "*":
            continue
        if existing is not None and name in existing:
            user[name] = existing[name]
        else:
            user.pop(name, None)
