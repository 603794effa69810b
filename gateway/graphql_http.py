"""GraphQL over HTTP at ``/graphql`` (the GraphQL Foundation's specification): ``POST`` (JSON)
for everything, ``GET`` for queries.

A request is handled in this order:

1. A browser's ``GET`` without a query gets GraphiQL (:mod:`gateway.graphiql`).
2. The response media type is chosen from ``Accept`` (:mod:`resolvers.media`); neither
   ``application/graphql-response+json`` nor ``application/json`` acceptable: 406.
3. The request is read: ``POST`` bodies must be ``application/json`` (a ``charset`` other than
   UTF-8, or another type: 415), at most ``max_body_bytes`` (413), one JSON object (a batch — a
   JSON array — is refused with 400: send one operation per request); ``GET`` takes ``query``,
   ``variables``, ``operationName``, ``extensions`` and ``documentId`` from the query string.
4. The caller must be allowed to read (401 / 403, the HTTP API's rules).
5. The document is resolved (:mod:`resolvers.persisted`: the query itself, an automatic
   persisted query's hash, a trusted document's id; ``PersistedQueryNotFound``,
   ``PERSISTED_QUERY_NOT_ALLOWED``).
6. A ``GET`` whose ``If-None-Match`` holds the current entity tag gets 304 (see below).
7. The operation runs; a mutation over ``GET`` is refused with 405 and ``Allow: POST``, a
   subscription without ``Accept: text/event-stream`` with 400. With ``text/event-stream`` the
   operation streams (GraphQL over SSE, :mod:`gateway.graphql_sse`; WebSockets, on the same path:
   :mod:`gateway.graphql_ws`).

Status codes: with ``application/json`` every request that got this far is answered 200 (legacy
clients read ``errors``); with ``application/graphql-response+json`` a response without
``data`` (a parse, validation or limit error: the request never ran) is 400 (401 / 403 for
credentials, 404 / 403 for persisted documents), and one with ``data`` — partial or not — is 200.

Caching (:mod:`gateway.http_cache`): successful ``GET`` queries carry ``ETag``,
``Cache-Control`` and ``Vary: Accept, Authorization``. When every registry served is the local
store the tag is computed *before* running — from the revision, the document's hash, the
variables, the operation name, the media type and the caller — so a 304 costs one revision
read. With remote or document registries (whose data changes without a local revision) the tag
is a digest of the response body instead: always correct, though the query runs to find it.
``POST`` responses (mutations among them) are ``no-store``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiocache.base import BaseCache
from graphql import OperationType
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from adapters import staleness
from adapters.caller import Caller
from adapters.events import EventFeed
from adapters.request import RequestSources, Served
from adapters.webhook_admin import Webhooks
from gateway import http_cache
from gateway.admission import Admission
from gateway.auth import Authenticator, AuthError, Principal, principal_of
from gateway.graphiql import graphiql_page, graphiql_routes
from gateway.graphql_sse import accepts_event_stream, event_stream
from gateway.graphql_ws import GraphQLWebSocket
from gateway.ratelimit import RateLimiter, budget_of
from gateway.request_context import current
from resolvers.context import Context
from resolvers.errors import INTERNAL, OperationNotAllowed, OperationNotFound, format_error
from resolvers.media import GRAPHQL_RESPONSE, JSON, content_type, negotiate
from resolvers.operation import run_operation
from resolvers.pacing import LARGE_COST, json_response
from resolvers.persisted import Document, PersistedQueries, bad_request
from resolvers.schema import GatewaySchema, build_schema
from resolvers.streaming import Subscriber
from resolvers.trusted_documents import sha256_hex
from xreg import json_limits
from xreg.config import Settings
from xreg.errors import GraphQLRequestError
from xreg.json_encoding import dumps

JSON_TYPES = ("application/json",)
#: The answer to a subscription sent without a streaming transport.
SUBSCRIPTIONS_STREAM = ("Subscriptions stream their results: send the request with Accept: text/event-stream "
                        "(GraphQL over SSE) or over a WebSocket (graphql-transport-ws) to /graphql.")
VARY = "Accept, Authorization"
#: HTTP status of a request error (no ``data``) with application/graphql-response+json, by code.
_REQUEST_ERROR_STATUS = {"unauthorized": 401, "forbidden": 403, INTERNAL: 500}


def _reply(media: str, body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(body), status, headers=headers, media_type=content_type(media))


def _problem(media: str, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return _reply(media, {"errors": [{"message": message, "extensions": {"code": code}}]}, status, headers)


def _refused(media: str, exc: GraphQLRequestError) -> Response:
    status = exc.status if media == GRAPHQL_RESPONSE else exc.legacy_status
    return _problem(media, status, exc.code, exc.message, exc.headers)


class _TooLarge(Exception):
    pass


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _params_of_get(request: Request) -> dict[str, Any]:
    params: dict[str, Any] = {k: request.query_params.get(k)
                              for k in ("query", "operationName", "variables", "extensions", "documentId")}
    for name in ("variables", "extensions"):
        if params[name]:
            try:
                params[name] = json_limits.loads(params[name])
            except (ValueError, UnicodeDecodeError) as exc:
                raise bad_request(f"{name} is not valid JSON: {exc}") from None
        else:
            params[name] = None
    return params


async def _params_of_post(request: Request, settings: Settings) -> dict[str, Any]:
    media, *parameters = request.headers.get("content-type", "").split(";")
    charset = next((v.strip().strip('"').lower() for k, _, v in (p.partition("=") for p in parameters)
                    if k.strip().lower() == "charset"), "utf-8")
    if media.strip().lower() not in JSON_TYPES or charset != "utf-8":
        raise GraphQLRequestError("UNSUPPORTED_MEDIA_TYPE", "Send the request as application/json (UTF-8).", 415)
    try:
        params = json_limits.loads(await _body(request, settings.max_body_bytes))
    except _TooLarge:
        raise GraphQLRequestError("REQUEST_TOO_LARGE", f"The request body exceeds {settings.max_body_bytes} bytes.",
                                  413) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"The request is not valid JSON: {exc}") from None
    if isinstance(params, list):
        raise bad_request("Batched requests (a JSON array of operations) are not supported; "
                          "send one operation per request.")
    return params


def _check_params(params: Any) -> None:
    if not isinstance(params, dict):
        raise bad_request("The request must be a JSON object with a query.")
    if params.get("variables") is not None and not isinstance(params["variables"], dict):
        raise bad_request("variables must be a JSON object.")
    if params.get("operationName") is not None and not isinstance(params["operationName"], str):
        raise bad_request("operationName must be a string.")


def wants_html(request: Request) -> bool:
    """A browser navigating to the endpoint (not a GraphQL client)."""
    return "text/html" in request.headers.get("accept", "") and not (
        {"query", "documentId", "extensions"} & set(request.query_params))


def _request_error_status(body: dict[str, Any]) -> int:
    statuses = [_REQUEST_ERROR_STATUS.get(e.get("extensions", {}).get("code"), 400) for e in body.get("errors", [])]
    client = [s for s in statuses if s < 500]
    return min(client) if client else max(statuses, default=400)


def graphql_endpoint(
    settings: Settings, schema: GatewaySchema, graphiql_page: Callable[[], Any] | None,
    persisted: PersistedQueries | None = None, *, served: Served, auth: Authenticator,
    shared: Callable[[], BaseCache | None] = lambda: None, events: EventFeed | None = None,
    webhooks: Webhooks | None = None, admission: Admission | None = None,
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint for ``GET`` and ``POST /graphql``: operations over the registries
    ``served``, for callers ``auth`` lets read; ``shared`` gives the cache replicas share
    (``cache_url`` Redis; ``None`` with ``memory://``), where automatic persisted queries are kept.
    Subscriptions stream the local registry's ``events`` (open streams counted by ``admission``);
    ``webhooks`` are the webhook subscriptions GraphQL manages (``None``: not served)."""
    persisted = persisted or PersistedQueries(settings)
    admission = admission or Admission(settings)
    salt = http_cache.deployment_salt(settings)

    async def validators(request: Request, media: str, document: Document, params: dict[str, Any],
                         principal: Principal, sources: Any) -> dict[str, str] | None:
        """The revision-based tag of a GET, or ``None`` when a registry without revisions is served."""
        if any(s.kind != "local" for s in sources.values()):
            return None
        local = next(iter(sources.values()))
        credentials = request.headers.get("authorization")
        etag = http_cache.entity_tag(
            salt, "graphql", media, local.instance_id or "", str(await local.revision()), sha256_hex(document.text),
            http_cache.canonical_json(params.get("variables") or {}), params.get("operationName") or "",
            http_cache.caller_key(principal, credentials))
        return http_cache.validators(etag, http_cache.cache_control(settings, private=bool(credentials)), VARY)

    async def endpoint(request: Request) -> Response:
        get = request.method in ("GET", "HEAD")
        if get and wants_html(request):
            if graphiql_page is None:
                return _problem(JSON, 404, "NOT_FOUND", "GraphiQL is not available on this server.")
            page = graphiql_page()
            return page if isinstance(page, Response) else HTMLResponse(str(page))
        stream = accepts_event_stream(request)  # GraphQL over SSE (gateway/graphql_sse.py): refusals answer as JSON
        media = JSON if stream else negotiate(request.headers.get("accept"))
        if media is None:
            return _problem(JSON, 406, "NOT_ACCEPTABLE",
                            f"Accept {GRAPHQL_RESPONSE} or {JSON}: no other response media type is served.")
        try:
            params = _params_of_get(request) if get else await _params_of_post(request, settings)
            _check_params(params)
        except GraphQLRequestError as exc:
            return _refused(media, exc)
        try:
            principal = await principal_of(request, auth)
            auth.require(principal, "read")
        except AuthError as exc:
            return _problem(media, exc.status, exc.code, exc.title, exc.headers())
        try:
            document = await persisted.resolve(params, principal, shared())
        except GraphQLRequestError as exc:
            return _refused(media, exc)
        reads = RequestSources(served, Caller(request.headers.get("authorization")))
        sources = reads.sources
        tags = await validators(request, media, document, params, principal, sources) if get and not stream else None
        asked = request.headers.get("if-none-match")
        if tags is not None and http_cache.matches(asked, tags["ETag"], any_tag=False):
            return http_cache.not_modified(tags)
        context = Context(settings=settings, sources=sources, default_registry=settings.registry_id,
                          principal=principal, auth=auth, rules=reads.references, events=events,
                          webhooks=webhooks, budget=budget_of(request), record=current())
        try:
            allowed = (OperationType.QUERY,) if get else (OperationType.QUERY, OperationType.MUTATION)
            try:
                if stream:
                    stale = staleness.StaleReport()  # a stream's events are the registry's own
                    subscriber = Subscriber(settings=settings, sources=sources, events=events, auth=auth,
                                            principal=principal, rules=context.rules, webhooks=webhooks)
                    opened = await event_stream(request, schema, document.text, params, subscriber, get, admission,
                                                budget=context.budget, record=context.record)
                    if isinstance(opened, Response):
                        if document.register is not None:
                            await persisted.keep(document.register, document.text, shared())
                        return opened
                    result = opened
                else:
                    with staleness.collecting() as stale:
                        result = await run_operation(schema, schema.limits, document.text, params.get("variables"),
                                                     context, None, params.get("operationName"), allowed)
            except OperationNotAllowed as exc:
                if exc.operation is OperationType.SUBSCRIPTION:
                    return _problem(media, 400, "BAD_REQUEST", SUBSCRIPTIONS_STREAM)
                allow = "POST" if exc.operation is OperationType.MUTATION else "GET, POST"
                return _problem(media, 405, exc.code, exc.reason(request.method), {"Allow": allow})
            except OperationNotFound as exc:
                return _problem(media, 400, exc.code, str(exc))
            body: dict[str, Any] = {}
            if result.errors:
                body["errors"] = [format_error(e, debug=settings.debug) for e in result.errors]
            ran = result.data is not None or not result.errors or any(e.path for e in result.errors)
            if ran:
                body["data"] = result.data  # absent only when the request failed before execution
                if result.extensions:
                    body["extensions"] = result.extensions
                if document.register is not None:
                    await persisted.keep(document.register, document.text, shared())
            if context.correlation_ids:  # core/events.md: the response names the events' interaction
                body["extensions"] = {**body.get("extensions", {}), "xregcorrelationid": list(context.correlation_ids)}
            status = 200 if (media == JSON and not stream) or ran else _request_error_status(body)
            response = await json_response(body, status, media_type=content_type(media),
                                           large=context.cost >= LARGE_COST, slice_seconds=context.pacer.slice_seconds)
            if stale:  # RFC 9211; RFC 9111 dropped Warning's 110/111
                response.headers["Cache-Status"] = staleness.cache_status(stale)
            if not get:
                response.headers["Cache-Control"] = http_cache.NO_STORE
            elif stale:  # a stale answer is not kept as if it were fresh
                response.headers["Cache-Control"] = "no-cache"
            elif status == 200 and ran and not result.errors:
                if tags is None:  # registries without revisions: the body is the validator
                    credentials = request.headers.get("authorization")
                    tags = http_cache.validators(
                        http_cache.entity_tag(salt, "graphql-body", media, hashlib.sha256(response.body).hexdigest(),
                                              http_cache.caller_key(principal, credentials)),
                        http_cache.cache_control(settings, private=bool(credentials)), VARY)
                if http_cache.matches(asked, tags["ETag"], any_tag=True):
                    return http_cache.not_modified(tags)
                response.headers.update(tags)
            return response
        finally:
            context.close()  # the request's loaded entities are freed now, not by a full collection

    return endpoint


