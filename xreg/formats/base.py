"""What each format module provides: version matching, analysis (validation and parsing), and
optionally the comparison behind compatibility checks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from xreg.formats.model import MODES, Change, ValidationResult

# A version part that means "whatever the document declares" (the format string had none).
FROM_DOCUMENT = "*"

#: Every compatibility mode; the value formats with full compatibility support declare.
ALL_MODES = MODES


def merge_directions(backward: list[tuple[str, str]], forward: list[tuple[str, str]]) -> list[Change]:
    """One :class:`Change` per (path, message) found breaking backward and/or forward."""
    out: dict[tuple[str, str], Change] = {}
    for path, message in backward:
        out[(path, message)] = Change(path, message, backward=True, forward=False)
    for path, message in forward:
        out[(path, message)] = Change(path, message, backward=(path, message) in out, forward=True)
    return list(out.values())


@dataclass(frozen=True)
class Analysis:
    """A document's validation result and, when it is valid, the format's parsed form of it
    (what :meth:`FormatHandler.compare` works on)."""

    result: ValidationResult
    parsed: Any = None


class FormatHandler(ABC):
    """One schema format: its names, the versions it validates, and how."""

    #: The canonical name of the format (schema/spec.md "Schema Formats").
    name: str
    #: Other names accepted for it (compared case-insensitively, like the name).
    aliases: tuple[str, ...] = ()
    #: The ``formats`` capability values it offers (lower case; ``*`` is a wildcard).
    capability_formats: tuple[str, ...] = ()
    #: The compatibility modes :meth:`compare` supports (empty: none).
    compatibility_modes: tuple[str, ...] = ()

    @abstractmethod
    def version_key(self, version: str | None) -> str | None:
        """The canonical form of a format's version part (``None`` given: none was written),
        or ``None`` when that version is not supported."""

    @abstractmethod
    def analyse(self, version: str, document: Any) -> Analysis:
        """Validate ``document`` against the format at ``version`` (a :meth:`version_key`)."""

    def compare(self, version: str, older: Any, newer: Any) -> list[Change]:
        """The changes from ``older`` to ``newer`` (parsed forms from :meth:`analyse`), each with
        the directions it breaks."""
        raise NotImplementedError(f"{self.name} has no compatibility rules")
