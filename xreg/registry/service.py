"""The local registry: the entry point of every read and write of the gateway's own registry.

:class:`LocalRegistry` owns a :class:`~xreg.storage.base.Store` and the
:class:`~xreg.model.registry_model.RegistryModel`. Every write — the xRegistry HTTP API,
the GraphQL mutations, ``import`` — is one unit of work run by :meth:`LocalRegistry.write`:
build the changes on a :class:`~xreg.registry.changeset.Changeset` (which validates them),
commit them in one store revision, and rebuild with a jittered back-off when a concurrent
writer changed what the unit read (:class:`WritePolicy`). Whole documents (import) are built
by :meth:`LocalRegistry.build_document`; the registry as one document (export) is
:meth:`LocalRegistry.export_document`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from xreg import metrics
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.model.modelsource import STORED_KEY as MODEL_SOURCE_KEY
from xreg.model.modelsource import ModelLimits, check_model_source, model_of_source
from xreg.model.registry_model import RegistryModel
from xreg.registry.capabilities import STORED_KEY as CAPABILITIES_KEY
from xreg.registry.changeset import Changeset, Outcome, new_correlation_id
from xreg.registry.materialise import materialise_all, materialised_view, needs_materialising
from xreg.registry.views import group_view, meta_view, registry_view, resource_view, version_view
from xreg.storage import create_store
from xreg.storage.base import Store
from xreg.storage.errors import Conflict, RevisionGone
from xreg.storage.observe import upkeep
from xreg.storage.records import EntityRecord, Query
from xreg.storage.rematerialise import Rematerialisation
from xreg.xid import Xid

T = TypeVar("T")
#: Builds one unit of work on a changeset (and checks its preconditions); its result is
#: returned by :meth:`LocalRegistry.write` next to the commit's outcome.
Build = Callable[[Changeset], Awaitable[T]]

#: Registry-level attributes an imported document may set (the rest belongs to its source).
IMPORTED_REGISTRY_ATTRIBUTES = ("name", "description", "documentation", "icon", "labels")
#: Top-level keys of a document that are not group collections.
DOCUMENT_SCALARS = frozenset({
    "$schema", "specversion", "registryid", "self", "shortself", "xid", "epoch", "createdat", "modifiedat",
    "capabilities", "model", "modelsource", "name", "description", "documentation", "icon", "labels",
    "deprecated",
})


@dataclass
class WritePolicy:
    """How a unit of work that lost a race is retried.

    The writes of one process run one at a time (a lock), so they never conflict with each
    other; a writer in another process (or replica) is caught by the store's commit check
    (:class:`~xreg.storage.errors.Conflict`). The unit is then rebuilt from fresh reads after
    a random delay in ``[0, base_delay * 2**attempt]``, at most ``attempts`` times in all;
    after that the write fails with ``server_busy``. ``sleep`` and ``random`` are injectable
    so tests need not wait.
    """

    attempts: int = 5
    base_delay: float = 0.05
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    uniform: Callable[[float, float], float] = random.uniform

    def delay(self, attempt: int) -> float:
        """The back-off before attempt ``attempt + 1`` (jittered, doubling)."""
        return self.uniform(0.0, self.base_delay * 2**attempt)


#: Seconds a read may run on the model as last read: another process or replica may have changed
#: it (the xRegistry HTTP API, GraphQL operations and CORS call :meth:`LocalRegistry.sync_model`
#: with it).
MODEL_MAX_AGE = 1.0


class LocalRegistry:
    """The gateway's own registry, stored in a :class:`Store`."""

    def __init__(
        self, store: Store, *, model: RegistryModel | None = None, registry_id: str = "xregistry",
        name: str | None = None, base_url: str = "", write_policy: WritePolicy | None = None,
        model_limits: ModelLimits | None = None, rematerialise_inline: int | None = None,
    ) -> None:
        self.store = store
        #: Dependents of the messages a write touches re-materialised in its commit; beyond it,
        #: left to :mod:`xreg.registry.rematerialise` (``None``: no limit).
        self.rematerialise_inline = rematerialise_inline
        #: The re-materialisation work items pending, by key, as this process last knew them
        #: (its own writes at once; other processes' when reads re-check the model).
        self.rematerialising: dict[str, Rematerialisation] = {}
        #: The revision of this process's last commit that deferred re-materialisation work.
        self.last_deferred_revision: int | None = None
        #: Bounds of the models clients may install (``modelsource``).
        self.model_limits = model_limits or ModelLimits()
        #: The model when none was ever set through ``modelsource`` (the built-in one).
        self.base_model = model or RegistryModel.default()
        #: The current model: the stored ``modelsource``'s, else :attr:`base_model`
        #: (:meth:`sync_model` keeps it current).
        self.model = self.base_model
        #: The stored ``modelsource`` (``None``: never set).
        self.model_source: dict[str, Any] | None = None
        #: The stored capability settings (``xreg.registry.capabilities``; ``None``: the
        #: supported capabilities, unchanged), kept current with the model by :meth:`sync_model`.
        self.capability_settings: dict[str, Any] | None = None
        self._model_key: str | None = None
        self._model_synced = 0.0
        self.registry_id = registry_id
        self.name = name
        self.base_url = base_url
        self.write_policy = write_policy or WritePolicy()
        #: Serialises the writes of this process: two changesets touching the same entity would
        #: only conflict at commit. Writers from other processes are caught by the commit check.
        self._write_lock = asyncio.Lock()
        #: Called with the revision of each commit this process makes (its events are stored):
        #: the application's event feed (``adapters.events.EventFeed.notify``) listens here.
        self.commit_listeners: list[Callable[[int], None]] = []

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalRegistry:
        """The local registry ``settings`` configure (store, id, name, self URLs); not yet opened."""
        return cls(create_store(settings.effective_store_url), registry_id=settings.registry_id,
                   name=settings.registry_name, base_url=settings.base_url, model_limits=settings.model_limits,
                   rematerialise_inline=settings.rematerialise_inline)

    async def open(self) -> None:
        """Open the store and create the registry entity on first use; a failure closes the store
        again (its connections' threads would otherwise keep the process from exiting)."""
        await self.store.open()
        try:
            await self._start()
        except BaseException:
            await self.store.close()
            raise

    async def _start(self) -> None:
        if await self.store.get("/") is None:
            async def create(cs: Changeset) -> None:
                await cs.ensure_registry(self.registry_id, self.name)

            await self.write(create, subject="/", note="create registry")
        else:
            await self.sync_model()
            if await needs_materialising(self.store, self.model):
                await self.write(materialise_all, subject="/", note="materialise messages", touch=False)
        await self.refresh_rematerialising()

    async def refresh_rematerialising(self) -> list[Rematerialisation]:
        """Take up the store's pending re-materialisation items and return them. An item a commit
        of this process noted while the store was read is kept (the read may predate it)."""
        before = dict(self.rematerialising)
        with upkeep():
            items = await self.store.rematerialisations()
        fresh = {i.key: i for i in items}
        for key, noted in self.rematerialising.items():
            known = fresh.get(key)
            if before.get(key) is not noted and (known is None or known.revision < noted.revision):
                fresh[key] = noted
        self.rematerialising = fresh
        return items

    def model_at(self, root: EntityRecord | None) -> RegistryModel:
        """The model a registry entity's state defines (its stored ``modelsource``)."""
        source = (root.doc if root is not None else {}).get(MODEL_SOURCE_KEY)
        return self.base_model if source is None else model_of_source(source)

    async def sync_model(self, max_age: float | None = None) -> RegistryModel:
        """Take up the model stored with the registry entity (another process or replica may
        have changed it): one read of the registry entity, skipped when the last one is less than
        ``max_age`` seconds old (reads may lag another process's model change by that much;
        writes always read it)."""
        now = time.monotonic()
        if max_age is not None and self._model_key is not None and now - self._model_synced < max_age:
            return self.model
        self._model_synced = now
        # a timed check is upkeep, not a read of the request that happens to make it (uncounted)
        with upkeep() if max_age is not None else contextlib.nullcontext():
            root = await self.store.get("/")
        if max_age is not None:  # other processes' deferred work, as often as their model changes
            await self.refresh_rematerialising()
        source = (root.doc if root is not None else {}).get(MODEL_SOURCE_KEY)
        self.capability_settings = (root.doc if root is not None else {}).get(CAPABILITIES_KEY)
        key = json.dumps(source, sort_keys=True)
        if key != self._model_key:
            self.model = self.model_at(root)
            self.model_source = source
            self._model_key = key
        return self.model

    async def close(self) -> None:
        await self.store.close()

    @property
    def instance_id(self) -> str:
        """The registry instance's id (its store's, see :attr:`Store.instance_id`): stable for the
        life of the store, carried over by a restore with history, new for any other copy."""
        return self.store.instance_id

    async def __aenter__(self) -> LocalRegistry:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- writes -------------------------------------------------------------------------------
    async def write(
        self, build: Build[T], *, subject: str, note: str, touch: bool = True, ignore_epoch: bool = False,
        validate: bool = True, dry_run: bool = False,
    ) -> tuple[T, Outcome]:
        """Run one unit of work: ``build`` adds its changes to a fresh changeset (checking its
        preconditions there, so a retry checks them again), then everything is validated and
        committed in one store revision. Returns ``build``'s result and the commit's outcome.

        Raises the :class:`XRegistryError` of the first violation (nothing is written), or
        ``server_busy`` when concurrent writers kept invalidating the unit (see
        :class:`WritePolicy`). ``touch``, ``ignore_epoch`` and ``validate`` (schema documents
        checked against their format and compatibility rule) are the changeset's options;
        ``dry_run`` does everything but the commit: it answers whether the unit would be accepted.

        The commit stores the interaction's events (core/events.md) with it; the outcome carries
        its ``correlation_id`` (one per interaction, kept across retries) and the
        :attr:`commit_listeners` are told the new revision.
        """
        policy = self.write_policy
        correlation_id = new_correlation_id()
        for attempt in range(policy.attempts):
            async with self._write_lock:
                await self.sync_model()
                cs = Changeset(self.store, self.model, touch=touch, ignore_epoch=ignore_epoch, validate=validate,
                               capability_settings=self.capability_settings)
                cs.rematerialise_inline = self.rematerialise_inline
                result = await build(cs)
                try:
                    outcome = await cs.commit(note=note, dry_run=dry_run, correlation_id=correlation_id)
                except Conflict:
                    pass
                else:
                    if (cs.model_changed or cs.capabilities_changed) and not dry_run:
                        await self.sync_model()
                    if outcome.revision is not None:
                        self._deferred(outcome.deferred, outcome.revision)
                        for listener in self.commit_listeners:
                            listener(outcome.revision)
                    return result, outcome
            if attempt + 1 < policy.attempts:
                await policy.sleep(policy.delay(attempt))
        raise XRegistryError("server_busy", subject, detail="concurrent writes kept conflicting; retry")

    def _deferred(self, keys: list[str], revision: int) -> None:
        """Note the work items a commit of this process recorded (see :attr:`rematerialising`)."""
        if keys:
            self.last_deferred_revision = revision
        now = time.time()
        for key in keys:
            old = self.rematerialising.get(key)
            self.rematerialising[key] = Rematerialisation(key, revision, min(old.at, now) if old else now)

    # -- import -------------------------------------------------------------------------------
    async def apply_document(self, doc: dict[str, Any], *, note: str = "import", validate: bool = True) -> Outcome:
        """Create or update every entity of a (normalised, 1.0-rc4 shaped) document, atomically:
        :meth:`build_document` run as one unit of work.

        Entities not in the document are left alone; an entity identical to the stored one is
        ``unchanged``; epochs in the document are ignored (they belong to the source registry).
        Raises :class:`XRegistryError` and writes nothing if any entity is invalid.
        ``validate=False`` skips the schema checks (``import --no-validate``; the versions
        record that they were not validated). Counted in ``xreg_import_entities_total``.
        """

        async def build(cs: Changeset) -> None:
            await self.build_document(cs, doc)

        try:
            _, outcome = await self.write(build, subject="/", note=note, touch=False, ignore_epoch=True,
                                          validate=validate)
        except XRegistryError:
            rejected = len(document_xids(doc, self.model)) if isinstance(doc, dict) else 0
            metrics.IMPORT_ENTITIES.labels("rejected").inc(rejected)
            raise
        for what in ("created", "updated", "unchanged"):
            metrics.IMPORT_ENTITIES.labels(what).inc(len(getattr(outcome, what)))
        return outcome

    async def build_document(self, cs: Changeset, doc: dict[str, Any]) -> None:
        """Add every entity of a document to ``cs`` (see :meth:`apply_document`)."""
        if not isinstance(doc, dict):
            raise XRegistryError("parsing_data", "/", detail="a registry document must be a JSON object")
        if doc.get("modelsource"):  # the document's model first: its entities are checked against it
            # (an export of a registry on the built-in model carries `{}`: no model given)
            await cs.put_model_source(check_model_source(doc["modelsource"], self.model_limits))
        model = cs.model
        unknown = [k for k, v in doc.items() if k not in DOCUMENT_SCALARS and k not in model.groups
                   and not _is_collection_link(k, model.groups)]
        if unknown:
            raise XRegistryError("unknown_group_type", f"/{unknown[0]}", name=unknown[0],
                                 detail=f"the model has no group type {unknown[0]!r} "
                                        f"(known: {', '.join(model.groups)})")
        await cs.prefetch(["/", *document_xids(doc, model)])
        reg_attrs = {k: doc[k] for k in IMPORTED_REGISTRY_ATTRIBUTES if k in doc}
        if reg_attrs:
            await cs.put_registry(self.registry_id, reg_attrs, patch=True)
        for gtype, gdef in model.groups.items():
            groups = doc.get(gtype)
            if groups is None:
                continue
            if not isinstance(groups, dict):
                raise XRegistryError("invalid_attribute", f"/{gtype}", path=gtype, name=gtype,
                                     detail=f"{gtype} must be a map of {gdef.singular} id to {gdef.singular}")
            for gid, gbody in groups.items():
                if not isinstance(gbody, dict):
                    raise XRegistryError("invalid_attribute", f"/{gtype}/{gid}", path=gid, name=gid,
                                         detail=f"a {gdef.singular} must be an object")
                await cs.put_group(gtype, gid, gbody)
                for rtype, rdef in gdef.resources.items():
                    resources = gbody.get(rtype)
                    if resources is None:
                        continue
                    if not isinstance(resources, dict):
                        raise XRegistryError("invalid_attribute", f"/{gtype}/{gid}/{rtype}", path=rtype, name=rtype,
                                             detail=f"{rtype} must be a map of {rdef.singular} id to {rdef.singular}")
                    for rid, rbody in resources.items():
                        if not isinstance(rbody, dict):
                            raise XRegistryError("invalid_attribute", f"/{gtype}/{gid}/{rtype}/{rid}", path=rid,
                                                 name=rid, detail=f"a {rdef.singular} must be an object")
                        await cs.put_resource(gtype, gid, rtype, rid, rbody)

    # -- reads --------------------------------------------------------------------------------
    async def check_revision(self, as_of: int | None) -> None:
        """Raise ``bad_request`` when ``as_of`` cannot be read (future, or pruned history)."""
        if as_of is None:
            return
        current = await self.store.current_revision()
        oldest = await self.store.oldest_revision()
        if as_of > current or as_of < oldest:
            raise XRegistryError("bad_request", "/", detail=f"revision {as_of} is not readable: "
                                 f"the registry keeps revisions {oldest} to {current}")

    async def iter_ctype(self, ctype: str, *, as_of: int | None = None,
                         page_size: int = 2000) -> AsyncIterator[EntityRecord]:
        """Every live entity of one collection type, in key order, page by page."""
        after = None
        while True:
            try:
                page = await self.store.list(Query(ctype=ctype, limit=page_size, after=after, as_of=as_of))
            except RevisionGone as exc:
                raise XRegistryError("bad_request", "/", detail=str(exc)) from exc
            for rec in page.items:
                yield rec
            if not page.has_next or not page.items:
                return
            after = page.cursor_of(page.items[-1], None)

    async def export_document(self, *, as_of: int | None = None, materialised: bool = False) -> dict[str, Any]:
        """The whole registry as one xRegistry 1.0-rc4 document, everything inlined: what each
        entity declares (the document imports back as it is), or with ``materialised`` each
        message as it really is, its ``basemessageuri`` chain merged (for consumers that want
        the resolved definitions; ``basemessageuri`` stays, so it still names the base)."""
        await self.check_revision(as_of)
        base = self.base_url
        root = await self.store.get("/", as_of=as_of)
        if root is None:
            raise XRegistryError("not_found", "/")
        model = self.model_at(root)  # the model of that revision
        counts: dict[str, int] = {}
        groups: dict[str, dict[str, dict[str, Any]]] = {}
        for gtype, gdef in model.groups.items():
            gmap: dict[str, dict[str, Any]] = {}
            by_key: dict[str, dict[str, Any]] = {}
            async for g in self.iter_ctype(gtype, as_of=as_of):
                view = group_view(g, model, base, {})
                for rtype in gdef.resources:
                    view[rtype] = {}
                gmap[g.id] = by_key[g.key] = view
            for rtype in gdef.resources:
                versions: dict[str, dict[str, EntityRecord]] = {}
                async for v in self.iter_ctype(f"{gtype}/{rtype}/versions", as_of=as_of):
                    versions.setdefault(Xid.parse(v.key).resource.key, {})[v.id] = v
                async for r in self.iter_ctype(f"{gtype}/{rtype}", as_of=as_of):
                    owned = versions.get(r.key, {})
                    rview = resource_view(r, base, len(owned), include_meta=True)
                    default_id = (r.doc.get("meta") or {}).get("defaultversionid")
                    rview["versions"] = {vid: version_view(v, default_id, base) for vid, v in owned.items()}
                    if materialised:
                        rview = materialised_view(r.kind, r.doc, rview)
                        rview["versions"] = {vid: materialised_view(v.kind, v.doc, view)
                                             for (vid, view), v in zip(rview["versions"].items(), owned.values(),
                                                                       strict=True)}
                    gview = by_key.get(Xid.parse(r.key).parent.key)
                    if gview is not None:
                        gview[rtype][r.id] = rview
                for gview in gmap.values():
                    gview[f"{rtype}count"] = len(gview[rtype])
            groups[gtype] = gmap
            counts[gtype] = len(gmap)
        out = registry_view(root, model, base, counts)
        source = root.doc.get(MODEL_SOURCE_KEY)
        if source is not None:  # a model set through modelsource travels with the document
            out["modelsource"] = source
        for gtype, gmap in groups.items():
            out[gtype] = gmap
        return out

    async def entity(self, xid: str, *, as_of: int | None = None) -> dict[str, Any] | None:
        """One entity (registry, group, resource, ``meta`` or version) as its xRegistry view."""
        is_meta = xid.endswith("/meta")
        try:
            rec = await self.store.get(xid[: -len("/meta")] if is_meta else xid, as_of=as_of)
        except RevisionGone as exc:
            raise XRegistryError("bad_request", xid, detail=str(exc)) from exc
        if rec is None or rec.xid != (xid[: -len("/meta")] if is_meta else xid):
            return None
        if is_meta:
            return meta_view(rec, self.base_url) if rec.kind == "resource" else None
        if rec.kind == "registry":
            counts = {g: await self.store.count(Query(ctype=g, as_of=as_of)) for g in self.model.groups}
            return registry_view(rec, self.model, self.base_url, counts)
        if rec.kind == "group":
            gdef = self.model.group(rec.ctype)
            counts = {r: (await self.store.count_children([rec.xid], f"{rec.ctype}/{r}", as_of)).get(rec.key, 0)
                      for r in (gdef.resources if gdef else {})}
            return group_view(rec, self.model, self.base_url, counts)
        if rec.kind == "resource":
            n = (await self.store.count_children([rec.xid], f"{rec.ctype}/versions", as_of)).get(rec.key, 0)
            return resource_view(rec, self.base_url, n)
        parent = await self.store.get(str(Xid.parse(rec.xid).resource), as_of=as_of)
        default_id = ((parent.doc if parent else {}).get("meta") or {}).get("defaultversionid")
        return version_view(rec, default_id, self.base_url)


def _is_collection_link(key: str, groups: dict[str, Any]) -> bool:
    return any(key == f"{g}url" or key == f"{g}count" for g in groups)


def document_xids(doc: dict[str, Any], model: RegistryModel) -> list[str]:
    """Every group, resource and version XID a document names (for one bulk prefetch)."""
    out: list[str] = []
    for gtype, gdef in model.groups.items():
        groups = doc.get(gtype)
        if not isinstance(groups, dict):
            continue
        for gid, gbody in groups.items():
            out.append(f"/{gtype}/{gid}")
            if not isinstance(gbody, dict):
                continue
            for rtype in gdef.resources:
                resources = gbody.get(rtype)
                if not isinstance(resources, dict):
                    continue
                for rid, rbody in resources.items():
                    rxid = f"/{gtype}/{gid}/{rtype}/{rid}"
                    out.append(rxid)
                    if isinstance(rbody, dict) and isinstance(rbody.get("versions"), dict):
                        out.extend(f"{rxid}/versions/{vid}" for vid in rbody["versions"])
    return out
