"""The bulk read's whole-column conversion (:mod:`gateway.bulk_columns`) gives every value what
the per-value conversion (the GraphQL path's) gives it, whatever the column's values."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest

from gateway.bulk import CONVERT
from gateway.bulk_columns import column

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
