"""The xRegistry 1.0-rc4 HTTP API of the local registry (core/http.md), read and write.

:func:`build_routes` gives the gateway app its routes: the API below ``settings.registry_prefix``
(see :mod:`gateway.http_api.routes`) and host-based discovery at ``/.well-known/xregistry``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, NoMatchFound, Route
from starlette.types import Receive, Scope, Send

from gateway.auth import Authenticator
from gateway.http_api.responses import json_response
from gateway.http_api.routes import XRegistryAPI
from xreg.config import Settings
from xreg.registry.service import LocalRegistry


class PrefixRoute(BaseRoute):
    """Every request whose path is ``prefix`` or below it, whatever characters follow (a
    ``Mount`` would miss paths holding a decoded newline)."""

    def __init__(self, prefix: str, app: XRegistryAPI) -> None:
        self.prefix = prefix
        self.app = app

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "") if scope["type"] == "http" else None
        if path is not None and (path == self.prefix or path.startswith(self.prefix + "/")):
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: object):
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def build_routes(settings: Settings, registry: LocalRegistry, auth: Authenticator) -> list[BaseRoute]:
    """The routes of the xRegistry HTTP API of ``registry``, and of discovery."""
    prefix = "/" + settings.registry_prefix.strip("/")
    if prefix == "/":
        raise ValueError("registry_prefix must be a path below / (e.g. /registry)")
    api = XRegistryAPI(prefix, registry, settings, auth)

    async def well_known(request: Request) -> Response:
        """Host-based discovery (core/spec.md "xRegistry Discovery"): the registry served here."""
        return json_response({"registries": [registry.base_url]})

    return [PrefixRoute(prefix, api), Route("/.well-known/xregistry", well_known, methods=["GET"])]
