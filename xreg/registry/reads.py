"""Reading collections of the local registry: filters (nested ones too), sort, keyset pages, views.

The HTTP API and the GraphQL resolvers both list entities through :func:`select` and render
them through :func:`render`; neither talks to the store directly for collections.

Filter paths are written against the entity as xRegistry shows it; :func:`store_path` maps
them onto the stored record (a resource's attributes are its default version's, kept under
``default`` in the record; its ``meta`` under ``meta``). Terms that reach into nested
collections (``messages.protocol=KAFKA`` on groups) are resolved by querying the nested
collection and keeping the entities that own a match.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from xreg.errors import XRegistryError
from xreg.ids import id_problem
from xreg.model.registry_model import RegistryModel
from xreg.registry import xrefs
from xreg.registry.filters import FilterExpression, Filters
from xreg.registry.materialise import materialised_path
from xreg.registry.views import group_view, registry_view, resource_view, version_view
from xreg.storage.base import Store
from xreg.storage.errors import RevisionGone
from xreg.storage.records import EntityRecord, Page, Query
from xreg.storage.semantics import (
    RANK,
    Condition,
    Cursor,
    Sort,
    compare_key,
    cursor_sort_value,
    matches,
    record_sort_value,
)
from xreg.xid import Xid

#: Resource attributes that are the resource's own, not its default version's.
RESOURCE_OWN = frozenset({"meta"})
#: Collection types read as materialised messages, with their id attribute.
Materialised = Mapping[str, str]
NOTHING: Materialised = MappingProxyType({})


def level_of(ctype: str) -> str:
    """``group``, ``resource`` or ``version`` for a collection type (``registry`` for ``""``)."""
    return ("registry", "group", "resource", "version")[len(ctype.split("/")) if ctype else 0]


def store_path(ctype: str, path: Sequence[str], materialised: Materialised = NOTHING) -> tuple[str, ...]:
    """Where an attribute path of an entity of ``ctype`` lives in its stored record; for the
    collection types in ``materialised`` (message types and their id attribute), the path of
    the materialised value (see ``xreg.registry.materialise``)."""
    path = tuple(path)
    if path == RANK:
        return path
    if ctype in materialised:
        path = materialised_path(path, materialised[ctype])
    if level_of(ctype) == "resource" and path and path[0] not in RESOURCE_OWN:
        return ("default", *path)
    return path


def store_condition(ctype: str, cond: Condition, materialised: Materialised = NOTHING) -> Condition:
    return Condition(store_path(ctype, cond.path, materialised), cond.op, cond.value, cond.wildcard)


def store_sort(ctype: str, sort: Sort | None, materialised: Materialised = NOTHING) -> Sort | None:
    return Sort(store_path(ctype, sort.path, materialised), sort.descending) if sort else None


def collection_tree(model: RegistryModel, ctype: str) -> dict[str, Any]:
    """The nested collections below the entities of ``ctype`` (for :func:`parse_filters`)."""
    parts = ctype.split("/") if ctype else []
    if not parts:
        return {g: {r: {"versions": {}} for r in gdef.resources} for g, gdef in model.groups.items()}
    gdef = model.group(parts[0])
    if gdef is None:
        return {}
    if len(parts) == 1:
        return {r: {"versions": {}} for r in gdef.resources}
    if len(parts) == 2:
        return {"versions": {}}
    return {}


def child_ctype(ctype: str, name: str) -> str:
    return f"{ctype}/{name}" if ctype else name


def _depth(ctype: str) -> int:
    """The :attr:`Xid.depth` of the entities of ``ctype`` (``g`` → 1, ``g/r/versions`` → 3)."""
    return len(ctype.split("/"))


def _owner_key(key: str, depth: int) -> str:
    return Xid.parse(key).ancestor(depth).key


@dataclass
class Selection:
    """What to read: a collection type, optionally under one parent, filtered, sorted, paged."""

    ctype: str
    parent: str | None = None
    filters: Filters | None = None
    sort: Sort | None = None
    limit: int | None = None
    after: Cursor | None = None
    before: Cursor | None = None
    as_of: int | None = None
    #: Collection types whose filters and sort read materialised messages (GraphQL's default;
    #: the xRegistry API reads declared attributes only).
    materialised: Materialised = field(default_factory=lambda: NOTHING)
    #: Free-text search words (see ``Query.search``).
    search: tuple[str, ...] | None = None


async def select(store: Store, sel: Selection) -> Page:
    """A page of entities matching ``sel`` (filters, nested filters, sort, cursors); a
    cross-reference Resource is filtered and sorted by its target's values (see :func:`_sources`)."""
    query = await _query(store, sel)
    if query is None:
        return Page(items=[])
    try:
        sources = await _sources(store, sel)
        if sources is None:
            return await store.list(query)
        return _merged(await store.list(_without_sources(query)), sources, query, sel.limit)
    except RevisionGone as exc:
        raise XRegistryError("bad_request", "/", detail=str(exc)) from exc


