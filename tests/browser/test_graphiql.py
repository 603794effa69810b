"""GraphiQL in a real browser: headless Debian Chromium (driven by Playwright) against the real
gateway served by uvicorn on 127.0.0.1, with the sample registry imported into a fresh SQLite
store. The page must render from the gateway's own assets, run its default query, show the
sample registry's data, and make no request anywhere but the gateway.

Chromium is Debian's (``make system-deps`` installs it); Playwright's own browser downloads are
never used. Without Chromium (or Playwright) the browser test is skipped with the reason,
except in CI (``CI`` set), where it must run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from gateway.app import create_app
from gateway.config import Settings
from gateway.graphiql import ASSET_DIR, MANIFEST_PATH, sri_sha384
from tests.support.live import LiveServer, bound_socket

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Chromium as root, headless, on a machine whose network is closed: no sandbox (root), and none
#: of Chromium's own background traffic (component updates, sync, QUIC probes).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
MANIFEST = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))["files"]


def skip_or_fail(reason: str) -> None:
    """Skip on a developer's machine; in CI a missing prerequisite is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this test must run)")
    pytest.skip(reason)


def sample_endpoint_ids() -> set[str]:
    ids = set()
    for path in SAMPLES.glob("*.json"):
        ids.update(json.loads(path.read_text(encoding="utf-8")).get("endpoints", {}))
    return ids


class LiveGateway(LiveServer):
    """The gateway app, its self URLs pointing at where it is served."""

    def __init__(self, settings: Settings) -> None:
        sock = bound_socket()
        self.origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
        super().__init__(create_app(settings.model_copy(update={"base_url": f"{self.origin}/registry"})), sock=sock)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory):
    """The real gateway on a fresh SQLite data directory with samples/ imported."""
    missing = [name for name in MANIFEST if not (ASSET_DIR / name).is_file()]
    if missing:
        skip_or_fail(f"GraphiQL's assets are not installed ({', '.join(missing)}): run `make assets`")
    from gateway.cli import run_import

    data_dir = tmp_path_factory.mktemp("gateway-data")
    settings = Settings(data_dir=data_dir, store_url="", config=None)
    report = asyncio.run(run_import(settings, [SAMPLES], strict=False))
    assert report.rows and not report.rejected, report.rows
    with LiveGateway(settings) as live:
        yield live


def graphql(gateway: LiveGateway, query: str) -> dict:
    response = httpx.post(f"{gateway.origin}/graphql", json={"query": query}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_graphiql_html_and_assets_over_http(gateway: LiveGateway):
    page = httpx.get(f"{gateway.origin}/graphiql", timeout=10)
    assert page.status_code == 200
    urls = re.findall(r"""https?://[^\s"'<>)]+""", page.text)
    assert [u for u in urls if not re.match(r"https?://(127\.0\.0\.1|localhost)([:/]|$)", u)] == []
    for name, entry in MANIFEST.items():
        assert f'integrity="{entry["integrity"]}"' in page.text, name
        asset = httpx.get(f"{gateway.origin}/graphiql/assets/{name}", timeout=10)
        assert asset.status_code == 200 and sri_sha384(asset.content) == entry["integrity"], name
    # A browser's GET on /graphql gets the same page.
    browser_get = httpx.get(f"{gateway.origin}/graphql", headers={"Accept": "text/html,*/*;q=0.8"}, timeout=10)
    assert browser_get.status_code == 200
    assert browser_get.headers["content-security-policy"] == page.headers["content-security-policy"]
    assert all(f'integrity="{entry["integrity"]}"' in browser_get.text for entry in MANIFEST.values())


def test_graphiql_runs_the_default_query_in_chromium(gateway: LiveGateway, tmp_path: Path):
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Debian's chromium is not installed ({CHROMIUM}): `make system-deps` as root installs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: `make install` installs the test extras")

    from gateway.graphiql import DEFAULT_QUERY

    expected = graphql(gateway, DEFAULT_QUERY)
    assert "errors" not in expected, expected
    requests: list[str] = []
    problems: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900}, service_workers="block",
        )
        try:
            context.on("request", lambda request: requests.append(request.url))
            page = context.new_page()
            page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
                    if msg.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.goto(f"{gateway.origin}/graphiql", wait_until="load")
            page.locator(".graphiql-query-editor .CodeMirror").wait_for(state="visible", timeout=20_000)
            # The default tab holds the example query; run it with the run button.
            editor_text = page.evaluate("document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.getValue()")
            assert editor_text == DEFAULT_QUERY
            page.locator(".graphiql-execute-button").click()
            page.wait_for_function(
                "() => { const cm = document.querySelector('.result-window .CodeMirror');"
                " return cm && cm.CodeMirror.getValue().includes('\"data\"'); }", timeout=20_000,
            )
            visible = page.locator(".result-window").inner_text()
            result_text = page.evaluate("document.querySelector('.result-window .CodeMirror').CodeMirror.getValue()")
            page.screenshot(path=str(tmp_path / "graphiql.png"))
        finally:
            context.close()

    result = json.loads(result_text)
    assert result == expected  # what the page shows is what the gateway answers
    endpoints = result["data"]["registry"]["endpoints"]
    assert endpoints["totalCount"] == len(sample_endpoint_ids())
    edges = endpoints["edges"]
    assert len(edges) == min(5, endpoints["totalCount"])
    assert {edge["node"]["endpointid"] for edge in edges} <= sample_endpoint_ids()
    assert any(group["messages"]["edges"] for edge in edges for group in edge["node"]["messagegroups"])
    assert edges[0]["node"]["endpointid"] in visible  # rendered in the result pane, not only held by the editor

    outside = [url for url in requests if urlsplit(url).netloc != f"127.0.0.1:{gateway.port}"]
    assert outside == [], f"requests that left 127.0.0.1:{gateway.port}: {outside}"
    assert f"{gateway.origin}/graphql" in requests
    assert problems == []
    assert (tmp_path / "graphiql.png").stat().st_size > 10_000
