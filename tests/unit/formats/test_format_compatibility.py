"""Compatibility checks: for Avro, JSON Schema and Protobuf, each mode with one breaking and one
non-breaking change, and the transitive modes over three versions (compatible with the direct
ancestor, breaking against the oldest)."""

from __future__ import annotations

from typing import Any

import pytest

from xreg.formats import CompatibilityResult, compatibility_modes
from xreg.formats.core import check_compatibility


def breaks(result: CompatibilityResult) -> list[tuple[str, str, int, str]]:
    assert result.checked, result.reason
    return [(b.path, b.message, b.against, b.direction) for b in result.breaking]


def ok(fmt: str, mode: str, new: Any, *older: Any) -> None:
    result = check_compatibility(fmt, mode, new, list(older))
    assert result.checked and result.compatible, result.describe()


# -- Avro --------------------------------------------------------------------------------------

def avro(*fields: dict) -> dict:
    return {"type": "record", "name": "Metrics", "namespace": "com.example", "fields": list(fields)}


METRIC = {"name": "metric", "type": "float"}
UNIT = {"name": "unit", "type": "string"}
UNIT_D = {"name": "unit", "type": "string", "default": "C"}


def test_avro_backward():
    ok("Avro", "backward", avro(METRIC, UNIT_D), avro(METRIC))  # field added with a default
    assert breaks(check_compatibility("Avro", "backward", avro(METRIC, UNIT), [avro(METRIC)])) == [
        ("unit", "field 'unit' added without a default value", 0, "backward")]


def test_avro_forward():
    ok("Avro", "forward", avro(METRIC, UNIT), avro(METRIC))  # older readers ignore the new field
    assert breaks(check_compatibility("Avro", "forward", avro(METRIC), [avro(METRIC, UNIT)])) == [
        ("unit", "field 'unit' removed, and the older schema has no default for it", 0, "forward")]


def test_avro_full():
    ok("Avro", "full", avro(METRIC, UNIT_D), avro(METRIC))
    renamed = avro({"name": "value", "type": "float", "aliases": ["metric"]})  # the alias serves new readers only
    ok("Avro", "backward", renamed, avro(METRIC))
    assert [b.direction for b in check_compatibility("Avro", "full", renamed, [avro(METRIC)]).breaking] == ["forward"]
    result = check_compatibility("Avro", "full", avro({"name": "metric", "type": "string"}), [avro(METRIC, UNIT)])
    assert breaks(result) == [
        ("metric", "type of 'metric' changed from float to string", 0, "backward"),
        ("metric", "type of 'metric' changed from float to string", 0, "forward"),
        ("unit", "field 'unit' removed, and the older schema has no default for it", 0, "forward"),
    ]


def test_avro_promotions_enums_unions_and_nested_records_are_named():
    ok("Avro", "backward", avro({"name": "metric", "type": "double"}), avro(METRIC))  # float → double promotes
    assert breaks(check_compatibility("Avro", "forward", avro({"name": "metric", "type": "double"}), [avro(METRIC)])) \
        == [("metric", "type of 'metric' changed from float to double", 0, "forward")]
    old = avro({"name": "c", "type": {"type": "enum", "name": "Colour", "symbols": ["RED", "BLUE"]}},
               {"name": "u", "type": ["null", "string", "int"]},
               {"name": "at", "type": {"type": "record", "name": "Place", "fields": [{"name": "x", "type": "int"}]}})
    new = avro({"name": "c", "type": {"type": "enum", "name": "Colour", "symbols": ["RED"]}},
               {"name": "u", "type": ["null", "string"]},
               {"name": "at", "type": {"type": "record", "name": "Place",
                                       "fields": [{"name": "x", "type": "boolean"}]}})
    assert breaks(check_compatibility("Avro", "backward", new, [old])) == [
        ("c", "symbols ['BLUE'] removed from enum com.example.Colour at 'c' (no reader default covers them)", 0,
         "backward"),
        ("u", "branch int removed from the union of 'u'", 0, "backward"),
        ("at.x", "type of 'at.x' changed from int to boolean", 0, "backward"),
    ]


def test_avro_transitive_modes_check_every_older_version():
    v1, v2, v3 = avro(METRIC), avro(METRIC, UNIT_D), avro(METRIC, UNIT)
    ok("Avro", "backward", v3, v1, v2)  # v2 data always has 'unit'
    assert breaks(check_compatibility("Avro", "backward_transitive", v3, [v1, v2])) == [
        ("unit", "field 'unit' added without a default value", 0, "backward")]
    f1, f2, f3 = avro(METRIC, UNIT), avro(METRIC, UNIT_D), avro(METRIC)
    ok("Avro", "forward", f3, f1, f2)
    ok("Avro", "full", f3, f1, f2)
    expected = [("unit", "field 'unit' removed, and the older schema has no default for it", 0, "forward")]
    assert breaks(check_compatibility("Avro", "forward_transitive", f3, [f1, f2])) == expected
    assert breaks(check_compatibility("Avro", "full_transitive", f3, [f1, f2])) == expected


