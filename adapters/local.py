"""The gateway's own registry as a source: reads through ``xreg.registry.reads``, writes
through :class:`~xreg.registry.changeset.Changeset`.

Pages are keyset pages of the store. :meth:`LocalSource.list_children` reads one collection
under many parents with one store call: a range of the key index from the first parent to the
last, grouped, ordered and cut into pages in memory by the store's reference order
(:func:`xreg.registry.filters.compare_key`, ties by key) — so a page of 100 groups with
their resources costs the same number of store calls as a page of 10.

Over 600 lines: the source and the entity it builds lazily from the store's records share those
records, the model and the materialised messages; the reads themselves are ``xreg.registry.reads``.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from adapters import staleness
from adapters.base import (
    ChangeItem,
    Entity,
    InvalidCursor,
    LazyCursors,
    Listing,
    Materialisation,
    RegistrySource,
    SourcePage,
    SourceStatus,
    WriteOutcome,
)
from adapters.slicing import decode as decode_cursor
from xreg.documents.normalise import normalise
from xreg.errors import InstanceMismatch, XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry import xrefs
from xreg.registry.capabilities import is_mutable
from xreg.registry.changeset import Changeset, Outcome
from xreg.registry.materialise import derived_of, message_ctypes
from xreg.registry.reads import (
    NOTHING,
    THREAD_VIEWS,
    Materialised,
    Selection,
    count,
    cursor_position,
    level_of,
    position,
    render,
    select,
    store_sort,
    view_of,
)
from xreg.registry.rematerialise import stale_since
from xreg.registry.service import LocalRegistry
from xreg.registry.views import RESOURCE_VIEW_OWN, default_versionid, meta_view, resource_id_attribute
from xreg.storage.errors import RevisionAhead, RevisionGone
from xreg.storage.records import EntityRecord, Page
from xreg.storage.semantics import Cursor, Sort, cursor_for

#: A key past every stored key (XIDs are ASCII).
_KEY_END = "\U0010ffff"

#: Record kinds whose views :class:`StoredEntity` builds when first read (a version's needs a
#: store call, the registry is one).
_LAZY = frozenset({"group", "resource"})

_VIEW, _META, _MATERIALISED = (Entity.__dict__[n] for n in ("view", "meta", "materialised"))  # the slots
#: Id attributes whose view's own attributes are kept (a model names a handful).
RESOURCE_OWN_CACHED = 256


@functools.lru_cache(maxsize=RESOURCE_OWN_CACHED)
def _resource_own(id_attribute: str) -> frozenset[str]:
    """What a resource's view shows other than its default version's stored attributes (by the
    id attribute a stored ``meta`` names: stored data, hence a bounded cache)."""
    singular = id_attribute[:-2]
    return RESOURCE_VIEW_OWN | {id_attribute, f"{singular}uri", f"{singular}url"}


_GROUP_OWN: dict[str, tuple[RegistryModel, frozenset[str]]] = {}


def _group_own(model: RegistryModel, ctype: str) -> frozenset[str]:
    """What a group's view shows other than its stored attributes (under ``model``)."""
    cached = _GROUP_OWN.get(ctype)
    if cached is not None and cached[0] is model:
        return cached[1]
    gdef = model.group(ctype)
    own = frozenset({gdef.id_attribute if gdef else f"{ctype.rstrip('s')}id", "self", "xid",
                     *(f"{r}{s}" for r in (gdef.resources if gdef else {}) for s in ("url", "count"))})
    _GROUP_OWN[ctype] = (model, own)
    return own


