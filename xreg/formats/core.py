"""Format matching, validation, compatibility checks and the capabilities they add up to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xreg.formats.avro_format import AvroFormat
from xreg.formats.base import Analysis, FormatHandler
from xreg.formats.documents import LRUCache, digest
from xreg.formats.json_schema_format import JsonSchemaFormat
from xreg.formats.json_structure_format import JsonStructureFormat
from xreg.formats.model import MODES, BreakingChange, CompatibilityResult, Direction, ValidationResult
from xreg.formats.protobuf_format import ProtobufFormat
from xreg.formats.xsd_format import XsdFormat

HANDLERS: tuple[FormatHandler, ...] = (
    JsonSchemaFormat(), AvroFormat(), ProtobufFormat(), XsdFormat(), JsonStructureFormat(),
)
_BY_NAME: dict[str, FormatHandler] = {n.lower(): h for h in HANDLERS for n in (h.name, *h.aliases)}

#: Analyses (validation result + parsed schema) per (format, version, document digest).
CACHE: LRUCache[Analysis] = LRUCache(maxsize=2048)

_DIRECTIONS: dict[str, tuple[Direction, ...]] = {
    "backward": ("backward",), "forward": ("forward",), "full": ("backward", "forward"),
}


def resolve(format: str) -> tuple[FormatHandler, str] | None:
    """The handler and canonical version for a ``format`` value (``<NAME>[/<VERSION>]``, the name
    case-insensitive), or ``None`` when the format or its version is not supported."""
    if not isinstance(format, str) or not format.strip():
        return None
    name, _, version = format.strip().partition("/")
    handler = _BY_NAME.get(name.strip().lower())
    if handler is None:
        return None
    key = handler.version_key(version if _ else None)
    return None if key is None else (handler, key)


def _analyse(handler: FormatHandler, version: str, document: Any) -> Analysis:
    key = (handler.name, version, digest(document))
    return CACHE.get_or_compute(key, lambda: handler.analyse(version, document))


def validate(format: str, document: Any) -> ValidationResult:
    """Validate a Version's document against its ``format``.

    ``document`` is the document as the registry holds it (see :mod:`xreg.formats.documents`).
    An unsupported format gives ``validated=False`` with a reason (the caller decides per
    ``strictvalidation``); otherwise ``violations`` lists every defect found."""
    resolved = resolve(format)
    if resolved is None:
        return ValidationResult(False, reason=f"not validated: unsupported format {format!r}")
    return _analyse(*resolved, document).result


def check_compatibility(
    format: str, mode: str, new_document: Any, older_documents: Sequence[Any],
) -> CompatibilityResult:
    """Check ``new_document`` against the older Versions of its lineage under ``mode``.

    ``older_documents`` run from the oldest to the newest, the last being the new Version's
    direct ancestor; all are read as ``format`` (the new Version's). ``backward`` checks the
    newest of them, ``backward_transitive`` all (likewise ``forward``, ``full``). The result is
    not ``checked`` when the format or mode is not supported or a document is not valid for the
    format; otherwise it lists every breaking change, with the older document it conflicts with."""
    mode_key = mode.strip().lower() if isinstance(mode, str) else ""
    if mode_key not in MODES:
        return CompatibilityResult(mode, False, reason=f"not validated: unknown compatibility {mode!r}")
    resolved = resolve(format)
    if resolved is None:
        return CompatibilityResult(mode, False, reason=f"not validated: unsupported format {format!r}")
    handler, version = resolved
    if mode_key not in handler.compatibility_modes:
        return CompatibilityResult(
            mode, False, reason=f"not validated: compatibility {mode!r} is not supported for format {format!r}")
    if mode_key == "none" or not older_documents:
        return CompatibilityResult(mode, True)
    base, _, transitive = mode_key.partition("_")
    indices = range(len(older_documents)) if transitive else [len(older_documents) - 1]
    new = _analyse(handler, version, new_document)
    if not new.result.valid:
        return CompatibilityResult(mode, False, reason=f"not validated: the new document is not valid {format}")
    breaking: list[BreakingChange] = []
    for i in indices:
        old = _analyse(handler, version, older_documents[i])
        if not old.result.valid:
            return CompatibilityResult(
                mode, False, reason=f"not validated: older document #{i} is not valid {format}")
        for change in handler.compare(version, old.parsed, new.parsed):
            for direction in _DIRECTIONS[base]:
                if getattr(change, direction):
                    breaking.append(BreakingChange(change.path, change.message, i, direction))
    return CompatibilityResult(mode, True, breaking=tuple(breaking))


def compatibility_modes(format: str) -> tuple[str, ...]:
    """The compatibility modes supported for ``format`` (empty when none or unsupported)."""
    resolved = resolve(format)
    return resolved[0].compatibility_modes if resolved else ()


def capabilities() -> dict[str, Any]:
    """The ``formats`` and ``compatibilities`` capability values (core/spec.md) this package
    supports: format patterns (lower case, ``*`` wildcard) and the modes per format pattern."""
    formats = [f for h in HANDLERS for f in h.capability_formats]
    compat = {f: list(h.compatibility_modes) for h in HANDLERS if h.compatibility_modes
              for f in h.capability_formats}
    return {"formats": formats, "compatibilities": compat}

