"""Every HTTP request observed once: its request id, its log line, its metrics and its span.

:class:`ObserveMiddleware` is a pure ASGI middleware (it never buffers a body). For each
request it takes the id from ``X-Request-Id`` when the client sent an acceptable one (at most
128 characters of ``A-Z a-z 0-9 . _ : -``) or makes one, returns it in ``X-Request-Id``, and
serves the request under a :class:`~gateway.request_context.RequestRecord` (the xRegistry API
names its problems' ``instance`` with that id). When the response has been sent it counts the
request (``xreg_http_requests_total``, ``xreg_http_request_duration_seconds`` by route
template, method and status) and writes one line to the ``xreg.access`` logger: request id,
method, route, path, status, duration, the GraphQL operation name and the caller's identity
(``key:<name>`` of an API key, ``jwt:<iss>|<sub>`` of a token, ``anonymous``; never a
credential). With tracing on, the request is a server span continuing the caller's
``traceparent``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.request_context import RequestRecord, begin, end, request_id_from
from xreg import metrics, tracing

access_log = logging.getLogger("xreg.access")

#: The route of a request no route matched.
UNMATCHED = "unmatched"


def route_of(scope: Scope, record: RequestRecord) -> str:
    """The route template that served the request (bounded: never the raw path)."""
    if record.route is not None:
        return record.route
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


def caller_of(scope: Scope) -> str | None:
    """The identity of the authenticated caller (:attr:`~gateway.auth.Principal.identity`:
    ``anonymous``, ``key:<name>``, ``jwt:<iss>|<sub>``), when the request was authenticated;
    ``None`` when it was not (or was refused)."""
    state = scope.get("state")
    principal = state.get("principal") if isinstance(state, dict) else None
    return getattr(principal, "identity", None)


class ObserveMiddleware:
    """ASGI middleware observing every HTTP request (see the module documentation)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = scope.get("headers", ())
        incoming = Headers(raw=headers).get("x-request-id")
        record = RequestRecord(request_id_from(incoming))
        scope.setdefault("state", {})
        method = scope.get("method", "GET")
        status = 500
        token = begin(record)

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)["X-Request-Id"] = record.request_id
            await send(message)

        try:
            with tracing.server_span(f"{method} request", headers, {"http.request.method": method,
                                                                    "url.path": scope.get("path", "")}) as span:
                try:
                    await self.app(scope, receive, send_observed)
                finally:
                    route = route_of(scope, record)
                    if span is not None:
                        span.update_name(f"{method} {route}")
                        span.set_attribute("http.route", route)
                        span.set_attribute("http.response.status_code", status)
                        span.set_attribute("xreg.request_id", record.request_id)
        finally:
            elapsed = time.perf_counter() - started
            self._observe(scope, record, route_of(scope, record), method, status, elapsed)
            end(token)

    @staticmethod
    def _observe(scope: Scope, record: RequestRecord, route: str, method: str, status: int, elapsed: float) -> None:
        label = metrics.method_label(method)
        metrics.HTTP_REQUESTS.labels(route, label, str(status)).inc()
        metrics.HTTP_REQUEST_DURATION.labels(route, label).observe(elapsed)
        if record.outcome is None and route == "/graphql" and status >= 400:
            # refused before the operation was read (size, media type, credentials)
            record.outcome = "refused"
            metrics.GRAPHQL_OPERATIONS.labels("unknown", "refused").inc()
        if access_log.isEnabledFor(logging.INFO):
            caller = caller_of(scope)
            fields: dict[str, Any] = {"request_id": record.request_id, "method": method, "route": route,
                                      "path": scope.get("path", ""), "status": status,
                                      "duration_ms": round(elapsed * 1000, 3), "caller": caller}
            if record.operation is not None or record.outcome is not None:
                fields["operation"] = record.operation
                fields["outcome"] = record.outcome
            text = f"{method} {ascii(scope.get('path', ''))[1:-1]} {status} {fields['duration_ms']:.1f}ms route={route}"
            if "operation" in fields:
                text += f" operation={record.operation or '-'} outcome={record.outcome}"
            text += f" caller={caller or '-'} id={record.request_id}"
            access_log.info(text, extra={"fields": fields})
