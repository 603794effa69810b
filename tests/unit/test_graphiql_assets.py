"""GraphiQL's page and assets over plain HTTP: no external URL, strict CSP, bytes match the manifest.

The installed assets come from ``make assets``; without them these tests are skipped with the
reason, except in CI (``CI`` set), where they must run.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from gateway.graphiql import ASSET_DIR, MANIFEST_PATH, GraphiQLAssets, graphiql_routes, sri_sha384
from xreg.config import Settings

REPO = Path(__file__).resolve().parents[2]
MANIFEST = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))["files"]


def require_installed_assets() -> None:
    missing = [name for name in MANIFEST if not (ASSET_DIR / name).is_file()]
    if missing:
        message = f"GraphiQL's assets are not installed ({', '.join(missing)}): run `make assets`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def client(assets: GraphiQLAssets | None = None) -> httpx.AsyncClient:
    app = Starlette(routes=graphiql_routes(Settings(), **({"assets": assets} if assets else {})))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


def csp_directives(header: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in header.split(";")) if d}


def external_urls(text: str) -> list[str]:
    """Absolute http(s) URLs that point anywhere but this machine."""
    urls = re.findall(r"""https?://[^\s"'<>)]+""", text)
    return [u for u in urls if not re.match(r"https?://(127\.0\.0\.1|localhost)([:/]|$)", u)]


async def test_page_has_no_external_url_and_every_tag_has_the_manifests_integrity():
    require_installed_assets()
    async with client() as http:
        response = await http.get("/graphiql")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    page = response.text
    assert external_urls(page) == []
    assert "//" not in "".join(re.findall(r'(?:src|href)="([^"]*)"', page))  # no protocol-relative URL either
    tags = re.findall(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"([^\"]+)\"[^>]*>", page)
    referenced = {}
    for tag in re.findall(r"<(?:script|link)\b[^>]*>", page):
        url = re.search(r'\b(?:src|href)="([^"]+)"', tag)
        if url is None or url.group(1) == "data:,":  # inline scripts; the empty favicon
            continue
        name = url.group(1).split("?")[0].rsplit("/", 1)[-1]
        integrity = re.search(r'\bintegrity="([^"]+)"', tag)
        assert integrity, f"no integrity attribute on {tag}"
        referenced[name] = integrity.group(1)
    assert tags and referenced == {name: entry["integrity"] for name, entry in MANIFEST.items()}


async def test_page_csp_allows_only_this_origin_and_the_bootstrap_by_hash():
    require_installed_assets()
    async with client() as http:
        response = await http.get("/graphiql")
    csp = csp_directives(response.headers["content-security-policy"])
    assert csp["default-src"] == ["'none'"]
    assert csp["connect-src"] == ["'self'"]
    assert "'unsafe-inline'" not in csp["script-src"] and "'unsafe-eval'" not in csp["script-src"]
    inline = re.findall(r"<script>(.*?)</script>", response.text, flags=re.S)
    assert len(inline) == 1
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    assert csp["script-src"] == ["'self'", f"'sha256-{digest}'"]
    assert response.headers["x-content-type-options"] == "nosniff"
    config = json.loads(re.search(r'<script type="application/json" id="graphiql-config">(.*?)</script>',
                                  response.text, flags=re.S).group(1))
    assert config["endpoint"] == "graphql" and "registry" in config["examples"][0]["query"]


async def test_every_asset_matches_the_manifest_with_long_cache_and_content_type():
    require_installed_assets()
    async with client() as http:
        for name, entry in MANIFEST.items():
            response = await http.get(f"/graphiql/assets/{name}")
            assert response.status_code == 200, name
            assert sri_sha384(response.content) == entry["integrity"], name
            assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
            expected = "text/css; charset=utf-8" if name.endswith(".css") else "text/javascript; charset=utf-8"
            assert response.headers["content-type"] == expected
            again = await http.get(f"/graphiql/assets/{name}", headers={"If-None-Match": response.headers["etag"]})
            assert again.status_code == 304 and again.content == b""


async def test_only_manifest_files_are_served():
    require_installed_assets()
    async with client() as http:
        for name in ("index.umd.js.map", "graphiql.min.js.map", "package.json", "..%2Fgraphiql.manifest.json",
                     "..%2F..%2Fconfig.py", ".", "GRAPHIQL.MIN.JS"):
            assert (await http.get(f"/graphiql/assets/{name}")).status_code == 404, name
        assert (await http.get("/graphiql/assets/../static/graphiql.manifest.json")).status_code == 404


