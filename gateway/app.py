"""The gateway's ASGI application: xRegistry HTTP API, GraphQL and GraphiQL on one Starlette app,
and the operations endpoints: ``/healthz`` (liveness), ``/readyz`` (readiness, see
:mod:`gateway.readiness`) and ``/metrics`` (Prometheus, see :mod:`xreg.metrics`).

:func:`create_app` builds what the handlers need and hands it to them (constructor injection):
the :class:`~xreg.registry.service.LocalRegistry`, its :class:`~adapters.events.EventFeed`
(told of every commit of this process), the :class:`~gateway.auth.Authenticator`, the
configured registries (:class:`~adapters.federation.Federation`, reloaded on SIGHUP and
settings-file changes), the webhook subscriptions (:class:`~adapters.webhook_admin.Webhooks`;
their delivery runs as a task of the lifespan, :mod:`adapters.webhook_delivery`), the
re-materialisation worker (a task of the lifespan, :mod:`xreg.registry.rematerialise`), the rate
limiter and admission control. Handlers read nothing from ``app.state``; it names the same
objects for tests and operators (``settings``, ``registry``, ``events``, ``federation``,
``webhooks``, ``auth``, ``rate_limiter``, ``admission``, ``rematerialiser``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters.breaker import STATE_VALUES
from adapters.clock import SYSTEM_CLOCK, Clock
from adapters.events import EventFeed
from adapters.federation import Federation
from adapters.local import LocalSource
from adapters.outbound import OutboundPolicy
from adapters.webhook_admin import Webhooks
from adapters.webhook_delivery import DeliveryConfig, WebhookDispatcher, store_events
from gateway import gc_tuning, readiness
from gateway.admission import Admission, AdmissionMiddleware
from gateway.auth import Authenticator
from gateway.bulk import build_routes as bulk_routes
from gateway.cors import cors_middleware
from gateway.event_log import build_routes as event_routes
from gateway.graphql_http import build_routes as graphql_routes
from gateway.heap_trim import HeapTrimmer, glibc_trim
from gateway.http_api import build_routes as xregistry_routes
from gateway.http_errors import http_exception
from gateway.logs import redact_url
from gateway.observe import ObserveMiddleware
from gateway.ratelimit import RateLimiter, RateLimitMiddleware
from gateway.request_limits import RequestLimitsMiddleware
from gateway.webhooks_http import build_routes as webhook_routes
from xreg import formats, metrics, tracing
from xreg.config import Settings, load_settings
from xreg.registry.rematerialise import Rematerialiser
from xreg.registry.service import LocalRegistry

log = logging.getLogger("xreg.gateway")

#: How often the history retention runs while serving.
PRUNE_INTERVAL_SECONDS = 3600.0


async def prune_history(registry: LocalRegistry, settings: Settings) -> int:
    """Apply the configured history retention once; returns how many states were dropped."""
    if settings.history_keep_revisions is None and settings.history_keep_days is None:
        return 0
    keep_seconds = settings.history_keep_days * 86400 if settings.history_keep_days is not None else None
    return await registry.store.prune(keep_revisions=settings.history_keep_revisions, keep_seconds=keep_seconds)


def operations_routes(registry: LocalRegistry, federation: Federation, admission: Admission) -> list[Route]:
    """``/healthz``, ``/readyz`` and ``/metrics``."""

    async def health(request: Request) -> JSONResponse:
        revision = await registry.store.probe_revision(busy=admission.busy())  # busy: never waits
        return JSONResponse({"status": "ok", "revision": revision})

    async def ready(request: Request) -> JSONResponse:
        verdict = await readiness.check(registry.store, federation.status(),
                                        last_reload_error=federation.last_reload_error)
        return JSONResponse(verdict.body, 200 if verdict.ready else 503, headers={"Cache-Control": "no-store"})

    async def metrics_page(request: Request) -> Response:
        try:
            metrics.REGISTRY_REVISION.set(await registry.store.current_revision())
        except Exception as exc:  # the store's trouble is /readyz's to report; the scrape still answers
            log.debug("revision not read for /metrics: %s", exc)
        for status in federation.status():
            if status.breaker is not None:
                metrics.REMOTE_BREAKER_STATE.labels(status.registry).set(STATE_VALUES[status.breaker])
        body, media_type = metrics.exposition()
        return Response(body, media_type=media_type, headers={"Cache-Control": "no-store"})

    return [Route("/healthz", health), Route("/readyz", ready), Route("/metrics", metrics_page)]


def evaluator_limits(settings: Settings) -> formats.Limits:
    """The bounds of the evaluator of untrusted content, from the ``XREG_EVAL_*`` settings."""
    return formats.Limits(
        max_document_bytes=settings.eval_max_document_bytes, max_payload_bytes=settings.eval_max_payload_bytes,
        max_depth=settings.eval_max_depth, cpu_seconds=settings.eval_cpu_seconds,
        wall_seconds=settings.eval_wall_seconds, memory_bytes=settings.eval_memory_bytes,
        workers=settings.eval_workers, queue_size=settings.eval_queue_size,
        queue_seconds=settings.eval_queue_seconds)


def outbound_policy(settings: Settings) -> OutboundPolicy:
    """Where requests made on a caller's behalf may go (``XREG_OUTBOUND_*``)."""
    return OutboundPolicy(allow_loopback=settings.outbound_allow_loopback,
                          allow_private=settings.outbound_allow_private)


