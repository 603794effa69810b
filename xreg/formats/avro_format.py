"""Apache Avro schemas (``Avro``, ``Avro/1.x``): parsed with the Apache ``avro`` library, field
defaults checked against their types, compatibility by the library's reader/writer checker."""

from __future__ import annotations

import re
import warnings
from typing import Any

import avro.errors
import avro.schema as avs
from avro.compatibility import (
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityType,
    check_fixed_size,
    check_reader_enum_contains_writer_enum,
    check_schema_names,
    lookup_writer_field,
)

from xreg.formats.base import ALL_MODES, FROM_DOCUMENT, Analysis, FormatHandler, merge_directions
from xreg.formats.documents import WARNINGS_LOCK, DocumentError, load_json
from xreg.formats.model import Change, ValidationResult, Violation

_VERSION = re.compile(r"^1(?:\.(\d+|x)(?:\.(?:\d+|x))*)?$")
# Avro 1.12 lets a union field's default match any branch; earlier specs require the first.
_ANY_BRANCH_DEFAULTS_SINCE = 12

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


class AvroFormat(FormatHandler):
    """Avro schema documents, release 1.x."""

    name = "Avro"
    capability_formats = ("avro", "avro/1.*")
    compatibility_modes = ALL_MODES

    def version_key(self, version: str | None) -> str | None:
        if version is None:
            return FROM_DOCUMENT
        m = _VERSION.match(version.strip().lower())
        if not m:
            return None
        return f"1.{m.group(1)}" if m.group(1) and m.group(1).isdigit() else "1"

    def analyse(self, version: str, document: Any) -> Analysis:
        try:
            data = load_json(document)
        except DocumentError as e:
            return Analysis(ValidationResult(True, violations=(e.violation,)))
        with WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", avro.errors.IgnoredLogicalType)
            try:
                schema = avs.make_avsc_object(data, avs.Names(validate_names=True))
            except (avro.errors.AvroException, TypeError, ValueError, AttributeError, KeyError) as e:
                return Analysis(ValidationResult(True, violations=(Violation("", _parse_message(e)),)))
        notes = tuple(Violation("", str(w.message)) for w in caught if issubclass(w.category, avro.errors.AvroWarning))
        minor = int(version[2:]) if version.startswith("1.") else _ANY_BRANCH_DEFAULTS_SINCE
        violations = tuple(_check_defaults(schema, any_branch=minor >= _ANY_BRANCH_DEFAULTS_SINCE))
        return Analysis(ValidationResult(True, violations=violations, warnings=notes), None if violations else schema)

    def compare(self, version: str, older: Any, newer: Any) -> list[Change]:
        return merge_directions(_Explain(reader=newer, writer=older, reversed_=False).run(),
                                _Explain(reader=older, writer=newer, reversed_=True).run())


def _parse_message(e: Exception) -> str:
    text = str(e)
    return text if isinstance(e, avro.errors.AvroException) else f"{type(e).__name__}: {text}"


def _check_defaults(schema: avs.Schema, *, any_branch: bool) -> list[Violation]:
    """Record field defaults that do not match their field's type (the Avro spec's table of
    JSON default encodings)."""
    found: list[Violation] = []
    seen: set[int] = set()

    def walk(s: avs.Schema, path: str) -> None:
        if id(s) in seen:
            return
        seen.add(id(s))
        if isinstance(s, avs.RecordSchema):
            for f in s.fields:
                fpath = f"{path}.{f.name}" if path else f.name
                if f.has_default and not _default_ok(f.type, f.default, any_branch):
                    branch = " (a union's default must match its first branch)" if (
                        isinstance(f.type, avs.UnionSchema) and not any_branch) else ""
                    found.append(Violation(fpath, f"default value {f.default!r} of field '{f.name}' does not match "
                                                  f"its type {_type_text(f.type)}{branch}"))
                walk(f.type, fpath)
        elif isinstance(s, avs.ArraySchema):
            walk(s.items, f"{path}[]")
        elif isinstance(s, avs.MapSchema):
            walk(s.values, f"{path}{{}}")
        elif isinstance(s, avs.UnionSchema):
            for b in s.schemas:
                walk(b, path)

    walk(schema, "")
    return found


def _default_ok(s: avs.Schema, v: Any, any_branch: bool) -> bool:
    t = s.type
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t in ("int", "long"):
        lo, hi = _INT_RANGE if t == "int" else _LONG_RANGE
        return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
    if t in ("float", "double"):
        return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("NaN", "Infinity", "-Infinity")
    if t == "string":
        return isinstance(v, str)
    if t == "bytes":
        return isinstance(v, str) and all(ord(c) < 256 for c in v)
    if isinstance(s, avs.FixedSchema):
        return isinstance(v, str) and len(v) == s.size and all(ord(c) < 256 for c in v)
    if isinstance(s, avs.EnumSchema):
        return v in s.symbols
    if isinstance(s, avs.ArraySchema):
        return isinstance(v, list) and all(_default_ok(s.items, x, any_branch) for x in v)
    if isinstance(s, avs.MapSchema):
        return isinstance(v, dict) and all(_default_ok(s.values, x, any_branch) for x in v.values())
    if isinstance(s, avs.RecordSchema):
        return isinstance(v, dict) and all(
            _default_ok(f.type, v[f.name], any_branch) if f.name in v else f.has_default for f in s.fields)
    if isinstance(s, avs.UnionSchema):
        branches = s.schemas if any_branch else s.schemas[:1]
        return any(_default_ok(b, v, any_branch) for b in branches)
    return True


