"""HTTP caching of reads: ``ETag``, ``Cache-Control``, ``Vary`` and ``If-None-Match`` → 304.

Used by ``GET /graphql`` (queries) and by the xRegistry HTTP API's ``GET`` / ``HEAD``. An entity
tag is a digest of what determines the response:

* the *deployment* (:func:`deployment_salt`: the gateway's version and its settings, so an
  upgrade or a configuration change never revalidates an old body);
* the *registry revision* the response was read at — read **before** the response is built, so
  a write that lands meanwhile can only make the tag older than the body, never newer (the
  next revalidation then sends the body again, never a stale 304);
* the *request* (path and query string; for GraphQL the document's hash, the variables, the
  operation name and the response's media type);
* the *caller* (:func:`caller_key`) when the request carried credentials.

Because the tag is known before the response is built, a matching ``If-None-Match`` is answered
with 304 without reading anything but the revision. GraphQL queries over registries that have
no revisions of their own (remote xRegistry APIs, documents) are tagged by a digest of the body
instead (see ``gateway/graphql_http.py``). Only 200 responses are tagged.

``Cache-Control`` is ``private`` when the request carried credentials or anonymous reads are
off (the response is the caller's), ``public`` otherwise; with ``http_cache_max_age`` = 0 (the
default) ``no-cache`` (store, but revalidate each time), else ``max-age=N, must-revalidate``.
Writes and mutations are ``no-store``.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any

from starlette.responses import Response

from gateway.auth import Principal
from xreg.config import Settings

NO_STORE = "no-store"


def deployment_salt(settings: Settings) -> str:
    """A digest of the gateway's version and settings (part of every entity tag)."""
    try:
        version = metadata.version("xreg-gateway")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return hashlib.sha256(f"{version}\n{settings.model_dump_json()}".encode()).hexdigest()


def caller_key(principal: Principal, credentials: str | None) -> str:
    """Who a response is for: ``anonymous`` without credentials, else a digest of the caller's
    identity and scopes (never the credentials)."""
    if not credentials:
        return "anonymous"
    who = f"{principal.identity}\n{' '.join(sorted(principal.scopes))}"
    return hashlib.sha256(who.encode()).hexdigest()[:32]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces (equal values, equal text)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entity_tag(*parts: str) -> str:
    """A strong entity tag (quoted) of ``parts``."""
    return '"' + hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:40] + '"'


def matches(if_none_match: str | None, etag: str, *, any_tag: bool) -> bool:
    """Whether an ``If-None-Match`` value matches ``etag`` (weak comparison, RFC 9110 13.1.2);
    ``*`` matches only when ``any_tag`` (the response is known to exist)."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*":
            if any_tag:
                return True
            continue
        if tag.removeprefix("W/") == etag.removeprefix("W/"):
            return True
    return False


def cache_control(settings: Settings, *, private: bool) -> str:
    """The ``Cache-Control`` of a cacheable read (see the module documentation)."""
    scope = "private" if private or not settings.anonymous_read else "public"
    if settings.http_cache_max_age == 0:
        return f"{scope}, no-cache"
    return f"{scope}, max-age={settings.http_cache_max_age}, must-revalidate"


def validators(etag: str, control: str, vary: str) -> dict[str, str]:
    """The headers of a tagged response (and of its 304)."""
    return {"ETag": etag, "Cache-Control": control, "Vary": vary}


def not_modified(headers: dict[str, str]) -> Response:
    """``304 Not Modified`` with ``headers`` (:func:`validators`) and no body."""
    return Response(status_code=304, headers=headers)
