"""GraphQL over HTTP at ``/graphql``: ``POST`` (JSON) for everything, ``GET`` for queries.

The request is refused before execution when its body is larger than ``max_body_bytes``
(413), when it is not a GraphQL request (400 / 415), when the caller may not read (401 / 403,
the HTTP API's rules), or when a ``GET`` carries a mutation (405). Otherwise the response is
200 with ``data`` and ``errors`` (each with ``extensions.code``). A browser's ``GET`` without a
query gets GraphiQL, when ``gateway.graphiql`` provides it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.graphql import OperationType

from gateway import json_limits
from gateway.auth import AuthError, principal_of
from gateway.config import Settings
from resolvers.context import Context, references_of, sources_of
from resolvers.errors import format_error
from resolvers.pacing import LARGE_COST, json_response
from resolvers.schema import GatewaySchema

JSON_TYPES = ("application/json",)


def _problem(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"errors": [{"message": message, "extensions": {"code": code}}]}, status, headers=headers)


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
    params: dict[str, Any] = {k: request.query_params.get(k) for k in ("query", "operationName", "variables")}
    if params["variables"]:
        params["variables"] = json_limits.loads(params["variables"])
    return params


def wants_html(request: Request) -> bool:
    """A browser navigating to the endpoint (not a GraphQL client)."""
    return "text/html" in request.headers.get("accept", "") and "query" not in request.query_params


def graphql_endpoint(
    settings: Settings, schema: GatewaySchema, graphiql_page: Callable[[], Any] | None,
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint for ``GET`` and ``POST /graphql``."""

    async def endpoint(request: Request) -> Response:
        if request.method in ("GET", "HEAD") and wants_html(request):
            if graphiql_page is None:
                return _problem(404, "NOT_FOUND", "GraphiQL is not available on this server.")
            page = graphiql_page()
            return page if isinstance(page, Response) else HTMLResponse(str(page))
        try:
            if request.method in ("GET", "HEAD"):
                allowed: tuple[OperationType, ...]
                params, allowed = _params_of_get(request), (OperationType.QUERY,)
            else:
                media = request.headers.get("content-type", "").split(";")[0].strip().lower()
                if media not in JSON_TYPES:
                    return _problem(415, "UNSUPPORTED_MEDIA_TYPE", "Send the request as application/json.")
                params = json_limits.loads(await _body(request, settings.max_body_bytes))
                allowed = (OperationType.QUERY, OperationType.MUTATION)
        except _TooLarge:
            return _problem(413, "REQUEST_TOO_LARGE", f"The request body exceeds {settings.max_body_bytes} bytes.")
        except (ValueError, UnicodeDecodeError) as exc:
            return _problem(400, "BAD_REQUEST", f"The request is not valid JSON: {exc}")
        problem = _check_params(params)
        if problem:
            return _problem(400, "BAD_REQUEST", problem)
        try:
            principal = await principal_of(request)
            request.app.state.auth.require(principal, "read")
        except AuthError as exc:
            return _problem(exc.status, exc.code, exc.title, exc.headers())
        sources = sources_of(request.app)
        context = Context(settings=settings, sources=sources, default_registry=settings.registry_id,
                          principal=principal, auth=request.app.state.auth,
                          rules=references_of(request.app, sources))
        try:
            result = await schema.execute(params["query"], params.get("variables"), context,
                                          operation_name=params.get("operationName"),
                                          allowed_operation_types=allowed)
        except InvalidOperationTypeError as exc:
            allow = "POST" if exc.operation_type is OperationType.MUTATION else "GET, POST"
            return _problem(405, "METHOD_NOT_ALLOWED", exc.as_http_error_reason(request.method), {"Allow": allow})
        except CannotGetOperationTypeError as exc:
            return _problem(400, "BAD_REQUEST", exc.as_http_error_reason())
        body: dict[str, Any] = {}
        if result.errors:
            body["errors"] = [format_error(e, debug=settings.debug) for e in result.errors]
        if result.data is not None or not result.errors or any(e.path for e in result.errors):
            body["data"] = result.data  # absent only when the request failed before execution
        return await json_response(body, large=context.cost >= LARGE_COST)

    return endpoint


def _check_params(params: Any) -> str | None:
    if not isinstance(params, dict):
        return "The request must be a JSON object with a query."
    if not isinstance(params.get("query"), str) or not params["query"].strip():
        return "The request has no query."
    if params.get("variables") is not None and not isinstance(params["variables"], dict):
        return "variables must be a JSON object."
    if params.get("operationName") is not None and not isinstance(params["operationName"], str):
        return "operationName must be a string."
    return None
