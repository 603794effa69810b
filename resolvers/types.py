"""The GraphQL object types: registries and their entities, typed for the message, endpoint and
schema domains, generic for group and resource types known only from a registry's model.

Every object wraps one source :class:`~adapters.base.Entity` (its xRegistry view). Attributes
resolve synchronously from that view; only navigation (nested collections, references, the
parent, versions) awaits, through the request's loaders. Nested reads inherit the revision the
entity was read at, so a registry read ``asOf`` a revision stays at that revision throughout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from enum import Enum
from typing import Any, TypeVar

import strawberry
from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode
from strawberry import ID, Private
from strawberry.scalars import JSON
from strawberry.types import Info, get_object_definition

from adapters.base import ChangeItem, SourceUnavailable
from adapters.base import Entity as SourceEntity
from adapters.effective import MESSAGE_TYPES
from resolvers.connections import Connection, PageInfo, Paging, connection, make_listing, page_size, paged_field
from resolvers.federation import RegistryStatus, unsearchable
from resolvers.filters import (
    EndpointFilter,
    Filter,
    MessageFilter,
    MessageGroupFilter,
    SchemaFilter,
    SortBy,
    to_filters,
    to_sort,
)
from resolvers.gathering import gather, settled
from resolvers.ids import global_id
from resolvers.references import only, resolve, resolve_each
from resolvers.scalars import Timestamp
from xreg.errors import XRegistryError
from xreg.xid import Xid

_NO_ATTRIBUTES: dict[str, Any] = {}
#: View attributes that are links to collections, not attributes of the entity.
_LINKS = ("url", "count")


def attr(description: str | None = None) -> Any:
    """An attribute field: read from the entity's view of the same name by :func:`read_field`
    (a resolver-less field, the cheapest kind to resolve)."""
    return strawberry.field(default=None, description=description)


def read_field(obj: Any, name: str) -> Any:
    """The default resolver: an entity's attribute fields read its attributes (a message's
    materialised view, any other entity's view), anything else is getattr."""
    entity = getattr(obj, "__dict__", _NO_ATTRIBUTES).get("entity")
    if isinstance(entity, SourceEntity):
        return entity.attribute(name)
    return getattr(obj, name)


F = TypeVar("F", bound=Callable[..., Any])


def reads(path: str) -> Callable[[F], F]:
    """Marks a resolver method that only returns ``self.<path>`` (dotted): the executor reads
    the path itself (``operator.attrgetter``) instead of calling the method."""
    def mark(method: F) -> F:
        method.reads = path  # type: ignore[attr-defined]
        return method
    return mark


def batched(many: Callable[..., Awaitable[list[Any]]], *, each: bool = False) -> Callable[[F], F]:
    """Marks a resolver method with its form for many objects: ``many(objects, infos, **arguments)``
    gives each object's value, in order (an exception for an object that failed). Executing a
    query level by level, the executor calls it once for all the objects of a level that give the
    field the same arguments (``resolvers/execution.py``); the method itself serves one object.

    With ``each``, the form takes each call's arguments, ``many(objects, infos, arguments)``
    (a list of keyword dictionaries), and is called once for all the calls of a level whatever
    their arguments: a root field (one object) called under several aliases."""
    if each:
        many.each = True  # type: ignore[attr-defined]

    def mark(method: F) -> F:
        method.many = many  # type: ignore[attr-defined]
        return method
    return mark


def attribute_reader(origin: type | None, name: str) -> Callable[[Any], Any]:
    """:func:`read_field` of the attribute ``name`` for objects of ``origin``, specialised: an
    object type wrapping an ``entity`` reads the entity's attribute directly."""
    if origin is not None and dataclasses.is_dataclass(origin) and any(
            f.name == "entity" for f in dataclasses.fields(origin)):
        def read(obj: Any) -> Any:
            entity = obj.entity
            return entity.attribute(name) if isinstance(entity, SourceEntity) else getattr(obj, name)
        read.entity_attribute = name  # type: ignore[attr-defined]  # what the executor may read in place
        return read
    return lambda obj: read_field(obj, name)


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        fields = get_object_definition(cls, strict=True).fields
        names = _FIELD_NAMES[cls] = frozenset(n for f in fields for n in (f.python_name, f.graphql_name) if n)
    return names


