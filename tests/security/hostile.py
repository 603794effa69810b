"""Random and hostile schema documents and payloads for every format, and the one check the
fuzzing applies to each (:func:`evaluate_case`): the evaluator answers with a result or refuses
with a known :class:`~xreg.formats.Refused` kind — never another exception. Used by
``test_fuzz_evaluator.py`` (a few hundred cases) and ``bench/fuzz_formats.py`` (≥ 10,000)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from xreg.formats import CompatibilityResult, Evaluator, Refused, ValidationResult

#: The refusal kinds the evaluator may answer with (xreg.formats.model.Refused).
KINDS = frozenset({"too_large", "too_deep", "reference", "pattern", "unsafe", "budget", "failed", "busy"})

FORMATS = ["JsonSchema/draft-04", "JsonSchema/draft-07", "JsonSchema/draft/2020-12", "JsonSchema", "Avro/1.11",
           "Avro", "Protobuf/3", "Protobuf/2", "XSD/1.0", "XSD/1.1", "JsonStructure/draft-00", "Nope/1"]
MODES = ["none", "backward", "forward_transitive", "full", "bogus"]

PATTERNS = ["^(a+)+$", "(a|aa)*b", "(?=a)a", r"(\w)\1", "a{1000}{1000}", "[", "(?P<x>a)", "^.*$", "\\", ""]
REFS = ["file:///etc/passwd", "http://127.0.0.1:9/x.json", "#", "#/definitions/a", "other.json", "#/nope",
        "http://json-schema.org/draft-07/schema#", "urn:x", "../../etc/passwd"]

_scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=12)
_keys = st.sampled_from(["type", "properties", "items", "pattern", "patternProperties", "$ref", "$id", "allOf",
                         "anyOf", "not", "enum", "required", "additionalProperties", "definitions", "$defs",
                         "name", "fields", "default", "symbols", "unevaluatedProperties", "x"]) | st.text(max_size=6)


_HOSTILE = st.sampled_from([{"pattern": p} for p in PATTERNS] + [{"$ref": r} for r in REFS]
                           + [{"patternProperties": {p: {}}, "additionalProperties": False} for p in PATTERNS]
                           + [{"$id": "http://127.0.0.1:9/root.json", "$ref": "a.json"},
                              {"allOf": [{"$ref": "#"}]}, {"type": "record", "name": "R", "fields": []},
                              {"type": "string", "pattern": "^(a+)+$"}, {"type": "string"}, {}])


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """JSON values whose keys lean towards schema keywords, with hostile patterns and references."""
    return st.recursive(_scalars | _HOSTILE, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(_keys, inner, max_size=4), max_leaves=max_leaves)


def json_schemas() -> st.SearchStrategy[Any]:
    """Well-formed JSON Schemas made of hostile parts (they pass the meta-schema, so payloads
    are checked against them)."""
    part = st.recursive(_HOSTILE, lambda inner: st.builds(
        lambda props: {"properties": props}, st.dictionaries(st.sampled_from(["a", "aaaa", "b", "x"]), inner,
                                                             max_size=3))
        | st.builds(lambda items: {"items": items}, inner), max_leaves=6)
    return part | st.builds(lambda p, d: {**p, "definitions": {"a": d}}, part, part)


def _xml_texts() -> st.SearchStrategy[str]:
    entity = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>'
    laughs = '<!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><r>&b;</r>'
    schema = ('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="r">'
              '<xs:simpleType><xs:restriction base="xs:string"><xs:pattern value="(a+)+"/>'
              '</xs:restriction></xs:simpleType></xs:element></xs:schema>')
    include = ('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
               '<xs:include schemaLocation="file:///etc/passwd"/></xs:schema>')
    return st.sampled_from([entity, laughs, schema, include, "<r>" * 300 + "</r>" * 300, "/etc/passwd", "<r>aaa</r>"]) \
        | st.builds(lambda n, t: f"<r>{'<r>' * n}{t}{'</r>' * n}</r>", st.integers(0, 80), st.text(max_size=20))


def _proto_texts() -> st.SearchStrategy[str]:
    return st.sampled_from([
        'syntax = "proto3"; import "/etc/passwd"; message A {}',
        'syntax = "proto3"; import "google/protobuf/any.proto"; message A { google.protobuf.Any a = 1; }',
        'syntax = "proto3"; import "schema.proto"; message A {}',
        'syntax = "proto3"; ' + "message A { " * 200 + "}" * 200,
        'syntax = "proto2"; message A { required int32 a = 1; }',
    ]) | st.text(max_size=60)


def documents(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """A schema document as the registry may hold it: a JSON value, a text, or bytes."""
    schemas = json_schemas()
    return st.one_of(schemas, schemas, json_values(max_leaves), _xml_texts(), _proto_texts(), st.binary(max_size=40))


def payloads(max_subject: int = 20) -> st.SearchStrategy[Any]:
    """A payload: a JSON value, an XML text, or a ReDoS-shaped subject."""
    subjects = st.builds(lambda n, tail: "a" * n + tail, st.integers(0, max_subject), st.sampled_from(["", "!", "b"]))
    return json_values() | _xml_texts() | subjects | st.dictionaries(
        st.sampled_from(["a", "aaaa", "b", "x"]) | subjects, subjects | json_values(), max_size=4)


@dataclass(frozen=True)
class Case:
    format: str
    mode: str
    schema: Any
    older: Any
    payload: Any


def cases(max_leaves: int = 20, max_subject: int = 20) -> st.SearchStrategy[Case]:
    return st.builds(Case, st.sampled_from(FORMATS), st.sampled_from(MODES), documents(max_leaves),
                     documents(max_leaves), payloads(max_subject))


async def evaluate_case(evaluator: Evaluator, case: Case, failures: Counter[str] | None = None) -> list[str]:
    """Run the three evaluations of ``case``; the refusal kinds met (each one of :data:`KINDS`).
    Any other exception propagates: that is a failure. ``failures`` counts the exceptions named
    by ``failed`` refusals (what a format's library gave up on)."""
    refused: list[str] = []
    calls = [lambda: evaluator.validate(case.format, case.schema),
             lambda: evaluator.validate_payload(case.format, case.schema, case.payload),
             lambda: evaluator.check_compatibility(case.format, case.mode, case.schema, [case.older])]
    for call in calls:
        try:
            result = await call()
        except Refused as e:
            assert e.kind in KINDS, e
            refused.append(e.kind)
            if failures is not None and e.kind == "failed":
                failures[e.detail.partition("(")[2].partition(":")[0]] += 1
        else:
            assert isinstance(result, (ValidationResult, CompatibilityResult))
    return refused
