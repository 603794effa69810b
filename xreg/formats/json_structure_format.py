"""JSON Structure (``JsonStructure/draft-NN``): validated with the JSON Structure project's own
schema validator (PyPI ``json-structure``), in its extended mode, so the validation, conditional
composition, units and other companion keywords are checked too.

One deliberate difference from the validator: it refuses the units annotations (``unit``,
``ucumUnit``) unless ``type`` is a single numeric type name, while JSON Structure Units says they
annotate numeric values; a nullable numeric union (``["double", "null"]``) carries numeric values,
so those findings are dropped. The validator implements one revision of the drafts: every
``draft-NN`` version is validated against it."""

from __future__ import annotations

import re
from typing import Any

from json_structure import SchemaValidator

from xreg.formats.base import FROM_DOCUMENT, Analysis, FormatHandler
from xreg.formats.documents import DocumentError, load_json
from xreg.formats.model import ValidationResult, Violation

_VERSION = re.compile(r"^draft-(\d{2})$")
_NUMERIC = frozenset({
    "number", "integer", "float", "double", "decimal", "float8", "int8", "uint8", "int16", "uint16",
    "int32", "uint32", "int64", "uint64", "int128", "uint128",
})
_UNIT_KEYWORDS = ("unit", "ucumUnit")


class JsonStructureFormat(FormatHandler):
    """JSON Structure schema documents."""

    name = "JsonStructure"
    capability_formats = ("jsonstructure", "jsonstructure/draft-*")

    def version_key(self, version: str | None) -> str | None:
        if version is None:
            return FROM_DOCUMENT
        m = _VERSION.match(version.strip().lower())
        return f"draft-{m.group(1)}" if m else None

    def analyse(self, version: str, document: Any) -> Analysis:
        try:
            schema = load_json(document)
        except DocumentError as e:
            return Analysis(ValidationResult(True, violations=(e.violation,)))
        source = document if isinstance(document, str) else (
            document.decode("utf-8") if isinstance(document, bytes) else None)
        validator = SchemaValidator(extended=True)
        errors = validator.validate(schema, source_text=source)
        violations = tuple(_violation(e) for e in errors if not _nullable_numeric_unit(schema, e))
        warnings = tuple(_violation(w) for w in validator.warnings)
        return Analysis(ValidationResult(True, violations=violations, warnings=warnings),
                        None if violations else schema)


def _violation(e: Any) -> Violation:
    loc = getattr(e, "location", None)
    line = column = None
    if loc is not None and loc.line > 0:
        line, column = loc.line, loc.column
    path = str(e.path or "").removeprefix("#")
    return Violation(path, f"{e.message} [{e.code}]", line, column)


def _nullable_numeric_unit(schema: Any, error: Any) -> bool:
    """Whether ``error`` is the validator refusing a units keyword on a nullable numeric union."""
    path = str(error.path or "")
    keyword = path.rsplit("/", 1)[-1]
    if error.code != "SCHEMA_CONSTRAINT_TYPE_MISMATCH" or keyword not in _UNIT_KEYWORDS:
        return False
    node = schema
    for part in path.removeprefix("#/").split("/")[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    types = node.get("type") if isinstance(node, dict) else None
    if not isinstance(types, list) or "null" not in types:
        return False
    rest = [t for t in types if t != "null"]
    return bool(rest) and all(isinstance(t, str) and t in _NUMERIC for t in rest)