class StoredEntity(Entity):
    """A stored group or resource whose view, ``meta`` view and materialisation are built when
    first read, as :meth:`LocalSource._entities` builds them eagerly for other records. Most fields
    of a page read a few attributes: :meth:`attribute` and :meth:`declared` read those straight
    from the stored record when the view would show them as stored, and build the views otherwise.
    (A :func:`dataclasses.replace` of one is a plain, built :class:`Entity`.)"""

    __slots__ = ("_message", "_model", "_plain", "_record", "_source")
    _message: bool
    _model: RegistryModel
    _plain: tuple[frozenset[str], dict[str, Any], dict[str, Any] | None, bool | None] | None
    _record: EntityRecord
    _source: LocalSource

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:  # dataclasses.replace: a plain entity
        return Entity(*args, **kwargs)

    @classmethod
    def of(cls, source: LocalSource, rec: EntityRecord, as_of: int | None, model: RegistryModel,
           messages: Materialised) -> StoredEntity:
        """The entity of a stored group or resource record (``model`` and ``messages``: the
        source's :attr:`~LocalSource.model` and :attr:`~LocalSource.messages`)."""
        obj = object.__new__(cls)
        _REGISTRY(obj, source.id)  # the slots' own setters (the frozen class refuses setattr)
        _XID(obj, rec.xid)
        _KIND(obj, rec.kind)
        _CTYPE(obj, rec.ctype)
        _AS_OF(obj, as_of)
        _PARTIAL(obj, True)
        _REVISION(obj, rec.revision)
        _SET_RECORD(obj, rec)
        _SET_SOURCE(obj, source)
        _SET_MODEL(obj, model)
        _SET_PLAIN(obj, None)
        _SET_MESSAGE(obj, rec.ctype in messages)
        return obj

    def _built(self, slot: Any) -> Any:
        try:
            return slot.__get__(self, Entity)
        except AttributeError:
            rec, source = self._record, self._source
            view = view_of(rec, self._model, source.base_url)
            materialised = source._materialisation(rec, view) if self._message else None
            _VIEW.__set__(self, view)
            _MATERIALISED.__set__(self, materialised)
            return slot.__get__(self, Entity)

    @property
    def view(self) -> dict[str, Any]:
        return self._built(_VIEW)

    @property
    def meta(self) -> dict[str, Any] | None:
        try:
            return _META.__get__(self, Entity)
        except AttributeError:  # built apart from the view, which most reads want alone
            rec = self._record
            meta = meta_view(rec, self._source.base_url) if rec.kind == "resource" else None
            _META.__set__(self, meta)
            return meta

    @property
    def materialised(self) -> Materialisation | None:
        return self._built(_MATERIALISED)

    def _stored(self) -> tuple[frozenset[str], dict[str, Any], dict[str, Any] | None, bool | None]:
        """The names the view does not show as stored, the stored attributes, the materialised
        ones (``None``: not materialised), and :meth:`pending_chain`."""
        plain = self._plain
        if plain is None:
            rec = self._record
            if rec.kind == "resource":
                own = _resource_own(resource_id_attribute(rec))
                stored = rec.doc.get("default") or {}
            else:
                own = _group_own(self._model, rec.ctype)
                stored = rec.doc
            derived = derived_of(rec.kind, rec.doc) if self._message else None
            if derived:
                unresolved = derived.get("unresolved")
                plain = (own, stored, derived["attributes"], bool(unresolved and unresolved["reason"] == "external"))
            else:
                plain = (own, stored, None, None)
            object.__setattr__(self, "_plain", plain)
        return plain

    def attribute(self, name: str) -> Any:
        own, stored, derived, _ = self._plain or self._stored()
        if name in own:
            if name == "versionid" and derived is None and self._record.kind == "resource":
                return default_versionid(self._record)
            return super().attribute(name)
        if derived is not None and name in derived:
            return derived[name]
        return stored.get(name)

    def declared(self, name: str) -> Any:
        own, stored, _, _ = self._plain or self._stored()
        return super().declared(name) if name in own else stored.get(name)

    def origin(self, name: str) -> tuple[str, str] | None:
        if not self._message:
            return None
        derived = derived_of(self._record.kind, self._record.doc)
        base = derived.get("inherited", {}).get(name) if derived else None
        return (self._source.id, base) if base is not None else None

    def pending_chain(self) -> bool | None:
        return (self._plain or self._stored())[3]  # ``None``: not a message, or not materialised


_REGISTRY, _XID, _KIND, _CTYPE, _AS_OF, _PARTIAL, _REVISION = (
    Entity.__dict__[n].__set__ for n in ("registry", "xid", "kind", "ctype", "as_of", "partial", "revision"))
