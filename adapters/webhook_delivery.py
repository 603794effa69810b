"""Delivering registry events to webhook subscriptions (CloudEvents HTTP binding, Standard Webhooks
signatures), at least once and in order per subscription.

One :class:`WebhookDispatcher` per process, started by the app's lifespan; writers never wait on
it. Each turn (:meth:`WebhookDispatcher.run_once`) it asks the store for the subscriptions that
are due and, for each, takes the subscription's lease in the store (compare-and-set: another
process holding an unexpired lease keeps it), then:

1. delivers the dead letters marked for replay, oldest first;
2. reads the events after the subscription's cursor (``Store.events_after`` with its filters)
   and delivers them one by one, moving the cursor after each acknowledged delivery (any 2xx).

A failed attempt (connection error, no answer within ``timeout_seconds`` — one deadline for the
whole request —, a non-2xx answer, a redirect, a target the outbound rules now refuse; the
answer's body is never read) stops the subscription until ``now + backoff`` ("full jitter": uniform between
0 and ``base * 2**(attempts-1)``, capped); the ``max_attempts``-th failure turns the event into a
dead letter and delivery goes on with the next event. The lease is renewed before a request
whenever less than ``timeout + 1`` seconds of it remain, and the lease outlives the request's
deadline (``webhook_lease_seconds > webhook_timeout_seconds``), so no two processes ever send
one subscription's events at the same time. A process killed mid-delivery leaves its cursor
before the unacknowledged event: the next holder (after the lease expires) sends it again.

Every request carries ``webhook-id`` (``<subscription id>.<CloudEvent id>``, the same on every
retry), ``webhook-timestamp`` and ``webhook-signature`` (``v1,`` + HMAC-SHA256 per Standard
Webhooks, made by the ``standardwebhooks`` library with the subscription's secret). The body is
the structured CloudEvent (``application/cloudevents+json``) or, in binary mode, the event's
``data`` with its attributes as ``ce-*`` headers (the CNCF ``cloudevents`` SDK writes both).
The CloudEvent carries the extension ``xregposition`` (the event's position).

Time comes from an injected :class:`~adapters.clock.Clock` (wall seconds, shared by processes
through the store) and jitter from an injected :class:`random.Random`, so tests drive retries
without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx
from cloudevents.core.bindings.http import to_binary, to_structured
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from standardwebhooks.webhooks import Webhook

from adapters.clock import SYSTEM_CLOCK, Clock
from adapters.outbound import OutboundPolicy, OutboundRefused, Resolver, system_resolver
from adapters.webhook_admin import Webhooks
from xreg.events import EventPosition
from xreg.storage.base import Store
from xreg.storage.errors import EventsGone
from xreg.storage.webhooks import DeadLetter, Subscription

log = logging.getLogger("xreg.webhooks")

_JSON = JSONFormat()
#: Longest error text kept in the delivery state.
MAX_ERROR = 300


class Event(Protocol):
    """What the dispatcher needs of a registry event (``xreg.events.RegistryEvent``)."""

    @property
    def position(self) -> Any: ...

    def to_cloudevent(self, source: str) -> dict[str, Any]: ...


#: Reads the events after a position text (``None``: from the oldest), with the filters.
EventsReader = Callable[[str | None, int, Sequence[str] | None, str | None], Awaitable[Sequence[Event]]]


@dataclass(frozen=True)
class DeliveryConfig:
    """The ``XREG_WEBHOOK_*`` settings the dispatcher uses."""

    max_attempts: int = 8
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 300.0
    timeout_seconds: float = 10.0
    lease_seconds: float = 30.0
    poll_seconds: float = 1.0
    batch: int = 100
    concurrency: int = 8


class _LeaseLost(Exception):
    """Another process took the subscription over: stop without touching its state."""


def store_events(store: Store) -> EventsReader:
    """The events of ``store``'s log after a position text, with the filters (``Store.events_after``)."""
    async def read(after: str | None, limit: int, types: Sequence[str] | None,
                   subject: str | None) -> Sequence[Event]:
        position = EventPosition.parse(after) if after else None
        return await store.events_after(position, limit=limit, types=types, subject=subject)
    return read


