"""Requests no route of the gateway serves (an unknown path, a method a path does not take)
answered as JSON problem documents, like every other error: 404 ``api_not_found`` and 405
``action_not_supported`` (with ``Allow``), the spec's error types (core/http.md, core/spec.md)."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from xreg.errors import XRegistryError


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's exception handler for :class:`HTTPException` raised by routing."""
    assert isinstance(exc, HTTPException)
    path = request.scope.get("path", "/") or "/"
    headers = dict(exc.headers or {})
    body: dict[str, object]
    if exc.status_code == 404:
        body = XRegistryError("api_not_found", path).to_problem()
    elif exc.status_code == 405:
        body = XRegistryError("action_not_supported", path, action=request.method).to_problem()
    else:
        body = {"title": exc.detail, "subject": path}
    body["status"] = exc.status_code
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=headers)
    content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return Response(content, exc.status_code, headers, media_type="application/json; charset=utf-8")
