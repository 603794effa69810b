"""The one live-server harness: an ASGI app under a real uvicorn on 127.0.0.1.

``with LiveServer(app) as live`` serves from a thread of its own (tests that call it with a
blocking client, Spark, Chromium, a subprocess); ``async with LiveServer(app) as live`` serves
as a task of the running event loop (tests whose app shares objects — an opened registry — with
the test itself). Either way the socket is bound before the server starts, so the URL is known
at once and no port race is possible; accepted connections get ``TCP_NODELAY`` (no Nagle delays).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn

STARTUP_SECONDS = 30.0


def bound_socket() -> socket.socket:
    """A TCP socket bound to a free port of 127.0.0.1 (``IPPROTO_TCP``: accepted connections
    inherit ``TCP_NODELAY`` from uvicorn's own setting)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class LiveServer:
    """uvicorn serving ``app`` (lifespan included) on a socket of its own; see the module doc.
    ``options``: further ``uvicorn.Config`` options (``gateway.request_limits.server_options``)."""

    def __init__(self, app: Any, *, log_level: str = "warning", sock: socket.socket | None = None,
                 **options: Any) -> None:
        self.sock = sock or bound_socket()
        self.port: int = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on", **options))
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task | None = None

    # -- in a thread ------------------------------------------------------------------------------
    def start(self) -> LiveServer:
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                        name=f"uvicorn-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(20)
        self.sock.close()

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- in the running event loop ------------------------------------------------------------------
    async def __aenter__(self) -> LiveServer:
        self._task = asyncio.create_task(self.server.serve(sockets=[self.sock]))
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self.server.started:
            if self._task.done() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.url}")
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        if self._task is not None:
            await self._task
        self.sock.close()