_SET_RECORD, _SET_SOURCE, _SET_MODEL, _SET_PLAIN, _SET_MESSAGE = (
    StoredEntity.__dict__[n].__set__ for n in ("_record", "_source", "_model", "_plain", "_message"))


class LocalSource(RegistrySource):
    """A :class:`LocalRegistry` (the store-backed registry) as a writable source."""

    writable = True
    searchable = True

    def __init__(self, registry: LocalRegistry) -> None:
        self.registry = registry
        self.store = registry.store
        self.id = registry.registry_id
        self.base_url = registry.base_url
        self._messages: tuple[RegistryModel, Materialised] | None = None

    def own_registry(self) -> LocalRegistry:
        return self.registry

    def status(self) -> SourceStatus:
        """``stale_since``: since when messages wait for their re-materialisation (the earliest
        pending write of a base: ``xreg.registry.rematerialise``), ``None`` when none do."""
        pending = self.registry.rematerialising.values()
        return replace(super().status(), stale_since=min((i.at for i in pending), default=None))

    @property  # read from the registry: a modelsource write replaces it
    def model(self) -> RegistryModel:  # type: ignore[override]
        """The registry's current model (it changes through ``modelsource``)."""
        return self.registry.model

    @property
    def messages(self) -> Materialised:
        """Message collection types (materialised in the store), with their id attribute."""
        model = self.model
        if self._messages is None or self._messages[0] is not model:
            self._messages = (model, message_ctypes(model))
        return self._messages[1]

    def _materialised(self, listing: Listing) -> Materialised:
        """The collection types a listing's filters and sort read materialised."""
        return NOTHING if listing.declared else self.messages

    @property
    def instance_id(self) -> str:
        return self.registry.instance_id

    # -- reads --------------------------------------------------------------------------------
    async def revision(self) -> int:
        return await self.store.current_revision()

    async def check_revision(self, as_of: int | None) -> None:
        await self.registry.check_revision(as_of)

    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, Entity]:
        keys = list(dict.fromkeys(x.lower() for x in xids))
        metas = [k for k in keys if k.endswith("/meta")]
        plain = [k for k in keys if not k.endswith("/meta")]
        try:
            found = await self.store.get_many([*plain, *(k[: -len("/meta")] for k in metas)], as_of)
        except RevisionGone as exc:
            raise XRegistryError("bad_request", "/", detail=str(exc)) from exc
        # a Version of a cross-reference is its target's Version (core/spec.md)
        sourced = [rec for k in plain if k not in found and k.count("/") == 6
                   for rec in (await xrefs.source_version(self.store, k, as_of),) if rec is not None]
        out: dict[str, Entity] = {}
        for entity in await self._entities([*(found[k] for k in plain if k in found), *sourced], as_of):
            out[entity.xid.lower()] = entity
        owners = [found[k[: -len("/meta")]] for k in metas if k[: -len("/meta")] in found]
        resolved = {r.key: r for r in await xrefs.resolve(self.store, owners, as_of)}
        for key in metas:
            rec = resolved.get(key[: -len("/meta")])
            if rec is not None and rec.kind == "resource":
                view = meta_view(rec, self.base_url)
                out[key] = Entity(self.id, view["xid"], "meta", rec.ctype, view, as_of, revision=rec.revision)
        return out

    async def list(self, listing: Listing, parent: str | None = None) -> SourcePage:
        after, before = decode_cursor(listing.after), decode_cursor(listing.before)
        if listing.backward and before is None:
            before = _end_cursor(listing.sort)
        pages = []
        materialised = self._materialised(listing)
        for ctype in listing.ctypes:
            sel = Selection(ctype, parent=parent, filters=listing.filters, sort=listing.sort, limit=listing.limit,
                            after=after, before=before, as_of=listing.as_of, materialised=materialised,
                            search=listing.search)
            page = await select(self.store, sel)
            if not page.items and parent is not None and level_of(ctype) == "version":
                page = await self._source_versions(sel, parent)
            pages.append((ctype, page))
        rows = [(rec, sort) for ctype, page in pages  # each collection's sort, made once
                for sort in (store_sort(ctype, listing.sort, materialised),) for rec in page.items]
        has_next = any(p.has_next for _, p in pages)
        has_prev = any(p.has_prev for _, p in pages)
        if len(pages) > 1:  # merge the collections' pages in sort order
            rows.sort(key=lambda r: _position(r[0], r[1]), reverse=bool(listing.sort and listing.sort.descending))
            if len(rows) > listing.limit:
                if listing.backward:
                    rows, has_prev = rows[-listing.limit:], True
                else:
                    rows, has_next = rows[: listing.limit], True
        items = await self._entities([_shown(rec) for rec, _ in rows], listing.as_of)

        cursors = LazyCursors(rows, lambda row: cursor_for(row[0], row[1]).encode())
        return SourcePage(items, cursors, has_next=has_next, has_prev=has_prev)

    async def count(self, listing: Listing, parent: str | None = None) -> int:
        total = 0
        for ctype in listing.ctypes:
            sel = Selection(ctype, parent=parent, filters=listing.filters, as_of=listing.as_of,
                            materialised=self._materialised(listing), search=listing.search)
            found = await count(self.store, sel)
            if not found and parent is not None and level_of(ctype) == "version":
                target = await xrefs.versions_owner(self.store, parent, listing.as_of)
                found = await count(self.store, replace(sel, parent=target.xid)) if target else 0
            total += found
        return total

    async def _source_versions(self, sel: Selection, parent: str) -> Page:
        """The page of Versions ``sel`` selects below a cross-reference Resource ``parent``: its
        target's (core/spec.md: the source "appears to be a normal Resource"), each shown under
        the source (:func:`_shown`) and paged by the target's records; an empty page otherwise."""
        target = await xrefs.versions_owner(self.store, parent, sel.as_of)
        if target is None:
            return Page(items=[])
        page = await select(self.store, replace(sel, parent=target.xid))
        id_attribute = resource_id_attribute(target)
        page.items = [_Shown.of(r, xrefs.rekey_version(r, parent, id_attribute)) for r in page.items]
        return page

    async def list_children(self, parents: Sequence[str], listing: Listing) -> dict[str, SourcePage]:
        (ctype,) = listing.ctypes
        keys = sorted({p.lower() for p in parents})
        # the hull of the parents' key ranges (k + "/", k + "0"): one index range scan
        sel = Selection(ctype, filters=listing.filters, after=Cursor(min(k + "/" for k in keys)),
                        before=Cursor(max(k + "0" for k in keys)), as_of=listing.as_of,
                        materialised=self._materialised(listing), search=listing.search)
        by_parent: dict[str, list[EntityRecord]] = {k: [] for k in keys}
        for rec in (await select(self.store, sel)).items:
            owned = by_parent.get(rec.key.rsplit("/", 2)[0])  # the parent's key: the XID less its last 2 segments
            if owned is not None:
                owned.append(rec)
        level = level_of(ctype)
        if level == "version":  # a Resource without Versions may be a cross-reference: its target's
            spelt = {p.lower(): p for p in parents}
            for key in [k for k, recs in by_parent.items() if not recs]:
                found = await self._source_versions(replace(sel, after=None, before=None), spelt[key])
                by_parent[key] = found.items
        elif level == "resource" and listing.sort is not None:  # sorted by the targets' values
            by_parent = {k: await xrefs.resolve(self.store, recs, listing.as_of) for k, recs in by_parent.items()}
        sort = store_sort(ctype, listing.sort, self._materialised(listing))
        after, before = decode_cursor(listing.after), decode_cursor(listing.before)
        cut = {k: _cut(recs, sort, listing, after, before) for k, recs in by_parent.items()}
        rendered = iter(await self._entities([_shown(r) for rows, *_ in cut.values() for r in rows], listing.as_of))
        out = {}
        for key, (rows, has_next, has_prev) in cut.items():
            items = [next(rendered) for _ in rows]
            out[key] = SourcePage(items, LazyCursors(rows, lambda r: cursor_for(r, sort).encode()), has_next, has_prev,
                                  total=len(by_parent[key]))
        return out

    async def changes(
        self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
        limit: int = 100, after: str | None = None, by_revision: bool = False,
    ) -> tuple[builtins.list[ChangeItem], bool]:
        if since < 0:
            raise XRegistryError("bad_request", "/", detail="since must be a revision (0 or more)")
        if until is not None and until < since:
            raise XRegistryError("bad_request", "/", detail=f"until ({until}) is before since ({since})")
        await self.check_revision(until)
        position = decode_cursor(after)
        after_key = position.key if position is not None else None
        after_revision = position.value if position is not None else None
        if position is not None and by_revision != (type(after_revision) is int):
            raise InvalidCursor(f"cursor {after!r} is of the change feed read in the other order")
        try:
            found = await self.store.changes(since, until=until, ctypes=ctypes, limit=limit + 1, after=after_key,
                                             by_revision=by_revision, after_revision=after_revision)
        except RevisionGone as exc:
            raise XRegistryError("bad_request", "/", detail=str(exc)) from exc
        except RevisionAhead as exc:
            raise InstanceMismatch(self.id, self.instance_id, f"revision {since}", (
                f"revision {since} is ahead of this registry's current revision {exc.current}: the checkpoint is from "
                "another registry instance or from before a restore without history; read the changes again from 0"
            )) from exc
        more, found = len(found) > limit, found[:limit]
        live = iter(await self._entities([c.record for c in found if not c.record.deleted], until))
        items = [
            ChangeItem(c.record.xid, c.record.kind, c.record.ctype, c.record.revision, c.record.deleted,
                       None if c.record.deleted else next(live),
                       Cursor(c.record.key, c.record.revision if by_revision else None).encode())
            for c in found
        ]
        return items, more

    async def count_changes(self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None) -> int:
        if since < 0:
            raise XRegistryError("bad_request", "/", detail="since must be a revision (0 or more)")
        await self.check_revision(until)
        try:  # the records only: nothing rendered
            return len(await self.store.changes(since, until=until, ctypes=ctypes))
        except RevisionGone as exc:
            raise XRegistryError("bad_request", "/", detail=str(exc)) from exc

    async def _entities(self, records: Sequence[EntityRecord], as_of: int | None) -> builtins.list[Entity]:
        """Entities for stored records, in their order; ``partial`` (collection counts left out).
        Groups and resources build their views when first read (:class:`StoredEntity`)."""
        if not records:
            return []
        # a cross-reference reads as its target (core/spec.md "Cross Referencing Resources")
        records = await xrefs.resolve(self.store, records, as_of)
        if as_of is None and self.registry.rematerialising:
            self._note_stale(records)
        eager = [rec for rec in records if rec.kind not in _LAZY]
        views = await render(self.store, self.model, eager, base_url=self.base_url, as_of=as_of,
                             include_meta=True, with_counts=False) if eager else []

        model, messages = self.model, self.messages

        def entities() -> builtins.list[Entity]:
            out: builtins.list[Entity] = []
            rendered = iter(views)
            for rec in records:
                if rec.kind in _LAZY:
                    out.append(StoredEntity.of(self, rec, as_of, model, messages))
                    continue
                view = next(rendered)
                materialised = self._materialisation(rec, view) if rec.ctype in messages else None
                out.append(Entity(self.id, rec.xid, rec.kind, rec.ctype, view, as_of, None, partial=True,
                                  revision=rec.revision, materialised=materialised))
            return out

        # a large page of versions materialises on a worker thread, off the event loop
        return await asyncio.to_thread(entities) if len(eager) >= THREAD_VIEWS else entities()

    def _note_stale(self, records: Sequence[EntityRecord]) -> None:
        """Report the answer stale when a message of it waits for its re-materialisation (its
        stored materialisation predates a write of its chain: ``xreg.registry.rematerialise``)."""
        pending = self.registry.rematerialising
        found = [since for rec in records if (since := stale_since(rec, pending)) is not None]
        if found:
            staleness.note(self.id, min(found), "rematerialising", detail="rematerialising")

    def _materialisation(self, rec: EntityRecord, view: dict[str, Any]) -> Materialisation | None:
        """A stored message's materialisation, as the sources show it."""
        derived = derived_of(rec.kind, rec.doc)
        if not derived:
            return None
        unresolved = derived.get("unresolved")
        return Materialisation(
            attributes={**view, **derived["attributes"]},
            inherited={a: (self.id, x) for a, x in derived.get("inherited", {}).items()},
            chain=tuple((self.id, x) for x in derived.get("chain", ())),
            unresolved=(unresolved["reference"], unresolved["reason"]) if unresolved else None,
            pending=bool(unresolved and unresolved["reason"] == "external"))

    async def complete(self, entities: Sequence[Entity]) -> builtins.list[dict[str, Any]]:
        """Full views: one ``count_children`` per child collection type and revision."""
        children = [self._children_of(e) if e.partial else [] for e in entities]
        wanted: dict[tuple[str, int | None], list[Entity]] = {}
        for e, below in zip(entities, children, strict=True):
            for child in below:
                wanted.setdefault((child, e.as_of), []).append(e)
        counts: dict[tuple[str, str, int | None], int] = {}
        for (child, as_of), owners in wanted.items():
            found = await self.store.count_children([e.xid for e in owners], child, as_of)
            for e in owners:
                key = e.xid.lower()
                counts[(key, child, as_of)] = found.get(key, 0)
        out = []
        for e, below in zip(entities, children, strict=True):
            view = dict(e.view)
            if below:
                key = e.xid.lower()
                for child in below:
                    view[child.rsplit("/", 1)[-1] + "count"] = counts[(key, child, e.as_of)]
            out.append(view)
        return out

    def _children_of(self, e: Entity) -> builtins.list[str]:
        """The collection types directly below an entity."""
        if e.kind == "registry":
            return list(self.model.groups)
        if e.kind == "group":
            gdef = self.model.group(e.ctype)
            return [f"{e.ctype}/{r}" for r in (gdef.resources if gdef else {})]
        return [f"{e.ctype}/versions"] if e.kind == "resource" else []

    # -- writes -------------------------------------------------------------------------------
    async def put_group(
        self, gtype: str, gid: str, attributes: dict[str, Any], *, mode: str, patch: bool, epoch: int | None,
    ) -> WriteOutcome:
        xid = f"/{gtype}/{gid}"

        async def work(cs: Changeset) -> None:
            await cs.put_group(gtype, gid, _with_epoch(attributes, epoch), patch=patch)

        return await self._write(xid, mode, epoch, lambda doc: doc.get("epoch"), work)

    async def put_resource(
        self, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, mode: str, patch: bool,
        epoch: int | None,
    ) -> WriteOutcome:
        xid = f"/{gtype}/{gid}/{rtype}/{rid}"

        async def work(cs: Changeset) -> None:
            await cs.put_resource(gtype, gid, rtype, rid, _with_epoch(body, epoch), patch=patch)

        return await self._write(xid, mode, epoch, lambda doc: (doc.get("default") or {}).get("epoch"), work)

    async def put_version(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str, body: dict[str, Any], *, mode: str,
        patch: bool, epoch: int | None,
    ) -> WriteOutcome:
        xid = f"/{gtype}/{gid}/{rtype}/{rid}/versions/{vid}"

        async def work(cs: Changeset) -> None:
            await cs.put_version(gtype, gid, rtype, rid, vid, _with_epoch(body, epoch), patch=patch)

        return await self._write(xid, mode, epoch, lambda doc: doc.get("epoch"), work)

    async def delete(self, xid: str, *, epoch: int | None) -> WriteOutcome:
        async def work(cs: Changeset) -> None:
            await cs.delete(xid, epoch=epoch)

        return await self._write(xid, "delete", epoch, None, work)

    async def import_document(self, document: dict[str, Any], *, strict: bool) -> WriteOutcome:
        if not is_mutable(self.registry.capability_settings, "entities"):
            raise XRegistryError("readonly", "/", detail="entities are not mutable (capabilities)")
        doc, rewrites = normalise(document, strict=strict)
        result = _outcome(await self.registry.apply_document(doc, note="graphql import"))
        result.normalisations = [(n.path, n.rule, n.detail) for n in rewrites]
        return result

    async def _write(
        self, xid: str, mode: str, epoch: int | None, current_epoch: Callable[[dict], Any] | None,
        work: Callable[[Changeset], Awaitable[None]],
    ) -> WriteOutcome:
        """Check ``mode`` (``create``: must not exist; ``update``: must exist, epoch must match)
        and run ``work``, as one unit of work of the registry (so a retry checks again)."""
        if epoch is not None and epoch < 0:
            raise XRegistryError("invalid_attribute", xid, path="epoch", name="epoch",
                                 detail="epoch must be an unsigned integer")
        if not is_mutable(self.registry.capability_settings, "entities"):  # turned off through /capabilities
            raise XRegistryError("readonly", xid, detail="entities are not mutable (capabilities)")

        async def build(cs: Changeset) -> None:
            if current_epoch is not None:
                await self._precondition(xid, mode, epoch, current_epoch)
            await work(cs)

        _, outcome = await self.registry.write(build, subject=xid, note=f"graphql {mode} {xid}")
        return _outcome(outcome)

    async def _precondition(self, xid: str, mode: str, epoch: int | None, current_epoch: Callable[[dict], Any]) -> None:
        existing = await self.store.get(xid)
        if mode == "create" and existing is not None:
            raise XRegistryError("bad_request", xid, detail=f"{existing.xid} already exists; update it instead")
        if mode == "update":
            if existing is None:
                raise XRegistryError("not_found", xid)
            have = current_epoch(existing.doc)
            if epoch is not None and epoch != have:
                raise XRegistryError("mismatched_epoch", xid, bad_epoch=epoch, epoch=have)


