"""Subscriptions in a real browser: headless Debian Chromium (Playwright) against the gateway under
uvicorn on 127.0.0.1. A small page using the pinned ``graphql-ws`` client (the gateway's own copy,
``/graphiql/assets/graphql-ws.min.js``; the page is served beside the gateway by the same server,
so that it is a page of the gateway's origin, as a front-end app behind the same host would be)
and GraphiQL each receive the event of a write made
through the xRegistry HTTP API; the page then reconnects with the last position it saw and gets
what it missed, nothing twice. How long an event took from the write's answer to the page is
recorded as a figure (``event_latency_ms`` in the JUnit properties), never asserted. Before it
writes, the test waits until the server counts the subscription open (``Subscriptions.wait_until``
of the app's admission control, notified as each opens or closes; no polling).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.responses import HTMLResponse

from gateway.admission import Subscriptions
from gateway.app import create_app
from gateway.auth import hash_key
from gateway.graphiql import ASSET_DIR, MANIFEST_PATH
from tests.browser.test_graphiql import chromium, editor_text, skip_or_fail
from tests.support.live import LiveServer, bound_socket
from xreg.config import Settings

WRITER = "browser-writer-key-0123456789"
BOUND = 30.0
SUBSCRIPTION = ("subscription Groups($after: String) { registryEvents(after: $after, "
                "types: [\"io.xregistry.group.created\"]) { position subject entity { xid } } }")
#: The page: the graphql-ws client, and a subscription it (re)starts from a position.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>subscriber</title>
<script src="/graphiql/assets/graphql-ws.min.js"></script></head>
<body><script>
window.received = []; window.problems = [];
window.start = function (after) {
  window.client = graphqlWs.createClient({
    url: location.origin.replace(/^http/, "ws") + "/graphql", retryAttempts: 0
  });
  window.client.subscribe({ query: QUERY, variables: { after: after } }, {
    next: function (result) {
      if (result.errors) window.problems.push(JSON.stringify(result.errors));
      else window.received.push(result.data.registryEvents);
    },
    error: function (error) { window.problems.push(String((error && (error.reason || error.message)) || error)); },
    complete: function () {}
  });
};
</script></body></html>
""".replace("QUERY", json.dumps(SUBSCRIPTION))


class LiveGateway(LiveServer):
    """The gateway app, and the test page at ``/subscriber.html`` of the same origin."""

    def __init__(self, settings: Settings) -> None:
        sock = bound_socket()
        self.origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
        gateway = create_app(settings.model_copy(update={"base_url": f"{self.origin}/registry"}))
        self.subscriptions: Subscriptions = gateway.state.admission.subscriptions

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == "/subscriber.html":
                await HTMLResponse(PAGE)(scope, receive, send)
            else:
                await gateway(scope, receive, send)

        super().__init__(app, sock=sock)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory):
    manifest = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))["files"]
    missing = [name for name in manifest if not (ASSET_DIR / name).is_file()]
    if missing:
        skip_or_fail(f"GraphiQL's assets are not installed ({', '.join(missing)}): run `make assets`")
    settings = Settings(data_dir=tmp_path_factory.mktemp("gateway-data"), store_url="", config=None,
                        api_keys=[{"name": "writer", "sha256": hash_key(WRITER), "scopes": ["read", "write"]}])
    with LiveGateway(settings) as live:
        yield live


def open_ws(gateway: LiveGateway) -> int:
    return gateway.subscriptions.by_transport.get("ws", 0)


def until(gateway: LiveGateway, condition: Callable[[int], bool], what: str) -> None:
    """Wait until ``condition`` holds of the WebSocket subscriptions the server counts open (it
    notifies as each opens or closes; the bound is never reached when all is well)."""
    if not gateway.subscriptions.wait_until(lambda s: condition(s.by_transport.get("ws", 0)), BOUND):
        pytest.fail(f"not within {BOUND} s: {what}")


def write_group(gateway: LiveGateway, name: str) -> None:
    response = httpx.put(f"{gateway.origin}/registry/schemagroups/{name}", json={},
                         headers={"Authorization": f"Bearer {WRITER}"}, timeout=BOUND)
    assert response.status_code in (200, 201), response.text


def received(page: Any) -> list[dict]:
    return page.evaluate("window.received")


def test_a_graphql_ws_page_gets_the_event_of_a_write_and_resumes_after_its_last_position(
        gateway: LiveGateway, tmp_path: Path, record_property: Any):
    with chromium(gateway, tmp_path) as browser:
        page = browser.context.new_page()
        page.on("pageerror", lambda error: browser.problems.append(f"page error: {error}"))
        page.goto(f"{gateway.origin}/subscriber.html", wait_until="load")
        before = open_ws(gateway)
        page.evaluate("start(null)")
        until(gateway, lambda n: n > before, "the page's subscription is open")
        write_group(gateway, "b1")
        written = time.monotonic()
        page.wait_for_function("window.received.length >= 1", timeout=BOUND * 1000)
        latency_ms = (time.monotonic() - written) * 1000
        write_group(gateway, "b2")
        page.wait_for_function("window.received.length >= 2", timeout=BOUND * 1000)
        page.evaluate("window.client.dispose()")  # the page goes away …
        until(gateway, lambda n: n == before, "the page's subscription is closed")
        write_group(gateway, "b3")  # … and misses these
        write_group(gateway, "b4")
        last = received(page)[-1]["position"]
        page.evaluate("position => start(position)", last)
        until(gateway, lambda n: n > before, "the page's second subscription is open")
        write_group(gateway, "b5")
        page.wait_for_function("window.received.length >= 5", timeout=BOUND * 1000)
        events, problems = received(page), page.evaluate("window.problems")
    record_property("event_latency_ms", round(latency_ms, 1))
    print(f"event latency, write answered to event in the page: {latency_ms:.1f} ms")
    assert [e["subject"] for e in events] == [f"/schemagroups/b{n}" for n in range(1, 6)]
    assert [e["entity"] for e in events] == [{"xid": f"/schemagroups/b{n}"} for n in range(1, 6)]
    positions = [tuple(map(int, e["position"].split("."))) for e in events]
    assert positions == sorted(set(positions))  # in order, none twice
    assert problems == [] and browser.problems == [] and browser.outside() == []


def test_graphiql_runs_a_subscription_and_shows_the_event_of_a_write(gateway: LiveGateway, tmp_path: Path):
    from urllib.parse import urlencode

    with chromium(gateway, tmp_path) as browser:
        page = browser.open("/graphiql?" + urlencode({"query": SUBSCRIPTION}))
        before = open_ws(gateway)
        page.locator(".graphiql-execute-button").click()
        until(gateway, lambda n: n > before, "GraphiQL's subscription is open")
        write_group(gateway, "graphiql1")
        page.wait_for_function(
            "() => /schemagroups\\/graphiql1/.test("
            "document.querySelector('.result-window .CodeMirror').CodeMirror.getValue())", timeout=BOUND * 1000)
        result = json.loads(editor_text(page, "result"))
        page.locator(".graphiql-execute-button").click()  # stops the subscription
        until(gateway, lambda n: n == before, "GraphiQL's subscription is stopped")
    assert result["data"]["registryEvents"]["subject"] == "/schemagroups/graphiql1"
    assert browser.outside() == [] and browser.problems == []
