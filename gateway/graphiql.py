"""GraphiQL, served entirely by the gateway: no CDN, no web fonts, works air-gapped.

The browser assets (React 18, GraphiQL 4 and its explorer plugin, the graphql-ws client for
subscriptions, as UMD builds, and their
stylesheets, whose fonts are embedded as ``data:`` URLs) come from the npm packages pinned in
``web/package-lock.json``. ``make assets`` (a prerequisite of ``make install``) copies them into
``gateway/static/graphiql/`` and checks every file against ``gateway/static/graphiql.manifest.json``
(file → SHA-384). The directory is not committed; an editable install (``pip install -e``)
serves it straight from the work tree.

Here the manifest is enforced three ways: only the files it lists are served, each file's
bytes are checked against it when first loaded (a mismatch answers 503, as do missing files),
and the page loads each one with the manifest's hash in its ``integrity`` attribute, so the
browser refuses anything else. The page's Content-Security-Policy allows scripts, styles and
connections to this origin only (its WebSocket included: CSP's ``'self'`` covers ``ws:`` and
``wss:`` to the same host), plus the page's one inline bootstrap script by its hash.

The page's own script, ``static/graphiql-page.js`` (plain JavaScript, inlined and allowed by its
hash), adds share links (``?query=``, ``?variables=``, ``?operationName=``, followed by the
address bar), the explorer, the example queries of :mod:`gateway.graphiql_examples` and a table
of list results with a CSV download.

Routes: ``GET /graphiql`` (the page), ``GET /graphiql/assets/{file}``. The GraphQL route answers
a browser's ``GET /graphql`` with :func:`graphiql_page`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.graphiql_examples import EXAMPLES
from xreg.config import Settings

STATIC_DIR = Path(__file__).resolve().parent / "static"
MANIFEST_PATH = STATIC_DIR / "graphiql.manifest.json"
ASSET_DIR = STATIC_DIR / "graphiql"

#: The command that installs the assets, named in the 503 answer.
SETUP_COMMAND = "make assets"

#: Where the page sends queries, relative to the page (/graphiql and /graphql are siblings),
#: so it also works behind a proxy that mounts the gateway under a path prefix.
GRAPHQL_ENDPOINT = "graphql"
ASSET_URL = "graphiql/assets/"

#: The first tab's query (the first example).
DEFAULT_QUERY = EXAMPLES[0].query

#: The page's layout, and the Examples and Table panes (in GraphiQL's colours).
_PAGE_STYLE = """
html, body, #graphiql { height: 100%; margin: 0; }
.xreg-examples ul { list-style: none; padding: 0; }
.xreg-examples li { margin-bottom: var(--px-16); }
.xreg-examples li p, .xreg-table-size { margin: var(--px-4) 0;
  color: hsla(var(--color-neutral), var(--alpha-secondary)); }
.xreg-table-controls { display: flex; gap: var(--px-8); align-items: center; }
.xreg-table-controls select { flex: 1; min-width: 0; }
.xreg-table-scroll { overflow: auto; max-height: calc(100vh - 12rem); }
.xreg-table table { border-collapse: collapse; font-size: var(--font-size-hint); }
.xreg-table th, .xreg-table td { border: 1px solid hsla(var(--color-neutral), var(--alpha-background-heavy));
  padding: var(--px-4); text-align: left; vertical-align: top; white-space: nowrap; }
"""

_CONTENT_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

#: The page's own script (share links, the explorer, the examples and table panes), inlined:
#: it mounts the page once the scripts above it have run; its configuration comes from the JSON block.
_BOOTSTRAP = (STATIC_DIR / "graphiql-page.js").read_text(encoding="utf-8")
_BOOTSTRAP_CSP_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(_BOOTSTRAP.encode()).digest()).decode() + "'"

#: Same origin only. Scripts: this origin's files plus the bootstrap above, by hash. GraphiQL's
#: stylesheet embeds its fonts and icons as data: URLs, and its dialogs inject <style> elements
#: with computed values (scroll locks), hence 'unsafe-inline' for styles, never for scripts.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'",
    f"script-src 'self' {_BOOTSTRAP_CSP_HASH}",
    "style-src 'self' 'unsafe-inline'",
    "font-src 'self' data:",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
])

_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}

_ASSET_CACHE = "public, max-age=31536000, immutable"


class AssetsUnavailable(Exception):
    """The assets are not installed, or do not match the manifest."""


@dataclass(frozen=True)
class Asset:
    name: str
    body: bytes
    integrity: str  # "sha384-…"
    content_type: str

    @property
    def url(self) -> str:
        """Relative URL; the query string changes with the content, so caching forever is safe."""
        return f"{ASSET_URL}{self.name}?v={hashlib.sha384(self.body).hexdigest()[:16]}"


def sri_sha384(data: bytes) -> str:
    """The Subresource Integrity string of ``data``."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode("ascii")


