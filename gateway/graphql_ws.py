"""GraphQL over WebSocket at ``/graphql``: the ``graphql-transport-ws`` protocol (the one the
``graphql-ws`` npm client speaks, its ``PROTOCOL.md``), on Starlette's WebSocket.

The protocol: the client opens with ``connection_init`` (within ``subscription_init_seconds``,
else ``4408``; twice: ``4429``), answered ``connection_ack``; then ``subscribe`` (an ``id`` and
the operation; before the ack: ``4401``; an ``id`` in use: ``4409``) starts an operation, whose
results come as ``next`` messages until ``complete`` (or one ``error``); the client's
``complete`` stops it. ``ping`` is answered ``pong``. A message that is not JSON text, or not one
of these: ``4400``. A client not offering the subprotocol is closed with ``4406``.

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

Results are sent as final ``next`` frame texts: the payload encoded once for every subscriber
sharing the event (:class:`resolvers.streaming.StreamedResult`) with the operation's id spliced
in, straight through the connection's ASGI ``send``; once a subscription is live (its retained
events sent), the process's one fan-out task sends its results (:mod:`gateway.ws_fanout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from graphql import GraphQLError, OperationType
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult

from adapters.events import EventFeed, SlowConsumer
from adapters.request import RequestSources, Served
from gateway.admission import Admission, Busy, busy_error
from gateway.auth import Authenticator, AuthError, Principal
from gateway.ratelimit import RateLimiter, operation_budget
from gateway.ws_fanout import Expired, Fanout, Member
from resolvers.errors import OperationNotAllowed, OperationNotFound, format_error
from resolvers.schema import GatewaySchema
from resolvers.streaming import ResponseStream, StreamedResult, Subscriber, open_stream
from xreg import json_limits, metrics
from xreg.config import Settings
from xreg.json_encoding import dumps

log = logging.getLogger("xreg.graphql.ws")

#: The close code of a subscriber that fell too far behind (a 4xxx application code).
SLOW_CONSUMER = 4413
#: The close code of a connection whose bearer token expired (that of bad credentials).
EXPIRED = 4401
_EXPIRED_REASON = "The bearer token has expired."
#: Operations one connection may run at once.
PER_CONNECTION = 100
#: A close reason is at most 123 bytes (RFC 6455).
_REASON_BYTES = 123
_ALL = (OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION)
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


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


def _origin(value: str) -> tuple[str, str, int | None] | None:
    """``(scheme, host, port)`` of an origin (the default port filled in), ``None`` if it is none."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS.get(scheme)


def origin_allowed(websocket: WebSocket, allowed: list[str]) -> bool:
    """Whether the handshake may go on: no ``Origin`` (not a browser), the page's own host, or an
    origin in ``allowed`` (``*``: any). Browsers apply no CORS to WebSockets, so this is the check
    against cross-site WebSocket hijacking."""
    origin = websocket.headers.get("origin")
    if origin is None or "*" in allowed or websocket.headers.get("sec-fetch-site") == "same-origin":
        return True
    found = _origin(origin)
    if found is None:
        return False
    host = websocket.headers.get("host")
    if host:
        with contextlib.suppress(ValueError):
            served = urlsplit(f"//{host.strip()}")
            port = served.port or _DEFAULT_PORTS.get(found[0])
            if (served.hostname or "").lower() == found[1] and port == found[2]:
                return True  # the same host and port: TLS ended at a proxy still counts as the same origin
    return found in {_origin(o) for o in allowed}


class _Gone(Exception):
    """The socket is closed (by either side): nothing more can be sent."""


class _Operation:
    """One ``subscribe``: its id, the task running it, and whether its last message went out."""

    __slots__ = ("done", "id", "task")

    def __init__(self, id: str) -> None:
        self.id = id
        self.done = False
        self.task: asyncio.Task[None] | None = None


