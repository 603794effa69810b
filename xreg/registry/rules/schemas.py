"""Rules of schema/spec.md for the attributes of schema versions.

schema/spec.md adds no attribute rule to core/spec.md's today (``format`` non-empty is
``xreg.registry.rules.core``'s); a schema's documents are checked against their ``format`` and
``compatibility`` by ``xreg.registry.schema_checks``, not here. A rule on a schema version's
attributes goes in :func:`version_rules`.
"""

from __future__ import annotations

from xreg.registry.checker import Checker


def version_rules(run: Checker, attrs: dict) -> None:
    """The rules of a schema version's attributes (none beyond core/spec.md's yet)."""
