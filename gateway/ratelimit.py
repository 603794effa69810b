"""Per-caller rate limiting: a token bucket per caller, in memory or in Redis (shared by replicas).

A caller is authenticated first: its bucket is keyed by its identity
(:attr:`~gateway.auth.Principal.identity`: ``key:<name>`` for an API key, ``jwt:<iss>|<sub>``
for a JWT), else, for an anonymous caller, by the client's address (the peer's, or the one a
trusted proxy forwarded, see :mod:`gateway.forwarded`). A request whose credentials are refused
is answered 401 by its handler, never 429, and charged nothing: it has no identity to charge;
so is a caller holding no scope (anonymous when anonymous reads are off), whose every answer
is 401 or 403. An answer of 401 or 403 keeps its status even when the caller's bucket is empty. The caller's
*scope* — ``anonymous``, ``read`` (authenticated, read only) or ``write`` (holds the write
scope) — picks the bucket's refill rate (points per second) and size (burst). A request of the
xRegistry HTTP API costs one point; a GraphQL operation costs its estimated cost
(``resolvers/cost.py``), charged once the document is validated through the request's
:class:`Budget`, which the GraphQL endpoint hands to the operation (:func:`budget_of`; a request
refused before that costs one point; an operation sent over a WebSocket, which no middleware sees,
gets its own from :func:`operation_budget`).

A bucket serves a request when it holds the request's points — or, for a request dearer than
the whole bucket, when the bucket is full; the points are taken (the bucket may go below zero:
a dear request is paid for by waiting). A refused request gets ``429`` with ``Retry-After``;
every limited response carries ``RateLimit-Limit`` (the bucket size), ``RateLimit-Remaining``
and ``RateLimit-Reset`` (seconds until the bucket is full again), after the IETF draft
"RateLimit header fields for HTTP", and ``RateLimit-Policy``.

Buckets live in memory (per process; idle full buckets are forgotten) or in Redis, where one Lua
script reads, refills and takes atomically with Redis's own clock, so replicas share each
caller's bucket. A failing Redis lets requests through (logged): limiting must not take the
gateway down.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.admission import work_kind
from gateway.auth import Authenticator, AuthError, Principal, principal_of
from xreg import metrics
from xreg.config import Settings
from xreg.errors import XRegistryError

log = logging.getLogger("xreg.ratelimit")

#: The scopes a caller falls in, each with its own rate and burst.
SCOPES = ("anonymous", "read", "write")
#: Buckets kept in memory before idle full ones are forgotten.
MEMORY_BUCKETS = 100_000
#: Prefix of the Redis keys of the buckets.
REDIS_PREFIX = "xreg:ratelimit:"

_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= math.min(cost, burst) then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
"""


@dataclass(frozen=True)
class Rate:
    """A bucket's refill ``rate`` (points per second) and size ``burst``."""

    rate: float
    burst: float


@dataclass(frozen=True)
class Decision:
    """The outcome of taking ``cost`` points: whether served, and what the headers say."""

    allowed: bool
    rate: Rate
    tokens: float  # in the bucket after the request (may be negative)
    cost: float

    @property
    def remaining(self) -> int:
        return max(0, math.floor(self.tokens))

    @property
    def reset(self) -> int:
        """Seconds until the bucket is full again."""
        return max(0, math.ceil((self.rate.burst - self.tokens) / self.rate.rate))

    @property
    def retry_after(self) -> int:
        """Seconds until the refused request would be served."""
        need = min(self.cost, self.rate.burst) - self.tokens
        return max(1, math.ceil(need / self.rate.rate))

    def headers(self) -> list[tuple[bytes, bytes]]:
        window = max(1, math.ceil(self.rate.burst / self.rate.rate))
        out = [(b"ratelimit-limit", b"%d" % math.floor(self.rate.burst)),
               (b"ratelimit-remaining", b"%d" % self.remaining),
               (b"ratelimit-reset", b"%d" % self.reset),
               (b"ratelimit-policy", b"%d;w=%d" % (math.floor(self.rate.burst), window))]
        if not self.allowed:
            out.append((b"retry-after", b"%d" % self.retry_after))
        return out


