"""Protocol Buffers schemas (``Protobuf/2``, ``Protobuf/3``): compiled by ``protoc`` (the compiler
shipped in ``grpcio-tools``), which reports syntax and semantic errors with line and column;
compatibility on the compiled ``FileDescriptorProto``.

Imports resolve against the well-known types shipped with the compiler (``google/protobuf/*.proto``)
only: a document importing anything else cannot be validated here (``validated=False``). The
import statements are screened before protoc runs (:data:`WELL_KNOWN_IMPORTS`), and protoc reads
only a fresh temporary directory holding the document and the well-known types' directory (its
virtual paths refuse absolute paths and ``..``), so no other file is ever opened."""

from __future__ import annotations

import ast
import importlib.resources
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2 as pb
from grpc_tools import _protoc_compiler as protoc

from xreg.formats.base import ALL_MODES, FROM_DOCUMENT, Analysis, FormatHandler
from xreg.formats.documents import DocumentError, load_text
from xreg.formats.model import Change, ValidationResult, Violation

_FILE = "schema.proto"
_WELL_KNOWN = str(importlib.resources.files("grpc_tools") / "_proto")
_LOCK = threading.Lock()  # protoc keeps process-wide state; one compilation at a time
_VERSION = re.compile(r"^([23])(?:\.0)?$")
_NOT_FOUND = re.compile(r'^Import "(.+)" was not found or had errors\.$')
_IMPORT = re.compile(r'\bimport\s+(?:weak\s+|public\s+)?(?:"([^"\n]*)"|\'([^\'\n]*)\')')
#: The files a document may import: the well-known types shipped with the compiler.
WELL_KNOWN_IMPORTS = frozenset(
    f"google/protobuf/{p.name}" for p in (Path(_WELL_KNOWN) / "google" / "protobuf").glob("*.proto"))

F = pb.FieldDescriptorProto
_TYPE_NAMES = {v: k[len("TYPE_"):].lower() for k, v in F.Type.items()}
# Wire-compatible scalar groups ("Updating A Message Type", protobuf language guide).
_WIRE_GROUPS = (
    {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL, F.TYPE_ENUM},
    {F.TYPE_SINT32, F.TYPE_SINT64},
    {F.TYPE_FIXED32, F.TYPE_SFIXED32},
    {F.TYPE_FIXED64, F.TYPE_SFIXED64},
    {F.TYPE_STRING, F.TYPE_BYTES},
)
_LENGTH_DELIMITED = {F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE}


class ProtobufFormat(FormatHandler):
    """Protobuf schema documents, syntax 2 and 3."""

    name = "Protobuf"
    capability_formats = ("protobuf", "protobuf/2", "protobuf/3")
    compatibility_modes = ALL_MODES

    def version_key(self, version: str | None) -> str | None:
        if version is None:
            return FROM_DOCUMENT
        m = _VERSION.match(version.strip())
        return m.group(1) if m else None

    def analyse(self, version: str, document: Any) -> Analysis:
        try:
            text = load_text(document)
        except DocumentError as e:
            return Analysis(ValidationResult(True, violations=(e.violation,)))
        outside = sorted({m.group(1) if m.group(1) is not None else m.group(2) for m in _IMPORT.finditer(text)}
                         - WELL_KNOWN_IMPORTS - {_FILE})
        if outside:
            return Analysis(_unresolved(outside))
        with _LOCK, tempfile.TemporaryDirectory(prefix="xreg-proto-") as tmp:
            Path(tmp, _FILE).write_text(text, encoding="utf-8")
            try:
                generated = protoc.get_protos(_FILE.encode(), [tmp.encode(), _WELL_KNOWN.encode()])
            except protoc.ProtocErrors as e:
                return Analysis(_errors_result(e.errors()))
        fdp = _descriptor(generated)
        syntax = fdp.syntax or "proto2"
        if version != FROM_DOCUMENT and syntax != f"proto{version}":
            declared = "no syntax statement (proto2)" if not fdp.syntax else f"syntax {syntax!r}"
            violation = Violation("syntax", f"the format is Protobuf/{version} but the document has {declared}")
            return Analysis(ValidationResult(True, violations=(violation,)))
        return Analysis(ValidationResult(True), fdp)

    def compare(self, version: str, older: Any, newer: Any) -> list[Change]:
        return _compare_files(older, newer)


