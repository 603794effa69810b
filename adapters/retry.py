"""When and how long to wait before retrying a request to a remote registry.

A small helper rather than a retry library: the decision needs the HTTP answer (``429`` / ``5xx``
and its ``Retry-After``) as well as transport errors, and the circuit breaker must see every
attempt — a loop in :meth:`adapters.http_client.RemoteClient.get` using these two functions is
shorter than adapting a generic decorator to that.

Delays are "full jitter" exponential back-off (uniform between 0 and ``base * 2**attempt``,
capped), so that many gateways retrying a recovering registry do not arrive in step. A
``Retry-After`` (seconds or an HTTP date) replaces the computed delay; one longer than the cap
ends the retries (the answer is returned as the failure it is).
"""

from __future__ import annotations

import email.utils
import random
import time

import httpx

#: Statuses worth another attempt: rate limiting and server-side failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

#: Transport errors worth another attempt: the connection failed or broke; a read timeout is
#: not retried (the registry is slow, asking again would only double the wait).
RETRY_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.WriteError,
                httpx.RemoteProtocolError, httpx.PoolTimeout)


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """The jittered delay before retry number ``attempt`` (0 for the first retry)."""
    return (rng or random).uniform(0, min(cap, base * (2 ** attempt)))


def retry_after(response: httpx.Response, now: float | None = None) -> float | None:
    """Seconds the response asks to wait (``Retry-After``), or ``None`` when absent or invalid."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
