"""GraphQL over WebSocket at ``/graphql``: the ``graphql-transport-ws`` protocol (the one the
``graphql-ws`` npm client speaks), served by strawberry's ASGI view through its public hooks.

A connection is held to the same rules as a request to ``/graphql``:

- **origin**: a browser page from another origin may connect only when it is in ``cors_origins``
  (the CORS setting; browsers apply no CORS to WebSockets, so the handshake's ``Origin`` is
  checked instead, and refused with HTTP 403);
- **credentials**: ``Authorization: Bearer …`` on the handshake, or — browsers cannot set
  headers on a WebSocket — ``{"Authorization": "Bearer …"}`` in the ``connection_init``
  payload; the caller must hold the ``read`` scope, else the socket closes with ``4401``
  (no or bad credentials) or ``4403`` (scope missing) and the reason;
- **every operation** (``subscribe`` message) runs :func:`resolvers.streaming.open_stream`:
  the document limits, the cost ceiling and the caller's rate limit (a budget of the rate
  limiter's, :func:`gateway.ratelimit.operation_budget`, charged the operation's cost) apply as
  to a query, and it takes a slot of the ``graphql`` admission gate while it is
  set up; a refusal is the operation's ``error`` message (``extensions.code`` as over HTTP);
- **open subscriptions** are bounded per process (``subscriptions_max``, ``server_busy``) and per
  connection (:data:`PER_CONNECTION`).

A subscriber further behind than ``subscription_buffer`` events is disconnected: the socket
closes with :data:`SLOW_CONSUMER` (``4413``) and a reason naming the last position delivered;
reconnecting with ``after`` set to it resumes without gap or duplicate.

A connection authenticated with a JWT lasts as long as the token: once its ``exp`` (with the
leeway tokens are checked with) passes by the gateway's clock, the socket closes with
:data:`EXPIRED` (``4401``, as for bad credentials; reason "The bearer token has expired.") —
when the time comes, or at the next event about to be delivered, whichever the clock shows
first. The client reconnects with a fresh token (and ``after``: nothing is missed).

Each result is sent as the final ``next`` frame text: the payload encoded once for every
subscriber sharing the event (:class:`resolvers.streaming.StreamedResult`) with the operation's
id spliced in, straight to the connection's ASGI ``send``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

from graphql import GraphQLError
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler, Operation
from strawberry.subscriptions.protocols.graphql_transport_ws.types import ConnectionInitMessage, Message
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from adapters.events import EventFeed, SlowConsumer
from adapters.request import RequestSources, Served
from gateway.admission import Admission, Busy, busy_error
from gateway.auth import Authenticator, AuthError, Principal
from gateway.ratelimit import RateLimiter, operation_budget
from gateway.ws_fanout import Expired, Fanout, Member
from resolvers.errors import format_error
from resolvers.schema import GatewaySchema
from resolvers.streaming import ResponseStream, Subscriber, open_stream
from xreg import metrics
from xreg.config import Settings
from xreg.json_encoding import dumps

log = logging.getLogger("xreg.graphql.ws")

#: The close code of a subscriber that fell too far behind (a 4xxx application code).
SLOW_CONSUMER = 4413
#: The close code of a connection whose bearer token expired (that of bad credentials).
EXPIRED = 4401
_EXPIRED_REASON = "The bearer token has expired."
#: Where :class:`GraphQLWebSocket` leaves the connection's ASGI ``send`` in its scope.
_SEND = "xreg.websocket.send"
#: Operations one connection may run at once.
PER_CONNECTION = 100
#: A close reason is at most 123 bytes (RFC 6455).
_REASON_BYTES = 123
_ALL = (OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION)


def _reason(text: str) -> str:
    encoded = text.encode("utf-8")[:_REASON_BYTES]
    return encoded.decode("utf-8", errors="ignore")


def _credentials(params: Mapping[str, Any], websocket: WebSocket) -> str | None:
    """The ``Authorization`` value: from ``connection_init`` (top level or ``headers``), else the
    handshake's header."""
    for where in (params, params.get("headers")):
        if isinstance(where, Mapping):
            for key in ("Authorization", "authorization"):
                if isinstance(where.get(key), str):
                    return where[key]
    return websocket.headers.get("authorization")


