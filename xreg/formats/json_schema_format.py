"""JSON Schema (``JsonSchema/draft-04`` … ``JsonSchema/draft/2020-12``): meta-schema validation
with the ``jsonschema`` library, plus a check that local ``#/…`` references resolve.

The validators of :data:`DRAFTS` are the library's, extended (``jsonschema.validators.extend``)
so that ``pattern``, ``patternProperties`` and ``additionalProperties`` match with RE2
(:mod:`xreg.formats.regex`), and the ``regex`` format is checked the same way. References
resolve through :func:`reference_registry`: within the document, to the meta-schemas, and to the
documents the caller hands in (schemas the gateway's registries hold); any other ``$ref`` —
``file:``, ``http:``, a relative one under a remote ``$id`` — is never retrieved.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators as js_validators
from jsonschema.protocols import Validator as JsValidator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import specification_with

from xreg.formats import json_schema_compat, regex
from xreg.formats.base import ALL_MODES, FROM_DOCUMENT, Analysis, FormatHandler
from xreg.formats.documents import DocumentError, load_json
from xreg.formats.json_schema_compat import MISSING, pointer_get
from xreg.formats.model import Change, ValidationResult, Violation


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[js_exceptions.ValidationError]:
    if validator.is_type(instance, "string") and not regex.search(pattern, instance):
        yield js_exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any,
                        ) -> Iterator[js_exceptions.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if regex.search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any,
                           ) -> Iterator[js_exceptions.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted((k for k in instance if k not in properties and not any(regex.search(p, k) for p in patterns)),
                    key=str)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(e) for e in extras)
        if patterns:
            yield js_exceptions.ValidationError(
                f"{joined} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                + ", ".join(repr(p) for p in sorted(patterns)))
        else:
            yield js_exceptions.ValidationError(
                f"Additional properties are not allowed ({joined} {'was' if len(extras) == 1 else 'were'} unexpected)")


_RE2_KEYWORDS = {"pattern": _pattern, "patternProperties": _pattern_properties,
                 "additionalProperties": _additional_properties}


def _re2_format_checker(cls: type[JsValidator]) -> Any:
    checker = copy.copy(cls.FORMAT_CHECKER)
    checker.checkers = dict(checker.checkers)
    checker.checks("regex")(regex.is_regex)
    return checker


def _re2_validator(cls: type[JsValidator]) -> type[JsValidator]:
    return js_validators.extend(cls, _RE2_KEYWORDS, format_checker=_re2_format_checker(cls))


DRAFTS: dict[str, type[JsValidator]] = {
    "draft-04": _re2_validator(js_validators.Draft4Validator),
    "draft-06": _re2_validator(js_validators.Draft6Validator),
    "draft-07": _re2_validator(js_validators.Draft7Validator),
    "draft/2019-09": _re2_validator(js_validators.Draft201909Validator),
    "draft/2020-12": _re2_validator(js_validators.Draft202012Validator),
}


def _refuse_retrieval(uri: str) -> Resource[Any]:
    """A ``$ref`` to a document that is neither in the schema nor handed in: never retrieved."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


def reference_registry(draft: str, documents: Mapping[str, Any] | None = None) -> Registry[Any]:
    """The ``referencing`` registry a validator resolves ``$ref`` with: the meta-schemas (the
    library adds them), ``documents`` (URI → schema, read as ``draft`` unless they say
    otherwise), and a ``retrieve`` that refuses every other URI."""
    registry: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
    if documents:
        default = specification_with(DRAFTS[draft].META_SCHEMA["$schema"])
        registry = registry.with_resources(
            (uri, Resource.from_contents(doc, default_specification=default)) for uri, doc in documents.items())
    return registry
LATEST = "draft/2020-12"

# $schema values (scheme and trailing '#' dropped) → draft.
_DIALECTS = {
    "json-schema.org/draft-04/schema": "draft-04",
    "json-schema.org/draft-06/schema": "draft-06",
    "json-schema.org/draft-07/schema": "draft-07",
    "json-schema.org/draft/2019-09/schema": "draft/2019-09",
    "json-schema.org/draft/2020-12/schema": "draft/2020-12",
}
_SHORT = re.compile(r"^draft-?0?([467])$")
_DATED = re.compile(r"^draft[-/](2019-09|2020-12)$")
# Keywords whose values are data, not subschemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})

