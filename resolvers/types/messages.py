"""The message domain's GraphQL types: message groups, messages and their versions, with what a
message inherits through its ``basemessageuri`` chain (``declared``, ``inheritedFrom``) and its
payload schema (:class:`DataSchema`: inline, or a reference into any registry, resolved for all
the messages of a query level together).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import strawberry
from graphql import FieldNode
from strawberry import Private
from strawberry.scalars import JSON
from strawberry.types import Info

from adapters.base import Entity as SourceEntity
from adapters.effective import MESSAGE_TYPES, needs_completion
from resolvers.connections import Connection, Paging, paged_field
from resolvers.filters import Filter, MessageFilter, SortBy
from resolvers.gathering import gather
from resolvers.references import ahead_keys, only, resolve, resolve_each
from resolvers.types.ahead import Key, ahead, fields_under
from resolvers.types.entities import (
    Group,
    Label,
    Resource,
    Version,
    VersionConnection,
    VersionEdge,
    is_link,
    version_connection,
)
from resolvers.types.fields import attr, batched
from resolvers.types.nodes import load_node, stands_for, to_node
from resolvers.types.pages import collection, nested
from resolvers.types.schemas import Schema, SchemaVersion
from xreg.errors import XRegistryError
from xreg.xid import Xid

#: The form for many message groups (or endpoints) of their ``messages`` connections.
messages_of = nested("messages")


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


def dataschemas_ahead(ctx: Any, messages: Sequence[SourceEntity], nodes: Sequence[FieldNode],
                      fragments: dict[str, Any]) -> list[Key]:
    """The look-ahead of ``dataschema`` (``resolvers/types/ahead.py``): what each message's schema
    reference points at, when the query reads it, and the schema resource of a version reference
    when it reads ``schema`` (the version's XID names it). A message whose chain is still to be
    followed gives the reference it declares itself: its own wins (an inherited
    ``dataschemaxid`` names the same schema, message/spec.md)."""
    names = frozenset(_selected(nodes, fragments)) & _READS_TARGET
    if not names:
        return []
    keys: list[Key] = []
    for message in messages:
        if needs_completion(message):
            name = "dataschemaxid" if message.declared("dataschemaxid") else "dataschemauri"
            owner, reference = message, message.declared(name)
            inline = message.declared("dataschema")
        else:
            found = _dataschema_reference(ctx, message)
            owner, reference = found if found is not None else (message, None)
            inline = message.attribute("dataschema")
        if not reference or (names == {"document"} and inline is not None):
            continue
        for key in ahead_keys(ctx, owner, [reference]):
            keys.append(key)
            target = Xid.parse(key[2])  # an XID already (ahead_keys)
            if "schema" in names and target.level == "version":
                keys.append((key[0], key[1], str(target.resource)))
    return keys


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
    """The names of the fields selected directly under ``nodes``, fragments and fields under
    ``@skip``/``@include`` included."""
    return set(fields_under(nodes, fragments, conditional=True))


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
            return await load_node(info, target, str(Xid.parse(target.xid).resource))
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
        return JSON({k: v for k, v in self.entity.attributes.items() if not is_link(k, self.entity.view)})

    @strawberry.field(description="The payload schema: inline, `dataschemaxid` or `dataschemauri` (in any registry).")
    @batched(dataschemas_of)
    @ahead(dataschemas_ahead)
    async def dataschema(self, info: Info) -> DataSchema | None:
        return only(await dataschemas_of([self], [info], at_once=False))


@stands_for("resource", "messages")
@strawberry.type(description="A message definition.")
class Message(Resource, MessageDefinition):
    messageid: str = attr("The message's id.")

    @paged_field("The message's versions.")
    async def versions(
        self, info: Info, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> MessageVersionConnection | None:
        return await version_connection(info, self.entity, filter, sort, paging, MessageVersionConnection)

    @strawberry.field(description="The default version.")
    async def defaultversion(self, info: Info) -> MessageVersion | None:
        vid = self.entity.view.get("versionid")
        return await load_node(info, self.entity, str(Xid.parse(self.entity.xid).version(str(vid)))) if vid else None


@stands_for("version", "messages")
@strawberry.type(description="A version of a message definition.")
class MessageVersion(Version, MessageDefinition):
    messageid: str = attr("The message's id.")


@stands_for("group", "messagegroups")
@strawberry.type(description="A group of message definitions.")
class MessageGroup(Group):
    messagegroupid: str = attr("The message group's id.")
    envelope: str | None = attr()
    protocol: str | None = attr()

    @paged_field("The group's messages.")
    @batched(messages_of)
    async def messages(
        self, info: Info, filter: MessageFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Message] | None:
        return await collection(info, self.entity, (f"{self.entity.ctype}/messages",), filter, sort, paging)


@strawberry.type(description="A message version and its cursor.")
class MessageVersionEdge(VersionEdge):
    node: MessageVersion


@strawberry.type(description="A page of message versions.")
class MessageVersionConnection(VersionConnection):
    @strawberry.field(description="The page's nodes.")
    def nodes(self) -> list[MessageVersion]:
        return self.page.nodes

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[MessageVersionEdge]:
        return self._edges(MessageVersionEdge)

