"""Format validation: format-name matching, and per format valid documents accepted, invalid ones
refused with a precise violation, documents that cannot be checked reported as not validated."""

from __future__ import annotations

import json

import pytest

from xreg.formats import ValidationResult, capabilities, resolve
from xreg.formats.core import CACHE, validate
from xreg.formats.documents import LRUCache


def only(result: ValidationResult) -> tuple[str, str]:
    """The single violation of an invalid result, as (path, message)."""
    assert result.validated, result.reason
    assert len(result.violations) == 1, result.violations
    return result.violations[0].path, result.violations[0].message


# -- format names ------------------------------------------------------------------------------

@pytest.mark.parametrize(("fmt", "name", "version"), [
    ("JsonSchema/draft-07", "JsonSchema", "draft-07"),
    ("JSONSchema/Draft-07", "JsonSchema", "draft-07"),
    ("jsonschema/draft-04", "JsonSchema", "draft-04"),
    ("JsonSchema/draft-6", "JsonSchema", "draft-06"),
    ("JsonSchema/draft/2019-09", "JsonSchema", "draft/2019-09"),
    ("JSONSchema/Draft/2020-12", "JsonSchema", "draft/2020-12"),
    ("JsonSchema", "JsonSchema", "*"),
    ("Avro/1.11.x", "Avro", "1.11"),
    ("Avro/1.11.3", "Avro", "1.11"),
    ("Avro/1.9", "Avro", "1.9"),
    ("avro", "Avro", "*"),
    ("Protobuf/3", "Protobuf", "3"),
    ("protobuf/2.0", "Protobuf", "2"),
    ("XSD/1.1", "XSD", "1.1"),
    ("xsd/1.0", "XSD", "1.0"),
    ("XMLSchema/1.1", "XSD", "1.1"),
    ("JsonStructure/draft-02", "JsonStructure", "draft-02"),
])
def test_format_names_match_case_insensitively_with_their_version(fmt, name, version):
    handler, key = resolve(fmt)
    assert (handler.name, key) == (name, version)


@pytest.mark.parametrize("fmt", [
    "Foo/1", "JSONSchema/Unknown", "JsonSchema/draft-05", "Avro/2.0", "Protobuf/4", "XSD/2.0",
    "JsonStructure/v1", "", "   ",
])
def test_unknown_formats_and_versions_are_not_validated_with_a_reason(fmt):
    assert resolve(fmt) is None
    result = validate(fmt, {"type": "object"})
    assert not result.validated and not result.valid
    assert result.reason == f"not validated: unsupported format {fmt!r}"
    assert result.violations == ()


def test_every_capability_format_resolves():
    caps = capabilities()
    for pattern in caps["formats"]:
        example = pattern.replace("*", "11" if pattern.startswith("avro") else "02")
        assert resolve(example) is not None, pattern
    assert set(caps["compatibilities"]) == {f for f in caps["formats"] if f.split("/")[0] in
                                            ("jsonschema", "avro", "protobuf")}
    assert caps["compatibilities"]["avro"] == ["none", "backward", "backward_transitive", "forward",
                                               "forward_transitive", "full", "full_transitive"]


@pytest.mark.parametrize("fmt", ["JsonSchema/draft-07", "Avro", "Protobuf/3", "XSD/1.1", "JsonStructure/draft-02"])
@pytest.mark.parametrize("document", [None, "", b"", "  \n"])
def test_an_empty_document_is_a_violation_in_every_format(fmt, document):
    assert only(validate(fmt, document)) == ("", "the document is empty")


# -- JSON Schema -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["JsonSchema/draft-04", "JsonSchema/draft-06", "JsonSchema/draft-07",
                                 "JsonSchema/draft/2019-09", "JsonSchema/draft/2020-12"])
def test_json_schema_valid_documents_are_accepted_in_every_draft(fmt):
    doc = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]}
    result = validate(fmt, doc)
    assert result.valid and result.validated and result.reason is None


