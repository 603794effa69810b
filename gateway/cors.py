"""Cross-origin calls from browsers (CORS) to ``/graphql``, the xRegistry HTTP API and discovery.

Off unless ``cors_origins`` lists origins. Then Starlette's ``CORSMiddleware`` answers every
preflight (``OPTIONS`` with ``Access-Control-Request-Method``) for those paths before the
routes see it — the HTTP API's own ``OPTIONS`` (``Allow``) still answers plain ``OPTIONS`` — and
adds ``Access-Control-Allow-Origin`` to the responses of allowed origins. A preflight from
another origin gets 400 without the header, so the browser blocks the call. Other paths
(GraphiQL, health) are served to their own origin only.

Allowed request headers are ``cors_allow_headers`` (``Authorization``, ``Content-Type``, the
headers Apollo Client and urql send, …) plus the ``xRegistry-*`` attribute headers of the
current model's document resources; exposed response headers are the gateway's own (``ETag``,
``X-Request-Id``, ``Link``, ``Location``, ``RateLimit-*``, ``Retry-After``, ``xRegistry-*``, a
write's ``xRegistry-xregcorrelationid``)
plus ``cors_expose_headers``. Headers of map attributes (``xRegistry-labels.<key>``) cannot be
listed in advance and stay hidden from cross-origin scripts.
"""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from xreg.config import Settings
from xreg.model.registry_model import RegistryModel
from xreg.registry.service import MODEL_MAX_AGE, LocalRegistry
from xreg.registry.validation import entity_definitions

#: Response headers a cross-origin script may read, besides the model's ``xRegistry-*`` ones.
EXPOSED = (
    "ETag", "Cache-Control", "X-Request-Id", "Link", "Location", "Content-Location", "Content-Disposition",
    "Retry-After", "RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
    "WWW-Authenticate", "Allow", "X-Registry-Instance", "X-Registry-Bulk-Before", "X-Registry-Bulk-Revision",
    "xRegistry-xregcorrelationid",
)
#: Attributes of a resource's document view that are not headers (the document itself).
_NOT_HEADERS = frozenset({"contenttype"})


def attribute_header_names(model: RegistryModel) -> list[str]:
    """The ``xRegistry-<attribute>`` headers the HTTP API may send or take for ``model``'s
    resources with documents (scalar attributes; ``*`` extension attributes excluded)."""
    names: set[str] = {"versionscount", "versionsurl", "metaurl"}
    for gtype, group in model.groups.items():
        for rtype, resource in group.resources.items():
            if not resource.hasdocument:
                continue
            s = resource.singular
            for level in ("version", "meta"):
                names.update(n for n in entity_definitions(level, model=model, group_type=gtype, resource_type=rtype)
                             if n not in (s, f"{s}base64", "*") and n not in _NOT_HEADERS)
    return [f"xRegistry-{n}" for n in sorted(names)]


def paths_of(settings: Settings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(exact paths, path prefixes) that answer cross-origin calls."""
    prefix = "/" + settings.registry_prefix.strip("/")
    return ("/graphql", "/.well-known/xregistry", prefix), (prefix + "/",)


class PathCORS:
    """ASGI middleware: CORS (Starlette's) for the paths of :func:`paths_of`, nothing elsewhere.

    The ``xRegistry-*`` headers follow the registry's current model: a model installed through
    ``modelsource`` (here or by another process, taken up within
    :data:`~xreg.registry.service.MODEL_MAX_AGE`) brings its headers without a restart."""

    def __init__(self, app: ASGIApp, settings: Settings, registry: LocalRegistry) -> None:
        self.app = app
        self.settings = settings
        self.registry = registry
        self.exact, self.prefixes = paths_of(settings)
        self._model: RegistryModel | None = None
        self._cors: CORSMiddleware | None = None

    def cors_for(self, model: RegistryModel) -> CORSMiddleware:
        """Starlette's CORS middleware with ``model``'s headers (built again when the model changes)."""
        if self._cors is None or model is not self._model:
            settings, headers = self.settings, attribute_header_names(model)
            self._cors = CORSMiddleware(
                self.app, allow_origins=settings.cors_origins, allow_methods=settings.cors_allow_methods,
                allow_headers=[*settings.cors_allow_headers, *headers],
                allow_credentials=settings.cors_allow_credentials,
                expose_headers=list(dict.fromkeys([*EXPOSED, *headers, *settings.cors_expose_headers])),
                max_age=settings.cors_max_age)
            self._model = model
        return self._cors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else None
        if path is not None and (path in self.exact or path.startswith(self.prefixes)):
            try:
                model = await self.registry.sync_model(max_age=MODEL_MAX_AGE)
            except Exception:  # the store is unreachable: the request itself reports it, with CORS headers
                model = self.registry.model
            await self.cors_for(model)(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def cors_middleware(settings: Settings, registry: LocalRegistry) -> list[Middleware]:
    """The CORS middleware of the application (none when ``cors_origins`` is empty)."""
    if not settings.cors_origins:
        return []
    return [Middleware(PathCORS, settings=settings, registry=registry)]