def _with_epoch(attrs: dict[str, Any], epoch: int | None) -> dict[str, Any]:
    return attrs if epoch is None else {**attrs, "epoch": epoch}


def _outcome(outcome: Outcome) -> WriteOutcome:
    return WriteOutcome(created=list(outcome.created), updated=list(outcome.updated),
                        unchanged=list(outcome.unchanged), deleted=list(outcome.deleted), revision=outcome.revision,
                        rematerialised=list(outcome.rematerialised), dangling=list(outcome.dangling),
                        correlation_id=outcome.correlation_id)


def _end_cursor(sort: Sort | None) -> Cursor:
    """A cursor past the last row in query order (for ``last`` without ``before``)."""
    if sort is None:
        return Cursor(_KEY_END)
    return Cursor("", None) if sort.descending else Cursor(_KEY_END, True)


_position, _cursor_position = position, cursor_position


@dataclass(frozen=True)
class _Shown(EntityRecord):
    """A target's Version record that pages (keys, cursors) as itself and is shown as ``shown``:
    the Version of a cross-reference Resource (:meth:`LocalSource._source_versions`)."""

    shown: EntityRecord | None = None

    @classmethod
    def of(cls, rec: EntityRecord, shown: EntityRecord) -> _Shown:
        return cls(rec.xid, rec.kind, rec.ctype, rec.doc, rec.revision, rec.deleted, rec.rank, shown)