def _errors_result(errors: Any) -> ValidationResult:
    missing = sorted({m.group(1) for e in errors
                      if e.filename.decode() == _FILE and (m := _NOT_FOUND.match(e.message.decode()))})
    if missing:
        return _unresolved(missing)
    violations = tuple(
        Violation("", e.message.decode(), e.line + 1 if e.line >= 0 else None, e.column + 1 if e.line >= 0 else None)
        for e in errors if e.filename.decode() == _FILE)
    return ValidationResult(True, violations=violations or (Violation("", "protoc rejected the document"),))


def _unresolved(imports: list[str]) -> ValidationResult:
    return ValidationResult(False, reason="not validated: the document imports "
                            + ", ".join(repr(m) for m in imports) + ", which the registry cannot resolve")


def _descriptor(generated: list[tuple[bytes, bytes]]) -> pb.FileDescriptorProto:
    """The document's ``FileDescriptorProto``, read back from the ``AddSerializedFile(b'…')`` call
    of the Python module protoc generated for it."""
    source = dict(generated)[_FILE.replace(".proto", "_pb2.py").encode()].decode("utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "AddSerializedFile" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes):
            return pb.FileDescriptorProto.FromString(node.args[0].value)
    raise RuntimeError("protoc's generated module holds no serialized file descriptor")


# -- compatibility ------------------------------------------------------------------------------

def _messages(fdp: pb.FileDescriptorProto) -> dict[str, pb.DescriptorProto]:
    out: dict[str, pb.DescriptorProto] = {}

    def add(msg: pb.DescriptorProto, prefix: str) -> None:
        name = f"{prefix}{msg.name}"
        out[name] = msg
        for nested in msg.nested_type:
            if not nested.options.map_entry:
                add(nested, f"{name}.")

    for m in fdp.message_type:
        add(m, "")
    return out


def _enums(fdp: pb.FileDescriptorProto, messages: dict[str, pb.DescriptorProto]) -> dict[str, pb.EnumDescriptorProto]:
    out = {e.name: e for e in fdp.enum_type}
    for mname, msg in messages.items():
        out.update({f"{mname}.{e.name}": e for e in msg.enum_type})
    return out


def _relative(type_name: str, package: str) -> str:
    name = type_name.lstrip(".")
    return name[len(package) + 1:] if package and name.startswith(package + ".") else name


def _type_text(field: pb.FieldDescriptorProto, package: str) -> str:
    if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM, F.TYPE_GROUP):
        return f"{_TYPE_NAMES[field.type]} {_relative(field.type_name, package)}"
    return _TYPE_NAMES[field.type]


def _reserved(number: int, ranges: Any) -> bool:
    return any(r.start <= number < r.end for r in ranges)


def _oneof(msg: pb.DescriptorProto, field: pb.FieldDescriptorProto) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return msg.oneof_decl[field.oneof_index].name


def _compare_files(old: pb.FileDescriptorProto, new: pb.FileDescriptorProto) -> list[Change]:
    changes: list[Change] = []
    if (old.syntax or "proto2") != (new.syntax or "proto2"):
        changes.append(Change("syntax", f"syntax changed from {old.syntax or 'proto2'} to {new.syntax or 'proto2'}",
                              True, True))
    if old.package != new.package:
        changes.append(Change("package", f"package changed from {old.package!r} to {new.package!r}", True, True))
    old_msgs, new_msgs = _messages(old), _messages(new)
    for name, msg in old_msgs.items():
        if name not in new_msgs:
            changes.append(Change(name, f"message '{name}' removed", True, True))
        else:
            changes.extend(_compare_messages(name, msg, new_msgs[name], old.package, new.package))
    old_enums, new_enums = _enums(old, old_msgs), _enums(new, new_msgs)
    for name, enum in old_enums.items():
        if name not in new_enums:
            changes.append(Change(name, f"enum '{name}' removed", True, True))
            continue
        new_enum = new_enums[name]
        new_numbers = {v.number for v in new_enum.value}
        for value in enum.value:
            if value.number not in new_numbers and not _reserved_enum(value.number, new_enum):
                changes.append(Change(f"{name}.{value.name}", f"enum value '{value.name}' (number {value.number}) "
                                      f"removed from '{name}' without reserving its number", True, True))
    return changes


