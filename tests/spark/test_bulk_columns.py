"""The bulk read's whole-column conversion (:mod:`gateway.bulk_columns`) gives every value what
the per-value conversion (the GraphQL path's) gives it, whatever the column's values; the
``entity`` column's JSON texts are the standard library encoder's, float for float."""

from __future__ import annotations

import itertools
import math
import random
import struct
from typing import Any

import pyarrow as pa
import pytest

from gateway.bulk import CONVERT
from gateway.bulk_columns import column, dumps, json_texts

ODD: list[Any] = [
    None, "x", "é", "", 1, 0, -7, True, False, 2.5, 3.0, "12", "TRUE", "false", [], ["a", "b"], ["a", 1], [None],
    {}, {"k": "v"}, {"k": 1}, {"k": None}, "2024-01-01T00:00:00Z", "2024-01-01T00:00:00.5+02:00",
    "2024-01-01T00:00:00.123456-05:30", "2024-01-01T00:00:00z", " 2024-01-01T00:00:00Z", "2024-01-01",
    "2024-01-01T00:00:00", "2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-01-01T23:59:60Z",
    "2024-01-01T24:00:00Z", "2024-01-01T00:00:00.1234567Z", "2024-01-01T00:00:00+24:00", "2024-13-01T00:00:00Z",
]

#: Columns of one kind of value (the fast path), each kind with a null.
HOMOGENEOUS: list[list[Any]] = [
    ["a", None, "é"], [1, None, -3], [True, None, False], [["a"], None, []], [{"k": "v"}, None, {}],
    ["2024-01-01T00:00:00Z", None, "1999-12-31T23:59:59.999999+01:00"], [None, None], [],
]


def _expected(values: list[Any], type_: pa.DataType) -> pa.Array:
    return pa.array([CONVERT[type_](v) for v in values], type=type_)


@pytest.mark.parametrize("type_", list(CONVERT), ids=str)
@pytest.mark.parametrize("values", HOMOGENEOUS + [[v] for v in ODD] + [list(p) for p in itertools.pairwise(ODD)])
def test_a_column_converts_as_each_value_does(type_: pa.DataType, values: list[Any]) -> None:
    assert column(values, type_, CONVERT[type_]).equals(_expected(values, type_))


@pytest.mark.parametrize("type_", list(CONVERT), ids=str)
def test_one_odd_value_does_not_change_the_others(type_: pa.DataType) -> None:
    for odd in ODD:
        for clean in HOMOGENEOUS:
            values = [*clean, odd, *clean]
            assert column(values, type_, CONVERT[type_]).equals(_expected(values, type_)), (odd, clean)


#: Values whose JSON text the fast encoder could write otherwise (floats of every shape, integers
#: beyond 64 bits), between ordinary ones.
JSON_VALUES: list[Any] = [
    {"a": 1, "b": "é ≤ 😀", "c": [True, None, {"d": "2024-01-01T00:00:13.000012Z"}]}, "x\n\"\\\u2028\x7f\x00", 0.1,
    1.0, -0.0, 1e-4, 1e-5, 0.00001234, -2.5e-7, 1e15, 1e16, 1.5e300, 5e-324, 2**63 - 1, -2**63, 2**64, -2**64 - 1,
    {"n": 123456789.123}, [1e22, "1e22", "0.00001", "v1.0.0000"], {"seconds": 13.000012}, [],
]


@pytest.mark.parametrize("values", [JSON_VALUES, [JSON_VALUES], [{"only": "strings"}] * 3, [None, 0, "0e1"]])
def test_json_texts_are_the_standard_encoders(values: list[Any]) -> None:
    assert json_texts(values).equals(pa.array([dumps(v) for v in values], type=pa.string()))


def test_json_texts_of_random_floats_are_the_standard_encoders() -> None:
    rng = random.Random(11)
    floats = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(5000)]
    floats += [round(rng.uniform(-1e4, 1e4), rng.randint(0, 6)) * 10 ** rng.randint(-10, 20) for _ in range(5000)]
    values = [{"v": f, "w": [f, "s"]} for f in floats if math.isfinite(f)]
    assert json_texts(values).equals(pa.array([dumps(v) for v in values], type=pa.string()))
