"""A webhook receiver for tests: a real HTTP server (``LiveServer``) on 127.0.0.1 recording every
request, counting requests in flight per subscription (the ``webhook-id`` prefix) to catch
overlapping deliveries, answering with ``status`` (a callable may pick per request), keeping
each request open ``delay`` seconds, and holding requests between :meth:`Receiver.hold` and
:meth:`Receiver.release` (a ``threading.Event``: the server may run in a thread)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    code: int = 0

    @property
    def subscription(self) -> str:
        return self.headers.get("webhook-id", "").split(".", 1)[0]


@dataclass
class Receiver:
    """What the receiver saw; ``status`` answers each request (default 204)."""

    status: Callable[[Received], int] = lambda r: 204
    received: list[Received] = field(default_factory=list)
    #: The most requests of one subscription in flight at once.
    max_overlap: int = 0
    #: Set while requests may be answered (cleared by :meth:`hold`).
    _released: threading.Event = field(default_factory=lambda: _set(threading.Event()))
    #: Seconds each request stays open (widens the window in which an overlap would show).
    delay: float = 0.0
    entered: threading.Event = field(default_factory=threading.Event)
    _inflight: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hold(self) -> None:
        """Keep every request open from now on (until :meth:`release`)."""
        self._released.clear()

    def release(self) -> None:
        """Answer the held requests, and the next ones at once."""
        self._released.set()

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            got = Received({k.lower(): v for k, v in request.headers.items()}, await request.body())
            with self._lock:
                n = self._inflight[got.subscription] = self._inflight.get(got.subscription, 0) + 1
                self.max_overlap = max(self.max_overlap, n)
            try:
                self.entered.set()
                if self.delay:
                    await asyncio.sleep(self.delay)
                if not self._released.is_set():  # a held request: the gateway is mid-delivery
                    await asyncio.to_thread(self._released.wait)
                got.code = self.status(got)
                with self._lock:
                    self.received.append(got)
                return Response(status_code=got.code)
            finally:
                with self._lock:
                    self._inflight[got.subscription] -= 1

        return Starlette(routes=[Route("/hook", hook, methods=["POST"])])

    def delivered(self) -> list[Received]:
        """Requests answered with a 2xx, in arrival order."""
        with self._lock:
            return [r for r in self.received if 200 <= r.code < 300]


def _set(event: threading.Event) -> threading.Event:
    event.set()
    return event
