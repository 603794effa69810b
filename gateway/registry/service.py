"""The local registry: the entry point of every read and write of the gateway's own registry.

:class:`LocalRegistry` owns a :class:`~gateway.storage.base.Store` and the
:class:`~gateway.model.registry_model.RegistryModel`. Writes go through
:class:`~gateway.registry.changeset.Changeset`; whole documents (import) through
:meth:`LocalRegistry.apply_document`; the registry as one document (export) through
:meth:`LocalRegistry.export_document`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from gateway.errors import XRegistryError
from gateway.model.registry_model import RegistryModel
from gateway.registry.changeset import Changeset, Outcome
from gateway.registry.views import group_view, meta_view, registry_view, resource_view, version_view
from gateway.storage.base import EntityRecord, Query, RevisionGone, Store
from gateway.xid import Xid

#: Registry-level attributes an imported document may set (the rest belongs to its source).
IMPORTED_REGISTRY_ATTRIBUTES = ("name", "description", "documentation", "icon", "labels")
#: Top-level keys of a document that are not group collections.
DOCUMENT_SCALARS = frozenset({
    "$schema", "specversion", "registryid", "self", "shortself", "xid", "epoch", "createdat", "modifiedat",
    "capabilities", "model", "modelsource", "name", "description", "documentation", "icon", "labels",
    "deprecated",
})


class LocalRegistry:
    """The gateway's own registry, stored in a :class:`Store`."""

    def __init__(
        self, store: Store, *, model: RegistryModel | None = None, registry_id: str = "xregistry",
        name: str | None = None, base_url: str = "",
    ) -> None:
        self.store = store
        self.model = model or RegistryModel.default()
        self.registry_id = registry_id
        self.name = name
        self.base_url = base_url
        #: Serialises the writes of this process: two changesets touching the same entity would
        #: only conflict at commit. Writers from other processes are caught by the commit check.
        self.write_lock = asyncio.Lock()

    async def open(self) -> None:
        """Open the store and create the registry entity on first use."""
        await self.store.open()
        if await self.store.get("/") is None:
            cs = self.changeset()
            await cs.ensure_registry(self.registry_id, self.name)
            await cs.commit(note="create registry")

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> LocalRegistry:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def changeset(self, *, touch: bool = True, ignore_epoch: bool = False) -> Changeset:
        """A new unit of work; call ``await cs.commit()`` to write it."""
        return Changeset(self.store, self.model, touch=touch, ignore_epoch=ignore_epoch)

    # -- import -------------------------------------------------------------------------------
    async def apply_document(self, doc: dict[str, Any], *, note: str = "import") -> Outcome:
        """Create or update every entity of a (normalised, 1.0-rc4 shaped) document, atomically.

        Entities not in the document are left alone; an entity identical to the stored one is
        ``unchanged``; epochs in the document are ignored (they belong to the source registry).
        Raises :class:`XRegistryError` and writes nothing if any entity is invalid.
        """
        if not isinstance(doc, dict):
            raise XRegistryError("parsing_data", "/", detail="a registry document must be a JSON object")
        unknown = [k for k, v in doc.items() if k not in DOCUMENT_SCALARS and k not in self.model.groups
                   and not _is_collection_link(k, self.model.groups)]
        if unknown:
            raise XRegistryError("unknown_group_type", f"/{unknown[0]}", name=unknown[0],
                                 detail=f"the model has no group type {unknown[0]!r} (known: {', '.join(self.model.groups)})")
        cs = self.changeset(touch=False, ignore_epoch=True)
        await cs.prefetch(["/", *document_xids(doc, self.model)])
        reg_attrs = {k: doc[k] for k in IMPORTED_REGISTRY_ATTRIBUTES if k in doc}
        if reg_attrs:
            await cs.put_registry(self.registry_id, reg_attrs, patch=True)
        for gtype, gdef in self.model.groups.items():
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
        return await cs.commit(note=note)

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

    async def iter_ctype(self, ctype: str, *, as_of: int | None = None, page_size: int = 2000) -> AsyncIterator[EntityRecord]:
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

    async def export_document(self, *, as_of: int | None = None) -> dict[str, Any]:
        """The whole registry as one xRegistry 1.0-rc4 document, everything inlined."""
        await self.check_revision(as_of)
        base = self.base_url
        root = await self.store.get("/", as_of=as_of)
        if root is None:
            raise XRegistryError("not_found", "/")
        counts: dict[str, int] = {}
        groups: dict[str, dict[str, dict[str, Any]]] = {}
        for gtype, gdef in self.model.groups.items():
            gmap: dict[str, dict[str, Any]] = {}
            by_key: dict[str, dict[str, Any]] = {}
            async for g in self.iter_ctype(gtype, as_of=as_of):
                view = group_view(g, self.model, base, {})
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
                    gview = by_key.get(Xid.parse(r.key).parent.key)
                    if gview is not None:
                        gview[rtype][r.id] = rview
                for gview in gmap.values():
                    gview[f"{rtype}count"] = len(gview[rtype])
            groups[gtype] = gmap
            counts[gtype] = len(gmap)
        out = registry_view(root, self.model, base, counts)
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