def _type_text(s: avs.Schema) -> str:
    if isinstance(s, avs.UnionSchema):
        return "[" + ", ".join(_type_text(b) for b in s.schemas) + "]"
    if isinstance(s, avs.ArraySchema):
        return f"array<{_type_text(s.items)}>"
    if isinstance(s, avs.MapSchema):
        return f"map<{_type_text(s.values)}>"
    if isinstance(s, avs.NamedSchema):
        return f"{s.type} {s.fullname}"
    logical = s.get_prop("logicalType")
    return f"{s.type} ({logical})" if logical else str(s.type)


class _Explain:
    """Where and why ``reader`` cannot read data written with ``writer``: the library's checker
    decides each pair; this walk names the fields, symbols and branches involved. ``reversed_``
    tells whether the writer is the newer schema, so messages read from older to newer."""

    def __init__(self, reader: avs.Schema, writer: avs.Schema, reversed_: bool):
        self.reader, self.writer, self.reversed_ = reader, writer, reversed_
        self.checker = ReaderWriterCompatibilityChecker()
        self.found: list[tuple[str, str]] = []
        self.seen: set[tuple[int, int]] = set()

    def run(self) -> list[tuple[str, str]]:
        result = self.checker.get_compatibility(self.reader, self.writer)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        self.walk(self.reader, self.writer, "")
        if not self.found:  # the walk could not place it: keep the library's own account
            self.found.append(("", "; ".join(sorted(result.messages)) or "incompatible"))
        return self.found

    def compatible(self, r: avs.Schema, w: avs.Schema) -> bool:
        return self.checker.get_compatibility(r, w).compatibility is not SchemaCompatibilityType.incompatible

    def old_new(self, reader_value: Any, writer_value: Any) -> tuple[Any, Any]:
        return (reader_value, writer_value) if self.reversed_ else (writer_value, reader_value)

    def report(self, path: str, message: str) -> None:
        if (path, message) not in self.found:
            self.found.append((path, message))

    def type_changed(self, r: avs.Schema, w: avs.Schema, path: str) -> None:
        old, new = self.old_new(_type_text(r), _type_text(w))
        self.report(path, f"type of {_label(path)} changed from {old} to {new}")

    def walk(self, r: avs.Schema, w: avs.Schema, path: str) -> None:
        if (id(r), id(w)) in self.seen or self.compatible(r, w):
            return
        self.seen.add((id(r), id(w)))
        if r.type != w.type or r.type in ("union",):
            self.mismatch(r, w, path)
            return
        if isinstance(r, avs.NamedSchema) and isinstance(w, avs.NamedSchema) and \
                check_schema_names(r, w, []).compatibility is SchemaCompatibilityType.incompatible:
            old, new = self.old_new(r.fullname, w.fullname)
            self.report(path, f"name of {r.type} {_label(path)} changed from {old} to {new}")
        if isinstance(r, avs.RecordSchema) and isinstance(w, avs.RecordSchema):
            for rf in r.fields:
                fpath = f"{path}.{rf.name}" if path else rf.name
                wf = lookup_writer_field(w, rf)
                if wf is not None:
                    self.walk(rf.type, wf.type, fpath)
                elif not rf.has_default:
                    if self.reversed_:
                        self.report(fpath, f"field '{rf.name}' removed, and the older schema has no default for it")
                    else:
                        self.report(fpath, f"field '{rf.name}' added without a default value")
        elif isinstance(r, avs.EnumSchema) and isinstance(w, avs.EnumSchema):
            if check_reader_enum_contains_writer_enum(r, w, []).compatibility is SchemaCompatibilityType.incompatible:
                missing = sorted(set(w.symbols) - set(r.symbols))
                what = "added to" if self.reversed_ else "removed from"
                self.report(path, f"symbols {missing} {what} enum {w.fullname} at {_label(path)} "
                                  "(no reader default covers them)")
        elif isinstance(r, avs.FixedSchema) and isinstance(w, avs.FixedSchema):
            if check_fixed_size(r, w, []).compatibility is SchemaCompatibilityType.incompatible:
                old, new = self.old_new(r.size, w.size)
                self.report(path, f"size of fixed {w.fullname} at {_label(path)} changed from {old} to {new}")
        elif isinstance(r, avs.ArraySchema) and isinstance(w, avs.ArraySchema):
            self.walk(r.items, w.items, f"{path}[]")
        elif isinstance(r, avs.MapSchema) and isinstance(w, avs.MapSchema):
            self.walk(r.values, w.values, f"{path}{{}}")

    def mismatch(self, r: avs.Schema, w: avs.Schema, path: str) -> None:
        """Pairs of different types, or unions: name the writer branches the reader cannot take."""
        w_branches = w.schemas if isinstance(w, avs.UnionSchema) else [w]
        r_branches = r.schemas if isinstance(r, avs.UnionSchema) else [r]
        failing = [b for b in w_branches if not self.compatible(r, b)]
        if isinstance(r, avs.UnionSchema) and isinstance(w, avs.UnionSchema):
            for b in failing:
                same = [rb for rb in r_branches if rb.type == b.type and getattr(rb, "fullname", None) ==
                        getattr(b, "fullname", None)]
                if same:
                    self.walk(same[0], b, path)
                else:
                    what = "added to" if self.reversed_ else "removed from"
                    self.report(path, f"branch {_type_text(b)} {what} the union of {_label(path)}")
        elif len(r_branches) == 1 and len(failing) == 1 and failing[0].type == r.type:
            self.walk(r, failing[0], path)
        else:
            self.type_changed(r, w, path)


def _label(path: str) -> str:
    return f"'{path}'" if path else "the schema"