_META: dict[str, JsValidator] = {}


def dialect_of(schema: Any) -> str | None:
    """The draft a schema's ``$schema`` names, or ``None`` (absent or not a known draft)."""
    uri = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(uri, str):
        return None
    key = re.sub(r"^https?://", "", uri.strip()).rstrip("#")
    return _DIALECTS.get(key)


def pointer(parts: Any) -> str:
    """A JSON pointer (RFC 6901) from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _meta_validator(draft: str) -> JsValidator:
    if draft not in _META:
        cls = DRAFTS[draft]
        _META[draft] = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER, registry=reference_registry(draft))
    return _META[draft]


def _has_nested_id(node: Any, top: bool = True) -> bool:
    if isinstance(node, dict):
        if not top and any(isinstance(node.get(k), str) for k in ("$id", "id")):
            return True
        return any(_has_nested_id(v, False) for k, v in node.items() if k not in _DATA_KEYWORDS)
    if isinstance(node, list):
        return any(_has_nested_id(v, False) for v in node)
    return False


def _unresolved_refs(root: Any) -> list[Violation]:
    """Local JSON-pointer references (``#/…``) that point nowhere in the document. Skipped when
    a nested ``$id`` changes the base (references then resolve against that subschema)."""
    if _has_nested_id(root):
        return []
    found: list[Violation] = []

    def walk(node: Any, path: list[Any]) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/") and pointer_get(root, ref) is MISSING:
                found.append(Violation(pointer([*path, "$ref"]), f"reference '{ref}' does not resolve in the document"))
            for k, v in node.items():
                if k not in _DATA_KEYWORDS:
                    walk(v, [*path, k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, [*path, i])

    walk(root, [])
    return found


class JsonSchemaFormat(FormatHandler):
    """JSON Schema drafts 4, 6, 7, 2019-09 and 2020-12."""

    name = "JsonSchema"
    capability_formats = ("jsonschema", *(f"jsonschema/{d}" for d in DRAFTS))
    compatibility_modes = ALL_MODES

    def version_key(self, version: str | None) -> str | None:
        if version is None:
            return FROM_DOCUMENT
        v = version.strip().lower()
        if m := _SHORT.match(v):
            return f"draft-0{m.group(1)}"
        if m := _DATED.match(v):
            return f"draft/{m.group(1)}"
        return None

    def analyse(self, version: str, document: Any) -> Analysis:
        try:
            schema = load_json(document)
        except DocumentError as e:
            return Analysis(ValidationResult(True, violations=(e.violation,)))
        declared = dialect_of(schema)
        violations: list[Violation] = []
        warnings: list[Violation] = []
        if version == FROM_DOCUMENT:
            draft = declared or LATEST
            if declared is None and isinstance(schema, dict) and "$schema" in schema:
                warnings.append(Violation("/$schema", f"unknown dialect {schema['$schema']!r}; validated as {LATEST}"))
        else:
            draft = version
            if declared is not None and declared != draft:
                violations.append(Violation("/$schema", f"$schema declares {declared} but the format is {draft}"))
            elif declared is None and isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
                warnings.append(Violation("/$schema", f"unknown dialect {schema['$schema']!r}; validated as {draft}"))
        for error in sorted(_meta_validator(draft).iter_errors(schema), key=lambda e: [str(p) for p in e.path]):
            best = js_exceptions.best_match([error])
            violations.append(Violation(pointer(best.absolute_path), best.message))
        if not violations:
            violations.extend(_unresolved_refs(schema))
            warnings.extend(Violation(path, f"{e}; a payload checked against it is refused")
                            for path, e in regex.unsupported_patterns(schema))
        result = ValidationResult(True, violations=tuple(violations), warnings=tuple(warnings))
        return Analysis(result, None if violations else schema)

    def compare(self, version: str, older: Any, newer: Any) -> list[Change]:
        return json_schema_compat.compare(older, newer)
