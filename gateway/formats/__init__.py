"""Schema format validation and compatibility checking (schema/spec.md "Schema Formats";
core/spec.md ``format``, ``compatibility``, ``formatvalidated``, ``compatibilityvalidated``).

- :func:`validate` checks a Version's document against its ``format`` (JSON Schema drafts 4 to
  2020-12, Avro, Protobuf 2 and 3, XSD 1.0 and 1.1, JSON Structure).
- :func:`check_compatibility` checks a new Version's document against the older ones of its
  lineage under a ``compatibility`` mode (JSON Schema, Avro, Protobuf).
- :func:`capabilities` gives the ``formats`` and ``compatibilities`` capability values.

Results are plain data (:class:`ValidationResult`, :class:`CompatibilityResult`); the caller
maps them to ``formatvalidated`` / ``format_violation`` and so on per ``strictvalidation``.
Analyses are cached per document digest (:data:`CACHE`, a bounded LRU). docs/schema-validation.md
describes the formats, version matching, compatibility rules and limits.
"""

from gateway.formats.core import CACHE, capabilities, check_compatibility, compatibility_modes, resolve, validate
from gateway.formats.model import MODES, BreakingChange, CompatibilityResult, ValidationResult, Violation

__all__ = [
    "CACHE",
    "MODES",
    "BreakingChange",
    "CompatibilityResult",
    "ValidationResult",
    "Violation",
    "capabilities",
    "check_compatibility",
    "compatibility_modes",
    "resolve",
    "validate",
]