@pytest.mark.parametrize(("doc", "path", "message"), [
    ({"type": "object", "properties": {"a": {"minimum": "x"}}}, "/properties/a/minimum", "'x' is not of type 'number'"),
    ({"required": "a"}, "/required", "'a' is not of type 'array'"),
    ({"properties": {"a": {"pattern": "([a-z"}}}, "/properties/a/pattern", "'([a-z' is not a 'regex'"),
    ({"items": {"$ref": "#/definitions/Missing"}}, "/items/$ref",
     "reference '#/definitions/Missing' does not resolve in the document"),
])
def test_json_schema_invalid_documents_are_refused_at_the_offending_keyword(doc, path, message):
    assert only(validate("JsonSchema/draft-07", doc)) == (path, message)


def test_json_schema_drafts_differ_where_the_meta_schemas_differ():
    numeric_exclusive = {"type": "number", "maximum": 9, "exclusiveMaximum": 5}
    assert validate("JsonSchema/draft-07", numeric_exclusive).valid
    assert only(validate("JsonSchema/draft-04", numeric_exclusive)) == (
        "/exclusiveMaximum", "5 is not of type 'boolean'")
    assert validate("JsonSchema/draft-07", True).valid
    path, message = only(validate("JsonSchema/draft-04", True))
    assert (path, message) == ("", "True is not of type 'object'")


def test_json_schema_dollar_schema_must_match_the_declared_draft():
    doc = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "string"}
    assert only(validate("JsonSchema/draft-07", doc)) == (
        "/$schema", "$schema declares draft-04 but the format is draft-07")
    assert validate("JsonSchema/draft-04", doc).valid
    assert validate("JsonSchema", doc).valid  # no version: the document's own $schema decides
    draft4 = validate("JsonSchema", {**doc, "maximum": 9, "exclusiveMaximum": 5})
    assert [v.path for v in draft4.violations] == ["/exclusiveMaximum"]


def test_json_schema_text_and_bytes_are_parsed_and_bad_json_is_located():
    assert validate("JsonSchema/draft-07", '{"type": "string"}').valid
    assert validate("JsonSchema/draft-07", b'{"type": "string"}').valid
    result = validate("JsonSchema/draft-07", '{\n  "type": "string",\n}')
    assert only(result)[1].startswith("the document is not JSON")
    assert (result.violations[0].line, result.violations[0].column) == (3, 1)


# -- Avro --------------------------------------------------------------------------------------

RECORD = {"type": "record", "name": "Metrics", "namespace": "com.example",
          "fields": [{"name": "metric", "type": "float"}, {"name": "unit", "type": "string", "default": "C"}]}


def test_avro_valid_schemas_are_accepted_as_objects_text_and_bare_names():
    assert validate("Avro/1.11.x", RECORD).valid
    assert validate("Avro", json.dumps(RECORD)).valid
    assert validate("Avro", "string").valid  # a bare primitive inlined as a JSON string
    assert validate("Avro", ["null", "string"]).valid


@pytest.mark.parametrize(("fields", "message"), [
    ([{"name": "a", "type": "strin"}], 'Type property "strin" not a valid Avro schema'),
    ([{"name": "a", "type": "int"}, {"name": "a", "type": "int"}], "Field name a already in use."),
    ([{"name": "a", "type": "int", "default": "x"}], "default value 'x' of field 'a' does not match its type int"),
    ([{"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["A", "A"]}}], "Duplicate symbol: ['A', 'A']"),
])
def test_avro_invalid_schemas_are_refused_with_the_parser_message(fields, message):
    _, got = only(validate("Avro/1.11", {"type": "record", "name": "R", "fields": fields}))
    assert message in got


def test_avro_invalid_names_and_missing_properties_are_refused():
    assert "1X is not a valid Avro name" in only(validate("Avro", {"type": "record", "name": "1X", "fields": []}))[1]
    assert only(validate("Avro", {"type": "fixed", "name": "F"}))[1] == \
        "Fixed Schema requires a valid positive integer for size property."


def test_avro_union_defaults_follow_the_declared_release():
    doc = {"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"], "default": 3}]}
    path, message = only(validate("Avro/1.11", doc))
    assert path == "a" and message.endswith("(a union's default must match its first branch)")
    assert validate("Avro/1.12", doc).valid  # Avro 1.12: any branch may match
    nested = {"type": "record", "name": "R", "fields": [{"name": "inner", "type": {
        "type": "record", "name": "I", "fields": [{"name": "n", "type": "long", "default": 2**63}]}}]}
    assert only(validate("Avro", nested))[0] == "inner.n"


