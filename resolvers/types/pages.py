"""Connections over an entity's collections (a group's resources, a resource's versions, a
registry's groups or resources across its groups): their listings, their pages and counts.

A nested connection's pages load through the request's loader (batched with the other owners
of the level), or all at once when every owner of a level asks (the form for many objects of
:func:`nested`); a registry-wide connection reads its registry directly. A registry that is
down gives no rows, and its error is reported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from strawberry.types import Info

from adapters.base import Entity as SourceEntity
from adapters.base import SourceUnavailable
from resolvers.connections import Connection, Paging, connection, make_listing
from resolvers.federation import unsearchable
from resolvers.filters import Filter, SortBy, to_filters, to_sort
from resolvers.gathering import gather, settled
from resolvers.references import only
from resolvers.types.ahead import page_ahead
from resolvers.types.nodes import to_node


def _subject(owner: SourceEntity, ctypes: tuple[str, ...]) -> str:
    """The path a connection's errors name: its owner's XID and the collection."""
    return owner.xid.rstrip("/") + "/" + ctypes[0].split("/")[-1]


async def collection(
    info: Info, owner: SourceEntity, ctypes: tuple[str, ...], filter: Filter | None, sort: SortBy | None,
    paging: Paging,
) -> Connection:
    """A connection over the ``ctypes`` collection(s) of ``owner`` (the registry: across it)."""
    return only(await collections([info], [owner], [ctypes], filter, sort, paging))


def _empty() -> Connection:
    return Connection(nodes=[], cursors=[], has_next=False, has_prev=False, total=0, counter=None)


async def collections(
    infos: Sequence[Info], owners: Sequence[SourceEntity], ctypes: Sequence[tuple[str, ...]], filter: Filter | None,
    sort: SortBy | None, paging: Paging, *, at_once: bool = False,
) -> list[Connection | Exception]:
    """:func:`collection` of each owner (with its ``info`` and its collection types), the nested
    pages awaited once; an owner's failure is its entry (an exception). The pages load through
    the request's loader (batched with other loads of them), or, ``at_once`` (every owner of a
    level is here), read directly: one read per registry and listing."""
    ctx = infos[0].context
    read_ahead = page_ahead(infos[0])  # the nodes' references to read as soon as a page is in
    out: list[Any] = []
    nested: list[tuple[int, int, SourceEntity, Any]] = []  # owner's place, its info's, owner, its listing
    for k, (owner, types) in enumerate(zip(owners, ctypes, strict=True)):
        source = ctx.sources[owner.registry]
        if not types:
            out.append(_empty())
            continue
        try:
            listing = _listing(ctx, source, owner, types, filter, sort, paging)
        except Exception as exc:
            out.append(exc)
            continue
        if listing.search is not None and not source.searchable:
            ctx.report(unsearchable(source.id, _subject(owner, types)), infos[k])
            out.append(_empty())
        elif owner.kind == "registry":
            out.append(await _across(infos[k], source, listing, read_ahead))
        else:
            nested.append((len(out), k, owner, listing))
            out.append(None)  # its page's
    if not nested:
        return out
    if at_once:
        pages = await _pages_at_once(ctx, [(owner, listing) for _, _, owner, listing in nested], read_ahead)
    else:
        loads = [ctx.loaders.children.load((owner.registry, owner.xid, listing)) for _, _, owner, listing in nested]
        await settled(loads)
        pages = [load.exception() or load.result() for load in loads]
    for (index, k, _, _), page in zip(nested, pages, strict=True):
        if isinstance(page, SourceUnavailable):  # the registry is down: no rows, and the error reported
            ctx.report(page, infos[k])
            out[index] = _empty()
        elif isinstance(page, BaseException):
            out[index] = page
        else:
            out[index] = connection(page, to_node)
    return out


async def _pages_at_once(ctx: Any, wanted: list[tuple[SourceEntity, Any]],
                         read_ahead: Callable[[Sequence[SourceEntity]], None] | None = None) -> list[Any]:
    """Each owner's page under its listing: one read per registry and listing (or its error);
    ``read_ahead`` is given the entities as they come in (:func:`~resolvers.types.ahead.page_ahead`)."""
    groups: dict[tuple[str, int], tuple[Any, list[str]]] = {}
    for owner, listing in wanted:
        groups.setdefault((owner.registry, id(listing)), (listing, []))[1].append(owner.xid)
    found = await gather(*(ctx.loaders.children_of(registry, listing, parents, read_ahead)
                           for (registry, _), (listing, parents) in groups.items()))
    by_group = dict(zip(groups, found, strict=True))
    out = []
    for owner, listing in wanted:
        pages = by_group[(owner.registry, id(listing))]
        out.append(pages if isinstance(pages, BaseException) else pages[owner.xid.lower()])
    return out


def _listing(ctx: Any, source: Any, owner: SourceEntity, ctypes: tuple[str, ...], filter: Filter | None,
             sort: SortBy | None, paging: Paging) -> Any:
    """The listing of a connection's arguments; the same arguments under many owners (a nested
    connection) give one listing per request, so that the loaders' keys hold the same object
    (compared by identity, hashed once)."""
    key = (owner.registry, ctypes, owner.as_of, id(paging), id(filter), id(sort))
    memo = ctx.listings.get(key)
    if memo is not None and memo[0] is paging and memo[1] is filter and memo[2] is sort:
        return memo[3]
    subject = _subject(owner, ctypes)
    listing = make_listing(ctx, ctypes, to_filters(filter, source.model, ctypes[0], subject),
                           to_sort(sort, source.model, ctypes[0], subject), paging, as_of=owner.as_of,
                           declared=bool(getattr(filter, "declared", False)))
    ctx.listings[key] = (paging, filter, sort, listing)  # kept alive: their ids stay theirs
    return listing


async def _across(info: Info, source: Any, listing: Any,
                  read_ahead: Callable[[Sequence[SourceEntity]], None] | None = None) -> Connection | Exception:
    """A registry-wide connection: its page, and its count when asked (``read_ahead``: as
    :func:`_pages_at_once`'s)."""
    ctx = info.context
    try:
        page = await source.list(listing)
        ctx.loaders.prime(page.items)
        page.items = await ctx.loaders.settle(page.items, read_ahead)
        return connection(page, to_node, lambda: _count(info, source, listing))
    except SourceUnavailable as exc:  # the registry is down: no rows, and the error reported
        ctx.report(exc, info)
        return _empty()
    except Exception as exc:
        return exc


async def _count(info: Info, source: Any, listing: Any) -> int:
    try:
        return await source.count(listing)
    except SourceUnavailable as exc:
        info.context.report(exc, info)
        return 0


def nested(resource_type: str) -> Callable[..., Awaitable[list[Any]]]:
    """The form for many groups of their connection to their ``resource_type`` resources (every
    group of a level asking: their pages are read at once)."""
    async def many(groups: list[Any], infos: list[Info], filter: Filter | None = None, sort: SortBy | None = None,
                   *, paging: Paging) -> list[Any]:
        owners = [g.entity for g in groups]
        return await collections(infos, owners, [(f"{o.ctype}/{resource_type}",) for o in owners], filter, sort,
                                 paging, at_once=True)
    return many

