"""The GraphQL interfaces of every registry's entities (``Node``, ``Entity``, ``Group``,
``Resource``, ``Version``), a resource's ``Meta``, the generic object types of group and resource
types known only from a registry's model, and the version connections they share.

Every object wraps one source :class:`~adapters.base.Entity` (its xRegistry view). Attributes
resolve synchronously from that view; only navigation (nested collections, references, the
parent, versions) awaits, through the request's loaders. Nested reads inherit the revision the
entity was read at, so a registry read ``asOf`` a revision stays at that revision throughout.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import strawberry
from strawberry import ID, Private
from strawberry.scalars import JSON
from strawberry.types import Info, get_object_definition

from adapters.base import Entity as SourceEntity
from adapters.base import SourceUnavailable
from resolvers.connections import Connection, PageInfo, Paging, paged_field
from resolvers.filters import Filter, SortBy
from resolvers.ids import global_id
from resolvers.references import resolve
from resolvers.scalars import Timestamp
from resolvers.types.fields import attr, reads
from resolvers.types.nodes import bare_registry, load_node, stands_for, to_node
from resolvers.types.pages import collection
from xreg.errors import XRegistryError
from xreg.xid import Xid

#: View attributes that are links to collections, not attributes of the entity.
_LINKS = ("url", "count")


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        fields = get_object_definition(cls, strict=True).fields
        names = _FIELD_NAMES[cls] = frozenset(n for f in fields for n in (f.python_name, f.graphql_name) if n)
    return names


def is_link(key: str, view: dict[str, Any]) -> bool:
    """``<COLLECTION>url`` / ``<COLLECTION>count`` pairs (and ``metaurl``) of a view."""
    if not key.endswith(_LINKS):  # most attributes (checked for every attribute of every row)
        return False
    for suffix in _LINKS:
        if key.endswith(suffix):
            stem = key[: -len(suffix)]
            other = stem + ("count" if suffix == "url" else "url")
            if stem == "meta" or other in view:
                return True
    return False


def _id_attributes(info: Info, entity: SourceEntity) -> frozenset[str]:
    """The ``<singular>id`` attributes of an entity's view (its own, or its resource's)."""
    model = info.context.sources[entity.registry].model
    parts = entity.ctype.split("/") if entity.ctype else []
    if len(parts) == 1:
        gdef = model.group(parts[0])
        return frozenset({gdef.id_attribute} if gdef else ())
    rdef = model.resource(parts[0], parts[1]) if len(parts) > 1 else None
    return frozenset({rdef.id_attribute} if rdef else ())


# -- interfaces ------------------------------------------------------------------------------


@strawberry.type(description="One label of an entity.")
class Label:
    key: str
    value: str


@strawberry.interface(description="An object with a global id (Relay): its registry and its XID.")
class Node:
    entity: Private[SourceEntity]

    @strawberry.field(description="Opaque global id: the registry and the XID.")
    def id(self) -> ID:
        return ID(global_id(self.entity.registry, self.entity.xid))

    @strawberry.field(description="The entity's XID inside its registry.")
    @reads("entity.xid")
    def xid(self) -> str:
        return self.entity.xid

    @strawberry.field(description="The id of the registry the entity comes from.")
    @reads("entity.registry")
    def registryid(self) -> str:
        return self.entity.registry

    @strawberry.field(name="self", description="The entity's URL in its registry's xRegistry HTTP API.")
    def self_url(self) -> str | None:
        return self.entity.view.get("self")

    epoch: int | None = attr("Raised by every change of the entity.")
    createdat: Timestamp | None = attr()
    modifiedat: Timestamp | None = attr()

    @strawberry.field(description="Attributes without a typed field here (extension attributes).")
    def attributes(self, info: Info) -> JSON:
        view, known = self.entity.attributes, _field_names(type(self)) | _id_attributes(info, self.entity)
        return JSON({k: v for k, v in view.items() if k not in known and not is_link(k, view)})

    @strawberry.field(name="json", description="The entity's whole xRegistry JSON serialization.")
    def json_view(self, info: Info) -> JSON:
        # synchronous unless the collection counts are still to be read
        return JSON(info.context.loaders.views.load(self.entity) if self.entity.partial else self.entity.view)

    @strawberry.field(description="The registry the entity belongs to (at the same revision); never null — a "
                                  "registry that cannot be read now gives its ids alone, with the error reported.")
    async def registry(  # named lazily: registry.py imports this module (no import back, even for typing)
        self, info: Info,
    ) -> Annotated[Registry, strawberry.lazy("resolvers.types.registry")]:  # type: ignore[name-defined]  # noqa: F821
        try:
            found = await load_node(info, self.entity, "/")
        except SourceUnavailable as exc:
            info.context.report(exc, info)
            found = None
        return found if found is not None else bare_registry(self.entity.registry, self.entity.as_of)


@strawberry.interface(description="Attributes of every registry, group, resource and version (core/spec.md).")
class Entity(Node):
    @strawberry.field(description="The entity's own id: `<singular>id`, `versionid` or `registryid`.")
    def entityid(self) -> str:
        return self.entity.id

    name: str | None = attr()
    description: str | None = attr()
    documentation: str | None = attr()
    icon: str | None = attr()
    deprecated: JSON | None = attr()

    @strawberry.field(description="The revision that wrote the entity's state (null for a remote registry's "
                                  "entities, which have no revisions).")
    @reads("entity.revision")
    def revision(self) -> int | None:
        return self.entity.revision

    @strawberry.field(description="The entity's labels.")
    def labels(self) -> list[Label]:
        labels = self.entity.attribute("labels") or {}
        return [Label(key=k, value=str(v)) for k, v in labels.items()] if isinstance(labels, dict) else []

    @strawberry.field(description="The value of one label.")
    def label(self, key: str) -> str | None:
        labels = self.entity.attribute("labels")
        return labels.get(key) if isinstance(labels, dict) else None


@strawberry.interface(description="A group; its type (`endpoints`, …) comes from the registry's model.")
class Group(Entity):
    @strawberry.field(name="type", description="The group type (plural), e.g. `messagegroups`.")
    def group_type(self) -> str:
        return self.entity.ctype

    @paged_field("The group's resources of one type.")
    async def resources(
        self, info: Info, resource_type: str, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Resource] | None:
        gdef = info.context.sources[self.entity.registry].model.group(self.entity.ctype)
        if gdef is None or resource_type not in gdef.resources:
            raise XRegistryError("unknown_resource_type", self.entity.xid, name=resource_type, group=self.entity.ctype)
        return await collection(info, self.entity, (f"{self.entity.ctype}/{resource_type}",), filter, sort,
                                paging)


@strawberry.interface(description="A resource: its default version's attributes, its `meta` and its versions.")
class Resource(Entity):
    @strawberry.field(name="type", description="The resource type (plural), e.g. `schemas`.")
    def resource_type(self) -> str:
        return self.entity.ctype.split("/")[-1]

    versionid: str | None = attr("The default version's id.")
    isdefault: bool | None = attr()
    ancestorid: str | None = attr("The default version's ancestor.")
    contenttype: str | None = attr()

    @strawberry.field(description="The group the resource belongs to.")
    async def group(self, info: Info) -> Group | None:
        return await load_node(info, self.entity, str(Xid.parse(self.entity.xid).group))

    @strawberry.field(description="The resource's `meta` entity.")
    async def meta(self, info: Info) -> Meta | None:
        e = self.entity
        meta_xid = str(Xid.parse(e.xid).meta_of())
        if e.meta is not None:
            return Meta(entity=SourceEntity(e.registry, e.meta.get("xid", meta_xid), "meta", e.ctype, e.meta,
                                            e.as_of))
        return await load_node(info, e, meta_xid)

    @paged_field("The resource's versions.")
    async def versions(
        self, info: Info, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> VersionConnection | None:
        return await version_connection(info, self.entity, filter, sort, paging, GenericVersionConnection)

    @strawberry.field(description="The default version.")
    async def defaultversion(self, info: Info) -> Version | None:
        vid = self.entity.view.get("versionid")
        return await load_node(info, self.entity, str(Xid.parse(self.entity.xid).version(str(vid)))) if vid else None


@strawberry.interface(description="One version of a resource.")
class Version(Entity):
    versionid: str = attr()
    isdefault: bool | None = attr("Whether this is the resource's default version.")
    ancestorid: str | None = attr("The version this one derives from.")
    contenttype: str | None = attr()

    @strawberry.field(description="The resource the version belongs to.")
    async def resource(self, info: Info) -> Resource | None:
        return await load_node(info, self.entity, str(Xid.parse(self.entity.xid).resource))


# -- any other model -------------------------------------------------------------------------


@stands_for("group")
@strawberry.type(description="A group of a type this schema has no typed object for.")
class GenericGroup(Group):
    pass


@stands_for("resource")
@strawberry.type(description="A resource of a type this schema has no typed object for.")
class GenericResource(Resource):
    pass


@stands_for("version")
@strawberry.type(description="A version of a resource type this schema has no typed object for.")
class GenericVersion(Version):
    pass


@stands_for("meta")
@strawberry.type(description="A resource's `meta`: its default-version settings and references.")
class Meta(Node):
    readonly: bool | None = attr()
    compatibility: str | None = attr()
    defaultversionid: str | None = attr()
    defaultversionsticky: bool | None = attr()
    defaultversionurl: str | None = attr()
    xref: str | None = attr("The XID of the resource this one stands for.")

    @strawberry.field(description="The resource `xref` points at.")
    async def xrefresource(self, info: Info) -> Resource | None:
        reference = self.entity.view.get("xref")
        target = await resolve(info, self.entity, reference) if reference else None
        node = to_node(target) if target is not None else None
        return node if isinstance(node, Resource) else None

    @strawberry.field(description="The resource this `meta` belongs to.")
    async def resource(self, info: Info) -> Resource | None:
        return await load_node(info, self.entity, str(Xid.parse(self.entity.xid).resource))


# -- version connections (typed ones: with their resource types) -----------------------------


@strawberry.interface(description="A version and its cursor.")
class VersionEdge:
    cursor: str
    node: Version


@strawberry.type(description="A version (of a resource type without a typed object here) and its cursor.")
class GenericVersionEdge(VersionEdge):
    pass


@strawberry.interface(description="A page of versions: `Message.versions` gives `MessageVersion`s, `Schema.versions` "
                                  "`SchemaVersion`s.")
class VersionConnection:
    page: Private[Connection]

    @strawberry.field(description="The page's nodes.")
    def nodes(self) -> list[Version]:
        return self.page.nodes

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[VersionEdge]:
        return self._edges(GenericVersionEdge)

    @strawberry.field(description="Cursors of the first and last node; whether more pages exist.")
    def page_info(self) -> PageInfo:
        return self.page.info_of_page()

    @strawberry.field(description="How many nodes the whole collection (with the filter) has.")
    def total_count(self) -> int:
        return self.page.count()  # type: ignore[return-value]  # maybe awaitable: strawberry awaits it

    def _edges(self, edge: type) -> list[Any]:
        return [edge(cursor=c, node=n) for c, n in zip(self.page.cursors, self.page.nodes, strict=False)]


@strawberry.type(description="A page of versions of a resource type without a typed object here.")
class GenericVersionConnection(VersionConnection):
    pass


_V = TypeVar("_V", bound=VersionConnection)


async def version_connection(
    info: Info, resource: SourceEntity, filter: Filter | None, sort: SortBy | None, paging: Paging,
    kind: type[_V],
) -> _V:
    """A page of ``resource``'s versions as a ``kind`` connection."""
    return kind(page=await collection(info, resource, (f"{resource.ctype}/versions",), filter, sort, paging))