def _reserved_enum(number: int, enum: pb.EnumDescriptorProto) -> bool:
    return any(r.start <= number <= r.end for r in enum.reserved_range)  # enum ranges are inclusive


def _compare_messages(mname: str, old: pb.DescriptorProto, new: pb.DescriptorProto,
                      old_pkg: str, new_pkg: str) -> list[Change]:
    changes: list[Change] = []
    old_fields = {f.number: f for f in old.field}
    new_fields = {f.number: f for f in new.field}
    for number, f in old_fields.items():
        path = f"{mname}.{f.name}"
        if number not in new_fields:
            if f.label == F.LABEL_REQUIRED:
                changes.append(Change(path, f"required field '{f.name}' (number {number}) removed", False, True))
            if not _reserved(number, new.reserved_range):
                changes.append(Change(path, f"field '{f.name}' (number {number}) removed without reserving its number",
                                      True, True))
            continue
        g = new_fields[number]
        path = f"{mname}.{g.name}"
        old_type, new_type = _type_text(f, old_pkg), _type_text(g, new_pkg)
        if old_type != new_type and not any(f.type in grp and g.type in grp for grp in _WIRE_GROUPS):
            changes.append(Change(path, f"type of '{g.name}' (number {number}) changed from {old_type} to {new_type}",
                                  True, True))
        if (f.label == F.LABEL_REPEATED) != (g.label == F.LABEL_REPEATED) and not (
                f.type in _LENGTH_DELIMITED and g.type in _LENGTH_DELIMITED):
            old_card, new_card = ("repeated", "singular") if f.label == F.LABEL_REPEATED else ("singular", "repeated")
            changes.append(Change(path, f"'{g.name}' (number {number}) changed from {old_card} to {new_card}",
                                  True, True))
        if f.label != F.LABEL_REQUIRED and g.label == F.LABEL_REQUIRED:
            changes.append(Change(path, f"field '{g.name}' (number {number}) became required", True, False))
        elif f.label == F.LABEL_REQUIRED and g.label != F.LABEL_REQUIRED:
            changes.append(Change(path, f"field '{g.name}' (number {number}) is no longer required", False, True))
        old_oneof, new_oneof = _oneof(old, f), _oneof(new, g)
        if old_oneof != new_oneof:
            if old_oneof is not None:
                changes.append(Change(path, f"field '{g.name}' (number {number}) moved out of oneof '{old_oneof}'",
                                      True, True))
            else:
                companions = [h.name for h in new.field if h.number != number and h.number in old_fields
                              and _oneof(new, h) == new_oneof]
                if companions:
                    changes.append(Change(path, f"field '{g.name}' (number {number}) moved into oneof '{new_oneof}' "
                                          f"with existing fields {companions}", True, True))
    for number, g in new_fields.items():
        if number in old_fields:
            continue
        path = f"{mname}.{g.name}"
        if _reserved(number, old.reserved_range):
            changes.append(Change(path, f"field '{g.name}' uses number {number}, which the older schema reserved",
                                  True, True))
        if g.name in old.reserved_name:
            changes.append(Change(path, f"field '{g.name}' uses a name the older schema reserved", True, True))
        if g.label == F.LABEL_REQUIRED:
            changes.append(Change(path, f"required field '{g.name}' (number {number}) added", True, False))
    return changes