def build_routes(settings: Settings, served: Served, auth: Authenticator,
                 shared: Callable[[], BaseCache | None] = lambda: None, *, events: EventFeed | None = None,
                 webhooks: Webhooks | None = None, admission: Admission | None = None,
                 limiter: RateLimiter | None = None) -> list[BaseRoute]:
    """``/graphql`` over the registries ``served`` — HTTP (GET and POST, with GraphQL over SSE)
    and WebSocket (:class:`~gateway.graphql_ws.GraphQLWebSocket`) — and GraphiQL's own routes.
    Subscriptions stream the local registry's ``events``; WebSocket operations, which no
    middleware sees, take their slot of ``admission`` and are charged to ``limiter``'s buckets
    (``None``: not limited)."""
    schema = build_schema(settings)
    admission = admission or Admission(settings)
    endpoint = graphql_endpoint(settings, schema, lambda: graphiql_page(settings),
                                PersistedQueries.from_settings(settings), served=served, auth=auth, shared=shared,
                                events=events, webhooks=webhooks, admission=admission)
    socket = GraphQLWebSocket(settings, schema, served=served, auth=auth, admission=admission, limiter=limiter,
                              events=events, webhooks=webhooks)
    return [Route("/graphql", endpoint, methods=["GET", "POST"], name="graphql"),
            WebSocketRoute("/graphql", socket, name="graphql-ws"), *graphiql_routes(settings)]
