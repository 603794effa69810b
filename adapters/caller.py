"""Who the current request is for: the caller's credentials, for registries that receive them
(``auth.forward``) and for cache keys of answers that depend on them.

:class:`CallerMiddleware` records the ``Authorization`` header of every HTTP request in a
context variable; tasks started while serving the request (batched loads, fan-out) inherit it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

_credentials: ContextVar[str | None] = ContextVar("xreg_caller_credentials", default=None)


def current_credentials() -> str | None:
    """The ``Authorization`` header of the request being served (``None``: anonymous)."""
    return _credentials.get()


@contextlib.contextmanager
def acting_for(credentials: str | None) -> Iterator[None]:
    """Serve the code inside on behalf of ``credentials`` (an ``Authorization`` header value)."""
    token = _credentials.set(credentials)
    try:
        yield
    finally:
        _credentials.reset(token)


class CallerMiddleware:
    """ASGI middleware: every HTTP request runs :func:`acting_for` its ``Authorization`` header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with acting_for(Headers(scope=scope).get("authorization")):
            await self.app(scope, receive, send)
