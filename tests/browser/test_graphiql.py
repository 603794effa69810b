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
import contextlib
import csv
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from gateway.app import create_app
from gateway.graphiql import ASSET_DIR, MANIFEST_PATH, sri_sha384
from tests.support.live import LiveServer, bound_socket
from xreg.config import Settings

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


@contextlib.contextmanager
def chromium(gateway: LiveGateway, tmp_path: Path) -> Iterator[Browser]:
    """Debian's headless Chromium on a fresh profile (skipped, or failed in CI, without it)."""
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Debian's chromium is not installed ({CHROMIUM}): `make system-deps` as root installs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: `make install` installs the test extras")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900}, service_workers="block", accept_downloads=True,
        )
        try:
            yield Browser(gateway, context)
        finally:
            context.close()


class Browser:
    """One Chromium profile on the gateway: every request it makes, every console error."""

    def __init__(self, gateway: LiveGateway, context: Any) -> None:
        self.gateway = gateway
        self.context = context
        self.requests: list[str] = []
        self.problems: list[str] = []
        context.on("request", lambda request: self.requests.append(request.url))

    def open(self, path: str = "/graphiql") -> Any:
        """A new tab on ``path`` of the gateway, once GraphiQL's query editor shows."""
        page = self.context.new_page()
        page.on("console", lambda msg: self.problems.append(f"console {msg.type}: {msg.text}")
                if msg.type == "error" else None)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.goto(f"{self.gateway.origin}{path}", wait_until="load")
        page.locator(".graphiql-query-editor .CodeMirror").wait_for(state="visible", timeout=20_000)
        return page

    def outside(self) -> list[str]:
        """Requests that went anywhere but the gateway."""
        return [url for url in self.requests if urlsplit(url).netloc != f"127.0.0.1:{self.gateway.port}"]


def editor_text(page: Any, editor: str) -> str:
    """The text of one of GraphiQL's editors: query, variables or result."""
    selector = {"query": ".graphiql-query-editor", "variables": ".graphiql-editor-tool .graphiql-editor",
                "result": ".result-window"}[editor]
    return page.evaluate("s => document.querySelector(s + ' .CodeMirror').CodeMirror.getValue()", selector)


def run_and_wait(page: Any) -> dict:
    """Runs the active tab's query with the run button; the result pane's JSON."""
    page.evaluate("document.querySelector('.result-window .CodeMirror').CodeMirror.setValue('')")
    page.locator(".graphiql-execute-button").click()
    page.wait_for_function(
        "() => { const cm = document.querySelector('.result-window .CodeMirror');"
        " return cm && /\"(data|errors)\"/.test(cm.CodeMirror.getValue()); }", timeout=20_000,
    )
    return json.loads(editor_text(page, "result"))


def test_graphiql_runs_the_default_query_in_chromium(gateway: LiveGateway, tmp_path: Path):
    from gateway.graphiql import DEFAULT_QUERY

    expected = graphql(gateway, DEFAULT_QUERY)
    assert "errors" not in expected, expected
    with chromium(gateway, tmp_path) as browser:
        page = browser.open()
        # The first tab holds the first example query; run it with the run button.
        assert editor_text(page, "query") == DEFAULT_QUERY
        result = run_and_wait(page)
        visible = page.locator(".result-window").inner_text()
        page.screenshot(path=str(tmp_path / "graphiql.png"))
    requests, problems, outside = browser.requests, browser.problems, browser.outside()

    assert result == expected  # what the page shows is what the gateway answers
    endpoints = result["data"]["registry"]["endpoints"]
    assert endpoints["totalCount"] == len(sample_endpoint_ids())
    edges = endpoints["edges"]
    assert len(edges) == min(5, endpoints["totalCount"])
    assert {edge["node"]["endpointid"] for edge in edges} <= sample_endpoint_ids()
    assert any(group["messages"]["edges"] for edge in edges for group in edge["node"]["messagegroups"])
    assert edges[0]["node"]["endpointid"] in visible  # rendered in the result pane, not only held by the editor

    assert outside == [], f"requests that left 127.0.0.1:{gateway.port}: {outside}"
    assert f"{gateway.origin}/graphql" in requests
    assert problems == []
    assert (tmp_path / "graphiql.png").stat().st_size > 10_000


