"""The query root: registries, one registry (optionally as of a revision), nodes, XID look-up,
and collections across all registries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import strawberry
from graphql import FieldNode
from strawberry import ID
from strawberry.types import Info

from adapters.base import Entity as SourceEntity
from adapters.base import SourceUnavailable
from resolvers.checks import Checks
from resolvers.connections import Connection, Paging, paged_field
from resolvers.federation import across
from resolvers.filters import EndpointFilter, Filter, MessageFilter, MessageGroupFilter, SchemaFilter, SortBy
from resolvers.gathering import gather
from resolvers.ids import parse_global_id
from resolvers.references import only
from resolvers.types.ahead import page_ahead
from resolvers.types.endpoints import Endpoint
from resolvers.types.entities import Group, Node, Resource
from resolvers.types.fields import batched
from resolvers.types.messages import Message, MessageGroup
from resolvers.types.nodes import bare_registry, to_node
from resolvers.types.registry import Registry
from resolvers.types.schemas import Schema, SchemaGroup
from resolvers.webhooks import WebhookQueries
from xreg.errors import UserInputError, XRegistryError
from xreg.xid import Xid

#: The fields of ``Registry`` that read nothing of the registry's own record (its id, its source,
#: its collections): a selection of only these needs no read of it.
_NAVIGATION = frozenset({"__typename", "id", "xid", "registryid", "revision", "instanceId", "kind", "status",
                         "asOf", "model", "endpoints", "messagegroups", "schemagroups", "messages", "schemas",
                         "groups", "resources", "versions", "lookup", "changes"})


def _navigates_only(info: Info) -> bool:
    """Whether the field's selections are all fields of :data:`_NAVIGATION` (no fragments)."""
    for node in info._raw_info.field_nodes:
        for selection in node.selection_set.selections if node.selection_set else ():
            if not isinstance(selection, FieldNode) or selection.name.value not in _NAVIGATION:
                return False
    return True


async def _nodes_at_once(infos: Sequence[Info], wanted: list[tuple[str, str, int | None] | Exception | None],
                         ) -> list[Any]:
    """The objects of a level's root look-ups, each ``(registry, XID, as_of)`` (or the exception
    it already failed with, or ``None``: nothing to read), read together: one read per registry
    and revision (:meth:`~resolvers.loaders.Loaders.read`), each revision checked once."""
    ctx = infos[0].context
    out: list[Any] = [None] * len(wanted)
    checked: dict[tuple[str, int | None], Exception | None] = {}
    keys: list[tuple[str, int | None, str]] = []
    places: list[int] = []
    for k, one in enumerate(wanted):
        if not isinstance(one, tuple):
            out[k] = one
            continue
        registry, xid, as_of = one
        if (registry, as_of) not in checked:
            try:
                await ctx.sources[registry].check_revision(as_of)
                checked[(registry, as_of)] = None
            except Exception as exc:
                checked[(registry, as_of)] = exc
        failed = checked[(registry, as_of)]
        if failed is not None:
            out[k] = failed
            continue
        keys.append((registry, as_of, xid))
        places.append(k)
    if keys:
        for k, entity in zip(places, await ctx.loaders.read(keys), strict=True):
            out[k] = to_node(entity) if isinstance(entity, SourceEntity) else entity
    return out


def _lookup_of(info: Info, arguments: dict[str, Any]) -> tuple[str, str, int | None] | Exception:
    """What ``lookup`` reads for its arguments, or why it cannot."""
    xid = arguments["xid"]
    try:
        source = info.context.source(arguments.get("registry"))
    except XRegistryError as exc:
        return exc
    try:
        Xid.parse(xid)  # its shape: what the registry's model allows is the registry's to say
    except XRegistryError as exc:
        return exc
    return source.id, xid, arguments.get("as_of")


async def lookups_of(roots: list[Any], infos: Sequence[Info], arguments: list[dict[str, Any]]) -> list[Any]:
    """The entities of a level's ``lookup`` calls (its aliases), read together."""
    return await _nodes_at_once(infos, [_lookup_of(info, a) for info, a in zip(infos, arguments, strict=True)])


def _node_of(info: Info, arguments: dict[str, Any]) -> tuple[str, str, int | None] | Exception | None:
    """What ``node`` reads for its global id (``None``: a registry not served here)."""
    try:
        registry, xid = parse_global_id(arguments["id"])
    except Exception as exc:
        return exc
    return (registry, xid, None) if registry in info.context.sources else None


async def node_lookups_of(roots: list[Any], infos: Sequence[Info], arguments: list[dict[str, Any]]) -> list[Any]:
    """The objects of a level's ``node`` calls (its aliases), read together."""
    return await _nodes_at_once(infos, [_node_of(info, a) for info, a in zip(infos, arguments, strict=True)])


async def _entity(info: Info, registry: str, xid: str, as_of: int | None) -> Any:
    entity = await info.context.loaders.entity(registry, xid, as_of)
    return to_node(entity) if entity is not None else None


