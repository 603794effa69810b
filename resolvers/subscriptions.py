"""The subscription root: the gateway's registry events (core/events.md) as they are committed.

``registryEvents(types, subject, after)`` streams the events of the gateway's own registry
from the :class:`~adapters.events.EventFeed` the application built: the retained events after
``after`` (a position ``"<revision>.<index>"`` the client saw last; none: only events committed
from now on), then the live ones, in position order, without gap or duplicate. Reconnecting with
``after`` set to the last ``position`` received resumes exactly where the stream stopped.

Each event's ``entity`` is the entity the event is about as it is *now* (its GraphQL type, read
when the event is delivered), ``null`` once it was deleted or for events about the model or
capabilities. The transports (``gateway/graphql_ws.py``, ``gateway/graphql_sse.py``) deliver the
stream; a consumer further behind than ``subscription_buffer`` events is disconnected
(:class:`~adapters.events.SlowConsumer`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import strawberry
from strawberry.types import Info

from adapters.events import EventFeed, EventStream
from resolvers.scalars import Timestamp
from resolvers.types.entities import Node
from resolvers.types.nodes import to_node
from xreg.errors import UserInputError, XRegistryError
from xreg.events import EventPosition, RegistryEvent
from xreg.storage.errors import EventsGone

#: The kinds of entity (``io.xregistry.<entity>.<action>``) whose events have an ``entity``.
_ENTITIES = frozenset({"registry", "group", "resource", "version"})
_TYPE_PREFIX = "io.xregistry."


@strawberry.type(name="RegistryEvent", description="One registry event (core/events.md), as a CloudEvent's "
                                                   "attributes, with the entity it is about.")
class RegistryEventNode:
    event: strawberry.Private[RegistryEvent]

    @property
    def shared_key(self) -> str:
        """What the event's results are shared by (``resolvers.streaming.SharedResults``)."""
        return self.event.id

    @strawberry.field(description="Where the event is in the registry's log, `<revision>.<index>`: pass the last "
                                  "one received as `after` to resume without gap or duplicate.")
    def position(self) -> str:
        return str(self.event.position)

    @strawberry.field(description="The CloudEvent `id`, unique for the registry's lifetime.")
    def id(self) -> str:
        return self.event.id

    @strawberry.field(description="The CloudEvent `type`: `io.xregistry.<entity>.<action>`.")
    def type(self) -> str:
        return self.event.type

    @strawberry.field(description="The XID of the entity the event is about (the CloudEvent `subject`).")
    def subject(self) -> str:
        return self.event.subject

    @strawberry.field(description="When the interaction that caused the event happened (RFC 3339, UTC).")
    def time(self) -> Timestamp:
        return Timestamp(self.event.time)

    @strawberry.field(description="The interaction that caused the event (`xregcorrelationid`): every event of "
                                  "one write shares it.")
    def correlation_id(self) -> str:
        return self.event.correlation_id

    @strawberry.field(description="The attributes an update changed (null for other actions).")
    def changed(self) -> list[str] | None:
        return list(self.event.changed) if self.event.changed is not None else None

    @strawberry.field(description="The entity as it is now, read when the event is delivered; null once deleted, "
                                  "and for events about the model or the capabilities.")
    async def entity(self, info: Info) -> Node | None:
        kind, _, action = self.event.type.removeprefix(_TYPE_PREFIX).rpartition(".")
        if kind not in _ENTITIES or action == "deleted":
            return None
        context = info.context
        found = await context.loaders.entity(context.default_registry, self.event.subject, None)
        return to_node(found) if found is not None else None


class Delivered:
    """The stream's events as GraphQL objects (``async for``); the stream is left when the
    subscription ends (:meth:`aclose`). :meth:`take`, :meth:`ready`, :meth:`listen` and :attr:`caught_up` are
    the stream's own (:class:`~adapters.events.EventStream`), for a transport that drives many
    subscriptions from one task."""

    def __init__(self, follow: AbstractAsyncContextManager[EventStream], stream: EventStream) -> None:
        self._follow, self.stream = follow, stream
        self._closed = False
        self._listener: Callable[[], None] | None = None

    def __aiter__(self) -> Delivered:
        return self

    async def __anext__(self) -> RegistryEventNode:
        if self._closed:
            raise StopAsyncIteration
        return RegistryEventNode(event=await self.stream.__anext__())

    def take(self) -> RegistryEventNode | None:
        """The next event, when it is there without waiting (:meth:`EventStream.take
        <adapters.events.EventStream.take>`)."""
        event = None if self._closed else self.stream.take()
        return RegistryEventNode(event=event) if event is not None else None

    def ready(self) -> bool:
        return self._closed or self.stream.ready()

    def listen(self, listener: Callable[[], None] | None) -> None:
        self._listener = listener
        self.stream.listen(listener)

    @property
    def caught_up(self) -> bool:
        return self.stream.caught_up

    @property
    def overflowed(self) -> bool:
        return self.stream.overflowed

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self.stream.listen(None)
            if self._listener is not None:  # it is ready now: its end
                self._listener()
            await self._follow.__aexit__(None, None, None)


def _feed(info: Info) -> EventFeed:
    feed = getattr(info.context, "events", None)
    if feed is None:
        raise UserInputError("this gateway serves no registry events (no local registry)")
    return feed


@strawberry.type(description="Live results: the registry's events as they are committed.")
class Subscription:
    @strawberry.subscription(description="The events of the gateway's own registry, in position order: those "
                                         "retained after `after` first (without `after`, only events from now on), "
                                         "then the live ones. `types`: any of these CloudEvent types; `subject`: an "
                                         "XID, or an XID prefix ending in `/` or `*` for everything below it.")
    async def registry_events(
        self, info: Info, types: list[str] | None = None, subject: str | None = None, after: str | None = None,
    ) -> AsyncIterator[RegistryEventNode]:
        feed = _feed(info)
        position = EventPosition.parse(after) if after is not None else None
        if position is None:  # only what is committed from now on
            position = EventPosition.end_of(await feed.store.current_revision())
        buffer = info.context.settings.subscription_buffer
        follow = feed.follow(position, types=types or None, subject=subject, max_buffer=buffer)
        try:  # a pruned position fails the subscription now, not at its first event
            stream = await follow.__aenter__()
        except EventsGone as exc:  # the spec's error, as GET /events answers it
            raise XRegistryError("events_gone", "registryEvents", position=str(exc.after), horizon=str(exc.horizon),
                                 detail="subscribe again without 'after' and read what you show anew") from None
        return Delivered(follow, stream)
