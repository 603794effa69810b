"""The manual builds: ``mkdocs build --strict`` (a broken link or anchor, a page missing from the
navigation, a missing snippet all fail it), with the architecture diagrams as Mermaid blocks and
nothing fetched from the network by the pages' fonts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus import REPO

# one worker builds the site once for all its checks (a build is a few seconds of CPU)
pytestmark = pytest.mark.xdist_group("docs-site")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # never --quiet: it drops the warnings that --strict counts, and the build then passes
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                            "--config-file", str(REPO / "mkdocs.yml"), "--site-dir", str(out)],
                           cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def test_every_page_is_built(site: Path):
    pages = {p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md")}
    for page in pages:
        assert (site / ("index.html" if page.name == "index" else f"{page}/index.html")).is_file(), page


def test_the_architecture_page_has_its_diagrams(site: Path):
    html = (site / "architecture" / "index.html").read_text(encoding="utf-8")
    assert html.count('class="mermaid"') >= 4  # the layers with the three paths, then one per path
    assert "W1 PUT /registry/" in html and "S2 GET /bulk/rows" in html


def test_the_benchmarks_page_is_bench_readme(site: Path):
    html = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert "bench_graphql.py" in html and "--8&lt;--" not in html


def test_no_web_fonts(site: Path):
    assert "fonts.googleapis.com" not in (site / "index.html").read_text(encoding="utf-8")


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[there](other.md#no-such-heading)\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n", encoding="utf-8")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[0]
    (tmp_path / "mkdocs.yml").write_text(config + "\nnav:\n  - index.md\n  - other.md\n", encoding="utf-8")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                            "--site-dir", str(tmp_path / "site")], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode != 0 and "no-such-heading" in build.stdout + build.stderr
