"""The HTTP client of one remote registry: pooled connections, timeouts, retries, circuit breaker,
and answers checked before anyone reads them.

One :class:`RemoteClient` (one ``httpx.AsyncClient``) per configured remote. :meth:`RemoteClient.get`
only ever requests URLs inside the registry's base URL — paths the gateway builds, and ``Link``
/ redirect targets, which are refused when they point elsewhere (no request forgery through a
remote's answers). Proxies from the environment are ignored.

An answer is usable when it is ``200`` with a JSON media type, a body within
``max_response_bytes`` that parses as JSON; ``404`` is an answer too (the entity does not
exist). Everything else raises :class:`~adapters.base.SourceUnavailable` naming the registry and
what went wrong, after the retries of :mod:`adapters.retry`.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import unquote, urljoin, urlsplit

import httpx

from adapters.base import SourceUnavailable
from adapters.breaker import STATE_VALUES, CircuitBreaker, CircuitOpen
from adapters.clock import SYSTEM_CLOCK, Clock
from adapters.retry import RETRY_ERRORS, RETRY_STATUSES, backoff_delay, retry_after
from xreg import json_limits, metrics, tracing
from xreg.config import RegistryConfig

log = logging.getLogger("xreg.remote")

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 3


@dataclass
class RemoteAnswer:
    """A usable answer: its status (200 or 404), JSON body (``None`` for 404) and ``Link`` URLs by
    rel. A resource's document (``document=True``) is its bytes in ``raw`` with its
    ``content_type`` — or, answered ``303 See Other``, status 303 and the document's ``location``."""

    status: int
    body: Any
    url: str
    links: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    content_type: str = ""
    location: str | None = None


