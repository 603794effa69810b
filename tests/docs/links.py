"""The links of the project's Markdown pages, and the anchors their headings make.

A page is read as GitHub and the MkDocs site both read it: links inside code (fenced blocks,
inline spans) are not links, and a heading's anchor is named the way each of them names it —
GitHub keeps every word character and turns each space into a hyphen; Python-Markdown's ``toc``
(the site) folds to ASCII and collapses runs of spaces and hyphens. A link's anchor must be valid
for both, so that it works wherever the page is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from markdown.extensions.toc import slugify

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Link:
    page: Path
    line: int
    target: str


def prose(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a page outside fenced code blocks, numbered from 1."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            yield number, line


def links(page: Path) -> list[Link]:
    """Every link (inline, image or reference definition) of a page, code left out."""
    found = []
    for number, line in prose(page.read_text(encoding="utf-8")):
        line = INLINE_CODE.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(line)]
        if reference := REFERENCE.match(line):
            targets.append(reference.group(1))
        found += [Link(page, number, t) for t in targets]
    return found


def _plain(heading: str) -> str:
    """A heading's text as rendered: links by their text, code by its content, no emphasis."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = INLINE_CODE.sub(lambda m: m.group(2), text)
    return re.sub(r"(\*\*|__|\*)", "", text)


def github_slug(text: str) -> str:
    return re.sub(r"[^\w\- ]", "", _plain(text).strip().lower()).replace(" ", "-")


def site_slug(text: str) -> str:
    """The site's anchors: Python-Markdown's ``toc`` slugify (mkdocs.yml keeps the default)."""
    return slugify(_plain(text), "-")


def anchors(page: Path) -> tuple[set[str], set[str]]:
    """The anchors of a page's headings: as GitHub names them, and as the site does."""
    github: dict[str, int] = {}
    site: dict[str, int] = {}
    out_github, out_site = set(), set()
    for _, line in prose(page.read_text(encoding="utf-8")):
        if not (m := HEADING.match(line)):
            continue
        for slug, seen, out, sep in ((github_slug(m.group(2)), github, out_github, "-"),
                                     (site_slug(m.group(2)), site, out_site, "_")):
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}{sep}{n}")
    return out_github, out_site


def problem(link: Link, root: Path) -> str | None:
    """Why a link does not resolve, or None. External links (with a scheme) are not fetched."""
    target = link.target
    if not target or SCHEME.match(target) or target.startswith("//"):
        return None
    path_part, _, anchor = target.partition("#")
    if path_part.startswith("/"):
        return "an absolute path: use a path relative to the page"
    page = (link.page.parent / path_part).resolve() if path_part else link.page
    if not page.exists():
        return f"{path_part} does not exist"
    if root not in page.parents and page != root:
        return f"{path_part} is outside the repository"
    if anchor and page.suffix == ".md":
        github, site = anchors(page)
        missing = [name for name, names in (("GitHub", github), ("the site", site)) if anchor not in names]
        if missing:
            return f"#{anchor}: no such heading in {page.name} (as {' and '.join(missing)} name(s) them)"
    return None