def _is_link(key: str, view: dict[str, Any]) -> bool:
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
            out.append(await _across(infos[k], source, listing))
        else:
            nested.append((len(out), k, owner, listing))
            out.append(None)  # its page's
    if not nested:
        return out
    if at_once:
        pages = await _pages_at_once(ctx, [(owner, listing) for _, _, owner, listing in nested])
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


async def _pages_at_once(ctx: Any, wanted: list[tuple[SourceEntity, Any]]) -> list[Any]:
    """Each owner's page under its listing: one read per registry and listing (or its error)."""
    groups: dict[tuple[str, int], tuple[Any, list[str]]] = {}
    for owner, listing in wanted:
        groups.setdefault((owner.registry, id(listing)), (listing, []))[1].append(owner.xid)
    found = await gather(*(ctx.loaders.children_of(registry, listing, parents)
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


async def _across(info: Info, source: Any, listing: Any) -> Connection | Exception:
    """A registry-wide connection: its page, and its count when asked."""
    ctx = info.context
    try:
        page = await source.list(listing)
        ctx.loaders.prime(page.items)
        page.items = await ctx.loaders.settle(page.items)
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


def bare_registry(rid: str, as_of: int | None = None) -> Registry:
    """The registry ``rid`` without its record read: its ids alone."""
    return Registry(entity=SourceEntity(rid, "/", "registry", "", {"registryid": rid, "xid": "/"}, as_of=as_of))


async def _load(info: Info, owner: SourceEntity, xid: str) -> Any:
    entity = await info.context.loaders.entity(owner.registry, xid, owner.as_of)
    return to_node(entity) if entity is not None else None


def _nested(resource_type: str) -> Callable[..., Awaitable[list[Any]]]:
    """The form for many groups of their connection to their ``resource_type`` resources (every
    group of a level asking: their pages are read at once)."""
    async def many(groups: list[Any], infos: list[Info], filter: Filter | None = None, sort: SortBy | None = None,
                   *, paging: Paging) -> list[Any]:
        owners = [g.entity for g in groups]
        return await collections(infos, owners, [(f"{o.ctype}/{resource_type}",) for o in owners], filter, sort,
                                 paging, at_once=True)
    return many


_messages_of = _nested("messages")
_schemas_of = _nested("schemas")


def _listed(value: Any) -> list[Any]:
    """An attribute that holds one reference or a list of them, as a list."""
    return value if isinstance(value, list) else [value] if value else []


async def _messagegroups_of(endpoints: list[Any], infos: list[Info], *, at_once: bool = True) -> list[Any]:
    """The message groups of many endpoints (their ``messagegroups`` references, resolved together;
    ``at_once``: they are every endpoint of a level, see :func:`~resolvers.references.resolve_each`)."""
    owners = [e.entity for e in endpoints]
    found = await resolve_each(infos, owners, [_listed(o.declared("messagegroups")) for o in owners],
                               ("messagegroups",), at_once=at_once)
    return [f if isinstance(f, Exception) else [node_of(MessageGroup, e) for e in f if e is not None] for f in found]


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
        return JSON({k: v for k, v in view.items() if k not in known and not _is_link(k, view)})

    @strawberry.field(name="json", description="The entity's whole xRegistry JSON serialization.")
    def json_view(self, info: Info) -> JSON:
        # synchronous unless the collection counts are still to be read
        return JSON(info.context.loaders.views.load(self.entity) if self.entity.partial else self.entity.view)

    @strawberry.field(description="The registry the entity belongs to (at the same revision); never null — a "
                                  "registry that cannot be read now gives its ids alone, with the error reported.")
    async def registry(self, info: Info) -> Registry:
        try:
            found = await _load(info, self.entity, "/")
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
        return await _load(info, self.entity, str(Xid.parse(self.entity.xid).group))

    @strawberry.field(description="The resource's `meta` entity.")
    async def meta(self, info: Info) -> Meta | None:
        e = self.entity
        meta_xid = str(Xid.parse(e.xid).meta_of())
        if e.meta is not None:
            return Meta(entity=SourceEntity(e.registry, e.meta.get("xid", meta_xid), "meta", e.ctype, e.meta,
                                            e.as_of))
        return await _load(info, e, meta_xid)

    @paged_field("The resource's versions.")
    async def versions(
        self, info: Info, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> VersionConnection | None:
        return await _versions(info, self.entity, filter, sort, paging, GenericVersionConnection)

    @strawberry.field(description="The default version.")
    async def defaultversion(self, info: Info) -> Version | None:
        vid = self.entity.view.get("versionid")
        return await _load(info, self.entity, str(Xid.parse(self.entity.xid).version(str(vid)))) if vid else None


@strawberry.interface(description="One version of a resource.")
class Version(Entity):
    versionid: str = attr()
    isdefault: bool | None = attr("Whether this is the resource's default version.")
    ancestorid: str | None = attr("The version this one derives from.")
    contenttype: str | None = attr()

    @strawberry.field(description="The resource the version belongs to.")
    async def resource(self, info: Info) -> Resource | None:
        return await _load(info, self.entity, str(Xid.parse(self.entity.xid).resource))


# -- message domain --------------------------------------------------------------------------


#: The fields of a :class:`DataSchema` that read what its reference points at.
_READS_TARGET = frozenset({"xid", "registryid", "schema", "version", "document"})


@dataclasses.dataclass(slots=True)
class _Found:
    """What a message's schema reference points at, as far as the query reads it: the target (a
    schema or a schema version), the schema resource and the schema version it stands for (a
    version reference's resource, a schema reference's default version); ``failed``: why the
    extra load of the one or the other failed, by its name."""

    target: SourceEntity | None = None
    schema: SourceEntity | None = None
    version: SourceEntity | None = None
    failed: dict[str, Exception] = dataclasses.field(default_factory=dict)

    def node(self, name: str, cls: type) -> Any:
        """The object of the ``schema`` or ``version`` found when it is a ``cls`` (the failure
        of its load raised)."""
        entity = getattr(self, name)
        if entity is None and name in self.failed:
            raise self.failed[name]
        node = to_node(entity) if entity is not None else None
        return node if isinstance(node, cls) else None


@strawberry.type(description="The payload schema of a message: inline, or a reference into any registry.")
class DataSchema:
    message: Private[SourceEntity]
    found: Private[_Found]  # resolved with the schemas of the other messages of the level (:func:`dataschemas_of`)

    @strawberry.field(description="The message's `dataschemaformat`.")
    def format(self) -> str | None:
        return self.message.attribute("dataschemaformat")

    @strawberry.field(description="The inline schema (`dataschema`), when the message carries one.")
    def inline(self) -> JSON | None:
        return self.message.attribute("dataschema")

    @strawberry.field(description="The `dataschemauri`, as written.")
    def uri(self) -> str | None:
        return self.message.attribute("dataschemauri")

    @strawberry.field(description="The XID of the schema or schema version the reference resolves to.")
    def xid(self) -> str | None:
        target = self.found.target
        return target.xid if target is not None else None

    @strawberry.field(description="The registry the referenced schema is in.")
    def registryid(self) -> str | None:
        target = self.found.target
        return target.registry if target is not None else None

    @strawberry.field(description="The schema the reference points at (the resource of a version reference).")
    def schema(self) -> Schema | None:
        return self.found.node("schema", Schema)

    @strawberry.field(description="The version the reference points at (a schema reference: its default version).")
    def version(self) -> SchemaVersion | None:
        return self.found.node("version", SchemaVersion)

    @strawberry.field(description="The schema document: the inline schema, or the referenced version's `schema`.")
    def document(self) -> JSON | None:
        inline = self.message.attribute("dataschema")
        if inline is not None:
            return inline
        target = self.found.target
        return target.attribute("schema") if target is not None else None


def _dataschema_reference(ctx: Any, message: SourceEntity) -> tuple[SourceEntity, str] | None:
    """The schema reference of ``message`` and the entity it was written in (references in an
    inherited attribute are relative to its base's registry); ``None`` when it has none that
    points into a registry (a ``dataschemauri`` may name a schema document elsewhere)."""
    name = "dataschemaxid" if message.attribute("dataschemaxid") else "dataschemauri"
    reference = message.attribute(name)
    if not reference:
        return None
    owner = _writer_of(message, name)
    if name == "dataschemauri":
        try:
            ctx.references.targets(reference, owner.registry, owner.xid)
        except XRegistryError:
            return None  # a schema document outside the registries: not a registry reference
    return owner, reference


async def dataschema_targets(infos: Sequence[Info], messages: Sequence[SourceEntity], *,
                             at_once: bool = False) -> list[SourceEntity | None]:
    """What each message's schema reference points at (a schema or a schema version), resolved
    together (``None``: no registry reference, or one that does not resolve, reported); a
    message whose resolution failed otherwise has its exception. ``at_once``: as
    :func:`~resolvers.references.resolve_each`."""
    ctx = infos[0].context
    wanted = [(k, ref) for k, m in enumerate(messages) if (ref := _dataschema_reference(ctx, m)) is not None]
    out: list[Any] = [None] * len(messages)
    if wanted:
        found = await resolve_each([infos[k] for k, _ in wanted], [owner for _, (owner, _) in wanted],
                                   [[reference] for _, (_, reference) in wanted], ("schemas", "schemas/versions"),
                                   at_once=at_once)
        for (k, _), targets in zip(wanted, found, strict=True):
            out[k] = targets if isinstance(targets, Exception) else targets[0]
    return out


async def dataschemas_of(objects: list[Any], infos: Sequence[Info], *,
                         at_once: bool = True) -> list[DataSchema | Exception | None]:
    """The payload schemas of many messages (objects wrapping them; ``at_once``: every message of
    a level). Their references are resolved together when the query reads what they point at
    (:data:`_READS_TARGET`), and then the schema resources of version references and the default
    versions of schema references that it reads, together again."""
    schemas: list[DataSchema | Exception | None] = []
    asking: list[tuple[int, DataSchema, frozenset[str]]] = []  # place, schema, the target fields asked for
    asked: dict[int, frozenset[str]] = {}
    for k, obj in enumerate(objects):
        made = _dataschema(obj.entity)
        schemas.append(made)
        if made is None:
            continue
        names = _asked(infos[k], asked)
        # the document of a message with an inline schema is that schema
        if names - {"document"} or (names and obj.entity.attribute("dataschema") is None):
            asking.append((k, made, names))
    if not asking:
        return schemas
    ctx = infos[0].context
    targets = await dataschema_targets([infos[k] for k, _, _ in asking], [objects[k].entity for k, _, _ in asking],
                                       at_once=at_once)
    follow: list[tuple[_Found, str, SourceEntity, str]] = []  # found, its slot, the target, the XID to load
    for (k, schema, names), target in zip(asking, targets, strict=True):
        if isinstance(target, Exception):
            schemas[k] = target
            continue
        if target is None:
            continue
        found = schema.found = _Found(target)
        if target.kind == "version":
            found.version = target
            if "schema" in names:
                follow.append((found, "schema", target, str(Xid.parse(target.xid).resource)))
        else:
            found.schema = target
            versionid = target.attribute("versionid") if "version" in names and target.kind == "resource" else None
            if versionid:
                follow.append((found, "version", target, str(Xid.parse(target.xid).version(str(versionid)))))
    if follow:
        loaded = await gather(*(ctx.loaders.entity(t.registry, xid, t.as_of) for _, _, t, xid in follow), settle=True)
        for (found, slot, _, _), entity in zip(follow, loaded, strict=True):
            if isinstance(entity, Exception):
                found.failed[slot] = entity
            else:
                setattr(found, slot, entity)
    return schemas


def _asked(info: Info, memo: dict[int, frozenset[str]]) -> frozenset[str]:
    """Which fields of :data:`_READS_TARGET` the query selects under ``info``'s field (through
    fragments; remembered in ``memo`` per list of field nodes)."""
    raw = info._raw_info
    nodes = raw.field_nodes
    names = memo.get(id(nodes))
    if names is None:
        names = memo[id(nodes)] = frozenset(_selected(nodes, raw.fragments) & _READS_TARGET)
    return names


def _selected(nodes: Sequence[FieldNode], fragments: dict[str, Any]) -> set[str]:
    """The names of the fields selected directly under ``nodes``, fragments included."""
    names: set[str] = set()
    spread: set[str] = set()
    pending = [n.selection_set for n in nodes if n.selection_set is not None]
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode):
                names.add(selection.name.value)
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                fragment = fragments.get(selection.name.value)
                if fragment is not None:
                    pending.append(fragment.selection_set)
    return names


def _writer_of(message: SourceEntity, attribute: str) -> SourceEntity:
    """The entity a (materialised) attribute of ``message`` was written in: the base it was
    inherited from (references in it are relative to that base's registry), or the message."""
    origin = message.origin(attribute)
    if origin is None or origin[0] == message.registry:
        return message
    return SourceEntity(origin[0], origin[1], "resource", "", {}, None)


@strawberry.type(description="An attribute a message takes from a base message, and that base.")
class Inherited:
    attribute: str
    xid: str = strawberry.field(description="The base message (or message version) that supplies the value.")
    registryid: str = strawberry.field(description="The registry of that base.")


@strawberry.type(description="What a message (or message version) declares itself, before its `basemessageuri` "
                             "chain is merged.")
class DeclaredMessage:
    entity: Private[SourceEntity]  # the message without its materialisation: fields read its view
    name: str | None = attr()
    description: str | None = attr()
    documentation: str | None = attr()
    icon: str | None = attr()
    basemessageuri: str | None = attr()
    envelope: str | None = attr()
    envelopemetadata: JSON | None = attr()
    envelopeoptions: JSON | None = attr()
    protocol: str | None = attr()
    protocoloptions: JSON | None = attr()
    dataschemaformat: str | None = attr()
    dataschemauri: str | None = attr()
    dataschemaxid: str | None = attr()
    datacontenttype: str | None = attr()

    @strawberry.field(description="The labels the message declares.")
    def labels(self) -> list[Label]:
        labels = self.entity.declared("labels") or {}
        return [Label(key=k, value=str(v)) for k, v in labels.items()] if isinstance(labels, dict) else []

    @strawberry.field(description="The payload schema the message declares.")
    @batched(dataschemas_of)
    async def dataschema(self, info: Info) -> DataSchema | None:
        return only(await dataschemas_of([self], [info], at_once=False))


def _dataschema(entity: SourceEntity) -> DataSchema | None:
    if entity.attribute("dataschema") is None and not entity.attribute("dataschemauri") \
            and not entity.attribute("dataschemaxid"):
        return None
    return DataSchema(message=entity, found=_NOTHING)


_NOTHING = _Found()  # nothing read (yet) of a schema reference: never changed


@strawberry.interface(description="The attributes of a message definition (message domain). Every attribute is "
                                  "the materialised value: the `basemessageuri` chain followed to its end and "
                                  "merged back up (message/spec.md); `declared` gives what the message states "
                                  "itself and `inheritedFrom` where each inherited value comes from.")
class MessageDefinition:
    entity: Private[SourceEntity]  # as every Node's (this interface is mixed into nodes)
    basemessageuri: str | None = attr()
    envelope: str | None = attr("e.g. `CloudEvents/1.0`.")
    envelopemetadata: JSON | None = attr()
    envelopeoptions: JSON | None = attr()
    protocol: str | None = attr("e.g. `KAFKA`, `MQTT/5.0`, `AMQP/1.0`, `HTTP`.")
    protocoloptions: JSON | None = attr()
    dataschemaformat: str | None = attr()
    dataschemauri: str | None = attr()
    dataschemaxid: str | None = attr()
    datacontenttype: str | None = attr()

    @strawberry.field(description="The message this one is based on (`basemessageuri`, in any registry; a "
                                  "version reference gives its message).")
    async def basemessage(self, info: Info) -> Message | None:
        reference = self.entity.declared("basemessageuri")
        target = await resolve(info, self.entity, reference, MESSAGE_TYPES) if reference else None
        if target is not None and target.kind == "version":
            return await _load(info, target, str(Xid.parse(target.xid).resource))
        node = to_node(target) if target is not None else None
        return node if isinstance(node, Message) else None

    @strawberry.field(description="What the message declares itself (its own attributes, nothing inherited).")
    def declared(self) -> DeclaredMessage:
        return DeclaredMessage(entity=replace(self.entity, materialised=None))

    @strawberry.field(name="inheritedFrom", description="The attributes taken from a base message, each with the "
                                                        "base that supplies it (nearest first in the chain).")
    def inherited_from(self) -> list[Inherited]:
        m = self.entity.materialised
        return [Inherited(attribute=a, xid=x, registryid=r) for a, (r, x) in sorted(m.inherited.items())] if m else []

    @strawberry.field(name="unresolvedBase", description="Where the `basemessageuri` chain stopped short (a "
                                                         "dangling or unreachable reference, a cycle), or null. Not an "
                                                         "error: the message shows what did resolve.")
    def unresolved_base(self, info: Info) -> str | None:
        m = self.entity.materialised
        if m is None or m.unresolved is None:
            return None
        for problem in m.problems:
            info.context.report(problem, info)
        return m.unresolved[0]

    @strawberry.field(description="The materialised definition as one JSON object (the typed fields' values, "
                                  "extension attributes included). A base that does not resolve is not an error "
                                  "here (message/spec.md): `unresolvedBase` says where the chain stopped.")
    def effective(self) -> JSON:
        return JSON({k: v for k, v in self.entity.attributes.items() if not _is_link(k, self.entity.view)})

    @strawberry.field(description="The payload schema: inline, `dataschemaxid` or `dataschemauri` (in any registry).")
    @batched(dataschemas_of)
    async def dataschema(self, info: Info) -> DataSchema | None:
        return only(await dataschemas_of([self], [info], at_once=False))


@strawberry.type(description="A message definition.")
class Message(Resource, MessageDefinition):
    messageid: str = attr("The message's id.")

    @paged_field("The message's versions.")
    async def versions(
        self, info: Info, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> MessageVersionConnection | None:
        return await _versions(info, self.entity, filter, sort, paging, MessageVersionConnection)

    @strawberry.field(description="The default version.")
    async def defaultversion(self, info: Info) -> MessageVersion | None:
        vid = self.entity.view.get("versionid")
        return await _load(info, self.entity, str(Xid.parse(self.entity.xid).version(str(vid)))) if vid else None


@strawberry.type(description="A version of a message definition.")
class MessageVersion(Version, MessageDefinition):
    messageid: str = attr("The message's id.")


@strawberry.type(description="A group of message definitions.")
class MessageGroup(Group):
    messagegroupid: str = attr("The message group's id.")
    envelope: str | None = attr()
    protocol: str | None = attr()

    @paged_field("The group's messages.")
    @batched(_messages_of)
    async def messages(
        self, info: Info, filter: MessageFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Message] | None:
        return await collection(info, self.entity, (f"{self.entity.ctype}/messages",), filter, sort, paging)


# -- endpoint domain -------------------------------------------------------------------------


@strawberry.type(description="An endpoint: where messages are sent or received.")
class Endpoint(Group):
    endpointid: str = attr("The endpoint's id.")
    usage: list[str] | None = attr("`producer`, `consumer`, `subscriber`.")
    channel: str | None = attr()
    envelope: str | None = attr()
    envelopeoptions: JSON | None = attr()
    protocol: str | None = attr()
    protocoloptions: JSON | None = attr()

    @strawberry.field(description="The message groups the endpoint references, in any registry (those that do "
                                  "not resolve are left out and reported in `errors`).")
    @batched(_messagegroups_of)
    async def messagegroups(self, info: Info) -> list[MessageGroup]:
        return only(await _messagegroups_of([self], [info], at_once=False))

    @strawberry.field(description="The MQTT will message (`protocoloptions.willmessage`).")
    async def willmessage(self, info: Info) -> Message | None:
        options = self.entity.declared("protocoloptions")
        reference = options.get("willmessage") if isinstance(options, dict) else None
        target = await resolve(info, self.entity, reference, ("messages",)) if reference else None
        node = to_node(target) if target is not None else None
        return node if isinstance(node, Message) else None

    @paged_field("The endpoint's own messages.")
    @batched(_messages_of)
    async def messages(
        self, info: Info, filter: MessageFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Message] | None:
        return await collection(info, self.entity, (f"{self.entity.ctype}/messages",), filter, sort, paging)


# -- schema domain ---------------------------------------------------------------------------


@strawberry.interface(description="The attributes of a schema document (schema domain).")
class SchemaDefinition:
    format: str | None = attr("e.g. `JsonSchema/draft-07`, `Avro/1.9`.")
    schema: JSON | None = attr("The schema document, when stored inline.")
    schemauri: str | None = attr()
    schemaurl: str | None = attr()
    schemabase64: str | None = attr()
    formatvalidated: bool | None = attr("Whether the document was checked against its `format` and found valid "
                                        "(false: not valid, or not checked — `formatvalidatedreason` says which).")
    formatvalidatedreason: str | None = attr("Why `formatvalidated` is false: the violations found, or why the "
                                             "document was not checked.")
    compatibilityvalidated: bool | None = attr("Whether the version was checked against the schema's "
                                               "`compatibility` rule and keeps it.")
    compatibilityvalidatedreason: str | None = attr("Why `compatibilityvalidated` is false: what breaks the rule, "
                                                    "or why it was not checked.")


@strawberry.type(description="A schema: its default version's document, and its versions.")
class Schema(Resource, SchemaDefinition):
    schemaid: str = attr("The schema's id.")

    @paged_field("The schema's versions.")
    async def versions(
        self, info: Info, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> SchemaVersionConnection | None:
        return await _versions(info, self.entity, filter, sort, paging, SchemaVersionConnection)

    @strawberry.field(description="The default version.")
    async def defaultversion(self, info: Info) -> SchemaVersion | None:
        vid = self.entity.view.get("versionid")
        return await _load(info, self.entity, str(Xid.parse(self.entity.xid).version(str(vid)))) if vid else None


@strawberry.type(description="A version of a schema.")
class SchemaVersion(Version, SchemaDefinition):
    schemaid: str = attr("The schema's id.")


@strawberry.type(description="A group of schemas.")
class SchemaGroup(Group):
    schemagroupid: str = attr("The schema group's id.")
    format: str | None = attr()

    @paged_field("The group's schemas.")
    @batched(_schemas_of)
    async def schemas(
        self, info: Info, filter: SchemaFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Schema] | None:
        return await collection(info, self.entity, (f"{self.entity.ctype}/schemas",), filter, sort, paging)


# -- any other model -------------------------------------------------------------------------


@strawberry.type(description="A group of a type this schema has no typed object for.")
class GenericGroup(Group):
    pass


@strawberry.type(description="A resource of a type this schema has no typed object for.")
class GenericResource(Resource):
    pass


@strawberry.type(description="A version of a resource type this schema has no typed object for.")
class GenericVersion(Version):
    pass


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
        return await _load(info, self.entity, str(Xid.parse(self.entity.xid).resource))


# -- version connections, typed by resource type ---------------------------------------------


@strawberry.interface(description="A version and its cursor.")
class VersionEdge:
    cursor: str
    node: Version


@strawberry.type(description="A message version and its cursor.")
class MessageVersionEdge(VersionEdge):
    node: MessageVersion


@strawberry.type(description="A schema version and its cursor.")
class SchemaVersionEdge(VersionEdge):
    node: SchemaVersion


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


@strawberry.type(description="A page of message versions.")
class MessageVersionConnection(VersionConnection):
    @strawberry.field(description="The page's nodes.")
    def nodes(self) -> list[MessageVersion]:
        return self.page.nodes

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[MessageVersionEdge]:
        return self._edges(MessageVersionEdge)


@strawberry.type(description="A page of schema versions.")
class SchemaVersionConnection(VersionConnection):
    @strawberry.field(description="The page's nodes.")
    def nodes(self) -> list[SchemaVersion]:
        return self.page.nodes

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[SchemaVersionEdge]:
        return self._edges(SchemaVersionEdge)


@strawberry.type(description="A page of versions of a resource type without a typed object here.")
class GenericVersionConnection(VersionConnection):
    pass


_V = TypeVar("_V", bound=VersionConnection)

#: The connection of each resource type's versions.
_VERSION_CONNECTIONS: dict[str, type[VersionConnection]] = {
    "messages": MessageVersionConnection, "schemas": SchemaVersionConnection}


async def _versions(
    info: Info, resource: SourceEntity, filter: Filter | None, sort: SortBy | None, paging: Paging,
    kind: type[_V],
) -> _V:
    """A page of ``resource``'s versions as a ``kind`` connection."""
    return kind(page=await collection(info, resource, (f"{resource.ctype}/versions",), filter, sort, paging))


# -- the registry ----------------------------------------------------------------------------


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
        return await _load(info, self.entity, xid)

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


# -- mapping ---------------------------------------------------------------------------------


_GROUPS: dict[str, type] = {"endpoints": Endpoint, "messagegroups": MessageGroup, "schemagroups": SchemaGroup}
_RESOURCES: dict[str, type] = {"messages": Message, "schemas": Schema}
_VERSIONS: dict[str, type] = {"messages": MessageVersion, "schemas": SchemaVersion}

#: Every object type (some are reachable only through interfaces).
TYPES = (Registry, Endpoint, MessageGroup, SchemaGroup, Message, MessageVersion, Schema, SchemaVersion,
         GenericGroup, GenericResource, GenericVersion, Meta, Change, MessageVersionConnection, SchemaVersionConnection,
         GenericVersionConnection, MessageVersionEdge, SchemaVersionEdge, GenericVersionEdge)


def node_of(cls: type, entity: SourceEntity) -> Any:
    """``cls(entity=entity)`` for an entity's object type, made without the dataclass's
    ``__init__``: only ``entity`` is set on the object. Its attribute fields (``attr()``, default
    ``None``) are read from the entity, never from the object, so the per-object copies of
    their defaults that ``__init__`` would store are left to the class's (the same ``None``)."""
    obj: Any = _new(cls)
    obj.__dict__["entity"] = entity
    return obj


_new = object.__new__


def _node_class(kind: str, ctype: str) -> type:
    """The object type of entities of ``kind`` in collections of ``ctype``."""
    if kind == "registry":
        return Registry
    if kind == "group":
        return _GROUPS.get(ctype, GenericGroup)
    parts = ctype.split("/")
    if kind == "resource":
        return _RESOURCES.get(parts[-1], GenericResource)
    if kind == "version":
        return _VERSIONS.get(parts[-2] if len(parts) > 2 else "", GenericVersion)
    return Meta


#: :func:`_node_class` by ``(kind, ctype)``: a registry model has a few collection types
_NODE_CLASSES: dict[tuple[str, str], type] = {}


def to_node(entity: SourceEntity) -> Any:
    """The GraphQL object for a source entity."""
    key = (entity.kind, entity.ctype)
    cls = _NODE_CLASSES.get(key)
    if cls is None:
        if len(_NODE_CLASSES) >= 256:  # models are few, but a remote registry's types are its own
            _NODE_CLASSES.clear()
        cls = _NODE_CLASSES[key] = _node_class(*key)
    return node_of(cls, entity)