# -- JSON Schema -------------------------------------------------------------------------------

JS = "JsonSchema/draft-07"


def obj(props: dict, *, required: tuple[str, ...] = (), closed: bool = False, **more: Any) -> dict:
    doc: dict[str, Any] = {"type": "object", "properties": props, **more}
    if required:
        doc["required"] = list(required)
    if closed:
        doc["additionalProperties"] = False
    return doc


NUM = {"type": "number"}
STR = {"type": "string"}


def test_json_schema_backward():
    ok(JS, "backward", obj({"metric": NUM, "unit": STR}, closed=True), obj({"metric": NUM}, closed=True))
    assert breaks(check_compatibility(JS, "backward", obj({"metric": NUM, "unit": STR}), [obj({"metric": NUM})])) == [
        ("/properties/unit", "property 'unit' added to an open content model: older data may hold any value for it", 0,
         "backward")]


def test_json_schema_forward():
    ok(JS, "forward", obj({"metric": {**NUM, "maximum": 100}}), obj({"metric": NUM}))  # narrower new data
    assert breaks(check_compatibility(JS, "forward", obj({"metric": {"type": ["number", "string"]}}),
                                      [obj({"metric": NUM})])) == [
        ("/properties/metric/type", "type of 'metric' changed from number to number | string", 0, "forward")]


def test_json_schema_full():
    ok(JS, "full", obj({"metric": {**NUM, "description": "reading"}}, title="M"), obj({"metric": NUM}))
    result = check_compatibility(JS, "full", obj({"metric": STR}, closed=True), [obj({"metric": NUM, "unit": STR},
                                                                                      closed=True)])
    assert breaks(result) == [
        ("/properties/metric/type", "type of 'metric' changed from number to string", 0, "backward"),
        ("/properties/metric/type", "type of 'metric' changed from number to string", 0, "forward"),
        ("/properties/unit", "property 'unit' removed from a closed content model", 0, "backward"),
    ]


def tree(value: dict) -> dict:
    node = obj({"v": value, "children": {"type": "array", "items": {"$ref": "#/definitions/node"}}})
    return {"definitions": {"node": node}, "$ref": "#/definitions/node"}


@pytest.mark.parametrize(("old", "new", "expected"), [
    # type widening is backward compatible, narrowing is not
    (obj({"n": {"type": "integer"}}), obj({"n": NUM}), []),
    (obj({"n": NUM}), obj({"n": {"type": "integer"}}),
     [("/properties/n/type", "type of 'n' changed from number to integer")]),
    # enums may grow, not shrink
    (obj({"u": {"enum": ["a"]}}), obj({"u": {"enum": ["a", "b"]}}), []),
    (obj({"u": {"enum": ["a", "b"]}}), obj({"u": {"enum": ["a"]}}),
     [("/properties/u/enum", "values [\"b\"] removed from the enumeration of 'u'")]),
    # required: removing is fine; adding needs a default
    (obj({"a": STR}, required=("a",)), obj({"a": STR}), []),
    (obj({"a": STR}), obj({"a": STR}, required=("a",)), [("/required", "property 'a' is now required")]),
    (obj({"a": STR}), obj({"a": {**STR, "default": "x"}}, required=("a",)), []),
    # content models: removing from open is fine, from closed is not; closing breaks
    (obj({"a": STR, "b": STR}), obj({"a": STR}), []),
    (obj({"a": STR}), obj({"a": STR}, closed=True), [("/additionalProperties",
                                                     "additional properties of the document changed from allowed to "
                                                     "not allowed")]),
    (obj({"a": STR}, closed=True), obj({"a": STR}), []),
    # partially open: a removed property must fit the additional-properties schema
    (obj({"a": STR}, closed=True), obj({}, additionalProperties=STR), []),
    (obj({"a": NUM}, closed=True), obj({}, additionalProperties=STR),
     [("/properties/a/type", "type of 'a' changed from number to string")]),
    # bounds and string rules
    (obj({"s": {**STR, "maxLength": 5}}), obj({"s": {**STR, "maxLength": 3}}),
     [("/properties/s/maxLength", "maxLength of 's' changed from 5 to 3")]),
    (obj({"s": STR}), obj({"s": {**STR, "pattern": "^a"}}),
     [("/properties/s/pattern", "pattern of 's' changed from none to ^a")]),
    # local references are followed
    (obj({"p": {"$ref": "#/definitions/P"}}, definitions={"P": NUM}), obj({"p": STR}),
     [("/properties/p/type", "type of 'p' changed from number to string")]),
    # unions: every old branch must still be accepted
    (obj({"v": {"anyOf": [NUM, STR]}}), obj({"v": {"anyOf": [NUM, STR, {"type": "null"}]}}), []),
    (obj({"v": {"anyOf": [NUM, STR]}}), obj({"v": {"anyOf": [NUM]}}),
     [("/properties/v/type", "type of 'v' changed from string to number")]),
    (obj({"v": {"anyOf": [NUM, STR, {"type": "boolean"}]}}), obj({"v": {"oneOf": [NUM, {"type": "null"}]}}),
     [("/properties/v/anyOf/1", "a branch of the union at 'v' was removed or narrowed"),
      ("/properties/v/anyOf/2", "a branch of the union at 'v' was removed or narrowed")]),
    # recursive schemas terminate
    (tree(NUM), tree(STR), [("/properties/v/type", "type of 'v' changed from number to string")]),
])
def test_json_schema_backward_rules(old, new, expected):
    got = breaks(check_compatibility(JS, "backward", new, [old]))
    assert [(p, m) for p, m, _, _ in got] == expected