def compact(value: object) -> str:
    """JSON as the page writes a list into a table cell (JSON.stringify)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def share_link(**values: str) -> str:
    return "/graphiql?" + urlencode(values)


def test_the_examples_are_the_first_tabs_and_open_from_the_examples_pane(gateway: LiveGateway, tmp_path: Path):
    from gateway.graphiql_examples import CHANGES_SINCE, EXAMPLES

    with chromium(gateway, tmp_path) as browser:
        page = browser.open()
        tabs = [title.strip() for title in page.locator(".graphiql-tab").all_inner_texts()]
        page.get_by_role("button", name="Show Examples").click()
        page.locator(f"a[data-example='{CHANGES_SINCE.name}']").click()
        page.wait_for_url(re.compile(r".*[?&]query=.*"))
        page.locator(".graphiql-query-editor .CodeMirror").wait_for(state="visible", timeout=20_000)
        page.wait_for_function(f"() => document.querySelector('.graphiql-tab-active')?.innerText.trim() === "
                               f"{json.dumps(CHANGES_SINCE.name)}", timeout=20_000)
        opened = editor_text(page, "query"), editor_text(page, "variables")
        result = run_and_wait(page)
    assert tabs == [example.name for example in EXAMPLES]
    assert opened == (CHANGES_SINCE.query, CHANGES_SINCE.variables_json())
    assert "errors" not in result and result["data"]["registry"]["changes"]["nodes"]
    assert browser.outside() == [] and browser.problems == []


def test_the_explorer_builds_a_query_by_clicking_fields(gateway: LiveGateway, tmp_path: Path):
    with chromium(gateway, tmp_path) as browser:
        page = browser.open(share_link(query=""))
        assert editor_text(page, "query") == ""
        page.get_by_role("button", name="Show GraphiQL Explorer").click()
        explorer = page.locator(".graphiql-explorer-root")
        explorer.locator(".graphiql-explorer-registry > [data-field-name='registry']").click()
        registry = explorer.locator(".graphiql-explorer-registry").first
        registry.locator(".graphiql-explorer-revision > [data-field-name='revision']").first.click()
        registry.locator(".graphiql-explorer-kind > [data-field-name='kind']").first.click()
        page.wait_for_function(
            "() => /revision[\\s\\S]*kind|kind[\\s\\S]*revision/.test("
            "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.getValue())", timeout=20_000)
        built = editor_text(page, "query")
        result = run_and_wait(page)
        # the address bar follows the editor once GraphiQL reports the edit (a guard, not a measure)
        page.wait_for_url(lambda url: parse_qs(urlsplit(url).query).get("query") == [built], timeout=20_000)
        shared_url = page.url
    assert re.search(r"registry\s*{\s*revision\s+kind\s*}", built), built
    assert result == graphql(gateway, built)
    assert result["data"]["registry"]["kind"] == "local" and result["data"]["registry"]["revision"] >= 1
    assert parse_qs(urlsplit(shared_url).query)["query"] == [built]  # the address bar follows the editor
    assert browser.outside() == [] and browser.problems == []


def test_a_share_link_opens_its_query_and_variables(gateway: LiveGateway, tmp_path: Path):
    query = "query Endpoint($first: Int!) {\n  registry {\n    endpoints(first: $first) { totalCount nodes { endpointid } }\n  }\n}\n"
    variables = '{"first": 2}'
    expected = httpx.post(f"{gateway.origin}/graphql", json={"query": query, "variables": {"first": 2}}, timeout=30).json()
    assert "errors" not in expected and len(expected["data"]["registry"]["endpoints"]["nodes"]) == 2
    with chromium(gateway, tmp_path) as browser:
        page = browser.open(share_link(query=query, variables=variables))
        assert editor_text(page, "query") == query
        assert editor_text(page, "variables") == variables
        assert page.locator(".graphiql-tab-active").inner_text().strip() == "Endpoint"
        result = run_and_wait(page)
        # Editing the query changes the address bar, so that copying it shares the edit.
        page.evaluate("document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
                      ".replaceRange('# edited\\n', {line: 0, ch: 0})")
        page.wait_for_function("() => new URLSearchParams(location.search).get('query').startsWith('# edited')")
        followed = parse_qs(urlsplit(page.url).query)
    assert result == expected
    assert followed["query"] == ["# edited\n" + query] and followed["variables"] == [variables]
    assert browser.outside() == [] and browser.problems == []


def test_a_share_link_cannot_inject_script(gateway: LiveGateway, tmp_path: Path):
    attack = ('</script><script>window.__injected = 1</script><img src=x onerror="window.__injected = 2">'
              '"><svg onload="window.__injected = 3">')
    page_html = httpx.get(f"{gateway.origin}{share_link(query=attack, variables=attack, operationName=attack)}",
                          timeout=10).text
    assert "__injected" not in page_html  # the server never writes the parameters into the page
    with chromium(gateway, tmp_path) as browser:
        page = browser.open(share_link(query=attack, variables=attack, operationName=attack))
        shown = editor_text(page, "query")
        injected = page.evaluate("window.__injected")
        elements = page.evaluate("document.querySelectorAll('img[src=x], svg[onload]').length")
    assert shown == attack  # the text is in the editor, as text
    assert injected is None and elements == 0


def test_a_list_result_shows_as_a_table_and_downloads_as_csv(gateway: LiveGateway, tmp_path: Path):
    query = ("query EndpointList {\n  registry {\n    endpoints(first: 10) {\n      totalCount\n"
             "      edges { node { endpointid protocol usage envelope } }\n    }\n  }\n}\n")
    expected = graphql(gateway, query)
    nodes = [edge["node"] for edge in expected["data"]["registry"]["endpoints"]["edges"]]
    assert len(nodes) >= 2
    with chromium(gateway, tmp_path) as browser:
        page = browser.open(share_link(query=query))
        assert run_and_wait(page) == expected
        page.get_by_role("button", name="Show Table").click()
        table = page.locator(".xreg-table table")
        headers = table.locator("thead th").all_inner_texts()
        first_row = table.locator("tbody tr").first.locator("td").all_inner_texts()
        shown_rows = table.locator("tbody tr").count()
        list_path = page.locator(".xreg-table select").input_value()
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Download CSV").click()
        download = download_info.value
        csv_text = Path(download.path()).read_bytes().decode("utf-8-sig")
        filename = download.suggested_filename
    assert list_path == "0"
    assert headers == ["endpointid", "protocol", "usage", "envelope"]
    assert shown_rows == len(nodes)
    assert first_row == [nodes[0]["endpointid"], nodes[0]["protocol"] or "", compact(nodes[0]["usage"]),
                         nodes[0]["envelope"] or ""]
    assert filename == "registry.endpoints.edges_.node.csv"
    rows = list(csv.reader(io.StringIO(csv_text, newline="")))
    assert rows[0] == headers
    assert rows[1:] == [[n["endpointid"], n["protocol"] or "", compact(n["usage"]), n["envelope"] or ""]
                        for n in nodes]
    assert csv_text.endswith("\r\n")
    assert browser.outside() == [] and browser.problems == []


def test_a_hostile_answer_stays_text_in_the_table_and_inert_in_the_csv(gateway: LiveGateway, tmp_path: Path):
    """Registry content is untrusted: in the table it is text, never HTML; in the CSV a cell a
    spreadsheet would run as a formula starts with a quote."""
    answer = {"data": {"registry": {"messages": {"nodes": [
        {"name": '=HYPERLINK("http://example.invalid","x")', "description": '<img src=x onerror="window.__injected=1">',
         "epoch": -1, "label": "-2", "doc": 'a "quoted", multi\nline'},
    ]}}}}
    with chromium(gateway, tmp_path) as browser:
        page = browser.open(share_link(query="{ __typename }"))
        page.get_by_role("button", name="Show Table").click()
        page.evaluate("a => document.querySelector('.result-window .CodeMirror').CodeMirror.setValue(a)",
                      json.dumps(answer))
        cells = page.locator(".xreg-table tbody tr").first.locator("td").all_text_contents()
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Download CSV").click()
        rows = list(csv.reader(io.StringIO(Path(download_info.value.path()).read_text(encoding="utf-8-sig"), newline="")))
        injected = page.evaluate("window.__injected")
        images = page.evaluate("document.querySelectorAll('.xreg-table img').length")
    node = answer["data"]["registry"]["messages"]["nodes"][0]
    assert cells == [node["name"], node["description"], "-1", "-2", node["doc"]]
    assert injected is None and images == 0
    assert rows == [["name", "description", "epoch", "label", "doc"],
                    ["'" + node["name"], node["description"], "-1", "'-2", node["doc"]]]
