"""HTTP responses of the API: JSON bodies and RFC 9457-style problem documents.

Every response carries ``Link: <registry root>;rel=xregistry-root`` (core/http.md, "xRegistry
Root HTTP Header"), ``X-Request-Id`` and ``X-Registry-Instance`` (the registry instance, see
``Store.instance_id``; not an ``xRegistry-*`` header, which would name an attribute of the
entity); problems name the request id as their ``instance``.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from xreg.errors import ValidationErrors, XRegistryError
from xreg.json_encoding import dumps

JSON = "application/json; charset=utf-8"


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response (compact, UTF-8, not ASCII-escaped: :func:`xreg.json_encoding.dumps`)."""
    return Response(dumps(body), status_code=status, headers=headers, media_type=JSON)


def problem_body(err: XRegistryError, instance: str) -> dict[str, Any]:
    """The problem document of an error; every violation of a rejected write is listed under the
    extension member ``errors``."""
    body = err.to_problem(instance)
    body["status"] = err.status
    if isinstance(err, ValidationErrors) and len(err.errors) > 1:
        body["errors"] = [{k: v for k, v in e.to_problem().items()} for e in err.errors]
    return body


def problem_response(err: XRegistryError, instance: str, headers: dict[str, str] | None = None) -> Response:
    """The HTTP response for an :class:`XRegistryError`."""
    return json_response(problem_body(err, instance), err.status, headers)


def add_links(response: Response, *values: str) -> Response:
    """Append ``Link`` header values (one header line each)."""
    for value in values:
        response.headers.append("link", value)
    return response