def refill(tokens: float, at: float, now: float, rate: Rate, cost: float) -> tuple[bool, float]:
    """The token bucket (the same rule as the Redis script): ``(served, tokens after)``."""
    tokens = min(rate.burst, tokens + max(0.0, now - at) * rate.rate)
    if tokens >= min(cost, rate.burst):
        return True, tokens - cost
    return False, tokens


class MemoryBuckets:
    """Buckets of one process; ``clock`` is monotonic seconds (tests pass their own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    async def take(self, key: str, cost: float, rate: Rate) -> Decision:
        now = self.clock()
        tokens, at = self._buckets.get(key, (rate.burst, now))
        allowed, tokens = refill(tokens, at, now, rate, cost)
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > MEMORY_BUCKETS:
            self._forget_full(now, rate)
        return Decision(allowed, rate, tokens, cost)

    def _forget_full(self, now: float, rate: Rate) -> None:
        """Drop buckets that have refilled (a missing bucket is a full one)."""
        full = [k for k, (tokens, at) in self._buckets.items() if tokens + (now - at) * rate.rate >= rate.burst]
        for k in full:
            del self._buckets[k]

    async def aclose(self) -> None:
        self._buckets.clear()


class RedisBuckets:
    """Buckets in Redis, shared by every gateway using the same ``url``."""

    def __init__(self, url: str) -> None:
        self.client = aioredis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self._script = self.client.register_script(_TAKE)

    async def take(self, key: str, cost: float, rate: Rate) -> Decision:
        allowed, tokens = await self._script(keys=[REDIS_PREFIX + key], args=[rate.rate, rate.burst, cost])
        return Decision(bool(int(allowed)), rate, float(tokens), cost)

    async def aclose(self) -> None:
        await self.client.aclose()


Buckets = MemoryBuckets | RedisBuckets


@dataclass
class LimiterStats:
    """Requests refused per scope (``xreg_rate_limited_total{scope}``) and storage failures."""

    limited: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCOPES, 0))
    served: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCOPES, 0))
    storage_errors: int = 0


class RateLimiter:
    """The rates of each scope over one bucket store."""

    def __init__(self, settings: Settings, buckets: Buckets | None = None) -> None:
        self.enabled = settings.rate_limit_enabled
        self.rates = {
            "anonymous": Rate(settings.rate_limit_anonymous_rate, settings.rate_limit_anonymous_burst),
            "read": Rate(settings.rate_limit_read_rate, settings.rate_limit_read_burst),
            "write": Rate(settings.rate_limit_write_rate, settings.rate_limit_write_burst),
        }
        self.url = settings.rate_limit_url
        self._buckets = buckets
        self.stats = LimiterStats()

    @property
    def buckets(self) -> Buckets:
        if self._buckets is None:
            self._buckets = MemoryBuckets() if self.url == "memory://" else RedisBuckets(self.url)
        return self._buckets

    def limited(self, scope: str) -> int:
        """Requests of callers in ``scope`` refused so far."""
        return self.stats.limited[scope]

    async def take(self, caller: str, scope: str, cost: float) -> Decision | None:
        """Take ``cost`` points from ``caller``'s bucket; ``None`` when not limited (a scope
        with rate 0, or the store failing)."""
        rate = self.rates[scope]
        if rate.rate <= 0:
            return None
        try:
            decision = await self.buckets.take(f"{scope}:{caller}", max(cost, 0.0), rate)
        except (RedisError, OSError) as exc:
            self.stats.storage_errors += 1
            log.warning("rate limit store failed (%s: %s); request let through", type(exc).__name__, exc)
            return None
        (self.stats.served if decision.allowed else self.stats.limited)[scope] += 1
        if not decision.allowed:
            metrics.RATE_LIMITED.labels(scope).inc()
        return decision

    async def aclose(self) -> None:
        if self._buckets is not None:
            await self._buckets.aclose()


def caller_of(principal: Principal, scope: Scope) -> tuple[str, str]:
    """``(caller, scope)`` of a request: the principal's identity, else the client's address."""
    if principal.via != "anonymous":
        return principal.identity, ("write" if principal.can("write") else "read")
    client = scope.get("client")
    return f"addr:{client[0] if client else 'unknown'}", "anonymous"


class Budget:
    """The rate limit of the request being served: charged by the GraphQL limits once the
    operation's cost is known, else one point when the response starts."""

    def __init__(self, limiter: RateLimiter, caller: str, scope: str) -> None:
        self.limiter = limiter
        self.caller = caller
        self.scope = scope
        self.decision: Decision | None = None
        self.charged = False
        self.refused = False

    async def charge(self, cost: float) -> Decision | None:
        """Take ``cost`` points; the decision (``None``: not limited)."""
        self.charged = True
        decision = await self.limiter.take(self.caller, self.scope, cost)
        if decision is not None and not self.refused:  # a refusal stays the request's answer
            self.decision = decision
            self.refused = not decision.allowed
        return decision


