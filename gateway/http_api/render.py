"""Response bodies of the HTTP API: entities with their nested collections, as the flags ask.

:class:`Renderer` turns stored records into xRegistry JSON (``xreg.registry.reads.render``
does the per-entity views and counts), then per the request:

* ``inline``: nested collections (fetched one level at a time for all parents together),
  ``meta``, documents (``schema`` / ``schemabase64``; ``binary`` forces the base64 form);
* ``filter``: per entity the filter branches it satisfies; nested collections show only the
  matching entities, ``<COLLECTION>count`` counts them and ``<COLLECTION>url`` carries the
  filters (``?filter=excludeall`` for an empty result);
* ``doc``: the document view: resources without their default version's attributes,
  versions without ``formatvalidated`` / ``compatibilityvalidated``, cross-reference ``meta``
  reduced to its ids and ``xref``, and ``self`` / ``<COLLECTION>url`` / ``metaurl`` /
  ``defaultversionurl`` turned into ``#/json/pointer`` references when the response holds what
  they point at (:func:`relativize`).

``self`` of resources and versions whose type has documents ends in ``$details`` (core/http.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from gateway.http_api.flags import Flags
from gateway.http_api.inline import Inline
from xreg.model.registry_model import RegistryModel, ResourceDef
from xreg.registry import xrefs
from xreg.registry.filters import FilterExpression, Filters
from xreg.registry.reads import Selection, count, level_of, render, select, store_condition
from xreg.registry.service import LocalRegistry
from xreg.registry.views import resource_id_attribute
from xreg.registry.write_steps.documents import is_json_media_type
from xreg.storage.records import EntityRecord, Query
from xreg.storage.semantics import Condition, matches_condition
from xreg.xid import Xid

DETAILS = "$details"
#: What a resource keeps in the document view.
DOC_VIEW_RESOURCE = ("self", "xid", "metaurl", "meta", "versionsurl", "versionscount", "versions")
#: Above this many parents, a nested collection is read whole instead of parent by parent.
SCAN_THRESHOLD = 8


def child_collections(model: RegistryModel, ctype: str) -> list[str]:
    """The nested collection names of the entities of ``ctype`` (``""``: the registry)."""
    level = level_of(ctype)
    if level == "registry":
        return list(model.groups)
    if level == "group":
        gdef = model.group(ctype)
        return list(gdef.resources) if gdef else []
    if level == "resource":
        return ["versions"]
    return []


def resource_def(model: RegistryModel, ctype: str) -> ResourceDef | None:
    """The resource type of a resource or version collection type."""
    parts = ctype.split("/")
    return model.resource(parts[0], parts[1]) if len(parts) >= 2 else None


def document_bytes(value: Any, content_type: str | None = None) -> bytes:
    """The bytes of a document kept as the ``<RESOURCE>`` attribute (JSON unless it is text)."""
    if isinstance(value, str) and not is_json_media_type(content_type):
        return value.encode("utf-8")
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _is_json_document(value: Any, content_type: str | None) -> bool:
    """Whether a stored ``<RESOURCE>`` value's document is JSON (so it can be inlined as is): a
    string under a media type that is not JSON is text, whose bytes are not a JSON value."""
    return not isinstance(value, str) or content_type is None or is_json_media_type(content_type)


class Renderer:
    """Renders the entities of one response."""

    def __init__(self, registry: LocalRegistry, flags: Flags) -> None:
        self.store = registry.store
        self.model = registry.model
        self.base = registry.base_url
        self.flags = flags
        self._keys: dict[tuple[str, str], set[str]] = {}
        #: Per collection type and branch, its own conditions as stored (computed once a response).
        self._conditions: dict[tuple[str, FilterExpression], tuple[Condition, ...]] = {}

    # -- filters ------------------------------------------------------------------------------
    async def narrow(self, rec: EntityRecord, filters: Filters | None) -> Filters | None:
        """The branches of ``filters`` that ``rec`` satisfies (``None``: unfiltered). An empty
        result means ``rec`` does not match."""
        if filters is None or not filters.branches:
            return None
        if filters.exclude_all:
            return Filters()
        if rec.kind == "resource":  # a cross-reference matches by the values it is served with
            rec = (await xrefs.resolve(self.store, [rec]))[0]
        kept = [b for b in filters.branches if await self._satisfies(rec, b)]
        return Filters(tuple(kept))

    async def _satisfies(self, rec: EntityRecord, branch: FilterExpression) -> bool:
        ctype = rec.ctype
        conditions = self._conditions.get((ctype, branch))
        if conditions is None:
            conditions = self._conditions[(ctype, branch)] = tuple(store_condition(ctype, c)
                                                                   for c in branch.conditions)
        if not all(matches_condition(rec.doc, c) for c in conditions):
            return False
        if not branch.nested:
            return True
        if rec.kind == "registry":
            for name in {t.collections[0] for t in branch.terms if t.collections}:
                sub = branch.descend(name)
                if sub is None:  # (not reached: a term of the branch names this collection)
                    continue
                if not await count(self.store, Selection(ctype=name, filters=Filters((sub,)))):
                    return False
            return True
        key = (ctype, str(branch))
        if key not in self._keys:
            page = await select(self.store, Selection(ctype=ctype, filters=Filters((branch,))))
            self._keys[key] = {r.key for r in page.items}
        return rec.key in self._keys[key]

    # -- entities -----------------------------------------------------------------------------
    async def entities(
        self, records: Sequence[EntityRecord], ctype: str, inline: Inline,
        filters: dict[str, Filters | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Views of ``records`` (all of collection type ``ctype``), with nested collections per
        ``inline`` and ``filters`` (by record key: the branches each record satisfies)."""
        level = level_of(ctype)
        filters = filters or {}
        views = await render(self.store, self.model, records, base_url=self.base,
                             include_meta=level == "resource" and inline.has("meta"))
        for name in child_collections(self.model, ctype):
            child_ctype = f"{ctype}/{name}" if ctype else name
            sub = {rec.key: f.descend(name) if f is not None else None for rec, f in
                   ((r, filters.get(r.key)) for r in records)}
            sub_inline = inline.child(name)
            if sub_inline is not None:
                await self._inline(records, views, name, child_ctype, sub_inline, sub)
            for rec, view in zip(records, views, strict=False):
                f = sub[rec.key]
                if f is None:
                    continue
                if sub_inline is None and (f.branches or f.reachable_over or xrefs.is_source(rec)):
                    # (unfiltered, the count :func:`render` made is the one: no cross-reference
                    # counts its target's there, so a source's own members are counted here)
                    view[f"{name}count"] = 0 if f.exclude_all else await count(
                        self.store, Selection(ctype=child_ctype, parent=rec.xid, filters=f))
                counted = view[f"{name}count"]
                params = f.params if counted and f.branches else [] if counted else ["excludeall"]
                if params:
                    view[f"{name}url"] += "?" + urlencode([("filter", p) for p in params])
        rdef = resource_def(self.model, ctype) if level in ("resource", "version") else None
        for view in views:
            self._finish(view, level, rdef, inline)
        return views

    async def _inline(
        self, records: Sequence[EntityRecord], views: list[dict[str, Any]], name: str, child_ctype: str,
        inline: Inline, sub: dict[str, Filters | None],
    ) -> None:
        children = await self._children(records, child_ctype, sub)
        flat = [c for rec in records for c in children[rec.key]]
        narrowed: dict[str, Filters | None] = {}
        for rec in records:
            for child in children[rec.key]:
                narrowed[child.key] = await self.narrow(child, sub[rec.key])
        rendered = await self.entities(flat, child_ctype, inline, narrowed)
        by_key = {c.key: v for c, v in zip(flat, rendered, strict=False)}
        for rec, view in zip(records, views, strict=False):
            view[name] = {c.id: by_key[c.key] for c in children[rec.key]}
            view[f"{name}count"] = len(view[name])

    async def _children(
        self, records: Sequence[EntityRecord], ctype: str, sub: dict[str, Filters | None],
    ) -> dict[str, list[EntityRecord]]:
        """The members of collection type ``ctype`` below each record, filtered per record."""
        out: dict[str, list[EntityRecord]] = {rec.key: [] for rec in records}
        plain = [rec for rec in records if not ((f := sub[rec.key]) and f.branches)]
        if len(plain) > SCAN_THRESHOLD:
            wanted = {rec.key for rec in plain}
            after = None
            while True:
                page = await self.store.list(Query(ctype=ctype, limit=2000, after=after))
                for child in page.items:
                    owner = Xid.parse(child.key).parent.key
                    if owner in wanted:
                        out[owner].append(child)
                if not page.has_next or not page.items:
                    break
                after = page.cursor_of(page.items[-1], None)
        else:
            for rec in plain:
                out[rec.key] = (await select(self.store, Selection(ctype=ctype, parent=rec.xid))).items
        for rec in records:
            f = sub[rec.key]
            if f is not None and f.branches:
                out[rec.key] = [] if f.exclude_all else (await select(
                    self.store, Selection(ctype=ctype, parent=rec.xid, filters=f))).items
        if ctype.endswith("/versions"):  # a cross-reference's versions are its target's (core/spec.md)
            for key, target in (await xrefs.targets(self.store, records)).items():
                f = sub[key]
                sel = Selection(ctype=ctype, parent=target.xid, filters=f if f is not None and f.branches else None)
                found = [] if f is not None and f.exclude_all else (await select(self.store, sel)).items
                source = next(r.xid for r in records if r.key == key)
                out[key] = [xrefs.rekey_version(v, source, resource_id_attribute(target)) for v in found]
        return out

    def _finish(self, view: dict[str, Any], level: str, rdef: ResourceDef | None, inline: Inline) -> None:
        """Documents, ``$details`` and the document view for one rendered entity."""
        if rdef is not None and rdef.hasdocument:
            s = rdef.singular
            if not inline.has(s):
                view.pop(s, None)
                view.pop(f"{s}base64", None)
            elif s in view and (self.flags.binary or not _is_json_document(view[s], view.get("contenttype"))):
                # bytes that are not JSON cannot be the JSON value <RESOURCE>: <RESOURCE>base64
                view[f"{s}base64"] = base64.b64encode(document_bytes(view.pop(s), view.get("contenttype"))).decode()
            if not self.flags.doc:
                view["self"] += DETAILS
                meta = view.get("meta")
                if isinstance(meta, dict) and isinstance(meta.get("defaultversionurl"), str):
                    meta["defaultversionurl"] += DETAILS  # the default version's metadata view
        if not self.flags.doc:
            return
        view.pop("shortself", None)
        meta = view.get("meta")
        if isinstance(meta, dict) and meta.get("xref"):
            for k in list(meta):
                if k not in ("self", "xid", "xref") and not (k.endswith("id") and k != "defaultversionid"):
                    del meta[k]
        if level == "resource" and rdef is not None:
            for k in list(view):
                if k not in DOC_VIEW_RESOURCE and k != rdef.id_attribute:
                    del view[k]
        elif level == "version":
            view.pop("formatvalidated", None)
            view.pop("compatibilityvalidated", None)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def relativize(body: dict[str, Any], top: str, *, collection: bool) -> None:
    """Document view: turn ``self``, ``<COLLECTION>url``, ``metaurl`` and ``defaultversionurl``
    into ``#<JSON pointer>`` references to what ``body`` holds (``top``: the XID of the entity
    or collection the response is). URLs to things outside the response stay absolute."""
    where: dict[str, str] = {}
    entities: list[dict[str, Any]] = []

    def walk(node: dict[str, Any], pointer: str) -> None:
        xid = node.get("xid")
        if not isinstance(xid, str):
            return
        where[xid] = pointer
        entities.append(node)
        for key, value in node.items():
            if not isinstance(value, dict):
                continue
            if key == "meta":
                walk(value, f"{pointer}/meta")
            elif f"{key}url" in node:
                cxid = f"{xid.rstrip('/')}/{key}"
                where[cxid] = f"{pointer}/{_escape(key)}"
                for cid, child in value.items():
                    if isinstance(child, dict):
                        walk(child, f"{pointer}/{_escape(key)}/{_escape(cid)}")

    if collection:
        where[top] = ""
        for cid, child in body.items():
            if isinstance(child, dict):
                walk(child, "/" + _escape(cid))
    else:
        walk(body, "")

    def ref(xid: str) -> str | None:
        return None if xid not in where else "#" + (where[xid] or "/")

    for node in entities:
        xid = node["xid"]
        entity = Xid.parse(xid)
        if ref(xid):
            node["self"] = ref(xid)
        for key in list(node):
            if key.endswith("url") and isinstance(node.get(key[:-3] + "count"), int):
                target = ref(f"{xid.rstrip('/')}/{key[:-3]}")
                if target:
                    node[key] = target
        if "metaurl" in node and ref(str(entity.meta_of())):
            node["metaurl"] = ref(str(entity.meta_of()))
        if entity.meta and node.get("defaultversionid") is not None:
            target = ref(str(entity.version(node["defaultversionid"])))
            if target:
                node["defaultversionurl"] = target
