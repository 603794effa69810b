"""Every link of README.md and of the manual resolves: relative files exist, and anchors name
headings of their page as both GitHub and the site name them (external links are not fetched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import REPO
from tests.docs.links import Link, anchors, github_slug, links, problem, site_slug

#: README.md, the manual, and the other READMEs people land on in the repository.
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md"), REPO / "bench" / "README.md",
                REPO / "spark" / "README.md", REPO / "samples" / "README.md", REPO / "tests" / "data" / "README.md",
                REPO / "helm" / "xreg-gateway" / "README.md"])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves(page: Path):
    broken = [f"{link.page.relative_to(REPO)}:{link.line}: {link.target}: {why}"
              for link in links(page) if (why := problem(link, REPO))]
    assert not broken, "\n".join(broken)


def test_the_readme_links_into_the_manual():
    targets = {link.target.partition("#")[0] for link in links(REPO / "README.md")}
    assert "docs/architecture.md" in targets and "docs/getting-started.md" in targets
    assert any("#" in link.target and link.target.startswith("docs/") for link in links(REPO / "README.md"))


def test_broken_links_and_anchors_are_found(tmp_path: Path):
    """The checker itself: a missing file, a missing anchor, an anchor only one reader knows."""
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Two  spaces — and a dash\n", encoding="utf-8")
    page.write_text(
        "# Page\n\n## Rate limits\n\n"
        "[ok](other.md) [ok](#rate-limits) [gone](missing.md) [bad](other.md#nothing)\n"
        "[github only](other.md#two--spaces--and-a-dash) [site only](other.md#two-spaces-and-a-dash)\n"
        "[web](https://example.com/x#y) `[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n",
        encoding="utf-8")
    found = {link.target: problem(link, tmp_path) for link in links(page)}
    assert set(found) == {"other.md", "#rate-limits", "missing.md", "other.md#nothing",
                          "other.md#two--spaces--and-a-dash", "other.md#two-spaces-and-a-dash", "https://example.com/x#y"}
    assert found["other.md"] is None and found["#rate-limits"] is None and found["https://example.com/x#y"] is None
    assert "does not exist" in (found["missing.md"] or "")
    assert "no such heading" in (found["other.md#nothing"] or "")
    assert "the site" in (found["other.md#two--spaces--and-a-dash"] or "")
    assert "GitHub" in (found["other.md#two-spaces-and-a-dash"] or "")


def test_slugs_follow_github_and_python_markdown():
    assert github_slug("Operations: health, metrics, logs, traces") == "operations-health-metrics-logs-traces"
    assert site_slug("Operations: health, metrics, logs, traces") == "operations-health-metrics-logs-traces"
    assert github_slug("The library (`xreg/formats/`)") == "the-library-xregformats"
    assert github_slug("A — B") == "a--b" and site_slug("A — B") == "a-b"


def test_repeated_headings_are_numbered(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("# T\n\n## Limits\n\n## Limits\n", encoding="utf-8")
    github, site = anchors(page)
    assert {"limits", "limits-1"} <= github and {"limits", "limits_1"} <= site


def test_links_in_code_are_not_links(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("  ```sh\n  [x](gone.md)\n  ```\nsee `[y](gone.md)` and [z](here.md)\n", encoding="utf-8")
    assert [link.target for link in links(page)] == ["here.md"]
    assert links(page)[0] == Link(page, 4, "here.md")
