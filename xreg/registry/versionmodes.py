"""The ``versionmode`` algorithms of core/model.md ("groups.<STRING>.resources.<STRING>.versionmode"):
which Version of a Resource is the newest and the oldest, and how ``ancestorid`` is set.

* ``manual`` (the default): the newest is, among the Versions that are nobody's ancestor, the
  one with the newest ``createdat`` (ties: the highest ``versionid``, case-insensitive); clients
  give ``ancestorid``, a Version without one gets the newest Version.
* ``createdat`` / ``modifiedat``: the Versions ordered by that timestamp (ties by ``versionid``);
  each Version's ancestor is the one before it, the first is the single root.
* ``semver``: the same with the Semantic Versioning 2.0.0 precedence of ``versionid``.

Values are case-insensitive. :func:`order_key` orders Versions oldest first (``maxversions``
prunes from the front of that order), :func:`newest` picks the default of a non-sticky Resource.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from xreg.model.registry_model import ANCESTOR_ID
from xreg.model.registry_model import ORDERED_VERSION_MODES as ORDERED_MODES
from xreg.registry.timestamps import parse_ts

# semver.org 2.0.0: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]; a leading "v" and missing MINOR /
# PATCH are tolerated (server-chosen ids are "1", "2", …), anything else orders before every
# semantic version, by its text.
_SEMVER = re.compile(r"[vV]?(\d{1,30})(?:\.(\d{1,30}))?(?:\.(\d{1,30}))?"
                     r"(?:-([0-9A-Za-z.\-]{1,200}))?(?:\+[0-9A-Za-z.\-]*)?")


class Versioned(Protocol):
    """What ordering needs of a Version: its id and its attributes."""

    @property
    def id(self) -> str: ...

    @property
    def body(self) -> dict[str, Any]: ...


def _moment(value: Any) -> float:
    try:
        return parse_ts(value).timestamp()
    except (ValueError, TypeError):
        return 0.0


def semver_key(versionid: str) -> tuple[Any, ...]:
    """A sort key of ``versionid`` following semver.org's precedence rules (section 11)."""
    m = _SEMVER.fullmatch(versionid)
    if m is None:
        return (0, versionid.lower())
    core = tuple(int(p or 0) for p in m.group(1, 2, 3))
    pre = m.group(4)
    if pre is None:
        return (1, core, 1, ())
    # identifiers: numeric ones compare numerically and sort before alphanumeric ones
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (1, core, 0, parts)


def order_key(mode: str) -> Callable[[Versioned], tuple[Any, ...]]:
    """The key ordering a Resource's Versions oldest first under ``mode``."""
    if mode == "semver":
        return lambda s: (semver_key(s.id), s.id.lower())
    attribute = "modifiedat" if mode == "modifiedat" else "createdat"
    return lambda s: (_moment(s.body.get(attribute)), s.id.lower())


def newest(versions: Sequence[Versioned], mode: str) -> str:
    """The id of the newest Version under ``mode`` (``manual``: among the leaves)."""
    candidates = list(versions)
    if mode not in ORDERED_MODES:
        ancestors = {s.body.get(ANCESTOR_ID) for s in versions
                     if s.body.get(ANCESTOR_ID) and s.body.get(ANCESTOR_ID) != s.id}
        candidates = [s for s in versions if s.id not in ancestors] or candidates
    return max(candidates, key=order_key(mode)).id


def chained_ancestors(versions: Sequence[Versioned], mode: str) -> dict[str, str]:
    """``versionid`` -> ``ancestorid`` of an ordered mode: each Version's predecessor, the
    oldest its own id (the one root)."""
    ordered = sorted(versions, key=order_key(mode))
    return {s.id: (ordered[i - 1].id if i else s.id) for i, s in enumerate(ordered)}
