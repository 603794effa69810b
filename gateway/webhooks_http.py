"""The HTTP route that manages webhook subscriptions: ``<registry_prefix>/webhook-subscriptions``.

The path holds a hyphen, which no group type's plural may (plurals match
``^[a-z_][a-z_0-9]{0,57}$``), so it can never shadow a group collection a custom model names.
Every call needs the ``write`` scope and either ``webhook_admin_scope`` or an identity listed in
``webhook_admins`` (subscriptions name internal URLs). Errors are problem documents with the
spec's types (``bad_request``, ``not_found``), authentication's ``unauthorized`` / ``forbidden``.

==========  ==================================================  =====================================
GET         ``/webhook-subscriptions``                          every subscription (no secrets)
POST        ``/webhook-subscriptions``                          create; 201 with ``secret`` (only now)
GET         ``/webhook-subscriptions/{id}``                     one subscription
PATCH       ``/webhook-subscriptions/{id}``                     change url, types, subject, mode,
                                                                enabled, or restart ``after``
DELETE      ``/webhook-subscriptions/{id}``                     remove it and its dead letters (204)
GET         ``/webhook-subscriptions/{id}/deadletters``         its dead letters (``?limit=``)
POST        ``/webhook-subscriptions/{id}/replay``              deliver dead letters again
                                                                (``{"positions": [...]}``: only those)
==========  ==================================================  =====================================
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters.webhook_admin import Webhooks
from gateway.auth import Authenticator, AuthError, Principal, principal_of
from gateway.http_api.responses import json_response, problem_response
from gateway.request_context import current_request_id, new_request_id
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.storage.webhooks import DeadLetter

log = logging.getLogger("xreg.webhooks")

#: Largest request body of these routes.
MAX_BODY = 64 * 1024
_NO_STORE = {"Cache-Control": "no-store"}

#: A route's handler: the request, the subscriptions, the caller (an administrator).
Handler = Callable[[Request, Webhooks, Principal], Awaitable[Response]]


def _letter(d: DeadLetter) -> dict[str, Any]:
    return {"position": d.position, "event": d.event, "attempts": d.attempts, "lasterror": d.last_error,
            "failedat": d.failed_at, "replay": d.replay}


async def _body(request: Request) -> dict[str, Any]:
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise XRegistryError("payload_too_large", request.url.path, limit=MAX_BODY)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise XRegistryError("bad_request", request.url.path, detail=f"the body is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise XRegistryError("bad_request", request.url.path, detail="the body must be a JSON object")
    return body


async def _list(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    return json_response([s.public() for s in await hooks.all()], headers=_NO_STORE)


async def _create(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    body = await _body(request)
    unknown = set(body) - {"url", "types", "subject", "mode", "after"}
    if unknown:
        raise XRegistryError("bad_request", request.url.path, detail=f"unknown members: {', '.join(sorted(unknown))}")
    sub, secret = await hooks.create(url=body.get("url"), types=body.get("types"), subject=body.get("subject"),
                                     mode=body.get("mode", "structured"), after=body.get("after"),
                                     owner=principal.identity)
    location = f"{request.url.path.rstrip('/')}/{sub.id}"
    return json_response({**sub.public(), "secret": secret}, 201, {**_NO_STORE, "Location": location})


async def _get(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    return json_response((await hooks.get(request.path_params["id"])).public(), headers=_NO_STORE)


async def _patch(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    sub = await hooks.update(request.path_params["id"], await _body(request))
    return json_response(sub.public(), headers=_NO_STORE)


async def _delete(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    await hooks.delete(request.path_params["id"])
    return Response(status_code=204)


async def _dead(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    try:
        limit = int(request.query_params.get("limit", "100"))
    except ValueError:
        raise XRegistryError("bad_request", request.url.path, detail="limit must be an integer") from None
    letters = await hooks.dead_letters(request.path_params["id"], limit)
    return json_response([_letter(d) for d in letters], headers=_NO_STORE)


async def _replay(request: Request, hooks: Webhooks, principal: Principal) -> Response:
    body = await _body(request)
    positions = body.get("positions")
    if positions is not None and not (isinstance(positions, list) and all(isinstance(p, str) for p in positions)):
        raise XRegistryError("bad_request", request.url.path, detail="positions must be a list of positions")
    count = await hooks.replay(request.path_params["id"], positions)
    return json_response({"replayed": count}, headers=_NO_STORE)


def _endpoint(handlers: dict[str, Handler], settings: Settings, hooks: Webhooks, auth: Authenticator,
              root: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        path = request.url.path
        instance = current_request_id() or new_request_id()
        try:
            handler = handlers.get(request.method)
            if handler is None:
                raise XRegistryError("action_not_supported", path, action=request.method)
            principal = await principal_of(request, auth)
            auth.require_admin(principal, settings.webhook_admin_scope, settings.webhook_admins)
            response = await handler(request, hooks, principal)
        except AuthError as err:
            body = err.to_problem(path)
            body["instance"] = instance
            response = json_response(body, err.status, err.headers())
        except XRegistryError as err:
            extra = {"Allow": ", ".join(handlers)} if err.status == 405 else None
            response = problem_response(err, instance, extra)
        response.headers.append("link", f"<{root}>;rel=xregistry-root")
        return response
    return endpoint


def build_routes(settings: Settings, hooks: Webhooks, auth: Authenticator, root: str) -> list[BaseRoute]:
    """The webhook routes below the registry prefix (placed before the xRegistry API's), managing
    ``hooks`` for callers ``auth`` admits; ``root`` is the registry's root URL (``Link`` header)."""
    base = "/" + settings.registry_prefix.strip("/") + "/webhook-subscriptions"
    table: list[tuple[str, dict[str, Handler]]] = [
        (base, {"GET": _list, "POST": _create}),
        (base + "/{id}", {"GET": _get, "PATCH": _patch, "DELETE": _delete}),
        (base + "/{id}/deadletters", {"GET": _dead}),
        (base + "/{id}/replay", {"POST": _replay}),
    ]
    every = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
    return [Route(path, _endpoint(handlers, settings, hooks, auth, root), methods=every) for path, handlers in table]