def webhook_dispatcher(settings: Settings, registry: LocalRegistry, *,
                       clock: Clock = SYSTEM_CLOCK) -> WebhookDispatcher:
    """The webhook subscriptions of ``registry``'s store and their dispatcher (``XREG_WEBHOOK_*``)."""
    policy = outbound_policy(settings)
    config = DeliveryConfig(
        max_attempts=settings.webhook_max_attempts, backoff_seconds=settings.webhook_backoff_seconds,
        max_backoff_seconds=settings.webhook_max_backoff_seconds, timeout_seconds=settings.webhook_timeout_seconds,
        lease_seconds=settings.webhook_lease_seconds, poll_seconds=settings.webhook_poll_seconds,
        batch=settings.webhook_batch, concurrency=settings.webhook_concurrency)
    hooks = Webhooks(registry.store, policy, clock=clock.wall)
    return WebhookDispatcher(hooks, store_events(registry.store), source=registry.base_url, config=config,
                             policy=policy, clock=clock)


def create_app(settings: Settings | None = None, *, registry: LocalRegistry | None = None,
               webhooks: WebhookDispatcher | None = None, clock: Clock = SYSTEM_CLOCK) -> Starlette:
    """The gateway application. ``registry`` overrides the one ``settings`` would build, ``webhooks``
    the webhook dispatcher, ``clock`` the time the remote registries' sources read and credentials
    expire by (tests)."""
    settings = settings or load_settings()
    formats.configure(evaluator_limits(settings))
    registry = registry or LocalRegistry.from_settings(settings)
    dispatcher = webhooks or webhook_dispatcher(settings, registry)
    federation = Federation(settings, LocalSource(registry), clock=clock)
    events = EventFeed(registry.store, poll_interval=settings.events_poll_seconds)
    registry.commit_listeners.append(events.notify)
    registry.commit_listeners.append(lambda revision: dispatcher.wake())  # delivery starts without waiting a poll
    rematerialiser = Rematerialiser(registry, batch=settings.rematerialise_batch)
    auth = Authenticator(settings, clock=clock)
    limiter, admission = RateLimiter(settings), Admission(settings)  # overload: rate limits, then admission

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tracing_here = tracing.wanted(settings.otel_enabled) and not tracing.active()
        if tracing_here:
            tracing.start(settings.otel_service_name)
        await registry.open()
        revision = await registry.store.current_revision()
        metrics.REGISTRY_REVISION.set(revision)
        try:
            log.info("registry %r open on %s at revision %d", registry.registry_id,
                     redact_url(settings.effective_store_url), revision)
            await federation.open()
            federation.watch()
        except BaseException:  # a failed start releases what it opened, so the process can exit
            await federation.close()
            await registry.close()
            raise
        await dispatcher.webhooks.open()
        if settings.webhook_enabled:
            dispatcher.start()
        gc_tuning.tune(freeze=settings.gc_freeze, gen0_threshold=settings.gc_gen0_threshold)  # what is loaded stays

        async def pruner() -> None:
            while True:
                try:
                    dropped = await prune_history(registry, settings)
                    if dropped:
                        log.info("history retention dropped %d superseded states", dropped)
                except Exception:
                    log.exception("history retention failed")
                await asyncio.sleep(PRUNE_INTERVAL_SECONDS)

        tasks = [asyncio.create_task(pruner()),
                 asyncio.create_task(HeapTrimmer(settings.malloc_trim_seconds, glibc_trim()).run()),
                 asyncio.create_task(rematerialiser.run(settings.rematerialise_poll_seconds))]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await dispatcher.aclose()
            await events.close()
            await auth.aclose()
            await limiter.aclose()
            await federation.close()
            await registry.close()
            log.info("registry %r closed", registry.registry_id)
            if tracing_here:
                tracing.stop()
            metrics.worker_exiting()

    routes = [*operations_routes(registry, federation, admission),
              *webhook_routes(settings, dispatcher.webhooks, auth, registry.base_url),
              *xregistry_routes(settings, registry, auth),
              *graphql_routes(settings, federation, auth, federation.shared_cache, events=events,
                              webhooks=dispatcher.webhooks, admission=admission, limiter=limiter),
              *bulk_routes(federation, auth), *event_routes(registry, auth)]
    # CORS outermost: a preflight (and a 429 / 503) reaches the browser with its CORS headers;
    # the request id and metrics see every answer, refusals included; an over-long target or
    # header section is refused before anything else reads it.
    middleware = [
        *cors_middleware(settings, registry), Middleware(ObserveMiddleware),
        Middleware(RequestLimitsMiddleware, settings=settings),
        Middleware(RateLimitMiddleware, limiter=limiter, auth=auth, registry_prefix=settings.registry_prefix),
        Middleware(AdmissionMiddleware, admission=admission)]
    app = Starlette(routes=routes, lifespan=lifespan, debug=settings.debug,
                    exception_handlers={HTTPException: http_exception}, middleware=middleware)
    # for tests and operators only: the handlers were handed these above
    app.state.rate_limiter, app.state.admission = limiter, admission
    app.state.settings, app.state.registry, app.state.federation, app.state.auth = settings, registry, federation, auth
    app.state.events, app.state.webhooks = events, dispatcher.webhooks
    app.state.rematerialiser = rematerialiser
    return app
