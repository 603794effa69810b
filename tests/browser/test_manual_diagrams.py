"""The manual's architecture diagrams are drawn in a real browser with no network: the site built
by ``mkdocs build`` served on 127.0.0.1, opened in headless Debian Chromium (Playwright), every
request outside that server refused. Mermaid comes from the site itself (``make assets`` copies
it into ``docs/assets/vendor/``); the theme would otherwise fetch it from a CDN."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.staticfiles import StaticFiles

from tests.browser.test_graphiql import CHROMIUM, CHROMIUM_ARGS, skip_or_fail
from tests.corpus import REPO
from tests.support.live import LiveServer

MERMAID = REPO / "docs" / "assets" / "vendor" / "mermaid.min.js"


def test_the_architecture_diagrams_render_offline(tmp_path: Path) -> None:
    if not MERMAID.is_file():
        skip_or_fail("docs/assets/vendor/mermaid.min.js is missing: `make assets` installs it")
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Debian's chromium is not installed ({CHROMIUM}): `make system-deps` as root installs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: `make install` installs the test extras")
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--config-file", str(REPO / "mkdocs.yml"),
                            "--site-dir", str(site)], cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, build.stdout + build.stderr
    refused: list[str] = []
    problems: list[str] = []
    app = Starlette()
    app.mount("/", StaticFiles(directory=site, html=True))
    with LiveServer(app) as live, sync_playwright() as playwright:
        origin = urlsplit(live.url).netloc
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda error: problems.append(str(error)))

            def gate(route) -> None:
                if urlsplit(route.request.url).netloc == origin:
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", gate)
            page.goto(f"{live.url}/architecture/", wait_until="load")
            # the theme draws each diagram into a closed shadow root of its block: what shows from
            # outside is the block's drawn height (an undrawn block is empty: 0 px)
            drawn = "() => [...document.querySelectorAll('div.mermaid')].map(e => e.getBoundingClientRect().height)"
            page.wait_for_function(f"() => {{ const h = ({drawn})(); return h.length >= 4 && h.every(x => x > 100); }}",
                                   timeout=30_000)
            heights = page.evaluate(drawn)
        finally:
            browser.close()
    assert refused == [] and problems == []
    assert len(heights) >= 4 and all(h > 100 for h in heights)
