"""Operations whose results stream (subscriptions), for the streaming transports of the service
roof: GraphQL over WebSocket (``gateway/graphql_ws.py``) and over SSE (``gateway/graphql_sse.py``).

:func:`open_stream` runs the same steps as a query (:func:`resolvers.operation.run_operation`):
parse (``max_tokens``), the operation and its type, the refusals of ``resolvers/limits.py``
(depth, aliases, introspection, validation, the cost ceiling, the caller's rate limit — the
``budget`` the transport hands over — charged the operation's cost), the current model. A refused
operation gives an ``ExecutionResult`` without ``data``; an accepted subscription gives the
response stream, whose source (the subscription field's resolver, ``resolvers/subscriptions.py``)
is opened *before* :func:`open_stream` returns, so a transport that reports the subscription open
has it open. A query or mutation over a streaming transport gives a stream of its one result.

Each event executes the operation with the event as root value in a :class:`Context` of its own
(its loaders read the registry as it is when the event is delivered, and are released after it),
the way a query runs; the :class:`Subscriber` holds what every one of them shares: who is asking,
what is served. Subscribers running the same operation alike share each event's execution
(:class:`SharedResults`): a thousand browsers on one subscription cost one execution per event,
and one encoding of its result (:meth:`StreamedResult.payload`), which the transports wrap in
their frames as it is.
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from graphql import DocumentNode, GraphQLError, OperationType, execute
from strawberry import Schema
from strawberry.types import ExecutionResult

from adapters.base import RegistrySource
from adapters.events import EventFeed
from adapters.references import References
from resolvers.context import Access, Budget, Caller, Context
from resolvers.current_model import sync_current_model
from resolvers.errors import format_error
from resolvers.limits import QueryLimits, parse_document, refusals
from resolvers.observed import ObservedOperation
from resolvers.operation import fast_is_awaitable, operation_of, require_allowed, run_operation
from resolvers.reported import with_reported
from xreg.config import Settings
from xreg.json_encoding import dumps


@dataclass
class Subscriber:
    """Who streams, and what is served to them: one per WebSocket connection or SSE request.
    ``connection_params`` is the ``connection_init`` payload (WebSocket only); ``webhooks`` the
    webhook subscriptions (``adapters.webhook_admin.Webhooks``), when served."""

    settings: Settings
    sources: Mapping[str, RegistrySource]
    events: EventFeed | None
    auth: Access | None = None
    principal: Caller | None = None
    rules: References | None = None
    webhooks: Any = None
    connection_params: dict[str, Any] = field(default_factory=dict)

    def context(self, budget: Budget | None = None, record: Any = None) -> Context:
        """A fresh context: for one operation's set-up (charged to ``budget``, named on the log
        ``record``), or one event's execution."""
        return Context(settings=self.settings, sources=self.sources, default_registry=self.settings.registry_id,
                       principal=self.principal, auth=self.auth, rules=self.rules, events=self.events,
                       webhooks=self.webhooks, budget=budget, record=record)


@dataclass
class StreamedResult(ExecutionResult):
    """One result of a stream, as every subscriber sharing it sends it: :meth:`payload` encodes
    it once."""

    _encoded: str | None = field(default=None, repr=False)

    def payload(self, debug: bool) -> str:
        """The JSON text of ``{"data": …, "errors": […]}`` (errors formatted as over HTTP, with
        the detail ``debug`` allows — one setting per process, so the same for every subscriber)."""
        if self._encoded is None:
            body: dict[str, Any] = {"data": self.data}
            if self.errors:
                body["errors"] = [format_error(e, debug=debug) for e in self.errors]
            self._encoded = dumps(body).decode("utf-8")
        return self._encoded


async def _one(result: ExecutionResult) -> AsyncIterator[StreamedResult]:
    yield StreamedResult(data=result.data, errors=result.errors)


def _refused(schema: Schema, errors: list[GraphQLError]) -> ExecutionResult:
    schema._process_errors(errors)
    return ExecutionResult(data=None, errors=errors)


