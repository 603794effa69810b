"""Results of format validation and compatibility checks.

A :class:`ValidationResult` maps onto a Version's ``formatvalidated`` / ``formatvalidatedreason``
(core/spec.md): ``validated`` false with a ``reason`` when the document could not be checked
(unsupported format, unresolvable import), ``violations`` when it was checked and does not adhere
(the write path's ``format_violation``). A :class:`CompatibilityResult` does the same for
``compatibilityvalidated`` / ``compatibilityvalidatedreason`` and ``compatibility_violation``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["backward", "forward"]

# core/spec.md "compatibility" attribute values, plus "none" (no rule: nothing to check).
MODES: tuple[str, ...] = (
    "none", "backward", "backward_transitive", "forward", "forward_transitive", "full", "full_transitive",
)


@dataclass(frozen=True)
class Violation:
    """One way a document breaks its format: where (``path`` in the document, and ``line`` /
    ``column`` when the format's parser reports them, 1-based) and what."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.path or "/"
        if self.line is not None:
            where += f" (line {self.line}" + (f", column {self.column})" if self.column is not None else ")")
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ValidationResult:
    """The outcome of validating one document against its format.

    ``validated`` says whether the document could be checked at all; when it could not,
    ``reason`` says why. ``violations`` are the defects found (empty: the document adheres);
    ``warnings`` are findings that do not make the document invalid."""

    validated: bool
    reason: str | None = None
    violations: tuple[Violation, ...] = ()
    warnings: tuple[Violation, ...] = ()

    @property
    def valid(self) -> bool:
        """Checked and free of violations (``formatvalidated`` true)."""
        return self.validated and not self.violations

    def describe(self) -> str:
        """One line for an error detail: the reason, or the violations joined."""
        if not self.validated:
            return self.reason or "not validated"
        return "; ".join(str(v) for v in self.violations) or "valid"


@dataclass(frozen=True)
class Change:
    """One difference between an older and a newer schema, with the directions it breaks:
    ``backward`` (the newer schema cannot read data written with the older one) and/or
    ``forward`` (the older schema cannot read data written with the newer one)."""

    path: str
    message: str
    backward: bool
    forward: bool


@dataclass(frozen=True)
class BreakingChange:
    """A change that violates the compatibility mode: ``against`` is the index (into the
    older documents passed in) of the version it conflicts with, ``direction`` the broken rule."""

    path: str
    message: str
    against: int
    direction: Direction

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message} ({self.direction}, against older version #{self.against})"


@dataclass(frozen=True)
class CompatibilityResult:
    """The outcome of a compatibility check. ``checked`` false with a ``reason`` when the check
    could not be made (unsupported format or mode, a document that does not parse)."""

    mode: str
    checked: bool
    reason: str | None = None
    breaking: tuple[BreakingChange, ...] = field(default=())

    @property
    def compatible(self) -> bool:
        """Checked and nothing breaks the mode (``compatibilityvalidated`` true)."""
        return self.checked and not self.breaking

    def describe(self) -> str:
        """One line for an error detail: the reason, or the breaking changes joined."""
        if not self.checked:
            return self.reason or "not checked"
        return "; ".join(str(b) for b in self.breaking) or "compatible"


class Refused(Exception):
    """Untrusted content the gateway will not evaluate, or whose evaluation was cut off
    (:mod:`xreg.formats.evaluator`): ``kind`` names the bound, ``detail`` says what happened.

    Kinds: ``too_large`` (a size limit), ``too_deep`` (nesting, or a reference loop),
    ``reference`` (a ``$ref`` / import outside the document and the registries), ``pattern`` (a
    regular expression RE2 does not evaluate), ``unsafe`` (XML entities, DTDs), ``budget`` (the
    CPU, memory or time bound), ``failed`` (the format's library gave up on the content),
    ``busy`` (every worker at work and the line of waiting evaluations full, or a wait too long;
    ``retry_after`` then says in how many seconds to try again)."""

    def __init__(self, kind: str, detail: str, retry_after: int | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after

    def reason(self) -> str:
        """One line for ``formatvalidatedreason``-like fields and error details."""
        return f"refused: {self.detail}"