async def count(store: Store, sel: Selection) -> int:
    """How many entities match ``sel`` (ignoring its limit and cursors)."""
    query = await _query(store, sel)
    if query is None:
        return 0
    try:
        sources = await _sources(store, _replace(sel, after=None, before=None))
        if sources is None:
            return await store.count(query)
        return await store.count(_without_sources(query)) + len(sources)
    except RevisionGone as exc:
        raise XRegistryError("bad_request", "/", detail=str(exc)) from exc


#: Where a resource's stored record holds its ``meta.xref``.
XREF_PATH = ("meta", "xref")


def _reads_values(sel: Selection) -> bool:
    """Whether ``sel`` lists resources by their values (filters, sort or search), so that a
    cross-reference among them has to be read as its target first."""
    filters = sel.filters
    return level_of(sel.ctype) == "resource" and bool(
        sel.sort or sel.search or (filters is not None and (filters.branches or filters.reachable_over)))


async def _sources(store: Store, sel: Selection) -> list[EntityRecord] | None:
    """The cross-reference Resources ``sel`` selects, read as their targets; ``None`` when it
    reads no values or holds no cross-reference (then the store answers alone).

    core/spec.md: "From a consumption (read) perspective, aside from the presence of the xref
    attribute, the Resource appears to be a normal Resource [...] All of the
    specification-defined features (e.g. inline, filter request flags) MAY be used": a source
    matches a filter, and sorts, by the values it is served with: its own ids and ``meta.xref`` with the target's
    attributes (:func:`xreg.registry.xrefs.as_source`), matched by the reference semantics the
    stores reproduce (:func:`~xreg.storage.semantics.matches`). Filters reaching into nested
    collections, and free-text search, are the store's: the same selection over the targets'
    keys. A dangling source is matched by its ids and ``meta``."""
    if not _reads_values(sel):
        return None
    parents = None  # where the listing reads: its parent, or the parents a reachableOver reaches
    reach = sel.filters.reachable_over if sel.filters is not None else None
    if reach is not None:
        parents = await _reaching(store, sel, reach)
        if not parents:
            return None
    found = await store.list(Query(ctype=sel.ctype, parent=sel.parent, parents=parents, as_of=sel.as_of,
                                   any_of=((Condition(XREF_PATH, "exists"),),)))
    if not found.items:
        return None
    targets = await xrefs.targets(store, found.items, sel.as_of)
    shown = [xrefs.as_source(s, targets[s.key]) if s.key in targets else xrefs.dangling(s) for s in found.items]
    filters = sel.filters or Filters()
    if not (filters.nested or filters.reachable_over or sel.search):
        any_of = tuple(tuple(store_condition(sel.ctype, c, sel.materialised) for c in g) for g in filters.any_of)
        return [rec for rec in shown if matches(rec.doc, any_of)]
    plain = _replace(sel, sort=None, limit=None, after=None, before=None)
    by_ctype: dict[str, set[str]] = {}
    for target in targets.values():
        by_ctype.setdefault(target.ctype, set()).add(target.key)
    matched: dict[str, EntityRecord] = {}
    for ctype, keys in by_ctype.items():  # a target may be of an imported resource type
        matched |= await _matching(store, _replace(plain, ctype=ctype, parent=None), keys)
    matched |= await _matching(store, plain, {s.key for s in found.items if s.key not in targets})
    out = []
    for source, rec in zip(found.items, shown, strict=True):
        hit = matched.get(targets[source.key].key if source.key in targets else source.key)
        if hit is not None:
            out.append(_replace(rec, rank=hit.rank))
    return out


async def _matching(store: Store, sel: Selection, keys: set[str]) -> dict[str, EntityRecord]:
    """The records among ``keys`` that ``sel``'s filters and search select, by key."""
    if not keys:
        return {}
    query = await _query(store, sel)
    if query is None:
        return {}
    keys = keys if query.keys is None else keys & set(query.keys)
    if not keys:
        return {}
    return {rec.key: rec for rec in (await store.list(_replace(query, keys=tuple(sorted(keys))))).items}


def _without_sources(query: Query) -> Query:
    """``query`` less the cross-reference Resources (:func:`_sources` answers for those)."""
    plain = Condition(XREF_PATH, "null")
    return _replace(query, any_of=tuple((*group, plain) for group in query.any_of) or ((plain,),))


def position(rec: EntityRecord, sort: Sort | None) -> tuple:
    """Where a record sorts in the stores' order (ascending): its sort value's reference order,
    then its key."""
    if sort is None:
        return ((), rec.key)
    return (compare_key(cursor_sort_value(record_sort_value(rec, sort.path))), rec.key)


