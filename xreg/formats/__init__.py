"""Schema format validation and compatibility checking (schema/spec.md "Schema Formats";
core/spec.md ``format``, ``compatibility``, ``formatvalidated``, ``compatibilityvalidated``).

Every evaluation of caller-supplied content goes through the bounded evaluator
(:mod:`xreg.formats.evaluator`, :func:`default`): in worker processes, within size, depth,
CPU, memory and time bounds, with no file or network access and linear-time regular expressions.

- :meth:`Evaluator.validate` checks a Version's document against its ``format`` (JSON Schema
  drafts 4 to 2020-12, Avro, Protobuf 2 and 3, XSD 1.0 and 1.1, JSON Structure);
- :meth:`Evaluator.check_compatibility` checks a new Version's document against the older ones
  of its lineage under a ``compatibility`` mode (JSON Schema, Avro, Protobuf);
- :meth:`Evaluator.validate_payload` checks a message payload against its schema;
- :func:`capabilities` gives the ``formats`` and ``compatibilities`` capability values.

Results are plain data (:class:`ValidationResult`, :class:`CompatibilityResult`); the caller
maps them to ``formatvalidated`` / ``format_violation`` and so on per ``strictvalidation``, and a
:class:`Refused` evaluation to an error. The engine's own functions (``core.validate``,
``core.check_compatibility``, ``payloads.validate_payload``) run inside the workers only.
docs/schema-validation.md describes the formats, version matching, compatibility rules and limits.
"""

from xreg.formats.core import capabilities, compatibility_modes, resolve
from xreg.formats.evaluator import Evaluator, Limits, configure, default
from xreg.formats.model import MODES, BreakingChange, CompatibilityResult, Refused, ValidationResult, Violation

__all__ = [
    "MODES",
    "BreakingChange",
    "CompatibilityResult",
    "Evaluator",
    "Limits",
    "Refused",
    "ValidationResult",
    "Violation",
    "capabilities",
    "compatibility_modes",
    "configure",
    "default",
    "resolve",
]
