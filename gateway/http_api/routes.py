"""The xRegistry HTTP API as one ASGI app: routing by target and method, authentication,
flags, and errors as problem documents.

A request is handled in this order: its path is resolved against the model (``api_not_found``,
``malformed_id``, ``bad_details``), the method checked (``action_not_supported`` with
``Allow``; ``OPTIONS`` answers without credentials), the caller authenticated and authorised
(``read`` for GET, ``write`` otherwise: 401 / 403), the flags parsed, then the handler runs.
Reads carry ``ETag`` / ``Cache-Control`` and answer a matching ``If-None-Match`` with 304
before reading anything but the revision (:mod:`gateway.http_cache`).
Client mistakes are 4xx problem documents; anything unexpected is logged and answered with
``server_error`` (500), whose ``instance`` names the log entry: the request's id, which
:class:`~gateway.observe.ObserveMiddleware` returns in ``X-Request-Id``. The route template of
each request (its metrics label) is the target's shape (:func:`route_template`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway import http_cache
from gateway.auth import Authenticator, AuthError, Principal, principal_of
from gateway.http_api import reading, writing
from gateway.http_api.capabilities import capabilities, enforce
from gateway.http_api.context import Call
from gateway.http_api.flags import check_context, parse_flags
from gateway.http_api.responses import json_response, problem_response
from gateway.http_api.targets import Target, parse_target
from gateway.request_context import current, new_request_id
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.registry.service import MODEL_MAX_AGE, LocalRegistry

log = logging.getLogger("xreg.http")

Handler = Callable[[Call], Awaitable[Response]]
#: The header naming the registry instance every response comes from (its revisions are its own).
#: Not an ``xRegistry-*`` header: core/http.md maps those to the attributes of the entity a
#: response describes, and the instance id is none of them.
INSTANCE_HEADER = "X-Registry-Instance"
#: The header of a write's response naming its interaction's events (core/events.md, "xregcorrelationid").
CORRELATION_HEADER = "xRegistry-xregcorrelationid"

_COLLECTION: dict[str, Handler] = {
    "GET": reading.get_collection, "PATCH": writing.write_collection, "POST": writing.write_collection,
    "DELETE": writing.delete_collection,
}
#: The handler of each method, per target kind.
HANDLERS: dict[str, dict[str, Handler]] = {
    "root": {"GET": reading.get_root, "PUT": writing.write_root, "PATCH": writing.write_root,
             "POST": writing.write_root},
    "api": {"GET": reading.get_api, "PUT": writing.write_capabilities, "PATCH": writing.write_capabilities},
    "modelsource": {"GET": reading.get_modelsource, "PUT": writing.write_modelsource},
    "groups": _COLLECTION,
    "group": {"GET": reading.get_entity, "PUT": writing.write_group, "PATCH": writing.write_group,
              "POST": writing.write_group, "DELETE": writing.delete_entity},
    "resources": _COLLECTION,
    "resource": {"GET": reading.get_entity, "PUT": writing.write_resource, "PATCH": writing.write_resource,
                 "POST": writing.write_resource, "DELETE": writing.delete_entity},
    "meta": {"GET": reading.get_meta, "PUT": writing.write_meta, "PATCH": writing.write_meta},
    "versions": _COLLECTION,
    "version": {"GET": reading.get_entity, "PUT": writing.write_version, "PATCH": writing.write_version,
                "DELETE": writing.delete_entity},
}


def allowed_methods(target: Target) -> str:
    """The ``Allow`` header value of a target (documents cannot be patched: ``$details``; every
    readable target answers ``HEAD`` as its ``GET`` without the body)."""
    methods = [m for m in HANDLERS[target.kind] if not (m == "PATCH" and target.document_view)
               and not (target.kind == "api" and target.api != "capabilities" and m != "GET")]
    if "GET" in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
    return ", ".join([*methods, "OPTIONS"])


def route_template(prefix: str, target: Target | None) -> str:
    """The route of a target with its ids as placeholders (group and resource types are the
    model's, a bounded set): ``/registry/messagegroups/{gid}/messages/{rid}/versions/{vid}``."""
    if target is None:
        return prefix + "/{unknown}"
    if target.kind == "api":
        return f"{prefix}/{target.api}"
    parts = [prefix]
    for value, placeholder in ((target.gtype, None), (target.gid, "{gid}"), (target.rtype, None),
                               (target.rid, "{rid}")):
        if value is not None:
            parts.append(placeholder or value)
    if target.kind == "meta":
        parts.append("meta")
    elif target.kind in ("versions", "version"):
        parts.append("versions")
        if target.vid is not None:
            parts.append("{vid}")
    route = "/".join(parts)
    return route + "$details" if target.details else route


class XRegistryAPI:
    """ASGI app serving the API of ``registry`` below ``prefix``, for the callers ``auth`` lets in."""

    def __init__(self, prefix: str, registry: LocalRegistry, settings: Settings, auth: Authenticator) -> None:
        self.prefix = prefix
        self.registry = registry
        self.settings = settings
        self.auth = auth
        self._salt = http_cache.deployment_salt(settings)

    async def validators(self, request: Request, principal: Principal) -> dict[str, str]:
        """``ETag`` (revision, request, caller), ``Cache-Control`` and ``Vary`` of a read
        (:mod:`gateway.http_cache`); the revision is read before the response is built."""
        credentials = request.headers.get("authorization")
        revision = await self.registry.store.current_revision()
        query = request.scope.get("query_string", b"").decode("latin-1")
        etag = http_cache.entity_tag(self._salt, "registry", self.registry.instance_id, str(revision),
                                     request.scope["path"], query,
                                     http_cache.caller_key(principal, credentials))
        control = http_cache.cache_control(self.settings, private=bool(credentials))
        return http_cache.validators(etag, control, "Authorization")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        response = await self.handle(Request(scope, receive))
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        """The response to one request (never raises)."""
        record = current()
        request_id = record.request_id if record is not None else new_request_id()
        registry, settings = self.registry, self.settings
        path = request.scope["path"]  # request.url would drop control characters
        path = path[len(self.prefix):] if path.startswith(self.prefix) else path
        extra: dict[str, str] = {}
        target = None
        try:
            target = parse_target(path, await registry.sync_model(max_age=MODEL_MAX_AGE))
            if record is not None:
                record.route = route_template(self.prefix, target)
            methods = HANDLERS[target.kind]
            if request.method == "OPTIONS":
                allow = allowed_methods(target)
                response = Response(status_code=200, headers={"Allow": allow, "Access-Control-Allow-Methods": allow})
            else:
                method = "GET" if request.method == "HEAD" else request.method  # HEAD: GET's headers
                handler = methods.get(method)
                if handler is None:
                    raise XRegistryError("action_not_supported", target.path, action=request.method)
                if method == "PATCH" and target.document_view:
                    raise XRegistryError("details_required", target.xid)
                principal = await principal_of(request, self.auth)
                self.auth.require(principal, "read" if method == "GET" else "write")
                flags = parse_flags(request.query_params.multi_items(), target.path)
                check_context(flags, target, method)
                if registry.capability_settings:  # what a client turned off through /capabilities
                    flags = enforce(flags, capabilities(registry.capability_settings), target, method)
                tags = await self.validators(request, principal) if method == "GET" else None
                asked = request.headers.get("if-none-match")
                if tags is not None and http_cache.matches(asked, tags["ETag"], any_tag=False):
                    response = http_cache.not_modified(tags)  # nothing read but the revision
                else:
                    call = Call(request, target, flags, registry, settings, request_id)
                    response = await handler(call)
                    if call.correlation_id is not None:
                        response.headers[CORRELATION_HEADER] = call.correlation_id
                    if tags is not None and response.status_code == 200:
                        if http_cache.matches(asked, tags["ETag"], any_tag=True):
                            response = http_cache.not_modified(tags)
                        else:
                            response.headers.update(tags)
        except writing.DryRun as accepted:
            o = accepted.outcome
            response = json_response({"dryrun": True, "accepted": True, "created": o.created, "updated": o.updated,
                                      "deleted": o.deleted}, 200)
        except AuthError as err:
            body = err.to_problem(path or "/")
            body["instance"] = request_id
            response = json_response(body, err.status, err.headers())
        except XRegistryError as err:
            if err.status == 405 and target is not None:
                extra["Allow"] = allowed_methods(target)
            if err.type == "server_busy":
                extra["Retry-After"] = str(err.args_map.get("retry_after", 1))
            response = problem_response(err, request_id, extra)
        except Exception as exc:
            log.exception("request %s %r failed (%s)", request.method, request.scope["path"], request_id)
            detail = f"{type(exc).__name__}: {exc}" if settings.debug else None
            response = problem_response(XRegistryError("server_error", path or "/", detail=detail), request_id)
        response.headers.append("link", f"<{registry.base_url}>;rel=xregistry-root")
        if record is None:  # served without ObserveMiddleware
            response.headers["X-Request-Id"] = request_id
        elif target is None:
            record.route = route_template(self.prefix, None)
        response.headers[INSTANCE_HEADER] = registry.instance_id
        if request.method == "HEAD":  # the same status and headers (Content-Length included), no body
            head = Response(status_code=response.status_code)
            head.raw_headers = list(response.raw_headers)
            response = head
        return response