def cursor_position(cursor: Cursor, sort: Sort | None) -> tuple:
    """Where a keyset cursor sits in the order of :func:`position`."""
    if sort is None:
        return ((), cursor.key.lower())
    return (compare_key(cursor_sort_value(cursor.value)), cursor.key.lower())


def _merged(page: Page, sources: list[EntityRecord], query: Query, limit: int | None) -> Page:
    """The store's ``page`` (cross-references left out) with the matching ``sources`` between
    the query's cursors, in sort order and cut to ``limit`` as the store cuts its pages."""
    sort, desc = query.sort, bool(query.sort and query.sort.descending)

    def past(rec: EntityRecord, cursor: Cursor) -> bool:  # after the cursor in query order
        a, b = position(rec, sort), cursor_position(cursor, sort)
        return a < b if desc else a > b

    rows = [r for r in sources if query.after is None or past(r, query.after)]
    before_cursor = len(rows) < len(sources)
    kept = [r for r in rows if query.before is None or not (past(r, query.before) or
                                                            position(r, sort) == cursor_position(query.before, sort))]
    after_cursor = len(kept) < len(rows)
    merged = sorted([*page.items, *kept], key=lambda r: position(r, sort), reverse=desc)
    has_next, has_prev = page.has_next or after_cursor, page.has_prev or before_cursor
    if limit is not None and len(merged) > limit:
        if query.before is not None:  # read backwards: the last rows before the cursor
            merged, has_prev = merged[-limit:], True
        else:
            merged, has_next = merged[:limit], True
    return Page(items=merged, has_next=has_next, has_prev=has_prev)


async def _query(store: Store, sel: Selection) -> Query | None:
    filters = sel.filters or Filters()
    if filters.exclude_all:
        return None
    m = sel.materialised
    base = Query(ctype=sel.ctype, parent=sel.parent, sort=store_sort(sel.ctype, sel.sort, m), limit=sel.limit,
                 after=sel.after, before=sel.before, as_of=sel.as_of, search=sel.search)
    if filters.reachable_over is not None:
        parents = await _reaching(store, sel, filters.reachable_over)
        if not parents:
            return None
        base = _replace(base, parents=parents)
    if not filters.nested:
        any_of = tuple(tuple(store_condition(sel.ctype, c, m) for c in group) for group in filters.any_of)
        return _replace(base, any_of=any_of)
    keys: set[str] = set()
    for branch in filters.branches:
        keys |= await _branch_keys(store, sel, branch)
    return _replace(base, keys=tuple(sorted(keys)))


async def _branch_keys(store: Store, sel: Selection, branch: FilterExpression) -> set[str]:
    """Keys of the entities that satisfy one AND'd filter expression with nested terms."""
    depth = _depth(sel.ctype)
    by_collection: dict[tuple[str, ...], list[Condition]] = {}
    for term in branch.terms:
        if term.collections:
            by_collection.setdefault(term.collections, []).append(term.condition)
    allowed: set[str] | None = None  # None: no nested term restricts this branch
    for collections, conds in by_collection.items():
        ctype = "/".join([sel.ctype, *collections]) if sel.ctype else "/".join(collections)
        page = await store.list(Query(ctype=ctype, parent=sel.parent, as_of=sel.as_of,
                                      any_of=(tuple(store_condition(ctype, c, sel.materialised) for c in conds),)))
        owners = {_owner_key(rec.key, depth) for rec in page.items}
        allowed = owners if allowed is None else allowed & owners
    if allowed is not None and not allowed:
        return set()
    own = tuple(store_condition(sel.ctype, c, sel.materialised) for c in branch.conditions)
    page = await store.list(Query(ctype=sel.ctype, parent=sel.parent, as_of=sel.as_of,
                                  keys=tuple(sorted(allowed)) if allowed is not None else None,
                                  any_of=(own,) if own else ()))
    return {rec.key for rec in page.items}


#: The group type whose entities reach messages, and the attribute listing the groups they reach.
ENDPOINTS = "endpoints"
REACHED_GROUPS = "messagegroups"


async def _reaching(store: Store, sel: Selection, over: Condition) -> tuple[str, ...]:
    """The keys of the entities whose messages an endpoint matching ``over`` reaches (see
    ``Filters.reachable_over``): for ``endpoints/…`` messages the matching endpoints, for the
    messages of another group type the groups their ``messagegroups`` references name (XIDs and
    ``#/`` pointers into this registry; URLs and references elsewhere reach nothing here). One
    store call: the matching endpoints, read with their conditions pushed down."""
    group_type = sel.ctype.split("/")[0]
    found = await store.list(Query(ctype=ENDPOINTS, as_of=sel.as_of, any_of=((store_condition(ENDPOINTS, over),),)))
    if group_type == ENDPOINTS:
        keys = {rec.key for rec in found.items}
    else:
        keys = set()
        for rec in found.items:
            listed = rec.doc.get(REACHED_GROUPS)
            for ref in listed if isinstance(listed, list) else ():
                key = _group_key(ref, group_type)
                if key is not None:
                    keys.add(key)
    if sel.parent not in (None, "/"):
        inside = sel.parent.lower()
        keys = {k for k in keys if k == inside or k.startswith(inside + "/") or inside.startswith(k + "/")}
    return tuple(sorted(keys))


