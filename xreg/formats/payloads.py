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

This runs inside the evaluator's workers (:mod:`xreg.formats.evaluator`), never in the
service: a JSON Schema ``$ref`` resolves only within the document and to ``references`` (the
registries' schemas the caller collected), patterns match with RE2, XML is screened
(:mod:`xreg.formats.xml_input`) and parsed with no entity, DTD or resource access. What cannot
be evaluated within those bounds raises :class:`Refused`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from typing import Any
from xml.etree import ElementTree

import avro.io
import avro.schema
import xmlschema
from json_structure import InstanceValidator
from referencing.exceptions import Unresolvable

from xreg.formats import regex, xml_input
from xreg.formats.core import resolve, validate
from xreg.formats.documents import DocumentError, LRUCache, digest, load_json, load_text
from xreg.formats.json_schema_format import DRAFTS, LATEST, dialect_of, pointer, reference_registry
from xreg.formats.model import Refused, ValidationResult, Violation

#: Most violations reported for one payload.
MAX_VIOLATIONS = 100
#: Compiled payload validators, by (format name, version, schema document digest).
COMPILED: LRUCache[Callable[[Any], list[Violation]]] = LRUCache(256)


def validate_payload(format: str, schema: Any, data: Any,
                     references: Mapping[str, Any] | None = None) -> ValidationResult:
    """``data`` checked against ``schema`` (a document of ``format``); ``references`` maps the
    URIs of other schemas a JSON Schema may ``$ref`` to their documents."""
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
    refs = dict(references or {})
    key = (handler.name, version, digest(schema), digest(refs) if refs else "")
    try:
        check = COMPILED.get_or_compute(key, lambda: compile_for(version, schema, refs))
        found = check(data)
    except DocumentError as e:
        found = [e.violation]
    except Unresolvable as e:
        raise Refused("reference", f"the reference {getattr(e, 'ref', str(e))!r} is neither in the schema nor a "
                                   "schema of the registries the gateway serves; it is not retrieved") from None
    except regex.UnsupportedPattern as e:
        raise Refused("pattern", str(e)) from None
    return ValidationResult(True, violations=tuple(found[:MAX_VIOLATIONS]))


Check = Callable[[Any], list[Violation]]


def _json_schema(version: str, schema: Any, references: Mapping[str, Any]) -> Check:
    document = load_json(schema)
    draft = version if version in DRAFTS else dialect_of(document) or LATEST
    held = {}
    for uri, referenced in references.items():
        try:
            held[uri] = load_json(referenced)
        except DocumentError:
            continue  # not JSON: a reference to it stays unresolved, and is refused
    validator = DRAFTS[draft](document, registry=reference_registry(draft, held))

    def check(data: Any) -> list[Violation]:
        errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        return [Violation(pointer(e.absolute_path), e.message) for e in errors]

    return check


def _json_structure(version: str, schema: Any, references: Mapping[str, Any]) -> Check:
    validator = InstanceValidator(load_json(schema), extended=True)

    def check(data: Any) -> list[Violation]:
        out = []
        for message in validator.validate_instance(data) or []:
            text = str(message)
            path = text.split(" at ", 1)[1].split(",", 1)[0].lstrip("#") if " at #" in text else ""
            out.append(Violation(path, text))
        return out

    return check


def _avro(version: str, schema: Any, references: Mapping[str, Any]) -> Check:
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


def _xsd(version: str, schema: Any, references: Mapping[str, Any]) -> Check:
    cls = xmlschema.XMLSchema10 if version == "1.0" else xmlschema.XMLSchema11
    compiled = cls(load_text(schema), allow="none", defuse="always")

    def check(data: Any) -> list[Violation]:
        text = load_text(data)
        xml_input.screen(text, "the payload")
        try:
            resource = xmlschema.XMLResource(io.StringIO(text), allow="none", defuse="always")
        except (ElementTree.ParseError, xmlschema.XMLResourceError) as e:
            return [Violation("", f"the payload is not well-formed XML: {e}")]
        return [Violation(str(getattr(e, "path", "") or ""), str(e.reason or e.message))
                for e in compiled.iter_errors(resource)]

    return check


def _dumps(value: Any) -> str:
    return json.dumps(value)


_COMPILERS: dict[str, Callable[[str, Any, Mapping[str, Any]], Check]] = {
    "JsonSchema": _json_schema, "JsonStructure": _json_structure, "Avro": _avro, "XSD": _xsd}
