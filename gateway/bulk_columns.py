"""Whole columns of the bulk read as Arrow arrays (:mod:`gateway.bulk`).

A column is converted in one call when its values' types allow it (checked with ``map(type, …)``,
no Python per value): strings, integers and booleans as they are, lists of strings, string maps,
and RFC 3339 timestamps of the canonical form (matched and cast by Arrow's kernels). Any other
column falls back to the per-value conversion, which gives every value exactly what the GraphQL
path gives it, so both routes build the same arrays.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import chain
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

_NONE = type(None)
_STRINGS = frozenset((str, _NONE))

#: Timestamps Arrow's cast reads exactly as :func:`datetime.fromisoformat` does (a canonical
#: RFC 3339 date-time in range; an out-of-range day fails the cast, and the column falls back).
CANONICAL_TIMESTAMP = (r"^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?"
                       r"(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$")

#: One JSON text per value, compact and unescaped (``json.dumps`` with these options builds an
#: encoder per call).
dumps: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

#: bytes -> ``0`` for a digit, ``e`` for ``e`` / ``E``, ``.`` for itself, a space otherwise: the
#: shape of a JSON text's numbers, searched with ``in``.
_NUMBER_SHAPE = bytes(48 if 48 <= i <= 57 else 101 if i in (69, 101) else 46 if i == 46 else 32 for i in range(256))


def _float_shapes(text: bytes) -> bool:
    """Whether orjson's ``text`` may write a float otherwise than :data:`dumps`: with an exponent
    (``1e-7`` against ``1e-07``, ``1e16`` against ``1e+16``) or a small one without
    (``0.00001`` against ``1e-05``). Other numbers, strings and the rest are written alike."""
    shape = text.translate(_NUMBER_SHAPE)  # (not in a time's seconds: 13.000012 is 00.000000)
    return b"0e" in shape or b" 0.0000" in shape or shape.startswith(b"0.0000")


def json_texts(values: list[Any]) -> pa.Array:
    """The JSON text of each value, exactly as :data:`dumps` writes it, as a string array: encoded
    by orjson (several times faster), by :data:`dumps` where orjson refuses a value (an integer
    beyond 64 bits) or may write a float differently (:func:`_float_shapes`)."""
    texts: list[bytes] = []
    for value in values:
        try:
            texts.append(orjson.dumps(value))
        except orjson.JSONEncodeError:
            texts.append(dumps(value).encode("utf-8"))
    if _float_shapes(b"\n".join(texts)):  # (one pass over all of them; rarely more)
        texts = [dumps(v).encode("utf-8") if _float_shapes(t) else t for v, t in zip(values, texts, strict=True)]
    # as binary, then checked as UTF-8 in one cast: ``pa.array`` of bytes as strings checks each
    # value apart (about 20 times as long)
    return pa.array(texts, type=pa.binary()).cast(pa.string())


def _types(values: Any) -> set[type]:
    return set(map(type, values))


def _strings(values: list[Any]) -> pa.Array | None:
    return pa.array(values, type=pa.string()) if _types(values) <= _STRINGS else None


def _integers(values: list[Any]) -> pa.Array | None:
    return pa.array(values, type=pa.int64()) if _types(values) <= {int, _NONE} else None


def _booleans(values: list[Any]) -> pa.Array | None:
    return pa.array(values, type=pa.bool_()) if _types(values) <= {bool, _NONE} else None


def _string_lists(values: list[Any], type_: pa.DataType) -> pa.Array | None:
    if not _types(values) <= {list, _NONE}:
        return None
    if not _types(chain.from_iterable(filter(None, values))) <= {str}:
        return None
    return pa.array(values, type=type_)


def _string_maps(values: list[Any], type_: pa.DataType) -> pa.Array | None:
    if not _types(values) <= {dict, _NONE}:
        return None
    maps = list(filter(None, values))
    if not _types(chain.from_iterable(maps)) <= {str} or not _types(
            chain.from_iterable(map(dict.values, maps))) <= _STRINGS:
        return None
    return pa.array(values, type=type_)


def _timestamps(values: list[Any], type_: pa.DataType) -> pa.Array | None:
    if not _types(values) <= _STRINGS:
        return None
    text = pa.array(values, type=pa.string())
    matched = pc.match_substring_regex(text, CANONICAL_TIMESTAMP)
    if matched.null_count != text.null_count or not pc.all(matched, skip_nulls=True, min_count=0).as_py():
        return None
    try:
        return text.cast(type_)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def column(values: list[Any], type_: pa.DataType, convert: Callable[[Any], Any]) -> pa.Array:
    """``values`` as an array of ``type_``: in one call where their types allow, else each
    through ``convert``."""
    if type_ == pa.string():
        array = _strings(values)
    elif type_ == pa.int64():
        array = _integers(values)
    elif type_ == pa.bool_():
        array = _booleans(values)
    elif pa.types.is_timestamp(type_):
        array = _timestamps(values, type_)
    elif pa.types.is_map(type_):
        array = _string_maps(values, type_)
    elif pa.types.is_list(type_):
        array = _string_lists(values, type_)
    else:
        array = None
    return array if array is not None else pa.array(list(map(convert, values)), type=type_)