async def open_stream(
    schema: Schema, limits: QueryLimits | None, query: str | None, variables: dict[str, Any] | None,
    subscriber: Subscriber, operation_name: str | None, allowed: Iterable[Enum], *,
    budget: Budget | None = None, record: Any = None,
) -> ExecutionResult | AsyncIterator[StreamedResult]:
    """The operation's response stream, or the result that refuses it (no ``data``; see the
    module). The operation is charged to ``budget`` (the caller's rate limit; ``None``: not
    limited) and named on the request's log ``record``, if any. Raises
    :class:`~resolvers.errors.OperationNotFound` / :class:`~resolvers.errors.OperationNotAllowed`
    for the transport to answer, as :func:`~resolvers.operation.run_operation` does (``allowed``
    as there)."""
    if not query:
        return _refused(schema, [GraphQLError("No GraphQL query found in the request.",
                                              extensions={"code": "BAD_REQUEST"})])
    try:
        document = parse_document(query, limits.max_tokens if limits else None)
    except GraphQLError as exc:
        return _refused(schema, [exc])
    operation = operation_of(document, operation_name)
    require_allowed(operation, allowed)
    if operation.operation is not OperationType.SUBSCRIPTION:
        context = subscriber.context(budget, record)
        try:
            result = await run_operation(schema, limits, query, variables, context, None, operation_name, allowed)
        finally:
            context.close()
        return _one(result)
    with ObservedOperation(record) as observed:  # the set-up is the operation observed; its events are not
        observed.kind = operation.operation.value
        observed.name = operation_name or (operation.name.value if operation.name else None)
        context = subscriber.context(budget, record)
        try:
            errors = await refusals(schema._schema, query, document, operation_name, variables, limits, context)
            if errors:
                return _refused(schema, errors)
            await sync_current_model(context)
            source = await _source(schema, document, variables, operation_name, context)
        finally:
            context.close()
        if isinstance(source, ExecutionResult):
            return source
        observed.outcome = "ok"
    return ResponseStream(schema, query, document, variables, operation_name, subscriber, source)


async def _source(schema: Schema, document: DocumentNode, variables: dict[str, Any] | None,
                  operation_name: str | None, context: Context) -> AsyncIterable[Any] | ExecutionResult:
    """The subscription field's event stream (its resolver called), or the result refusing it."""
    from graphql import create_source_event_stream

    executor_class = schema.execution_context_class
    assert executor_class is not None
    executor = executor_class.build(schema._schema, document, None, context, variables, operation_name)
    if isinstance(executor, list):  # the variables do not coerce
        return _refused(schema, executor)
    source: Any = create_source_event_stream(executor)
    if fast_is_awaitable(source):
        source = await source
    if isinstance(source, AsyncIterable):
        return source
    found = source.errors or []
    if found:
        schema._process_errors(found)
    return ExecutionResult(data=None, errors=found)