@strawberry.type
class Query(Checks, WebhookQueries):
    @strawberry.field(description="Every registry the gateway serves, in priority order — also those that "
                                  "cannot be read now (with their `status`, and an error naming them).")
    async def registries(self, info: Info) -> list[Registry]:
        async def one(rid: str) -> Any:
            try:
                return await _entity(info, rid, "/", None)
            except SourceUnavailable as exc:
                info.context.report(exc, info)
                return bare_registry(rid)

        found = await gather(*(one(rid) for rid in info.context.sources))
        return [r for r in found if r is not None]

    @strawberry.field(description="One registry (default: the gateway's own), optionally as it was at "
                                  "revision `asOf`; everything read through it stays at that revision. Never null: "
                                  "an `id` the gateway does not serve is an error (`BAD_USER_INPUT`), and a "
                                  "registry that cannot be read now gives its ids alone, with the error reported.")
    async def registry(self, info: Info, id: str | None = None, as_of: int | None = None) -> Registry:
        source = info.context.sources.get(id or info.context.default_registry)
        if source is None:
            raise UserInputError(f"unknown registry: {id} (known: {', '.join(info.context.sources)})")
        await source.check_revision(as_of)
        if as_of is None and source.kind == "local" and _navigates_only(info):
            # the gateway's store always holds its registry: nothing of the root record is asked for
            return bare_registry(source.id)
        try:
            found = await _entity(info, source.id, "/", as_of)
        except SourceUnavailable as exc:
            info.context.report(exc, info)
            found = None
        return found if found is not None else bare_registry(source.id, as_of)

    @strawberry.field(description="The object with this global id (Relay).")
    @batched(node_lookups_of, each=True)
    async def node(self, info: Info, id: ID) -> Node | None:
        return only(await node_lookups_of([self], [info], [{"id": id}]))

    @strawberry.field(description="The objects with these global ids, in order (null where none).")
    async def nodes(self, info: Info, ids: list[ID]) -> list[Node | None]:
        bound = info.context.settings.graphql_max_page_size
        if len(ids) > bound:
            raise UserInputError(f"at most {bound} ids at once, not {len(ids)}")
        parsed = [parse_global_id(i) for i in ids]
        known = [(r, x) for r, x in parsed if r in info.context.sources]
        found = await info.context.loaders.batcher.load_many([(r, None, x) for r, x in known])
        settled = iter(await info.context.loaders.settle([e for e in found if e is not None]))
        entities = iter([next(settled) if e is not None else None for e in found])
        out = []
        for registry, _ in parsed:
            entity = next(entities) if registry in info.context.sources else None
            out.append(to_node(entity) if entity is not None else None)
        return out

    @strawberry.field(description="An entity by XID (`/endpoints/e1`, `…/versions/v1`, `…/meta`), in the "
                                  "gateway's own registry unless `registry` names another.")
    @batched(lookups_of, each=True)
    async def lookup(
        self, info: Info, xid: str, registry: str | None = None, as_of: int | None = None,
    ) -> Node | None:
        return only(await lookups_of([self], [info], [{"xid": xid, "registry": registry, "as_of": as_of}]))

    # -- across all registries ------------------------------------------------------------------
    @paged_field("Endpoints of every registry (or of `registries`), merged in sort order.")
    async def endpoints(
        self, info: Info, registries: list[str] | None = None, filter: EndpointFilter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[Endpoint] | None:
        return await across(info, group_type="endpoints", resource_type=None, registries=registries, filter=filter,
                            sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

    @paged_field("Message groups of every registry (or of `registries`), merged in sort order.")
    async def messagegroups(
        self, info: Info, registries: list[str] | None = None, filter: MessageGroupFilter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[MessageGroup] | None:
        return await across(info, group_type="messagegroups", resource_type=None, registries=registries,
                            filter=filter, sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

    @paged_field("Schema groups of every registry (or of `registries`), merged in sort order.")
    async def schemagroups(
        self, info: Info, registries: list[str] | None = None, filter: SchemaFilter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[SchemaGroup] | None:
        return await across(info, group_type="schemagroups", resource_type=None, registries=registries,
                            filter=filter, sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

    @paged_field("Messages of every registry (or of `registries`; message groups and "
                 "endpoints), merged in sort order.")
    async def messages(
        self, info: Info, registries: list[str] | None = None, filter: MessageFilter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[Message] | None:
        return await across(info, group_type=None, resource_type="messages", registries=registries, filter=filter,
                            sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

    @paged_field("Schemas of every registry (or of `registries`), merged in sort order.")
    async def schemas(
        self, info: Info, registries: list[str] | None = None, filter: SchemaFilter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[Schema] | None:
        return await across(info, group_type=None, resource_type="schemas", registries=registries, filter=filter,
                            sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

    @paged_field("Groups of one type (of any registry's model) across registries.")
    async def groups(
        self, info: Info, group_type: str, registries: list[str] | None = None, filter: Filter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[Group] | None:
        return await across(info, group_type=group_type, resource_type=None, registries=registries, filter=filter,
                            sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

    @paged_field("Resources of one type (of any registry's model) across registries.")
    async def resources(
        self, info: Info, resource_type: str, registries: list[str] | None = None, filter: Filter | None = None,
        sort: SortBy | None = None, *, paging: Paging,
    ) -> Connection[Resource] | None:
        return await across(info, group_type=None, resource_type=resource_type, registries=registries, filter=filter,
                            sort=sort, paging=paging, wrap=to_node,
                            read_ahead=page_ahead(info))

