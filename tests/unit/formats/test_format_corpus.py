"""Every inline schema document of the real xRegistry corpora (tests/data/xreg) through
:func:`xreg.formats.validate`: how many there are per format, and that every one adheres."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xreg.formats.core import resolve, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "xreg"


def inline_schemas() -> Iterator[tuple[str, str, str, Any]]:
    """(where, format, document) for every schema version with an inline ``schema``; the format
    is the version's, else the resource's, else the group's (the group's ``schemas.format``
    constraint in schema/model.json)."""
    for path in sorted(DATA.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for gid, group in (doc.get("schemagroups") or {}).items():
            for sid, schema in (group.get("schemas") or {}).items():
                for vid, version in (schema.get("versions") or {}).items():
                    if "schema" in version:
                        fmt = version.get("format") or schema.get("format") or group.get("format")
                        yield f"{path.name}:{gid}/{sid}/{vid}", fmt, version["schema"]


def test_every_inline_schema_in_the_corpora_validates_per_format():
    valid: Counter[str] = Counter()
    failures: list[str] = []
    for where, fmt, document in inline_schemas():
        resolved = resolve(fmt)
        assert resolved is not None, f"{where}: format {fmt!r} not recognised"
        result = validate(fmt, document)
        if result.valid:
            valid[resolved[0].name] += 1
        else:
            failures.append(f"{where} ({fmt}): {result.describe()}")
    assert failures == []
    assert dict(valid) == {"Avro": 284, "JsonSchema": 22, "JsonStructure": 474, "Protobuf": 5, "XSD": 5}


def test_the_corpora_declare_the_format_strings_the_matcher_must_know():
    declared = Counter(fmt for _, fmt, _ in inline_schemas())
    assert declared == {
        "JsonStructure/draft-02": 474, "Avro/1.11.3": 201, "Avro": 68, "Avro/1.11": 11, "Avro/1.11.1": 4,
        "JSONSchema/Draft-07": 21, "JsonSchema/draft-07": 1, "Protobuf/3": 5, "XMLSchema/1.1": 5,
    }
