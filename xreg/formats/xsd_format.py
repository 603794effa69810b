"""W3C XML Schema (``XSD/1.0``, ``XSD/1.1``; ``XMLSchema`` is accepted as another name): built
with the ``xmlschema`` library, which checks the schema against the XSD meta-schema and its
constraints (unknown types, occurrence bounds, …).

Nothing outside the document is fetched: an ``xs:import`` / ``xs:include`` / ``xs:redefine`` of
another location cannot be resolved, so such a document is not validated (``validated=False``).
The XML namespace's own schema is built into the library and always resolves. The text is
screened first (:mod:`xreg.formats.xml_input`: no entity declarations, no external DTD, a
bounded depth) and parsed with ``xmlschema``'s defences on (``defuse="always"``, ``allow="none"``).

XSD ``pattern`` facets are translated by ``xmlschema`` to Python regular expressions and matched
with ``re`` (no public hook swaps the engine): that matching is bounded only by the evaluator's
per-evaluation CPU and time limits, which cut a catastrophic pattern off."""

from __future__ import annotations

import re
import warnings
from typing import Any

import xmlschema
from xmlschema import XMLSchemaException

from xreg.formats import xml_input
from xreg.formats.base import FROM_DOCUMENT, Analysis, FormatHandler
from xreg.formats.documents import WARNINGS_LOCK, DocumentError, load_text
from xreg.formats.model import ValidationResult, Violation

_CLASSES: dict[str, type[xmlschema.XMLSchemaBase]] = {"1.0": xmlschema.XMLSchema10, "1.1": xmlschema.XMLSchema11}
_VERSION = re.compile(r"^1(?:\.([01]))?$")
_LINE = re.compile(r"line (\d+), column (\d+)")


class XsdFormat(FormatHandler):
    """XML Schema documents, versions 1.0 and 1.1 (no version given: 1.1, which accepts 1.0)."""

    name = "XSD"
    aliases = ("XMLSchema",)
    capability_formats = ("xsd", "xsd/1.0", "xsd/1.1", "xmlschema", "xmlschema/1.0", "xmlschema/1.1")

    def version_key(self, version: str | None) -> str | None:
        if version is None:
            return FROM_DOCUMENT
        m = _VERSION.match(version.strip())
        return None if not m else f"1.{m.group(1) or '0'}"

    def analyse(self, version: str, document: Any) -> Analysis:
        try:
            text = load_text(document)
        except DocumentError as e:
            return Analysis(ValidationResult(True, violations=(e.violation,)))
        xml_input.screen(text, "the schema document")
        cls = _CLASSES["1.1" if version == FROM_DOCUMENT else version]
        with WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                schema = cls(text, validation="lax", allow="none", defuse="always")
            except XMLSchemaException as e:
                m = _LINE.search(str(e))
                message = getattr(e, "message", None) or str(e).splitlines()[0]
                line, col = (int(m.group(1)), int(m.group(2)) + 1) if m else (None, None)
                return Analysis(ValidationResult(True, violations=(Violation("", message, line, col),)))
        unresolved = [str(w.message) for w in caught
                      if issubclass(w.category, (xmlschema.XMLSchemaImportWarning, xmlschema.XMLSchemaIncludeWarning))]
        if unresolved:
            return Analysis(ValidationResult(False, reason="not validated: " + "; ".join(unresolved)))
        violations = tuple(Violation(e.path or "", e.message) for e in schema.all_errors)
        return Analysis(ValidationResult(True, violations=violations), None if violations else schema)