def test_avro_ignored_logical_types_are_warnings_not_violations():
    doc = {"type": "record", "name": "R", "fields": [{"name": "t", "type": {"type": "string",
                                                                           "logicalType": "timestamp-millis"}}]}
    result = validate("Avro", doc)
    assert result.valid
    assert [w.message for w in result.warnings] == [
        "Logical type timestamp-millis requires literal type long, not string."]


# -- Protobuf ----------------------------------------------------------------------------------

PROTO3 = 'syntax = "proto3";\npackage com.example;\nmessage Metrics {\n  float metric = 1;\n  string unit = 2;\n}\n'


def test_protobuf_valid_documents_are_accepted():
    assert validate("Protobuf/3", PROTO3).valid
    assert validate("Protobuf/3", PROTO3.encode()).valid
    proto2 = 'syntax = "proto2";\nmessage M { required int32 a = 1; optional string b = 2; }'
    assert validate("Protobuf/2", proto2).valid
    assert validate("Protobuf/2", "message M { optional int32 a = 1; }").valid  # no syntax statement: proto2
    with_well_known = ('syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
                       "message M { google.protobuf.Timestamp at = 1; }")
    assert validate("Protobuf/3", with_well_known).valid


@pytest.mark.parametrize(("source", "line", "column", "message"), [
    ('syntax = "proto3";\nmessage M {\n  float metric = 1\n  string unit = 2;\n}\n', 4, 3, 'Expected ";".'),
    ('syntax = "proto3";\nmessage M {\n  strin unit = 1;\n}\n', 3, 3, '"strin" is not defined.'),
    ('syntax = "proto3";\nmessage M {\n  int32 a = 1;\n  int32 b = 1;\n}\n', 4, 13,
     'Field number 1 has already been used in "M" by field "a". Next available field number is 2.'),
    ('syntax = "proto3";\nmessage M {\n  required int32 a = 1;\n}\n', 3, 12,
     "Required fields are not allowed in proto3."),
])
def test_protobuf_errors_carry_protoc_line_and_column(source, line, column, message):
    result = validate("Protobuf/3", source)
    assert only(result) == ("", message)
    assert (result.violations[0].line, result.violations[0].column) == (line, column)


def test_protobuf_syntax_must_match_the_declared_version():
    assert only(validate("Protobuf/2", PROTO3)) == (
        "syntax", "the format is Protobuf/2 but the document has syntax 'proto3'")
    assert only(validate("Protobuf/3", "message M { optional int32 a = 1; }")) == (
        "syntax", "the format is Protobuf/3 but the document has no syntax statement (proto2)")
    assert validate("Protobuf", PROTO3).valid


def test_protobuf_unresolvable_imports_are_not_validated():
    result = validate("Protobuf/3", 'syntax = "proto3";\nimport "common/units.proto";\nmessage M { Unit u = 1; }')
    assert not result.validated and result.violations == ()
    assert result.reason == ("not validated: the document imports 'common/units.proto', "
                             "which the registry cannot resolve")


def test_protobuf_needs_a_text_document():
    assert only(validate("Protobuf/3", {"syntax": "proto3"})) == ("", "expected a text document, got a JSON object")


# -- XSD ---------------------------------------------------------------------------------------

def xsd(body: str, attrs: str = "") -> str:
    return f'<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"{attrs}>{body}</xs:schema>'


def test_xsd_valid_documents_are_accepted():
    assert validate("XSD/1.0", xsd('<xs:element name="a" type="xs:string"/>')).valid
    assert validate("XMLSchema/1.1", xsd('<xs:element name="a" type="xs:string"/>')).valid


@pytest.mark.parametrize(("body", "path", "message"), [
    ('<xs:element name="a" type="xs:strin"/>', "/xs:schema/xs:element", "unknown type 'xs:strin'"),
    ('<xs:element name="b"><xs:complexType><xs:sequence><xs:element name="c" type="xs:int" minOccurs="3" '
     'maxOccurs="2"/></xs:sequence></xs:complexType></xs:element>',
     "/xs:schema/xs:element/xs:complexType/xs:sequence/xs:element",
     "maxOccurs must be 'unbounded' or greater than minOccurs"),
])
def test_xsd_invalid_schemas_are_refused_with_the_schema_path(body, path, message):
    assert only(validate("XSD/1.0", xsd(body))) == (path, message)