def _group_key(reference: Any, group_type: str) -> str | None:
    """The key of the group of ``group_type`` an in-registry reference (``/g/x``, ``#/g/x``) names."""
    if not isinstance(reference, str):
        return None
    text = reference[1:] if reference.startswith("#/") else reference
    if not text.startswith("/"):
        return None
    try:
        xid = Xid.parse(text.rstrip("/"))
    except XRegistryError:
        return None
    if xid.depth != 1 or xid.group_type != group_type or id_problem(xid.group_id or ""):
        return None
    return xid.key


_replace = replace


#: Batches of at least this many views are built in a worker thread.
THREAD_VIEWS = 64


async def render(
    store: Store, model: RegistryModel, records: Sequence[EntityRecord], *, base_url: str,
    as_of: int | None = None, include_meta: bool = False, with_counts: bool = True,
) -> list[dict[str, Any]]:
    """xRegistry views of ``records`` with their collection counts, one store call per
    child collection type (not per record). ``with_counts=False`` skips those calls: every
    ``<COLLECTION>count`` is then 0 (for callers that fill them in later, or never show them)."""
    # a cross-reference reads as its target, counting the target's versions (core/spec.md)
    targets = await xrefs.targets(store, records, as_of)
    records = [xrefs.as_source(rec, targets[rec.key]) if rec.key in targets else rec for rec in records]
    counts: dict[tuple[str, str], int] = {}
    by_child: dict[str, list[tuple[str, str]]] = {}
    for rec in records if with_counts else ():
        for child in _child_ctypes(model, rec):
            counted = targets[rec.key].xid if rec.key in targets else rec.xid
            by_child.setdefault(child, []).append((rec.key, counted))
    for child, pairs in by_child.items():
        found = await store.count_children([counted for _, counted in pairs], child, as_of)
        for key, counted in pairs:
            counts[(key, child)] = found.get(counted.lower(), 0)
    defaults: dict[str, str | None] = {}
    versions = [r for r in records if r.kind == "version"]
    if versions:
        owners = await store.get_many(list({str(Xid.parse(r.xid).resource) for r in versions}), as_of)
        sources = await xrefs.targets(store, list(owners.values()), as_of)  # a source's: its target's
        defaults = {k: ((sources[k] if k in sources else o).doc.get("meta") or {}).get("defaultversionid")
                    for k, o in owners.items()}

    def views() -> list[dict[str, Any]]:
        out = []
        for rec in records:
            if rec.kind == "version":
                out.append(version_view(rec, defaults.get(Xid.parse(rec.key).resource.key), base_url))
            else:
                out.append(view_of(rec, model, base_url, counts, include_meta=include_meta))
        return out

    # many views are built in a worker thread, so the event loop (other requests, probes) goes on
    return await asyncio.to_thread(views) if len(records) >= THREAD_VIEWS else views()


def view_of(
    rec: EntityRecord, model: RegistryModel, base_url: str,
    counts: Mapping[tuple[str, str], int] = MappingProxyType({}), *, include_meta: bool = False,
) -> dict[str, Any]:
    """The view of a registry, group or resource record (a version's needs its resource's default
    version id: :func:`render`); ``counts`` by ``(key, child collection type)``, 0 where missing."""
    if rec.kind == "registry":
        return registry_view(rec, model, base_url, {g: counts.get((rec.key, g), 0) for g in model.groups})
    if rec.kind == "group":
        gdef = model.group(rec.ctype)
        names = gdef.resources if gdef else {}
        return group_view(rec, model, base_url, {r: counts.get((rec.key, f"{rec.ctype}/{r}"), 0) for r in names})
    return resource_view(rec, base_url, counts.get((rec.key, f"{rec.ctype}/versions"), 0), include_meta=include_meta)


def _child_ctypes(model: RegistryModel, rec: EntityRecord) -> list[str]:
    if rec.kind == "registry":
        return list(model.groups)
    if rec.kind == "group":
        gdef = model.group(rec.ctype)
        return [f"{rec.ctype}/{r}" for r in (gdef.resources if gdef else {})]
    if rec.kind == "resource":
        return [f"{rec.ctype}/versions"]
    return []
