"""The registry's GraphQL type: its attributes, model and health, its collections (typed by
domain, or of any group and resource type of its model), look-up by XID and its change feed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from enum import Enum

import strawberry
from strawberry import Private
from strawberry.scalars import JSON
from strawberry.types import Info

from adapters.base import ChangeItem, SourceUnavailable
from resolvers.connections import Connection, PageInfo, Paging, page_size, paged_field
from resolvers.federation import RegistryStatus
from resolvers.filters import EndpointFilter, Filter, MessageFilter, MessageGroupFilter, SchemaFilter, SortBy
from resolvers.types.endpoints import Endpoint
from resolvers.types.entities import Entity, GenericVersionConnection, Group, Node, Resource, VersionConnection
from resolvers.types.fields import attr
from resolvers.types.messages import Message, MessageGroup, MessageVersionConnection
from resolvers.types.nodes import load_node, stands_for, to_node
from resolvers.types.pages import collection
from resolvers.types.schemas import Schema, SchemaGroup, SchemaVersionConnection
from xreg.errors import XRegistryError

#: The connection of each resource type's versions.
_VERSION_CONNECTIONS: dict[str, type[VersionConnection]] = {
    "messages": MessageVersionConnection, "schemas": SchemaVersionConnection}


@strawberry.enum(description="What happened to an entity.")
class ChangeType(Enum):
    UPSERTED = "upserted"
    DELETED = "deleted"


@strawberry.enum(description="The order of a change feed.")
class ChangeOrder(Enum):
    REVISION = strawberry.enum_value("revision", description="By the revision that wrote each entity's state, "
                                                             "then by XID (the default): the order things happened.")
    XID = strawberry.enum_value("xid", description="By XID: each entity's state next to its parent's.")


@strawberry.type(description="An entity written after a revision: its current state, or its deletion.")
class Change:
    item: Private[ChangeItem]

    @strawberry.field
    def xid(self) -> str:
        return self.item.xid

    @strawberry.field(description="`group`, `resource` or `version` (or `registry`).")
    def kind(self) -> str:
        return self.item.kind

    @strawberry.field(description="The collection type, e.g. `messagegroups/messages`.")
    def collection(self) -> str:
        return self.item.ctype

    @strawberry.field(name="type", description="Upserted or deleted.")
    def change_type(self) -> ChangeType:
        return ChangeType.DELETED if self.item.deleted else ChangeType.UPSERTED

    @strawberry.field(description="The revision of the change.")
    def revision(self) -> int:
        return self.item.revision

    @strawberry.field(description="The entity as it is now (null when deleted).")
    def node(self) -> Node | None:
        return to_node(self.item.entity) if self.item.entity is not None else None


@strawberry.type(description="A page of changes, in revision order unless `order` said otherwise; follow "
                              "`pageInfo.endCursor` with `after` (and the same `order`).")
class ChangeFeed:
    nodes: list[Change]
    page_info: PageInfo
    counter: Private[Callable[[], Awaitable[int]]]

    @strawberry.field(description="How many changes the whole feed holds (every page, with `collections`).")
    async def total_count(self) -> int:
        return await self.counter()


@stands_for("registry")
@strawberry.type(description="A registry: its attributes, model, collections, history.")
class Registry(Entity):
    specversion: str | None = attr()

    @strawberry.field(description="The revision this view is at: `asOf`, or the current one (a remote "
                                  "registry: a newly minted snapshot number, readable with `asOf` while it lives).")
    async def revision(self, info: Info) -> int:
        if self.entity.as_of is not None:
            return self.entity.as_of
        try:
            return await info.context.sources[self.entity.registry].revision()
        except SourceUnavailable as exc:
            info.context.report(exc, info)
            return 0

    @strawberry.field(description="The id of this registry instance (a UUID): revisions and `changes` checkpoints "
                                  "are meaningful only with it. Stable for the life of the store and kept by a "
                                  "backup restored with its history; a copy made any other way (an export imported "
                                  "into a fresh store) has a new one. Null for a registry without revisions of its own "
                                  "(a remote xRegistry API); a document source's changes with each load.")
    def instance_id(self, info: Info) -> str | None:
        return info.context.sources[self.entity.registry].instance_id

    @strawberry.field(description="`local` (the gateway's own store), `xregistry` (a remote xRegistry API) or "
                                  "`file` (a document served read-only).")
    def kind(self, info: Info) -> str:
        return info.context.sources[self.entity.registry].kind

    @strawberry.field(description="The registry's health: last success and error, circuit breaker, cache.")
    def status(self, info: Info) -> RegistryStatus:
        return RegistryStatus(status=info.context.sources[self.entity.registry].status())

    @strawberry.field(description="The revision asked for with `registry(asOf:)`, null for the current state.")
    def as_of(self) -> int | None:
        return self.entity.as_of

    @strawberry.field(description="The registry's model (xRegistry `/model`).")
    def model(self, info: Info) -> JSON:
        return info.context.sources[self.entity.registry].model.to_json()

    @paged_field("Endpoints.")
    async def endpoints(
        self, info: Info, filter: EndpointFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Endpoint] | None:
        return await collection(info, self.entity, ("endpoints",), filter, sort, paging)

    @paged_field("Message groups.")
    async def messagegroups(
        self, info: Info, filter: MessageGroupFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[MessageGroup] | None:
        return await collection(info, self.entity, ("messagegroups",), filter, sort,
                                paging)

    @paged_field("Schema groups.")
    async def schemagroups(
        self, info: Info, filter: SchemaFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[SchemaGroup] | None:
        return await collection(info, self.entity, ("schemagroups",), filter, sort,
                                paging)

    @paged_field("Messages across all groups that have them (message groups and endpoints).")
    async def messages(
        self, info: Info, filter: MessageFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Message] | None:
        return await collection(info, self.entity, self._across(info, "messages"), filter, sort,
                                paging)

    @paged_field("Schemas across all schema groups.")
    async def schemas(
        self, info: Info, filter: SchemaFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Schema] | None:
        return await collection(info, self.entity, self._across(info, "schemas"), filter, sort,
                                paging)

    @paged_field("Groups of any type of the registry's model.")
    async def groups(
        self, info: Info, group_type: str, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Group] | None:
        if info.context.sources[self.entity.registry].model.group(group_type) is None:
            raise XRegistryError("unknown_group_type", f"/{group_type}", name=group_type)
        return await collection(info, self.entity, (group_type,), filter, sort, paging)

    @paged_field("Resources of one type across all groups that have them.")
    async def resources(
        self, info: Info, resource_type: str, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Resource] | None:
        return await collection(info, self.entity, self._across(info, resource_type, required=True), filter, sort,
                                paging)

    @paged_field("Versions of the resources of one type, across the registry.")
    async def versions(
        self, info: Info, resource_type: str, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> VersionConnection | None:
        ctypes = tuple(f"{c}/versions" for c in self._across(info, resource_type, required=True))
        page = await collection(info, self.entity, ctypes, filter, sort, paging)
        return _VERSION_CONNECTIONS.get(resource_type, GenericVersionConnection)(page=page)

    @strawberry.field(description="One entity of this registry by XID (`…/meta` included).")
    async def lookup(self, info: Info, xid: str) -> Node | None:
        return await load_node(info, self.entity, xid)

    @strawberry.field(description="Entities written after revision `since` (up to `until`, default: this "
                                  "view's revision), each once with its latest state (or its deletion), in "
                                  "revision order (the revision that wrote the state, ties by XID; `order: XID` for "
                                  "XID order, null the default); `collections` limits the collection types. A "
                                  "checkpoint is `since` with the `instanceId` it was read with: one of another "
                                  "registry instance, or a `since` beyond the current revision, fails with "
                                  "`instance_mismatch` (read again from 0).")
    async def changes(
        self, info: Info, since: int, instance_id: str | None = None, until: int | None = None,
        collections: list[str] | None = None, first: int | None = None, after: str | None = None,
        order: ChangeOrder | None = ChangeOrder.REVISION,
    ) -> ChangeFeed | None:
        limit, _ = page_size(info.context, first, None)
        source = info.context.sources[self.entity.registry]
        source.check_instance(instance_id)
        until = until if until is not None else self.entity.as_of
        items, more = await source.changes(since, until=until, ctypes=collections, limit=limit, after=after,
                                           by_revision=order is not ChangeOrder.XID)
        settled = iter(await info.context.loaders.settle([i.entity for i in items if i.entity is not None]))
        items = [replace(i, entity=next(settled)) if i.entity is not None else i for i in items]
        return ChangeFeed(nodes=[Change(item=i) for i in items], counter=lambda: source.count_changes(
            since, until=until, ctypes=collections), page_info=PageInfo(
            has_next_page=more, has_previous_page=after is not None, start_cursor=items[0].cursor if items else None,
            end_cursor=items[-1].cursor if items else None))

    def _across(self, info: Info, resource_type: str, *, required: bool = False) -> tuple[str, ...]:
        model = info.context.sources[self.entity.registry].model
        ctypes = tuple(f"{g}/{resource_type}" for g, gdef in model.groups.items() if resource_type in gdef.resources)
        if required and not ctypes:
            raise XRegistryError("unknown_resource_type", "/", name=resource_type, group="any")
        return ctypes