class SharedResults:
    """The results of recent events for each operation, shared by the subscribers that run the
    same operation (document, variables, operation name) with the same scopes: an event is executed
    once for all of them — the first one to deliver it runs it, the others take its result. At most
    ``size`` results are kept (the oldest go first); a result is the same for every such subscriber,
    since nothing a subscription selects depends on who asks beyond their scopes."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._results: collections.OrderedDict[tuple[Any, ...], asyncio.Future[StreamedResult]] = \
            collections.OrderedDict()
        #: How many executions ran (a subscriber that took a shared result ran none).
        self.executions = 0

    def ready(self, key: tuple[Any, ...]) -> StreamedResult | None:
        """The result of ``key`` when it is there already (another subscriber ran it)."""
        found = self._results.get(key)
        return found.result() if found is not None and found.done() else None

    async def result(self, key: tuple[Any, ...], run: Callable[[], Awaitable[StreamedResult]]) -> StreamedResult:
        found = self._results.get(key)
        if found is not None and found.done():
            return found.result()  # the common case: another subscriber ran it
        if found is None:
            self.executions += 1
            found = self._results[key] = asyncio.ensure_future(run())  # runs on if this subscriber goes
            if len(self._results) > self.size:
                self._results.popitem(last=False)
        return await asyncio.shield(found)


def _operation_key(query: str, variables: dict[str, Any] | None, operation_name: str | None,
                   subscriber: Subscriber) -> tuple[Any, ...]:
    scopes = tuple(sorted(subscriber.principal.scopes)) if subscriber.principal is not None else ()
    return (query, json.dumps(variables, sort_keys=True, default=str) if variables else "", operation_name,
            scopes)


class ResponseStream:
    """A subscription's results (``async for``): each event of ``source`` executed with the event
    as root value, in a context of its own (or the result :class:`SharedResults` already holds
    for it). What the source raises (:class:`~adapters.events.SlowConsumer`) ends the stream
    with it; :meth:`aclose` leaves the source.

    :meth:`take` (the next result, when it comes without waiting), :meth:`ready` (the next
    result comes without waiting for an event), :meth:`listen` (a call
    when it may have become ready), :attr:`caught_up` (what follows is live) and
    :attr:`overflowed` (its consumer fell too far behind) are the source's,
    for a transport that drives many subscriptions from one task; a source without them never
    says it is ready."""

    def __init__(self, schema: Schema, query: str, document: DocumentNode, variables: dict[str, Any] | None,
                 operation_name: str | None, subscriber: Subscriber, source: AsyncIterable[Any]) -> None:
        self._schema, self._document, self._variables = schema, document, variables
        self._operation_name, self._subscriber = operation_name, subscriber
        self._source = source
        self._events = aiter(source)
        self._shared: SharedResults | None = getattr(schema, "shared_results", None)
        self._operation = _operation_key(query, variables, operation_name, subscriber)
        self._take: Callable[[], Any] | None = getattr(source, "take", None)

    def __aiter__(self) -> ResponseStream:
        return self

    async def __anext__(self) -> StreamedResult:
        payload = await anext(self._events)
        key = getattr(payload, "shared_key", None)
        if self._shared is None or key is None:
            return await self._run(payload)
        return await self._shared.result((key, *self._operation), lambda: self._run(payload))

    async def _run(self, payload: Any) -> StreamedResult:
        schema, context = self._schema, self._subscriber.context()
        try:
            result: Any = execute(schema._schema, self._document, root_value=payload, context_value=context,
                                  variable_values=self._variables, operation_name=self._operation_name,
                                  is_awaitable=fast_is_awaitable, executor_class=schema.execution_context_class,
                                  operation_extensions=None)
            if fast_is_awaitable(result):
                result = await result
            if result.errors:
                schema._process_errors(result.errors)
            return StreamedResult(data=result.data, errors=with_reported(result.errors, context))
        finally:
            context.close()

    def take(self) -> StreamedResult | Awaitable[StreamedResult] | None:
        """The next result without a coroutine when the source has its event ready and another
        subscriber already ran it (the common case of a fan-out); what to await for it when the
        event is there but must be executed; ``None`` when the source has no event ready (or
        ends, or has none to take): ``__anext__`` then waits for it, or raises the end."""
        payload = self._take() if self._take is not None else None
        if payload is None:
            return None
        key = getattr(payload, "shared_key", None)
        if self._shared is None or key is None:
            return self._run(payload)
        shared = (key, *self._operation)
        found = self._shared.ready(shared)
        return found if found is not None else self._shared.result(shared, lambda: self._run(payload))

    def ready(self) -> bool:
        ready = getattr(self._source, "ready", None)
        return bool(ready()) if ready is not None else False

    def listen(self, listener: Callable[[], None] | None) -> bool:
        """Have ``listener`` called when the stream may have become ready; whether the source can."""
        listen = getattr(self._source, "listen", None)
        if listen is None:
            return False
        listen(listener)
        return True

    @property
    def caught_up(self) -> bool:
        return bool(getattr(self._source, "caught_up", False))

    @property
    def overflowed(self) -> bool:
        """Whether the next result is the source's :class:`~adapters.events.SlowConsumer`."""
        return bool(getattr(self._source, "overflowed", False))

    async def aclose(self) -> None:
        close = getattr(self._source, "aclose", None)
        if close is not None:
            await close()