def test_json_schema_transitive_modes_check_every_older_version():
    v1 = obj({"metric": NUM})
    v2 = obj({"metric": {**NUM, "default": 0}}, required=("metric",))
    v3 = obj({"metric": NUM}, required=("metric",))
    for mode in ("backward", "full"):
        ok(JS, mode, v3, v1, v2)
    for mode in ("backward_transitive", "full_transitive"):
        assert breaks(check_compatibility(JS, mode, v3, [v1, v2])) == [
            ("/required", "property 'metric' is now required", 0, "backward")]
    f1 = obj({"metric": NUM}, required=("metric",))
    f2 = obj({"metric": {**NUM, "default": 0}}, required=("metric",))
    f3 = obj({"metric": NUM})
    ok(JS, "forward", f3, f1, f2)
    assert breaks(check_compatibility(JS, "forward_transitive", f3, [f1, f2])) == [
        ("/required", "property 'metric' is no longer required", 0, "forward")]


def test_json_schema_unanalysed_keywords_count_as_breaking_when_changed():
    old = obj({"a": STR}, **{"not": {"required": ["b"]}})
    new = obj({"a": STR}, **{"not": {"required": ["c"]}})
    message = "'not' of the document changed; this keyword is not analysed, so any change to it counts as breaking"
    assert breaks(check_compatibility(JS, "full", new, [old])) == [("/not", message, 0, "backward"),
                                                                   ("/not", message, 0, "forward")]
    ok(JS, "full", old, old)


# -- Protobuf ----------------------------------------------------------------------------------

