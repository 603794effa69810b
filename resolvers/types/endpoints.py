"""The endpoint domain's GraphQL type: an endpoint, the message groups it references (in any
registry, resolved for all the endpoints of a query level together) and its own messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from adapters.base import Entity as SourceEntity
from resolvers.connections import Connection, Paging, paged_field
from resolvers.filters import MessageFilter, SortBy
from resolvers.references import ahead_keys, only, resolve, resolve_each
from resolvers.types.ahead import ahead
from resolvers.types.entities import Group
from resolvers.types.fields import attr, batched
from resolvers.types.messages import Message, MessageGroup, messages_of
from resolvers.types.nodes import node_of, stands_for, to_node
from resolvers.types.pages import collection


def _listed(value: Any) -> list[Any]:
    """An attribute that holds one reference or a list of them, as a list."""
    return value if isinstance(value, list) else [value] if value else []


def messagegroups_ahead(ctx: Any, endpoints: Sequence[SourceEntity], nodes: Any, fragments: Any) -> list[Any]:
    """The look-ahead of ``messagegroups`` (``resolvers/types/ahead.py``): the groups each
    endpoint names."""
    return [key for e in endpoints for key in ahead_keys(ctx, e, _listed(e.declared("messagegroups")))]


async def messagegroups_of(endpoints: list[Any], infos: list[Info], *, at_once: bool = True) -> list[Any]:
    """The message groups of many endpoints (their ``messagegroups`` references, resolved together;
    ``at_once``: they are every endpoint of a level, see :func:`~resolvers.references.resolve_each`)."""
    owners = [e.entity for e in endpoints]
    found = await resolve_each(infos, owners, [_listed(o.declared("messagegroups")) for o in owners],
                               ("messagegroups",), at_once=at_once)
    return [f if isinstance(f, Exception) else [node_of(MessageGroup, e) for e in f if e is not None] for f in found]


@stands_for("group", "endpoints")
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
    @batched(messagegroups_of)
    @ahead(messagegroups_ahead)
    async def messagegroups(self, info: Info) -> list[MessageGroup]:
        return only(await messagegroups_of([self], [info], at_once=False))

    @strawberry.field(description="The MQTT will message (`protocoloptions.willmessage`).")
    async def willmessage(self, info: Info) -> Message | None:
        options = self.entity.declared("protocoloptions")
        reference = options.get("willmessage") if isinstance(options, dict) else None
        target = await resolve(info, self.entity, reference, ("messages",)) if reference else None
        node = to_node(target) if target is not None else None
        return node if isinstance(node, Message) else None

    @paged_field("The endpoint's own messages.")
    @batched(messages_of)
    async def messages(
        self, info: Info, filter: MessageFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Message] | None:
        return await collection(info, self.entity, (f"{self.entity.ctype}/messages",), filter, sort, paging)
