"""CORS in a real browser: a page served from one loopback port calls the gateway on another
with ``fetch`` in headless Debian Chromium (driven by Playwright, as ``test_graphiql.py``).

From an allowed origin a JSON ``POST`` with ``Authorization`` (which needs a preflight) gets the
data, and a ``GET`` can read the exposed ``ETag``; from an origin that is not allowed the same
``fetch`` is blocked by the browser (a ``TypeError`` in the page) and no request is run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.app import create_app
from gateway.auth import hash_key
from tests.browser.test_graphiql import CHROMIUM, CHROMIUM_ARGS, skip_or_fail
from tests.support.live import LiveServer, bound_socket
from xreg.config import ApiKey, Settings

KEY = "cors-browser-test-key-6b0f"
QUERY = "{ registry { registryid } }"
CALL = """async ([url, key, query]) => {
  try {
    const posted = await fetch(url + "/graphql", {method: "POST", body: JSON.stringify({query}),
      headers: {"Content-Type": "application/json", "Authorization": "Bearer " + key,
                "apollographql-client-name": "cors-test", "apollographql-client-version": "1"}});
    const got = await fetch(url + "/graphql?query=" + encodeURIComponent(query),
      {headers: {"Authorization": "Bearer " + key, "Accept": "application/graphql-response+json"}});
    return {status: posted.status, body: await posted.json(), etag: got.headers.get("ETag"),
            contentType: got.headers.get("Content-Type")};
  } catch (error) {
    return {error: error.name, message: error.message};
  }
}"""


class Recorder:
    """ASGI wrapper noting each request's method, path and Origin (the gateway runs unchanged)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str, str, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            origin = dict(scope["headers"]).get(b"origin")
            self.seen.append((scope["method"], scope["path"], origin.decode() if origin else None))
        await self.app(scope, receive, send)


def page_server() -> LiveServer:
    """A tiny site of its own origin: one empty page the test runs ``fetch`` from."""
    async def index(request: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>front-end</title><p>front-end</p>")

    return LiveServer(Starlette(routes=[Route("/", index)]), sock=bound_socket())


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Debian's chromium is not installed ({CHROMIUM}): `make system-deps` as root installs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: `make install` installs the test extras")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            service_workers="block")
        try:
            yield context
        finally:
            context.close()


def test_fetch_from_another_origin(browser_context: Any, tmp_path: Path):
    with page_server() as allowed_site, page_server() as other_site:
        settings = Settings(data_dir=tmp_path, registry_id="corsreg", config=None, anonymous_read=False,
                            api_keys=[ApiKey(name="web", sha256=hash_key(KEY), scopes=["read"])],
                            cors_origins=[allowed_site.url])
        recorder = Recorder(create_app(settings))
        with LiveServer(recorder) as gateway:
            page = browser_context.new_page()
            try:
                page.goto(allowed_site.url + "/", wait_until="load")
                result = page.evaluate(CALL, [gateway.url, KEY, QUERY])
                assert result == {"status": 200, "body": {"data": {"registry": {"registryid": "corsreg"}}},
                                  "etag": result["etag"],
                                  "contentType": "application/graphql-response+json; charset=utf-8"}, result
                assert result["etag"] and result["etag"].startswith('"')  # exposed to the script
                preflights = [s for s in recorder.seen if s[0] == "OPTIONS"]
                assert ("OPTIONS", "/graphql", allowed_site.url) in preflights  # Authorization needs one
                assert ("POST", "/graphql", allowed_site.url) in recorder.seen

                recorder.seen.clear()
                page.goto(other_site.url + "/", wait_until="load")
                blocked = page.evaluate(CALL, [gateway.url, KEY, QUERY])
                assert blocked["error"] == "TypeError", blocked
                # the preflight was refused, so the browser never sent the POST itself
                assert [s[0] for s in recorder.seen if s[2] == other_site.url] == ["OPTIONS"], recorder.seen
            finally:
                page.close()
