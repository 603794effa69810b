"""Admission control: a bounded amount of work per process; the rest waits a while, then is
turned away with ``503`` and ``Retry-After``.

Two kinds of work have a gate each (:class:`Gate`): ``graphql`` (``/graphql``) and ``http``
(the xRegistry HTTP API below the registry prefix). A gate lets ``concurrency`` requests work at
once; up to ``queue_size`` more wait, each at most ``queue_timeout`` seconds, in arrival order.
A request that finds the line full, or waits too long, is refused with ``server_busy`` (503,
``Retry-After``) before anything of it is read. Everything else — ``/healthz``, ``/readyz``,
``/metrics``, GraphiQL, ``OPTIONS`` preflights — never waits here, so probes answer at once
however busy the gateway is.

A GraphQL subscription holds a ``graphql`` slot only while it is set up: a stream over SSE gives
its request's slot back early (:func:`release_early`), one over WebSocket takes a slot per
operation. Open subscriptions are bounded by :class:`Subscriptions` instead (``subscriptions_max``).

:class:`AdmissionMiddleware` is plain ASGI (no response buffering); ``app.state.admission``
holds the :class:`Admission` with its counters (:meth:`Admission.rejected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from xreg import metrics
from xreg.config import Settings
from xreg.errors import XRegistryError

#: The kinds of work admission control bounds.
KINDS = ("graphql", "http")


class Busy(Exception):
    """No slot within the time a request may wait (or the line is full)."""


@dataclass
class GateStats:
    """What a gate did: requests admitted, refused, and the longest wait (seconds)."""

    admitted: int = 0
    rejected: int = 0
    longest_wait: float = 0.0


class Gate:
    """``concurrency`` slots and a line of at most ``queue_size`` waiters for one kind of work."""

    def __init__(self, kind: str, concurrency: int, queue_size: int, queue_timeout: float) -> None:
        self.kind = kind
        self.concurrency = concurrency
        self.queue_size = queue_size
        self.queue_timeout = queue_timeout
        self.active = 0
        self.waiting = 0
        self.stats = GateStats()
        self._slots = asyncio.Semaphore(concurrency)

    @property
    def retry_after(self) -> int:
        """Seconds a refused client is told to wait (``Retry-After``)."""
        return max(1, math.ceil(self.queue_timeout))

    def _reject(self) -> None:
        self.stats.rejected += 1
        metrics.ADMISSION_REJECTED.labels(self.kind).inc()

    async def acquire(self) -> None:
        """Take a slot, waiting in line at most ``queue_timeout``; raises :class:`Busy`."""
        if self.active < self.concurrency and not self.waiting:
            await self._slots.acquire()  # free: returns at once
        else:
            if self.waiting >= self.queue_size:
                self._reject()
                raise Busy
            loop = asyncio.get_running_loop()
            started = loop.time()
            self.waiting += 1
            try:
                async with asyncio.timeout(self.queue_timeout):
                    await self._slots.acquire()
            except TimeoutError:
                self._reject()
                raise Busy from None
            finally:
                self.waiting -= 1
            self.stats.longest_wait = max(self.stats.longest_wait, loop.time() - started)
        self.active += 1
        self.stats.admitted += 1

    def release(self) -> None:
        self.active -= 1
        self._slots.release()


class Subscriptions:
    """GraphQL subscriptions open in one process: at most ``limit`` (they wait for events without
    a gate slot); counted by transport in ``xreg_graphql_subscriptions_open``, and here (``open``,
    ``by_transport``). A subscription counts once its stream has joined the event feed: what is
    committed from then on reaches it. :meth:`until` / :meth:`wait_until` wait for a count (a
    client that must know its subscription is open before it writes: tests)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0
        self.by_transport: dict[str, int] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._changed = threading.Condition()

    def _count(self, transport: str, step: int) -> None:
        self.open += step
        self.by_transport[transport] = self.by_transport.get(transport, 0) + step
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        with self._changed:
            self._changed.notify_all()

    async def until(self, condition: Callable[[Subscriptions], bool]) -> None:
        """Wait (on the loop that serves the subscriptions) until ``condition(self)`` holds: it is
        checked again at each subscription opened or closed."""
        while not condition(self):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def wait_until(self, condition: Callable[[Subscriptions], bool], timeout: float) -> bool:
        """:meth:`until` for another thread than the serving loop's: whether ``condition`` held
        within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self), timeout)

    @contextlib.contextmanager
    def held(self, transport: str) -> Iterator[None]:
        """One subscription open for the block; raises :class:`Busy` when ``limit`` are open."""
        if self.open >= self.limit:
            metrics.ADMISSION_REJECTED.labels("graphql").inc()
            raise Busy
        self._count(transport, 1)
        gauge = metrics.SUBSCRIPTIONS_OPEN.labels(transport)
        gauge.inc()
        try:
            yield
        finally:
            self._count(transport, -1)
            gauge.dec()


class Admission:
    """The gates of one process, from the settings (``None`` for a kind: not bounded)."""

    def __init__(self, settings: Settings) -> None:
        self.enabled = settings.admission_enabled
        self.graphql_path = "/graphql"
        self.registry_prefix = "/" + settings.registry_prefix.strip("/")
        q, t = settings.admission_queue_size, settings.admission_queue_timeout_seconds
        self.gates = {
            "graphql": Gate("graphql", settings.admission_graphql_concurrency, q, t),
            "http": Gate("http", settings.admission_http_concurrency, q, t),
        }
        self.subscriptions = Subscriptions(settings.subscriptions_max)

    def kind_of(self, scope: Scope) -> str | None:
        """The kind of work of a request, or ``None`` when it is never queued."""
        return work_kind(scope, self.graphql_path, self.registry_prefix) if self.enabled else None

    def busy(self) -> bool:
        """Whether requests are at work or waiting for a slot (what health probes ask)."""
        return any(gate.active or gate.waiting for gate in self.gates.values())

    def rejected(self, kind: str) -> int:
        """Requests of ``kind`` refused so far (``xreg_admission_rejected_total{kind}``)."""
        return self.gates[kind].stats.rejected


#: Where the bulk reads of the Spark connector live (``gateway/bulk.py``): HTTP reads like the API's.
BULK_PREFIX = "/bulk"
#: The registry's event log (``gateway/event_log.py``): HTTP reads like the API's.
EVENTS_PATH = "/events"


def work_kind(scope: Scope, graphql_path: str, registry_prefix: str) -> str | None:
    """``graphql`` or ``http`` (the xRegistry API below ``registry_prefix``, the bulk reads
    below :data:`BULK_PREFIX` and the event log at :data:`EVENTS_PATH`) for the requests that
    admission control and rate limits govern;
    ``None`` for the rest (probes, GraphiQL, ``OPTIONS``)."""
    if scope["type"] != "http" or scope.get("method") == "OPTIONS":
        return None
    path = scope.get("path", "")
    if path == graphql_path:
        return "graphql"
    if path in (registry_prefix, EVENTS_PATH) or path.startswith((registry_prefix + "/", BULK_PREFIX + "/")):
        return "http"
    return None


def busy_error(retry_after: int) -> dict[str, object]:
    """The GraphQL error of an operation refused here (``server_busy``), as a response lists it."""
    err = XRegistryError("server_busy", "/graphql", detail=f"too many requests at work; retry in {retry_after} s")
    return {"message": err.title, "extensions": {"code": err.code, "retryAfter": retry_after}}


#: Where a request's ``release`` is kept in its scope's state (:func:`release_early`).
_RELEASE = "xreg.admission.release"


def release_early(scope: Scope) -> None:
    """Give the request's gate slot back now: its response goes on streaming without working
    (a subscription over SSE, once it is set up). Nothing when the request holds no slot."""
    release = scope.get("state", {}).get(_RELEASE)
    if release is not None:
        release()


def busy_response(kind: str, path: str, retry_after: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers and body of a refusal: a GraphQL error for ``/graphql``, the spec's
    ``server_busy`` problem document for the HTTP API."""
    err = XRegistryError("server_busy", path or "/",
                         detail=f"too many requests at work; retry in {retry_after} s")
    if kind == "graphql":
        body: dict[str, object] = {"errors": [{"message": err.title, "extensions": {"code": err.code}}]}
        media = b"application/json"
    else:
        body = {**err.to_problem(), "status": err.status}
        media = b"application/json; charset=utf-8"
    content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", media), (b"content-length", str(len(content)).encode()),
               (b"retry-after", str(retry_after).encode())]
    return err.status, headers, content


class AdmissionMiddleware:
    """ASGI middleware: requests of a bounded kind take a slot of its :class:`Gate` first."""

    def __init__(self, app: ASGIApp, admission: Admission) -> None:
        self.app = app
        self.admission = admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = self.admission.kind_of(scope)
        if kind is None:
            await self.app(scope, receive, send)
            return
        gate = self.admission.gates[kind]
        try:
            await gate.acquire()
        except Busy:
            status, headers, content = busy_response(kind, scope.get("path", ""), gate.retry_after)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": content})
            return
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                gate.release()

        scope.setdefault("state", {})[_RELEASE] = release
        try:
            await self.app(scope, receive, send)
        finally:
            release()
