"""GraphQL over Server-Sent Events at ``/graphql``: the "distinct connections" mode of the
GraphQL over SSE protocol (the ``graphql-sse`` client's default), one operation per request.

A ``GET`` or ``POST`` to ``/graphql`` whose ``Accept`` names ``text/event-stream`` is such a
request. It is an ordinary request to ``/graphql`` until its operation is set up: the same
middleware (CORS, rate limits, admission control), body limits, credentials and persisted
documents (:mod:`gateway.graphql_http`), then :func:`resolvers.streaming.open_stream` (document
limits, cost ceiling, the request's rate-limit budget charged the operation's cost). A refusal is answered as
JSON with the status the GraphQL HTTP binding gives it (400, 401, 403, 429, 503…); an accepted
operation is answered ``200 text/event-stream``: one ``next`` event per result, then
``complete``. The request gives its admission slot back once the stream is open
(:func:`gateway.admission.release_early`); open streams are bounded by ``subscriptions_max``.

While no event comes, a comment (``: ping``) is sent every :data:`HEARTBEAT_SECONDS` (proxies
close silent connections). A subscriber further behind than ``subscription_buffer`` events gets
a last ``next`` event carrying only an error (``extensions.code`` :data:`SLOW_CONSUMER`, with
``resumeAfter``: the last position delivered), then ``complete``: reconnecting with that
``after`` resumes without gap or duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from graphql import GraphQLError, OperationType
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send
from strawberry.types import ExecutionResult

from adapters.events import SlowConsumer
from gateway.admission import Admission, Busy, busy_error, release_early
from resolvers.context import Budget
from resolvers.errors import format_error
from resolvers.schema import GatewaySchema
from resolvers.streaming import StreamedResult, Subscriber, open_stream
from xreg import metrics
from xreg.json_encoding import dumps

log = logging.getLogger("xreg.graphql.sse")

EVENT_STREAM = "text/event-stream"
#: The ``extensions.code`` of the error ending a slow subscriber's stream.
SLOW_CONSUMER = "SLOW_CONSUMER"
#: Seconds between two comments on a silent stream.
HEARTBEAT_SECONDS = 15.0


def accepts_event_stream(request: Request) -> bool:
    """Whether the request asks for an event stream (``Accept: text/event-stream``)."""
    return any(part.split(";", 1)[0].strip().lower() == EVENT_STREAM
               for part in request.headers.get("accept", "").split(","))


#: The headers of an event stream: not cached, not transformed, not buffered by a proxy (Nginx).
STREAM_HEADERS = {"Content-Type": EVENT_STREAM, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}
#: The comment keeping a silent stream alive.
HEARTBEAT = ": ping\r\n\r\n"


def sse_event(event: str, data: object = None) -> str:
    """One event of the stream: ``data`` as one line of JSON (every event carries a ``data``
    field: browsers drop events without one)."""
    text = "" if data is None else dumps(data).decode("utf-8")  # compact JSON: no line breaks
    return f"event: {event}\r\ndata: {text}\r\n\r\n"


class _EventStreamResponse(StreamingResponse):
    """A streaming response that ends its subscription however the response ends (the client
    gone before the first event included)."""

    def __init__(self, content: AsyncIterator[str], headers: dict[str, str],
                 end: Callable[[], Awaitable[None]]) -> None:
        super().__init__(content, headers=headers)
        self._end = end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._end()


async def event_stream(request: Request, schema: GatewaySchema, query: str, params: dict[str, Any],
                       subscriber: Subscriber, get: bool, admission: Admission, *, budget: Budget | None = None,
                       record: Any = None) -> ExecutionResult | Response:
    """The response to an event-stream request, or the result refusing its operation (for the
    HTTP binding to answer as JSON): open streams are counted by ``admission``, the operation is
    charged to the request's ``budget`` and named on its log ``record``. Raises what
    :func:`open_stream` raises."""
    settings = subscriber.settings
    allowed = ((OperationType.QUERY, OperationType.SUBSCRIPTION) if get else
               (OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION))
    opened = await open_stream(schema, schema.limits, query, params.get("variables"), subscriber,
                               params.get("operationName"), allowed, budget=budget, record=record)
    if isinstance(opened, ExecutionResult):
        return opened
    held = admission.subscriptions.held("sse")
    try:
        held.__enter__()
    except Busy:
        await opened.aclose()  # type: ignore[attr-defined]  # an async generator
        retry = admission.gates["graphql"].retry_after
        return Response(dumps({"errors": [busy_error(retry)]}), 503, media_type="application/json",
                        headers={"Retry-After": str(retry)})
    release_early(request.scope)
    pending: list[asyncio.Future[StreamedResult]] = []

    async def events() -> AsyncGenerator[str, None]:
        while True:
            if not pending:
                pending.append(asyncio.ensure_future(anext(opened)))
            done, _ = await asyncio.wait(pending, timeout=HEARTBEAT_SECONDS)
            if not done:
                yield HEARTBEAT
                continue
            step = pending.pop()
            try:
                result = step.result()
            except StopAsyncIteration:
                break
            except SlowConsumer as exc:
                metrics.SUBSCRIPTIONS_SLOW.labels("sse").inc()
                yield sse_event("next", {"errors": [_slow(exc)]})
                break
            except Exception as exc:  # a bug, or the store failing: the stream ends with the error
                log.exception("GraphQL event stream failed")
                error = format_error(GraphQLError(str(exc), original_error=exc), debug=settings.debug)
                yield sse_event("next", {"errors": [error]})
                break
            yield f"event: next\r\ndata: {result.payload(settings.debug)}\r\n\r\n"  # encoded once, shared
        yield sse_event("complete")

    content = events()

    async def end() -> None:
        for step in pending:
            step.cancel()
            with contextlib.suppress(BaseException):
                await step
        await content.aclose()
        await opened.aclose()  # type: ignore[attr-defined]
        held.__exit__(None, None, None)

    return _EventStreamResponse(content, dict(STREAM_HEADERS), end)


def _slow(exc: SlowConsumer) -> dict[str, Any]:
    last = str(exc.last) if exc.last is not None else None
    return {"message": f"Slow consumer: the subscription fell more than {exc.max_buffer} events behind; "
                       + (f"resubscribe with after: {last}" if last else "resubscribe"),
            "extensions": {"code": SLOW_CONSUMER, "resumeAfter": last}}