async def test_missing_assets_answer_503_naming_the_setup_command(tmp_path: Path):
    async with client(GraphiQLAssets(tmp_path / "graphiql", MANIFEST_PATH)) as http:
        page = await http.get("/graphiql")
        asset = await http.get("/graphiql/assets/graphiql.min.js")
    assert page.status_code == 503 and asset.status_code == 503
    assert page.headers["content-type"].startswith("text/plain")
    assert "make assets" in page.text and "not installed" in page.text


async def test_a_tampered_asset_is_refused(tmp_path: Path):
    require_installed_assets()
    copy = tmp_path / "graphiql"
    shutil.copytree(ASSET_DIR, copy)
    target = copy / "graphiql.min.js"
    target.write_bytes(target.read_bytes() + b"\n;alert(1)")
    async with client(GraphiQLAssets(copy, MANIFEST_PATH)) as http:
        response = await http.get("/graphiql")
    assert response.status_code == 503
    assert "does not match" in response.text and "make assets" in response.text


def test_the_default_query_is_valid_against_the_gateways_schema():
    from graphql import build_schema, parse, validate

    from gateway.graphiql import DEFAULT_QUERY
    from resolvers.schema import sdl

    assert validate(build_schema(sdl()), parse(DEFAULT_QUERY)) == []


# -- the set-up step (web/copy_assets.py) ------------------------------------------------------

def load_copy_assets(monkeypatch, tmp_path: Path, manifest: dict):
    spec = importlib.util.spec_from_file_location("copy_assets", REPO / "web" / "copy_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(module, "NODE_MODULES", tmp_path / "node_modules")
    monkeypatch.setattr(module, "SETS", {"graphiql": ("GraphiQL", tmp_path / "manifest.json",
                                                      tmp_path / "static" / "graphiql")})
    return module


def fake_package(tmp_path: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    root = tmp_path / "node_modules" / name
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": name, "version": version}))
    for path, body in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(body)


def test_setup_copies_and_verifies(monkeypatch, tmp_path: Path, capsys):
    body = b"console.log('hi')\n"
    fake_package(tmp_path, "lib", "1.2.3", {"dist/lib.js": body})
    manifest = {"files": {"lib.js": {"package": "lib@1.2.3", "source": "lib/dist/lib.js", "integrity": sri_sha384(body)}}}
    module = load_copy_assets(monkeypatch, tmp_path, manifest)
    assert module.main([]) == 0
    assert (tmp_path / "static" / "graphiql" / "lib.js").read_bytes() == body
    assert module.main(["--check"]) == 0
    (tmp_path / "static" / "graphiql" / "extra.js").write_text("")
    assert module.main(["--check"]) == 1
    assert "not listed in the manifest" in capsys.readouterr().err


def test_setup_fails_on_a_hash_mismatch_and_keeps_the_previous_copy(monkeypatch, tmp_path: Path, capsys):
    fake_package(tmp_path, "lib", "1.2.3", {"dist/lib.js": b"tampered"})
    manifest = {"files": {"lib.js": {"package": "lib@1.2.3", "source": "lib/dist/lib.js", "integrity": sri_sha384(b"good")}}}
    module = load_copy_assets(monkeypatch, tmp_path, manifest)
    previous = tmp_path / "static" / "graphiql"
    previous.mkdir(parents=True)
    (previous / "lib.js").write_bytes(b"good")
    assert module.main([]) == 1
    assert "integrity mismatch" in capsys.readouterr().err
    assert (previous / "lib.js").read_bytes() == b"good"
    assert [p.name for p in previous.parent.iterdir()] == ["graphiql"]  # no staging directory left behind


def test_setup_fails_on_another_package_version(monkeypatch, tmp_path: Path, capsys):
    fake_package(tmp_path, "lib", "1.2.4", {"dist/lib.js": b"x"})
    manifest = {"files": {"lib.js": {"package": "lib@1.2.3", "source": "lib/dist/lib.js", "integrity": sri_sha384(b"x")}}}
    module = load_copy_assets(monkeypatch, tmp_path, manifest)
    assert module.main([]) == 1
    assert "lib@1.2.4" in capsys.readouterr().err


def test_manifest_pins_exactly_what_package_json_pins():
    pinned = json.loads((REPO / "web" / "package.json").read_text())["dependencies"]
    lock = json.loads((REPO / "web" / "package-lock.json").read_text())["packages"]
    for name, spec in pinned.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", spec), f"{name} is not pinned exactly: {spec}"
        assert lock[f"node_modules/{name}"]["version"] == spec
        assert lock[f"node_modules/{name}"]["integrity"].startswith("sha512-")
    docs = json.loads((REPO / "web" / "docs.manifest.json").read_text())["files"]
    for entry in [*MANIFEST.values(), *docs.values()]:
        package, _, version = entry["package"].rpartition("@")
        assert pinned[package] == version