def envelope(event: dict[str, Any], mode: str) -> tuple[dict[str, str], bytes]:
    """HTTP headers and body of a structured CloudEvent dict in ``mode`` (CloudEvents SDK)."""
    attributes = {k: v for k, v in event.items() if k not in ("data", "data_base64")}
    if isinstance(attributes.get("time"), str):
        attributes["time"] = datetime.fromisoformat(attributes["time"])
    ce = CloudEvent(attributes, event.get("data"))
    message = to_binary(ce, _JSON) if mode == "binary" else to_structured(ce, _JSON)
    return dict(message.headers), bytes(message.body)


def sign(secret: str, msg_id: str, when: float, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one request."""
    timestamp = datetime.fromtimestamp(int(when), tz=UTC)
    signature = Webhook(secret).sign(msg_id, timestamp, body.decode("utf-8"))
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(when)), "webhook-signature": signature}


def backoff(attempts: int, base: float, cap: float, rng: random.Random) -> float:
    """Seconds before the next attempt after ``attempts`` failures (full jitter, capped)."""
    return rng.uniform(0, min(cap, base * 2 ** max(attempts - 1, 0)))


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class WebhookDispatcher:
    """Delivers the subscriptions of one store from this process (see the module doc)."""

    def __init__(self, webhooks: Webhooks, events: EventsReader, *, source: str, config: DeliveryConfig,
                 policy: OutboundPolicy, client: httpx.AsyncClient | None = None, clock: Clock = SYSTEM_CLOCK,
                 rng: random.Random | None = None, resolve: Resolver = system_resolver,
                 holder: str | None = None) -> None:
        self.webhooks, self.state = webhooks, webhooks.state
        self._events = events
        self.source = source
        self.config = config
        self.policy = policy
        self._own_client = client is None
        self.client = client or httpx.AsyncClient(timeout=config.timeout_seconds, follow_redirects=False,
                                                  trust_env=False)
        self.clock = clock
        self.rng = rng or random.Random()
        self._resolve = resolve
        self.holder = holder or _holder()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._leases: dict[str, float] = {}
        webhooks.on_change = self.wake

    def wake(self) -> None:
        """Look for work now (a local write committed, a subscription changed)."""
        self._wakeup.set()

    # -- the loop ---------------------------------------------------------------------------------
    async def run_once(self) -> int:
        """One turn over the due subscriptions; how many events were delivered or dead-lettered."""
        now = self.clock.wall()
        due = await self.state.due(now, self.holder, limit=self.config.concurrency * 4)
        gate = asyncio.Semaphore(self.config.concurrency)

        async def one(sub: Subscription) -> int:
            async with gate:
                try:
                    return await self._serve(sub.id)
                except _LeaseLost:
                    log.info("webhook subscription %s: lease lost to another process", sub.id)
                    return 0
                except Exception:
                    log.exception("webhook subscription %s: delivery turn failed", sub.id)
                    return 0

        return sum(await asyncio.gather(*(one(s) for s in due)))

    async def run(self) -> None:
        """Turns until stopped (:meth:`aclose`): at once while there is work, else on a wake-up or
        every poll. The stop is a flag as well as a cancellation: Python 3.11's ``wait_for`` loses a
        cancellation that arrives as the wake-up completes, and the loop must still end."""
        while not self._stopping:
            self._wakeup.clear()
            try:
                done = await self.run_once()
            except Exception:
                log.exception("webhook delivery turn failed")
                done = 0
            if done or self._stopping:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), self.config.poll_seconds)

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self.run(), name="webhook-delivery")

    async def aclose(self) -> None:
        """Stop delivering, release the leases held, close the HTTP client."""
        if self._task is not None:
            self._stopping = True
            self._wakeup.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for sub_id in list(self._leases):
            with contextlib.suppress(Exception):
                await self.state.release(sub_id, self.holder, self.clock.wall())
        self._leases.clear()
        if self._own_client:
            await self.client.aclose()

    # -- one subscription -----------------------------------------------------------------------------
    async def _serve(self, sub_id: str) -> int:
        now = self.clock.wall()
        until = now + self.config.lease_seconds
        sub = await self.state.claim(sub_id, self.holder, now, until)
        if sub is None:
            return 0
        self._leases[sub_id] = until
        done = 0
        try:
            if sub.next_attempt > now:
                return 0
            attempts = sub.attempts
            while (letter := await self.state.next_replay(sub_id)) is not None:
                if not await self._attempt(sub, letter.event, letter.position, attempts, replay=True):
                    return done
                done, attempts = done + 1, 0
            try:
                events = await self._events(sub.cursor, self.config.batch, sub.types, sub.subject)
            except EventsGone as gone:  # stopped for longer than the history retention
                log.warning("webhook subscription %s: %s; resuming at the oldest retained event", sub_id, gone)
                events = await self._events(None, self.config.batch, sub.types, sub.subject)
            for event in events:
                body = {**event.to_cloudevent(self.source), "xregposition": str(event.position)}
                if not await self._attempt(sub, body, str(event.position), attempts, replay=False):
                    return done
                done, attempts = done + 1, 0
            return done
        finally:
            self._leases.pop(sub_id, None)
            await self.state.release(sub_id, self.holder, self.clock.wall())

    async def _attempt(self, sub: Subscription, event: dict[str, Any], position: str, attempts: int, *,
                       replay: bool) -> bool:
        """Send one event; ``True`` when the subscription may go on (delivered or dead-lettered)."""
        await self._hold(sub.id)
        error = await self._post(sub, event)
        now = self.clock.wall()
        if error is None:
            moved = (await self.state.replayed(sub.id, self.holder, position) if replay
                     else await self.state.advance(sub.id, self.holder, position))
            if not moved:
                raise _LeaseLost
            return True
        attempts += 1
        if attempts >= self.config.max_attempts:
            letter = DeadLetter(subscription=sub.id, position=position, event=event, attempts=attempts,
                                last_error=error, failed_at=now)
            if not await self.state.dead_letter(letter, self.holder, advance=not replay):
                raise _LeaseLost
            log.warning("webhook subscription %s: event %s is a dead letter after %d attempts (%s)",
                        sub.id, position, attempts, error)
            return True
        delay = backoff(attempts, self.config.backoff_seconds, self.config.max_backoff_seconds, self.rng)
        if not await self.state.failed(sub.id, self.holder, attempts, now + delay, error):
            raise _LeaseLost
        log.info("webhook subscription %s: attempt %d at event %s failed (%s); next in %.1fs",
                 sub.id, attempts, position, error, delay)
        return False

    async def _hold(self, sub_id: str) -> None:
        """Renew the lease unless it outlasts one more request."""
        now = self.clock.wall()
        if self._leases.get(sub_id, 0.0) - now >= self.config.timeout_seconds + 1.0:
            return
        until = now + self.config.lease_seconds
        if not await self.state.renew(sub_id, self.holder, until):
            raise _LeaseLost
        self._leases[sub_id] = until

    async def _post(self, sub: Subscription, event: dict[str, Any]) -> str | None:
        """Send ``event``; the error text (without secrets) or ``None`` when acknowledged."""
        try:
            await self.policy.check(sub.url, self._resolve)
        except OutboundRefused as exc:
            return str(exc)[:MAX_ERROR]
        headers, body = envelope(event, sub.mode)
        headers.update(sign(sub.secret, f"{sub.id}.{event['id']}", self.clock.wall(), body))
        headers["user-agent"] = "xregistry-gateway-webhooks"
        try:  # one deadline for the whole request (httpx's own timeouts are per phase), body unread
            async with asyncio.timeout(self.config.timeout_seconds), self.client.stream(
                    "POST", sub.url, content=body, headers=headers, timeout=self.config.timeout_seconds) as response:
                status = response.status_code
        except TimeoutError:
            return f"no answer within {self.config.timeout_seconds:g}s"
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
        if 200 <= status < 300:
            return None
        return f"HTTP {status}"