def _shown(rec: EntityRecord) -> EntityRecord:
    return rec.shown if isinstance(rec, _Shown) and rec.shown is not None else rec


def _cut(
    records: list[EntityRecord], sort: Sort | None, listing: Listing, after: Cursor | None, before: Cursor | None,
) -> tuple[list[EntityRecord], bool, bool]:
    """One parent's page from all its matching records: order, cursors, limit; and whether
    rows follow / precede it."""
    desc = bool(sort and sort.descending)
    rows = sorted(records, key=lambda r: _position(r, sort), reverse=desc) if sort else records

    def past(rec: EntityRecord, cursor: Cursor) -> bool:  # after the cursor in query order
        a, b = _position(rec, sort), _cursor_position(cursor, sort)
        return a < b if desc else a > b

    dropped_before = dropped_after = False
    if after is not None:
        kept = [r for r in rows if past(r, after)]
        dropped_before, rows = len(kept) < len(rows), kept
    if before is not None:
        kept = [r for r in rows if not past(r, before) and _position(r, sort) != _cursor_position(before, sort)]
        dropped_after, rows = len(kept) < len(rows), kept
    if listing.backward:
        page = rows[-listing.limit:] if listing.limit else []
        return page, dropped_after, dropped_before or len(rows) > listing.limit
    return rows[: listing.limit], dropped_after or len(rows) > listing.limit, dropped_before