def proto(body: str, syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage com.example;\nmessage Metrics {{\n{body}\n}}\n'


P1 = proto("  float metric = 1;\n  string unit = 2;")


def test_protobuf_backward():
    ok("Protobuf/3", "backward", proto("  float metric = 1;\n  string unit = 2;\n  string note = 3;"), P1)
    assert breaks(check_compatibility("Protobuf/3", "backward", proto("  string metric = 1;\n  string unit = 2;"),
                                      [P1])) == [
        ("Metrics.metric", "type of 'metric' (number 1) changed from float to string", 0, "backward")]


def test_protobuf_forward():
    ok("Protobuf/3", "forward", proto("  float value = 1;\n  string unit = 2;"), P1)  # renamed, same number
    assert breaks(check_compatibility("Protobuf/3", "forward", proto("  float metric = 1;"), [P1])) == [
        ("Metrics.unit", "field 'unit' (number 2) removed without reserving its number", 0, "forward")]


def test_protobuf_full():
    ok("Protobuf/3", "full", proto("  float metric = 1;\n  reserved 2;\n  reserved \"unit\";"), P1)
    ok("Protobuf/3", "full", proto("  float metric = 1;\n  bytes unit = 2;"), P1)  # string ↔ bytes share the wire
    result = check_compatibility("Protobuf/3", "full", proto("  float metric = 1;\n  int32 unit = 2;"), [P1])
    assert breaks(result) == [
        ("Metrics.unit", "type of 'unit' (number 2) changed from string to int32", 0, "backward"),
        ("Metrics.unit", "type of 'unit' (number 2) changed from string to int32", 0, "forward"),
    ]


def test_protobuf_required_fields_break_one_direction_each():
    old = proto("  required float metric = 1;\n  optional string unit = 2;", "proto2")
    dropped = proto("  optional string unit = 2;\n  reserved 1;", "proto2")
    ok("Protobuf/2", "backward", dropped, old)
    assert breaks(check_compatibility("Protobuf/2", "forward", dropped, [old])) == [
        ("Metrics.metric", "required field 'metric' (number 1) removed", 0, "forward")]
    added = proto("  required float metric = 1;\n  optional string unit = 2;\n  required int32 n = 3;", "proto2")
    ok("Protobuf/2", "forward", added, old)
    assert breaks(check_compatibility("Protobuf/2", "backward", added, [old])) == [
        ("Metrics.n", "required field 'n' (number 3) added", 0, "backward")]


def test_protobuf_reserved_numbers_and_removed_messages():
    reserved = proto("  float metric = 1;\n  reserved 2;")
    reused = proto("  float metric = 1;\n  int32 count = 2;")
    assert breaks(check_compatibility("Protobuf/3", "backward", reused, [reserved])) == [
        ("Metrics.count", "field 'count' uses number 2, which the older schema reserved", 0, "backward")]
    other = 'syntax = "proto3";\npackage com.example;\nmessage Other { int32 a = 1; }\n'
    assert ("Metrics", "message 'Metrics' removed", 0, "backward") in breaks(
        check_compatibility("Protobuf/3", "backward", other, [P1]))


def test_protobuf_transitive_modes_check_every_older_version():
    v1, v2, v3 = P1, proto("  float metric = 1;\n  reserved 2;"), proto("  float metric = 1;")
    for mode in ("backward", "forward", "full"):
        ok("Protobuf/3", mode, v3, v1, v2)
    for mode, direction in (("backward_transitive", "backward"), ("forward_transitive", "forward"),
                            ("full_transitive", "backward")):
        found = breaks(check_compatibility("Protobuf/3", mode, v3, [v1, v2]))
        assert ("Metrics.unit", "field 'unit' (number 2) removed without reserving its number", 0, direction) in found
        assert {b[2] for b in found} == {0}


# -- what cannot be checked --------------------------------------------------------------------

def test_modes_and_formats_without_support_are_not_checked():
    assert compatibility_modes("XSD/1.1") == ()
    assert compatibility_modes("Avro/1.11")[0] == "none"
    result = check_compatibility("XSD/1.1", "backward", "<x/>", ["<x/>"])
    assert not result.checked
    assert result.reason == "not validated: compatibility 'backward' is not supported for format 'XSD/1.1'"
    result = check_compatibility("Avro", "sideways", avro(METRIC), [avro(METRIC)])
    assert not result.checked and result.reason == "not validated: unknown compatibility 'sideways'"
    result = check_compatibility("Foo/1", "backward", {}, [{}])
    assert not result.checked and result.reason == "not validated: unsupported format 'Foo/1'"


def test_invalid_documents_are_not_checked_and_none_or_no_ancestor_is_compatible():
    result = check_compatibility("Avro", "backward", avro(METRIC), [{"type": "record", "name": "X"}])
    assert not result.checked and result.reason == "not validated: older document #0 is not valid Avro"
    result = check_compatibility("Avro", "backward", {"type": "strin"}, [avro(METRIC)])
    assert not result.checked and result.reason == "not validated: the new document is not valid Avro"
    assert check_compatibility("Avro", "none", avro(METRIC), [avro({"name": "x", "type": "int"})]).compatible
    assert check_compatibility("Avro", "FULL_TRANSITIVE", avro(METRIC), []).compatible


@pytest.mark.parametrize(("fmt", "lineage"), [
    ("Avro", [avro(METRIC), avro(METRIC, UNIT_D), avro(METRIC, UNIT_D, {"name": "note", "type": "string",
                                                                         "default": ""})]),
    (JS, [obj({"metric": NUM}), obj({"metric": NUM, "note": {"description": "free text"}}),
          obj({"metric": {**NUM, "description": "reading"}, "note": {"description": "free text"}}, title="M")]),
    ("Protobuf/3", [P1, proto("  float metric = 1;\n  string unit = 2;\n  string note = 3;"),
                    proto("  float metric = 1;\n  string unit = 2;\n  string remark = 3;")]),
])
@pytest.mark.parametrize("mode", ["none", "backward", "backward_transitive", "forward", "forward_transitive", "full",
                                  "full_transitive"])
def test_a_compatible_lineage_passes_every_mode(fmt, lineage, mode):
    ok(fmt, mode, lineage[2], lineage[0], lineage[1])