def test_xsd_versions_differ_where_the_languages_differ():
    asserting = xsd('<xs:element name="a"><xs:complexType><xs:attribute name="x" type="xs:int"/>'
                    '<xs:assert test="@x gt 0"/></xs:complexType></xs:element>')
    assert validate("XSD/1.1", asserting).valid
    assert only(validate("XSD/1.0", asserting))[1] == "Unexpected child with tag 'xs:assert' at position 2."


def test_xsd_malformed_xml_is_located():
    result = validate("XSD/1.1", xsd('<xs:element name="a" type="xs:string">'))
    assert only(result)[1].startswith("invalid XML syntax: mismatched tag")
    assert result.violations[0].line == 1


def test_xsd_external_imports_are_not_fetched_and_not_validated():
    doc = xsd('<xs:import namespace="urn:o" schemaLocation="http://example.com/o.xsd"/>'
              '<xs:element name="a" type="o:T"/>', ' xmlns:o="urn:o"')
    result = validate("XSD/1.1", doc)
    assert not result.validated
    assert "urn:o" in result.reason and "http://example.com/o.xsd" in result.reason


# -- JSON Structure ----------------------------------------------------------------------------

def structure(**props) -> dict:
    return {"$schema": "https://json-structure.org/meta/extended/v0/#", "$id": "https://example.com/m",
            "$uses": ["JSONStructureUnits"], "name": "M", "type": "object", "properties": props}


def test_json_structure_valid_documents_are_accepted():
    assert validate("JsonStructure/draft-02", structure(a={"type": "int32"}, t={"type": "double", "unit": "K"})).valid


@pytest.mark.parametrize(("doc", "path", "message"), [
    (structure(a={"type": "int33"}), "/properties/a/type",
     "Type 'int33' is not a recognized primitive or compound type."),
    ({**structure(a={"type": "string"}), "required": ["b"]}, "/required[0]",
     "'required' references property 'b' that is not in 'properties'."),
    (structure(a={"type": "string", "unit": "m"}), "/properties/a/unit", "'unit' can only appear in numeric schemas."),
    (structure(a={"type": ["string", "null"], "unit": "m"}), "/properties/a/unit",
     "'unit' can only appear in numeric schemas."),
])
def test_json_structure_invalid_documents_are_refused_by_the_published_validator(doc, path, message):
    got_path, got = only(validate("JsonStructure/draft-02", doc))
    assert got_path == path and got.startswith(message)


def test_json_structure_units_on_a_nullable_number_are_accepted():
    doc = structure(lat={"type": ["double", "null"], "unit": "degree"}, n={"type": ["null", "int32"], "unit": "1"})
    assert validate("JsonStructure/draft-02", doc).valid


# -- cache -------------------------------------------------------------------------------------

def test_analyses_are_cached_per_format_and_document_digest():
    CACHE.clear()
    doc = {"type": "record", "name": "CacheProbe", "fields": [{"name": "a", "type": "int"}]}
    first = validate("Avro/1.11", doc)
    assert (CACHE.misses, CACHE.hits) == (1, 0)
    assert validate("Avro/1.11.3", dict(doc)) is first  # same version key, equal content
    assert (CACHE.misses, CACHE.hits) == (1, 1)
    validate("Avro/1.12", doc)  # another version key: its own entry
    assert (CACHE.misses, len(CACHE)) == (2, 2)


def test_the_lru_cache_is_bounded_and_evicts_the_least_recently_used():
    cache: LRUCache[int] = LRUCache(maxsize=2)
    calls: list[str] = []

    def value(key: str) -> int:
        calls.append(key)
        return len(calls)

    cache.get_or_compute("a", lambda: value("a"))
    cache.get_or_compute("b", lambda: value("b"))
    cache.get_or_compute("a", lambda: value("a"))  # hit: "a" becomes most recent
    cache.get_or_compute("c", lambda: value("c"))  # evicts "b"
    cache.get_or_compute("b", lambda: value("b"))
    assert calls == ["a", "b", "c", "b"] and len(cache) == 2
    with pytest.raises(ValueError):
        LRUCache(0)
