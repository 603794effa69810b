"""Bounds on a request's head — its target (path and query) and its header fields — answered by
the gateway as JSON problem documents, never by the HTTP server in plain text.

Two layers, one set of settings (``XREG_MAX_URL_BYTES``, ``XREG_MAX_HEADER_BYTES``,
``XREG_MAX_HEADER_COUNT``):

* :class:`RequestLimitsMiddleware` refuses a request whose target is longer than
  ``max_url_bytes`` (414 ``uri_too_long``) or whose header fields are more than
  ``max_header_count`` or larger than ``max_header_bytes`` in all (431
  ``header_fields_too_large``), with the request id as ``instance`` like every problem.
* :class:`LimitedH11Protocol`, uvicorn's h11 protocol with a bound of its own on how much of a
  request head it buffers (:func:`server_options` sets it above the middleware's limits, so the
  middleware decides every request within reach): a head that outgrows it is answered 414 (the
  request line alone is that long) or 431 and the connection closed, and a request h11 cannot
  parse is a JSON 400 ``bad_request`` instead of uvicorn's plain text.
"""

from __future__ import annotations

import json
import re
from typing import Any

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE, H11Protocol

from gateway.http_api.responses import problem_body, problem_response
from gateway.request_context import current_request_id, new_request_id
from xreg.config import Settings
from xreg.errors import XRegistryError

#: How much of an over-long target a problem repeats as its subject.
SUBJECT_CHARS = 128
#: Bytes of a request head beyond target and fields: method, version, separators, final CRLF.
_HEAD_OVERHEAD = 1024
_END_OF_HEAD = re.compile(rb"\n\r?\n")
#: Seconds a refused connection is kept open for the client to read the answer.
LINGER_SECONDS = 5.0


def _subject(target: str) -> str:
    return target if len(target) <= SUBJECT_CHARS else target[:SUBJECT_CHARS] + "..."




def head_violation(scope: Scope, settings: Settings) -> XRegistryError | None:
    """The error of a request whose head exceeds the limits of ``settings``, else ``None``."""
    raw_path = scope.get("raw_path") or scope.get("path", "").encode("utf-8")
    query = scope.get("query_string", b"")
    target_bytes = len(raw_path) + (1 + len(query) if query else 0)
    subject = _subject(scope.get("path", "") or "/")
    if target_bytes > settings.max_url_bytes:
        return XRegistryError("uri_too_long", subject, limit=settings.max_url_bytes,
                              detail=f"the request target (path and query) has {target_bytes} bytes")
    headers = scope.get("headers", ())
    if len(headers) > settings.max_header_count:
        return XRegistryError("header_fields_too_large", subject, limit=f"{settings.max_header_count} fields",
                              detail=f"the request has {len(headers)} header fields")
    header_bytes = sum(len(name) + len(value) for name, value in headers)
    if header_bytes > settings.max_header_bytes:
        return XRegistryError("header_fields_too_large", subject, limit=f"{settings.max_header_bytes} bytes",
                              detail=f"its header fields (names and values) have {header_bytes} bytes")
    return None


class RequestLimitsMiddleware:
    """ASGI middleware: requests whose target or header fields exceed the configured limits are
    refused (414 / 431 problem documents) before anything else reads them."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        err = head_violation(scope, self.settings) if scope["type"] == "http" else None
        if err is None:
            await self.app(scope, receive, send)
            return
        await problem_response(err, current_request_id() or new_request_id())(scope, receive, send)


def head_limit(settings: Settings) -> int:
    """The most bytes of one request head the server buffers: above what the settings allow, so
    the middleware (not the connection) refuses a head just over them."""
    return settings.max_url_bytes + settings.max_header_bytes + 4 * settings.max_header_count + _HEAD_OVERHEAD


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn options that leave request-head limits to the gateway."""
    return {"http": LimitedH11Protocol, "h11_max_incomplete_event_size": head_limit(settings)}


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol whose refusals of a request head are the gateway's problem
    documents: a head longer than ``h11_max_incomplete_event_size`` is 414 / 431 (checked before
    h11 buffers it), an unparsable request is 400 ``bad_request``; the connection is closed."""

    #: Set once the connection was refused: what the client still sends is read and dropped.
    refused = False

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self.conn.their_state is h11.IDLE:  # reading a request head
            limit = self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
            head = self.conn.trailing_data[0][: limit + 4] + data[: limit + 4]
            if len(head) > limit and not _END_OF_HEAD.search(head, 0, limit + 4):
                line_end = head.find(b"\n")
                target = head[:line_end if line_end >= 0 else limit].split(b" ")
                subject = _subject(target[1].decode("latin-1") if len(target) > 1 else "/")
                if line_end < 0 or line_end > limit:
                    err = XRegistryError("uri_too_long", subject, limit=limit,
                                         detail=f"the request line is longer than {limit} bytes")
                else:
                    err = XRegistryError("header_fields_too_large", subject, limit=f"{limit} bytes",
                                         detail=f"the request head is longer than {limit} bytes")
                self._refuse(err)
                return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        self._refuse(XRegistryError("bad_request", "/", detail=msg))

    def _refuse(self, err: XRegistryError) -> None:
        content = json.dumps(problem_body(err, ""), ensure_ascii=False).encode("utf-8")  # no request yet
        phrase = {400: b"Bad Request", 414: b"URI Too Long", 431: b"Request Header Fields Too Large"}[err.status]
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json; charset=utf-8\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                             % (err.status, phrase, len(content), content))
        # A lingering close: the client reads the answer before the rest of what it sent could
        # reset the connection (closing with unread data sends RST); its own close ends it.
        self.refused = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()