class _Connection:
    """One ``graphql-transport-ws`` connection (see the module), for :class:`GraphQLWebSocket`."""

    def __init__(self, view: GraphQLWebSocket, websocket: WebSocket, subscriber: Subscriber, send: Send) -> None:
        self.view = view
        self.websocket = websocket
        self.subscriber = subscriber
        self.raw_send = send  # the ASGI ``send``: results go out as frame text through it
        self.expiry: asyncio.Task[None] | None = None
        self.init_received = False
        self.acknowledged = False
        self.closed = False
        self.operations: dict[str, _Operation] = {}
        self.init_timer: asyncio.Task[None] | None = None

    async def serve(self) -> None:
        """Read messages until the socket closes, then stop every operation."""
        self.init_timer = asyncio.create_task(self._init_timeout())
        try:
            while not self.closed:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    self.closed = True
                    break
                text = message.get("text")
                if text is None:
                    await self.close(4400, "WebSocket message type must be text")
                    break
                try:
                    data = json_limits.loads(text)
                except ValueError:
                    await self.close(4400, "WebSocket message must be valid JSON")
                    break
                await self.handle(data)
        except WebSocketDisconnect:
            self.closed = True
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        tasks = [t for t in (self.init_timer, self.expiry, *(op.task for op in self.operations.values()))
                 if t is not None]
        self.operations.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task

    async def _init_timeout(self) -> None:
        await asyncio.sleep(self.view.settings.subscription_init_seconds)
        if not self.init_received:
            await self.close(4408, "Connection initialisation timeout")

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message; :class:`_Gone` once the socket is closed."""
        if self.closed:
            raise _Gone
        try:
            await self.websocket.send_text(dumps(message).decode("utf-8"))
        except (WebSocketDisconnect, RuntimeError, OSError):
            self.closed = True
            raise _Gone from None

    async def close(self, code: int, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            await self.websocket.close(code, _reason(reason))

    async def handle(self, message: Any) -> None:
        kind = message.get("type") if isinstance(message, dict) else None
        try:
            if kind == "connection_init":
                await self._connection_init(message)
            elif kind == "ping":
                await self.send({"type": "pong"})
            elif kind == "pong":
                pass
            elif kind == "subscribe":
                await self._subscribe(message)
            elif kind == "complete":
                operation = self.operations.pop(message.get("id"), None) if isinstance(message.get("id"), str) else None
                if operation is not None and operation.task is not None:
                    operation.task.cancel()  # not awaited: the reading goes on
            elif isinstance(kind, str):
                await self.close(4400, f"Unknown message type: {kind}")
            else:
                await self.close(4400, "Failed to parse message")
        except _Gone:
            pass

    async def _connection_init(self, message: dict[str, Any]) -> None:
        payload = message.get("payload")
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            await self.close(4400, "Invalid connection init payload")
            return
        if self.init_received:
            await self.close(4429, "Too many initialisation requests")
            return
        self.init_received = True
        if self.init_timer is not None:
            self.init_timer.cancel()
        auth = self.view.auth
        try:
            principal = await auth.authenticate(_credentials(payload, self.websocket))
            auth.require(principal, "read")
        except AuthError as exc:
            await self.close(4401 if exc.status == 401 else 4403, exc.title)
            return
        self.subscriber.principal = principal
        self.subscriber.connection_params = payload
        if auth.expires_in(principal) is not None:
            self.expiry = asyncio.create_task(self._expire(principal), name="xreg-ws-token-expiry")
        await self.send({"type": "connection_ack"})
        self.acknowledged = True

    def expired(self) -> bool:
        """Whether the connection's credentials expired (by the gateway's clock)."""
        principal = self.subscriber.principal
        left = self.view.auth.expires_in(principal) if isinstance(principal, Principal) else None
        return left is not None and left <= 0

    async def _expire(self, principal: Principal) -> None:
        """Close the connection when ``principal``'s token expires."""
        auth = self.view.auth
        while (left := auth.expires_in(principal)) is not None and left > 0:
            await auth.clock.sleep(left)
        await self.close(EXPIRED, _EXPIRED_REASON)

    async def send_frame(self, text: str) -> None:
        """Send a frame already encoded; :class:`_Gone` once the socket is closed."""
        if self.closed:
            raise _Gone
        try:
            await self.raw_send({"type": "websocket.send", "text": text})
        except (RuntimeError, OSError):  # ASGI: an OSError once the client is gone
            self.closed = True
            raise _Gone from None

    async def _subscribe(self, message: dict[str, Any]) -> None:
        if not self.acknowledged:
            await self.close(4401, "Unauthorized")
            return
        id, payload = message.get("id"), message.get("payload")
        if (not isinstance(id, str) or not id or not isinstance(payload, dict)
                or not isinstance(payload.get("query"), str) or not isinstance(payload.get("variables") or {}, dict)
                or not isinstance(payload.get("operationName") or "", str)):
            await self.close(4400, "Invalid subscribe message")
            return
        if id in self.operations:
            await self.close(4409, f"Subscriber for {id} already exists")
            return
        if len(self.operations) >= PER_CONNECTION:
            await self.send({"id": id, "type": "error", "payload": [
                {"message": "Subscription limit reached", "extensions": {"code": "TOO_MANY_OPERATIONS"}}]})
            return
        operation = self.operations[id] = _Operation(id)
        operation.task = asyncio.create_task(
            self._run(operation, payload["query"], payload.get("variables"), payload.get("operationName")))

    async def _finish(self, operation: _Operation, message: dict[str, Any]) -> None:
        """Send the operation's last message (``complete`` or ``error``); its id is free again."""
        if operation.done:
            return
        operation.done = True
        if self.operations.get(operation.id) is operation:
            del self.operations[operation.id]
        await self.send(message)

    async def _run(self, operation: _Operation, query: str, variables: dict[str, Any] | None,
                   operation_name: str | None) -> None:
        """One operation: set up under admission and the rate limit, then its results."""
        try:
            await self._results(operation, query, variables, operation_name)
        except _Gone:
            pass
        except Exception:  # a bug: logged, the operation ends
            log.exception("GraphQL WebSocket operation failed")
            with contextlib.suppress(_Gone):
                await self._finish(operation, {"id": operation.id, "type": "complete"})

    async def _results(self, operation: _Operation, query: str, variables: dict[str, Any] | None,
                       operation_name: str | None) -> None:
        view, subscriber = self.view, self.subscriber
        settings, admission = subscriber.settings, view.admission
        gate = admission.gates["graphql"] if admission.enabled else None
        principal = subscriber.principal if isinstance(subscriber.principal, Principal) else None
        budget = (operation_budget(view.limiter, principal, self.websocket.scope)
                  if view.limiter is not None else None)
        try:
            if gate is not None:
                await gate.acquire()
            try:
                opened = await open_stream(view.schema, view.schema.limits, query, variables, subscriber,
                                           operation_name, _ALL, budget=budget)
            finally:
                if gate is not None:
                    gate.release()
        except Busy:
            await self._error(operation, [busy_error(admission.gates["graphql"].retry_after)])
            return
        except (OperationNotFound, OperationNotAllowed) as exc:
            await self.close(4400, str(exc))
            return
        if isinstance(opened, ExecutionResult):
            await self._error(operation, _formatted(opened.errors, settings.debug))
            return
        await self._stream(operation, opened)

    async def _stream(self, operation: _Operation, opened: AsyncIterator[StreamedResult]) -> None:
        settings, admission = self.subscriber.settings, self.view.admission
        head = '{"id":' + dumps(operation.id).decode("utf-8") + ',"type":"next","payload":'
        debug = settings.debug
        try:
            with admission.subscriptions.held("ws"):
                # the retained events (``after``) from here; once live, the process's fan-out sends
                while not (isinstance(opened, ResponseStream) and opened.caught_up):
                    try:
                        result = await anext(opened)
                    except StopAsyncIteration:
                        break
                    if self.expired():
                        await self.close(EXPIRED, _EXPIRED_REASON)
                        return
                    if operation.done:
                        return
                    await self.send_frame(head + result.payload(debug) + "}")
                else:
                    if self.closed:
                        raise _Gone
                    ended = await self.view.fanout.run(Member(opened, self.raw_send, head, debug, self.expired))
                    if self.closed:  # closed meanwhile (token expiry, a protocol error): what failed is moot
                        raise _Gone
                    if isinstance(ended, Expired):
                        await self.close(EXPIRED, _EXPIRED_REASON)
                        return
                    if isinstance(ended, (OSError, RuntimeError)):  # the client gone (ASGI: an OSError)
                        self.closed = True
                        raise _Gone
                    if ended is not None:
                        raise ended
                    if operation.done:
                        return
        except Busy:
            await self._error(operation, [busy_error(admission.gates["graphql"].retry_after)])
            return
        except SlowConsumer as exc:
            metrics.SUBSCRIPTIONS_SLOW.labels("ws").inc()
            self.operations.pop(operation.id, None)
            last = f"resubscribe with after: {exc.last}" if exc.last is not None else "resubscribe"
            await self.close(SLOW_CONSUMER, f"Slow consumer: over {exc.max_buffer} events behind; {last}")
            return
        except _Gone:
            raise
        except Exception as exc:  # a bug, or the store failing: the operation ends with the error
            log.exception("GraphQL subscription failed")
            error = GraphQLError(str(exc), original_error=exc)
            await self._error(operation, _formatted([error], settings.debug))
            return
        finally:
            await opened.aclose()  # type: ignore[attr-defined]  # an async generator
        await self._finish(operation, {"id": operation.id, "type": "complete"})

    async def _error(self, operation: _Operation, errors: list[dict[str, Any]]) -> None:
        await self._finish(operation, {"id": operation.id, "type": "error", "payload": errors})


