"""What is known about the HTTP request being served, for its log line, metrics and spans.

:class:`~gateway.observe.ObserveMiddleware` starts a :class:`RequestRecord` for every request
(a context variable, so tasks started while serving it see it too); the parts of the gateway
that learn something fill it in: the xRegistry API its route template, GraphQL the operation
name and outcome. Log lines written while the request is served carry its id.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar, Token
from dataclasses import dataclass

#: An ``X-Request-Id`` taken from a client: at most 128 characters, letters, digits and ``._:-``.
_INCOMING_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}")


@dataclass
class RequestRecord:
    """One request: its id, and what serving it found out."""

    request_id: str
    #: The route template (``/registry/messagegroups/{gid}``), set by whoever routes it.
    route: str | None = None
    #: The GraphQL operation's name (``None``: not a GraphQL operation), and its outcome.
    operation: str | None = None
    outcome: str | None = None


_current: ContextVar[RequestRecord | None] = ContextVar("xreg_request", default=None)


def current() -> RequestRecord | None:
    """The request being served (``None`` outside a request)."""
    return _current.get()


def current_request_id() -> str | None:
    """The id of the request being served."""
    record = _current.get()
    return record.request_id if record is not None else None


def begin(record: RequestRecord) -> Token[RequestRecord | None]:
    """Make ``record`` the current request; returns the token for :func:`end`."""
    return _current.set(record)


def end(token: Token[RequestRecord | None]) -> None:
    """The request of ``token`` is over."""
    _current.reset(token)


def new_request_id() -> str:
    """A fresh request id (a URN, usable as a problem's ``instance``)."""
    return f"urn:uuid:{uuid.uuid4()}"


def request_id_from(header: str | None) -> str:
    """The client's ``X-Request-Id`` when it is acceptable, else a fresh id."""
    if header is not None and _INCOMING_ID.fullmatch(header):
        return header
    return new_request_id()