#: The key of a request's :class:`Budget` in its ``state`` (Starlette's per-request context).
_BUDGET = "rate_limit_budget"


def budget_of(request: Request) -> Budget | None:
    """The :class:`Budget` of ``request`` (``None``: not rate-limited)."""
    return request.scope.get("state", {}).get(_BUDGET)


def operation_budget(limiter: RateLimiter, principal: Principal | None, scope: Scope) -> Budget | None:
    """The budget of an operation no middleware sees (one sent over a WebSocket), for the transport
    to hand to the operation: ``None`` when rates are not limited or the caller holds no scope (as
    :class:`RateLimitMiddleware` decides)."""
    if not limiter.enabled or principal is None or not principal.scopes:
        return None
    caller, level = caller_of(principal, scope)
    return Budget(limiter, caller, level)


def too_many_requests(path: str, decision: Decision) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers and body of a refused HTTP API request (problem document)."""
    err = XRegistryError("too_many_requests", path or "/", retry_after=decision.retry_after)
    content = json.dumps({**err.to_problem(), "status": err.status}, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", b"application/json; charset=utf-8"),
               (b"content-length", b"%d" % len(content)), *decision.headers()]
    return err.status, headers, content


class RateLimitMiddleware:
    """ASGI middleware: the xRegistry HTTP API and ``/graphql`` are charged to their caller's
    bucket (see the module documentation)."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter, auth: Authenticator, registry_prefix: str,
                 graphql_path: str = "/graphql"):
        self.app = app
        self.limiter = limiter
        self.auth = auth
        self.prefix = "/" + registry_prefix.strip("/")
        self.graphql_path = graphql_path

    def _kind(self, scope: Scope) -> str | None:
        return work_kind(scope, self.graphql_path, self.prefix) if self.limiter.enabled else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = self._kind(scope)
        if kind is None:
            await self.app(scope, receive, send)
            return
        try:
            principal = await principal_of(Request(scope, receive), self.auth)
        except AuthError:  # authentication first: the handler answers 401, whatever the rate
            await self.app(scope, receive, send)
            return
        if not principal.scopes:  # (anonymous without anonymous_read) every answer is a 401 or 403
            await self.app(scope, receive, send)
            return
        caller, level = caller_of(principal, scope)
        budget = Budget(self.limiter, caller, level)
        if kind == "http":
            decision = await budget.charge(1)
            if decision is not None and not decision.allowed:
                status, headers, content = too_many_requests(scope.get("path", ""), decision)
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": content})
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                if not budget.charged:
                    await budget.charge(1)
                decision = budget.decision
                if decision is not None:
                    headers: list[Any] = [h for h in message.get("headers", ())
                                          if h[0].lower() not in _OURS]
                    message = {**message, "headers": [*headers, *decision.headers()]}
                    if budget.refused and message["status"] not in _AUTH_STATUSES:
                        message["status"] = 429
            await send(message)

        scope.setdefault("state", {})[_BUDGET] = budget
        await self.app(scope, receive, send_with_headers)


#: Answers that keep their status when the bucket is empty: who is asking comes before how often.
_AUTH_STATUSES = frozenset({401, 403})
_OURS = frozenset({b"ratelimit-limit", b"ratelimit-remaining", b"ratelimit-reset", b"ratelimit-policy"})