class GraphiQLAssets:
    """The manifest's files, read and verified once (retried on each request until they are)."""

    def __init__(self, asset_dir: Path = ASSET_DIR, manifest_path: Path = MANIFEST_PATH) -> None:
        self.asset_dir = asset_dir
        self.manifest_path = manifest_path
        self._assets: dict[str, Asset] | None = None
        self._lock = threading.Lock()

    def load(self) -> dict[str, Asset]:
        """name → :class:`Asset`, in manifest order; raises :class:`AssetsUnavailable`."""
        if self._assets is None:
            with self._lock:
                if self._assets is None:
                    self._assets = self._read()
        return self._assets

    def _read(self) -> dict[str, Asset]:
        manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))["files"]
        missing = [name for name in manifest if not (self.asset_dir / name).is_file()]
        if missing:
            raise AssetsUnavailable(
                f"GraphiQL is not available: its browser assets are not installed ({', '.join(missing)} "
                f"missing from {self.asset_dir}).\nRun `{SETUP_COMMAND}` (part of `make install`) "
                "in the gateway's source tree, then reload this page.\n"
            )
        assets = {}
        for name, entry in manifest.items():
            body = (self.asset_dir / name).read_bytes()
            if sri_sha384(body) != entry["integrity"]:
                raise AssetsUnavailable(
                    f"GraphiQL is not available: {name} in {self.asset_dir} does not match "
                    f"{self.manifest_path.name}.\nRun `{SETUP_COMMAND}` to reinstall the pinned assets.\n"
                )
            content_type = _CONTENT_TYPES.get(Path(name).suffix, "application/octet-stream")
            assets[name] = Asset(name, body, entry["integrity"], content_type)
        return assets


#: The installed assets of this source tree.
ASSETS = GraphiQLAssets()


def _json_for_script(value: object) -> str:
    """JSON safe inside a <script> data block (no "</script>", "<!--")."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(settings: Settings, assets: dict[str, Asset]) -> str:
    """The GraphiQL HTML page for ``assets``."""
    styles = "\n".join(
        f'  <link rel="stylesheet" href="{html.escape(a.url)}" integrity="{a.integrity}">'
        for a in assets.values() if a.name.endswith(".css")
    )
    scripts = "\n".join(
        f'  <script src="{html.escape(a.url)}" integrity="{a.integrity}"></script>'
        for a in assets.values() if a.name.endswith(".js")
    )
    config = _json_for_script({
        "endpoint": GRAPHQL_ENDPOINT,
        "examples": [{"name": e.name, "title": e.title, "description": e.description, "query": e.query,
                      "variables": e.variables_json()} for e in EXAMPLES],
    })
    title = html.escape(f"GraphiQL · {settings.registry_name}")
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <title>{title}</title>
  <link rel="icon" href="data:,">
{styles}
  <style>{_PAGE_STYLE}</style>
</head>
<body>
  <div id="graphiql">Loading GraphiQL…</div>
  <noscript>GraphiQL needs JavaScript.</noscript>
  <script type="application/json" id="graphiql-config">{config}</script>
{scripts}
  <script>{_BOOTSTRAP}</script>
</body>
</html>
"""


def graphiql_page(settings: Settings, assets: GraphiQLAssets = ASSETS) -> Response:
    """The GraphiQL page, or 503 (plain text naming the set-up command) without its assets."""
    try:
        loaded = assets.load()
    except AssetsUnavailable as exc:
        return PlainTextResponse(str(exc), status_code=503, headers={"Cache-Control": "no-store", "Retry-After": "60"})
    return Response(render_page(settings, loaded), media_type="text/html; charset=utf-8", headers=_PAGE_HEADERS)


def graphiql_routes(settings: Settings, assets: GraphiQLAssets = ASSETS) -> list[BaseRoute]:
    """``/graphiql`` and ``/graphiql/assets/{file}`` (the manifest's files only)."""

    async def page(request: Request) -> Response:
        return graphiql_page(settings, assets)

    async def asset(request: Request) -> Response:
        try:
            loaded = assets.load()
        except AssetsUnavailable as exc:
            return PlainTextResponse(str(exc), status_code=503, headers={"Cache-Control": "no-store"})
        found = loaded.get(request.path_params["file"])
        if found is None:
            return PlainTextResponse("Not Found\n", status_code=404)
        etag = f'"{found.integrity}"'
        headers = {"Cache-Control": _ASSET_CACHE, "ETag": etag, "X-Content-Type-Options": "nosniff"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(found.body, media_type=found.content_type, headers=headers)

    return [
        Route("/graphiql", page, methods=["GET", "HEAD"], name="graphiql"),
        Route("/graphiql/assets/{file}", asset, methods=["GET", "HEAD"], name="graphiql-asset"),
    ]