class _Failure(Exception):
    """An attempt that failed; ``retry``: worth another; ``counts``: a failure of the registry."""

    def __init__(self, reason: str, *, retry: bool = False, counts: bool = True, wait: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.retry, self.counts, self.wait, self.status = reason, retry, counts, wait, status


def within(url: str, base: str) -> bool:
    """Whether ``url`` lies inside ``base`` (same scheme, host and port; path below it, ``..``
    segments resolved first)."""
    u, b = urlsplit(url), urlsplit(base)
    if (u.scheme, (u.hostname or "").lower(), u.port) != (b.scheme, (b.hostname or "").lower(), b.port):
        return False
    base_path = b.path.rstrip("/")
    path = posixpath.normpath(unquote(u.path)) if u.path else ""
    return path == base_path or path.startswith(base_path + "/")


def is_json(content_type: str) -> bool:
    """Whether a ``Content-Type`` is JSON (``application/json``, ``…+json``)."""
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class RemoteClient:
    """Requests to one remote registry (see the module documentation)."""

    def __init__(self, config: RegistryConfig, *, base_url: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.registry = config.id
        self.clock = clock
        self.base_url = (base_url or config.url or "").rstrip("/")
        self.config = config
        self.breaker = CircuitBreaker(config.breaker.failures, config.breaker.reset_seconds, clock=clock.monotonic)
        t = config.timeouts
        #: The credentials sent (resolved from the secrets when the client was made).
        self.auth_headers = config.auth.resolved_headers()
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.read, pool=t.total),
            limits=httpx.Limits(max_connections=config.max_connections,
                                max_keepalive_connections=config.max_connections),
            headers={"Accept": "application/json", **self.auth_headers},
            follow_redirects=False, trust_env=False, transport=transport,
        )
        #: HTTP requests sent (attempts, retries included).
        self.requests = 0
        self.last_success: float | None = None
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        #: When its requests began to fail (connection, timeout, 5xx: what opens the circuit) with
        #: no success since; ``None`` while it answers.
        self.failing_since: float | None = None

    async def aclose(self) -> None:
        await self.http.aclose()

    def url(self, path: str) -> str:
        """The URL of an API path (``/messagegroups/g``) of this registry."""
        return self.base_url + ("/" + path.lstrip("/") if path.strip("/") else "/")

    async def get(self, url: str, params: list[tuple[str, str]] | None = None, *,
                  headers: Mapping[str, str] | None = None, subject: str = "/", document: bool = False) -> RemoteAnswer:
        """GET ``url`` (inside the registry) with retries; raises :class:`SourceUnavailable`.
        ``document``: a resource's document is asked for (any media type; a ``303`` is not followed).
        Counted in ``xreg_remote_requests_total`` by outcome; a client span when tracing is on."""
        if not within(url, self.base_url):  # (a link or reference of the remote's): its failure, not sent
            reason = f"refusing to fetch {url}: it is outside {self.base_url}"
            self._count("refused")
            self.breaker.failure()
            self.last_error, self.last_error_at = reason, self.clock.wall()
            log.warning("registry %s: %s", self.registry, reason)
            raise SourceUnavailable(self.registry, reason, subject)
        try:
            self.breaker.before()
        except CircuitOpen as exc:
            self._count("breaker_open")
            raise SourceUnavailable(self.registry, str(exc), subject) from None
        verdict = False
        try:
            with tracing.span("xregistry.remote GET", {"xreg.registry": self.registry, "http.request.method": "GET",
                                                       "url.full": url}, kind="client") as span:
                answer = await self._with_retries(url, params, headers, document)
                if span is not None:
                    span.set_attribute("http.response.status_code", answer.status)
            self.breaker.success()
            verdict = True
            self.last_success = self.clock.wall()
            self.failing_since = None
            self._count("ok" if answer.status == 200 else "not_found")
            return answer
        except _Failure as failure:
            self.breaker.failure() if failure.counts else self.breaker.success()
            verdict = True
            self.last_error, self.last_error_at = failure.reason, self.clock.wall()
            if not failure.counts:
                self.failing_since = None
            elif self.failing_since is None:
                self.failing_since = self.last_error_at
            self._count("error")
            log.warning("registry %s: %s (%s)", self.registry, failure.reason, url)
            raise SourceUnavailable(self.registry, failure.reason, subject, remote_status=failure.status) from None
        finally:
            if not verdict:
                self.breaker.abandon()

    def _count(self, outcome: str) -> None:
        metrics.REMOTE_REQUESTS.labels(self.registry, outcome).inc()
        metrics.REMOTE_BREAKER_STATE.labels(self.registry).set(STATE_VALUES[self.breaker.state])

    async def _with_retries(self, url: str, params: list[tuple[str, str]] | None,
                            headers: Mapping[str, str] | None, document: bool = False) -> RemoteAnswer:
        """Attempts until one answers, one fails for good, or the retries are used up (the
        circuit breaker judges the request as a whole)."""
        attempt = 0
        while True:
            try:
                return await self._attempt(url, params, headers, document)
            except _Failure as failure:
                wait = failure.wait if failure.wait is not None else backoff_delay(
                    attempt, self.config.backoff_seconds, self.config.max_backoff_seconds)
                if not failure.retry or attempt >= self.config.retries or wait > self.config.max_backoff_seconds:
                    raise
            attempt += 1
            await self.clock.sleep(wait)

    async def _attempt(self, url: str, params: list[tuple[str, str]] | None,
                       headers: Mapping[str, str] | None, document: bool = False) -> RemoteAnswer:
        """One request (following redirects inside the registry), its answer checked."""
        total = self.config.timeouts.total
        try:
            async with asyncio.timeout(total):
                for _ in range(_MAX_REDIRECTS + 1):
                    self.requests += 1
                    # (None keeps a followed link's own query; a list of str pairs is a valid QueryParamTypes)
                    query = cast(list[tuple[str, str | int | float | bool | None]] | None, params)
                    sent = headers
                    if tracing.active():  # the trace continues at the remote
                        sent = dict(headers or {})
                        tracing.inject(sent)
                    async with self.http.stream("GET", url, params=query, headers=sent) as response:
                        if document and response.status_code == 303:  # the document lives at Location
                            location = urljoin(str(response.url), response.headers.get("location", ""))
                            return RemoteAnswer(303, None, str(response.url), location=location)
                        if response.status_code not in _REDIRECTS:
                            return await self._answer(response, document)
                        target = urljoin(str(response.url), response.headers.get("location", ""))
                    if not within(target, self.base_url):
                        raise _Failure(f"redirected outside the registry (to {target}); not followed", counts=False)
                    url, params = target, None
                raise _Failure("too many redirects", counts=False)
        except TimeoutError:
            raise _Failure(f"no complete answer within {total:g} s") from None
        except httpx.TimeoutException as exc:
            raise _Failure(f"timed out ({type(exc).__name__})", retry=isinstance(exc, RETRY_ERRORS)) from None
        except RETRY_ERRORS as exc:
            raise _Failure(f"connection failed ({type(exc).__name__}: {exc or 'reset'})", retry=True) from None
        except httpx.HTTPError as exc:
            raise _Failure(f"request failed ({type(exc).__name__}: {exc})") from None
        except _Failure:
            raise
        except Exception as exc:  # anything else reading a remote is that registry's failure, never the gateway's
            raise _Failure(f"answer could not be read ({type(exc).__name__}: {str(exc)[:200]})") from None

    async def _answer(self, response: httpx.Response, document: bool = False) -> RemoteAnswer:
        status = response.status_code
        url = str(response.url)
        if status == 404:
            return RemoteAnswer(404, None, url)
        if status in RETRY_STATUSES:
            wait = retry_after(response)
            raise _Failure(f"answered HTTP {status}", retry=True, wait=wait)
        if status != 200:
            body = (await self._read(response)).decode("utf-8", "replace")
            detail = _problem_detail(body)
            raise _Failure(f"answered HTTP {status}{': ' + detail if detail else ''}", counts=status >= 500,
                           status=status)
        content_type = response.headers.get("content-type", "")
        if document:
            return RemoteAnswer(200, None, url, raw=await self._read(response), content_type=content_type)
        if not is_json(content_type):
            raise _Failure(f"answered {content_type or 'no content type'}, not JSON")
        raw = await self._read(response)
        try:
            body = json_limits.loads(raw)
        except json_limits.JSONLimitError as exc:
            raise _Failure(f"answered JSON outside the gateway's bounds ({exc})") from None
        except ValueError as exc:
            raise _Failure(f"answered malformed JSON ({exc})") from None
        if not isinstance(body, dict):
            raise _Failure(f"answered a JSON {type(body).__name__}, not an object")
        return RemoteAnswer(200, body, url, self._links(response))

    async def _read(self, response: httpx.Response) -> bytes:
        limit = self.config.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _Failure(f"answer of {declared} bytes is larger than the limit of {limit} bytes")
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise _Failure(f"answer is larger than the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _links(self, response: httpx.Response) -> dict[str, str]:
        """``Link`` targets by relation type (RFC 8288: a ``rel`` holds one or more
        space-separated, case-insensitive types; a target is resolved against the answer's URL)."""
        out: dict[str, str] = {}
        for link in response.links.values():
            rels, target = link.get("rel") or "", link.get("url")
            for rel in rels.lower().split():
                if target and rel not in out:
                    out[rel] = urljoin(str(response.url), target)
        return out


def _problem_detail(body: str) -> str:
    """The title / detail of a problem document, or a short excerpt of the body."""
    try:
        doc = json_limits.loads(body)
    except ValueError:
        return body[:200].strip()
    if isinstance(doc, dict):
        return str(doc.get("detail") or doc.get("title") or "")[:300]
    return ""