def _formatted(errors: list[GraphQLError] | None, debug: bool) -> list[dict[str, Any]]:
    return [format_error(e, debug=debug) for e in errors or ()]


def _message(operation: Operation[Subscriber, None], kind: str, payload: Any = None) -> Message:
    """An operation's ``next``, ``error`` or ``complete`` message (errors formatted as over HTTP)."""
    message: dict[str, Any] = {"id": operation.id, "type": kind}
    if payload is not None:
        message["payload"] = payload
    return cast(Message, message)


class TransportHandler(BaseGraphQLTransportWSHandler[Subscriber, None]):
    """strawberry's ``graphql-transport-ws`` handler, with the gateway's credentials check on
    ``connection_init`` and its operation pipeline (:func:`open_stream`) for every operation,
    under the admission control and rate limiter of the :class:`GraphQLWebSocket` view."""

    context: Subscriber
    view: GraphQLWebSocket

    @property
    def _socket(self) -> WebSocket:
        return self.websocket.ws  # type: ignore[attr-defined]  # the ASGI adapter's socket

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        payload = message.get("payload") or {}
        if isinstance(payload, dict) and not self.connection_init_received and not self.connection_timed_out:
            try:
                principal = await self._authenticate(payload)
            except AuthError as exc:
                self.connection_init_received = True
                if self.connection_init_timeout_task:
                    self.connection_init_timeout_task.cancel()
                await self.websocket.close(4401 if exc.status == 401 else 4403, _reason(exc.title))
                return
            self.context.principal = principal
            if self.view.auth.expires_in(principal) is not None:
                self._expiry = asyncio.create_task(self._expire(principal), name="xreg-ws-token-expiry")
        await super().handle_connection_init(message)

    _expiry: asyncio.Task[None] | None = None

    def _expired(self) -> bool:
        """Whether the connection's credentials expired (by the gateway's clock)."""
        principal = self.context.principal
        left = self.view.auth.expires_in(principal) if isinstance(principal, Principal) else None
        return left is not None and left <= 0

    async def _expire(self, principal: Principal) -> None:
        """Close the connection when ``principal``'s token expires."""
        auth = self.view.auth
        while (left := auth.expires_in(principal)) is not None and left > 0:
            await auth.clock.sleep(left)
        await self._close_expired()

    async def _close_expired(self) -> None:
        with contextlib.suppress(WebSocketDisconnected, OSError, RuntimeError):
            await self.websocket.close(EXPIRED, _EXPIRED_REASON)

    async def shutdown(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._expiry
        await super().shutdown()

    async def _authenticate(self, payload: dict[str, Any]) -> Principal:
        auth = self.view.auth
        principal = await auth.authenticate(_credentials(payload, self._socket))
        auth.require(principal, "read")
        return principal

    async def run_operation(self, operation: Operation[Subscriber, None]) -> None:
        """One ``subscribe`` message: set up under admission and the rate limit, then its results."""
        settings, admission = self.context.settings, self.view.admission
        gate = admission.gates["graphql"] if admission.enabled else None
        principal = cast(Principal | None, self.context.principal)
        limiter = self.view.limiter
        budget = operation_budget(limiter, principal, self._socket.scope) if limiter is not None else None
        try:
            if gate is not None:
                await gate.acquire()
            try:
                schema = cast(GatewaySchema, self.schema)
                opened = await open_stream(schema, schema.limits, operation.query, operation.variables,
                                           self.context, operation.operation_name, _ALL, budget=budget)
            finally:
                if gate is not None:
                    gate.release()
        except Busy:
            await self._error(operation, [busy_error(admission.gates["graphql"].retry_after)])
            return
        except (CannotGetOperationTypeError, InvalidOperationTypeError) as exc:
            await self.websocket.close(4400, _reason(str(exc)))
            return
        if isinstance(opened, ExecutionResult):
            await self._error(operation, _formatted(opened.errors, settings.debug))
            return
        send: Send = self._socket.scope[_SEND]
        head = '{"id":' + self.view.encode_json(operation.id) + ',"type":"next","payload":'
        debug = settings.debug
        try:
            with admission.subscriptions.held("ws"):
                # the retained events (``after``) from here; once live, the process's fan-out sends
                while not (isinstance(opened, ResponseStream) and opened.caught_up):
                    try:
                        result = await anext(opened)
                    except StopAsyncIteration:
                        break
                    if self._expiry is not None and self._expired():
                        await self._close_expired()
                        return
                    await send({"type": "websocket.send", "text": head + result.payload(debug) + "}"})
                else:
                    ended = await self.view.fanout.run(Member(opened, send, head, debug, self._expired))
                    if isinstance(ended, Expired):
                        await self._close_expired()
                        return
                    if ended is not None:
                        raise ended
        except Busy:
            await self._error(operation, [busy_error(admission.gates["graphql"].retry_after)])
            return
        except (WebSocketDisconnected, OSError):  # gone (ASGI: an OSError from ``send``)
            return
        except SlowConsumer as exc:
            metrics.SUBSCRIPTIONS_SLOW.labels("ws").inc()
            self.operations.pop(operation.id, None)
            last = f"resubscribe with after: {exc.last}" if exc.last is not None else "resubscribe"
            await self.websocket.close(SLOW_CONSUMER, _reason(f"Slow consumer: over {exc.max_buffer} events "
                                                              f"behind; {last}"))
            return
        except Exception as exc:  # a bug, or the store failing: the operation ends with the error
            log.exception("GraphQL subscription failed")
            error = GraphQLError(str(exc), original_error=exc)
            await self._error(operation, _formatted([error], settings.debug))
            return
        finally:
            await opened.aclose()  # type: ignore[attr-defined]  # an async generator
        await operation.send_operation_message(_message(operation, "complete"))

    async def _error(self, operation: Operation[Subscriber, None], errors: list[dict[str, Any]]) -> None:
        await operation.send_operation_message(_message(operation, "error", errors))


class GraphQLWebSocket(GraphQL[Subscriber, None]):
    """strawberry's ASGI view, for WebSocket connections only (``/graphql``'s HTTP binding is
    :mod:`gateway.graphql_http`): operations over the registries ``served`` and the local
    registry's ``events``, for callers ``auth`` lets read, under ``admission`` and ``limiter``
    (``None``: rates not limited)."""

    graphql_transport_ws_handler_class = TransportHandler

    def __init__(self, settings: Settings, schema: GatewaySchema, *, served: Served, auth: Authenticator,
                 admission: Admission, limiter: RateLimiter | None = None, events: EventFeed | None = None,
                 webhooks: Any = None) -> None:
        super().__init__(schema, graphql_ide=None, subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
                         connection_init_wait_timeout=timedelta(seconds=settings.subscription_init_seconds),
                         max_subscriptions_per_connection=PER_CONNECTION, allowed_origins=settings.cors_origins)
        self.settings, self.served, self.auth = settings, served, auth
        self.admission, self.limiter = admission, limiter
        self.events, self.webhooks = events, webhooks
        #: Sends the results of every live subscription of the process's connections.
        self.fanout = Fanout()

    async def get_context(self, request: Any, response: Any) -> Subscriber:
        reads = RequestSources(self.served)  # the connection's snapshot: a reload does not change it
        return Subscriber(settings=self.settings, sources=reads.sources, events=self.events, auth=self.auth,
                          rules=reads.references, webhooks=self.webhooks)

    def encode_json(self, data: object) -> str:
        return dumps(data).decode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the handler sends results straight through ``send``
            scope[_SEND] = send
        await super().__call__(scope, receive, send)