class GraphQLWebSocket:
    """The ASGI app of ``/graphql``'s WebSocket connections (the HTTP binding is
    :mod:`gateway.graphql_http`): operations over the registries ``served`` and the local
    registry's ``events``, for callers ``auth`` lets read, under ``admission`` and ``limiter``
    (``None``: rates not limited)."""

    def __init__(self, settings: Settings, schema: GatewaySchema, *, served: Served, auth: Authenticator,
                 admission: Admission, limiter: RateLimiter | None = None, events: EventFeed | None = None,
                 webhooks: Any = None) -> None:
        self.settings, self.schema, self.served, self.auth = settings, schema, served, auth
        self.admission, self.limiter = admission, limiter
        self.events, self.webhooks = events, webhooks
        #: Sends the results of every live subscription of the process's connections.
        self.fanout = Fanout()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        if not origin_allowed(websocket, self.settings.cors_origins):
            log.warning("Refused a WebSocket connection from origin %r (not in cors_origins)",
                        websocket.headers.get("origin"))
            await websocket.close(1008)  # before the handshake completes: HTTP 403
            return
        if GRAPHQL_TRANSPORT_WS_PROTOCOL not in scope.get("subprotocols", ()):
            await websocket.accept()
            await websocket.close(4406, "Subprotocol not acceptable")
            return
        await websocket.accept(subprotocol=GRAPHQL_TRANSPORT_WS_PROTOCOL)
        reads = RequestSources(self.served)  # the connection's snapshot: a reload does not change it
        subscriber = Subscriber(settings=self.settings, sources=reads.sources, events=self.events, auth=self.auth,
                                rules=reads.references, webhooks=self.webhooks)
        await _Connection(self, websocket, subscriber, send).serve()
