"""Validating a message payload against its schema (what ``validateMessage`` runs).

:func:`validate_payload` checks one payload (a JSON value; XML as text for XSD) against a schema
document of a supported format and returns every violation found with its path:

- JSON Schema: the schema's draft validator (``jsonschema``), every error with its JSON pointer;
- JSON Structure: the project's instance validator (extended mode), its messages (with paths);
- Avro: the payload read as the JSON form of a datum, checked with Apache ``avro``'s
  validator; on failure, the first field that does not fit is named (``/field``);
- XSD: the payload (an XML text) validated by ``xmlschema``.

Protobuf payloads are binary; they are not checked (``validated`` false, with the reason). The
schema document itself must be valid for its format; otherwise the result says so. Compiled
validators are cached per schema document (:data:`COMPILED`, by format and document digest).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import avro.io
import avro.schema
import xmlschema
from json_structure import InstanceValidator

from gateway.formats.core import resolve, validate
from gateway.formats.documents import DocumentError, LRUCache, digest, load_json, load_text
from gateway.formats.json_schema_format import DRAFTS, LATEST, dialect_of, pointer
from gateway.formats.model import ValidationResult, Violation

#: Most violations reported for one payload.
MAX_VIOLATIONS = 100
#: Compiled payload validators, by (format name, version, schema document digest).
COMPILED: LRUCache[Callable[[Any], list[Violation]]] = LRUCache(256)


def validate_payload(format: str, schema: Any, data: Any) -> ValidationResult:
    """``data`` checked against ``schema`` (a document of ``format``)."""
    resolved = resolve(format)
    if resolved is None:
        return ValidationResult(False, reason=f"not validated: unsupported format {format!r}")
    checked = validate(format, schema)
    if not checked.valid:
        return ValidationResult(False, reason=f"not validated: the schema is not valid {format}: {checked.describe()}")
    handler, version = resolved
    compile_for = _COMPILERS.get(handler.name)
    if compile_for is None:
        return ValidationResult(False, reason=f"not validated: payloads of {handler.name} are not checked here")
    try:
        check = COMPILED.get_or_compute((handler.name, version, digest(schema)), lambda: compile_for(version, schema))
        found = check(data)
    except DocumentError as e:
        found = [e.violation]
    return ValidationResult(True, violations=tuple(found[:MAX_VIOLATIONS]))


Check = Callable[[Any], list[Violation]]


def _json_schema(version: str, schema: Any) -> Check:
    document = load_json(schema)
    draft = version if version in DRAFTS else dialect_of(document) or LATEST
    validator = DRAFTS[draft](document)

    def check(data: Any) -> list[Violation]:
        errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        return [Violation(pointer(e.absolute_path), e.message) for e in errors]

    return check


def _json_structure(version: str, schema: Any) -> Check:
    validator = InstanceValidator(load_json(schema), extended=True)

    def check(data: Any) -> list[Violation]:
        out = []
        for message in validator.validate_instance(data) or []:
            text = str(message)
            path = text.split(" at ", 1)[1].split(",", 1)[0].lstrip("#") if " at #" in text else ""
            out.append(Violation(path, text))
        return out

    return check


def _avro(version: str, schema: Any) -> Check:
    parsed = avro.schema.parse(load_text(schema) if isinstance(schema, (str, bytes)) else _dumps(load_json(schema)))
    return lambda data: _avro_check(parsed, data)


def _avro_check(parsed: Any, data: Any) -> list[Violation]:
    if avro.io.validate(parsed, data):
        return []
    if isinstance(parsed, avro.schema.RecordSchema) and isinstance(data, dict):
        out = []
        for f in parsed.fields:
            if f.name not in data:
                if not f.has_default:
                    out.append(Violation(f"/{f.name}", f"required field {f.name!r} is missing"))
            elif not avro.io.validate(f.type, data[f.name]):
                out.append(Violation(f"/{f.name}", f"{data[f.name]!r} is not a valid {f.type.type}"))
        if out:
            return out
    return [Violation("", f"the payload is not a valid {getattr(parsed, 'fullname', None) or parsed.type} datum")]


def _xsd(version: str, schema: Any) -> Check:
    cls = xmlschema.XMLSchema10 if version == "1.0" else xmlschema.XMLSchema11
    compiled = cls(load_text(schema))
    return lambda data: [Violation(str(getattr(e, "path", "") or ""), str(e.reason or e.message))
                         for e in compiled.iter_errors(load_text(data))]


def _dumps(value: Any) -> str:
    return json.dumps(value)


_COMPILERS: dict[str, Callable[[str, Any], Check]] = {
    "JsonSchema": _json_schema, "JsonStructure": _json_structure, "Avro": _avro, "XSD": _xsd}
