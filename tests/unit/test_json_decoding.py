"""Stored documents decode (``xreg.json_encoding.loads``, orjson where it gives the same) to
exactly what the standard library's decoder gives: the same values of the same types, integers
beyond 64 bits and numbers orjson refuses included."""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest

from xreg.json_encoding import loads

TEXTS = [
    '{"a":1,"b":[true,false,null],"c":{"d":"é ≤ 😀"}}', "[]", "{}", '""', "0", "-0", "-0.0", "1.0", "1e5", "1E400",
    "[9223372036854775807]", "[-9223372036854775808]", "[9223372036854775808]", "[-9223372036854775809]",
    "[18446744073709551615]", "[18446744073709551616]", "[123456789012345678901234567890]",
    '{"id":"1234567890123456789012"}', "[0.1234567890123456789]", "[NaN]", "[Infinity]", "[-Infinity]",
    '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', '"\\u0000\\n\\t"', '{"a":1,"a":2}', "[1e-400]",
    "[2.5e-07]", "[0.00001]", " [1] ",
]


def _typed(value: Any) -> Any:
    """``value`` with every number paired with its type (``1 == 1.0`` would hide a float)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_decodes_as_the_standard_library_decodes_it(text: str) -> None:
    assert _typed(loads(text)) == _typed(json.loads(text))
    assert _typed(loads(text.encode())) == _typed(json.loads(text))


def test_floats_decode_alike() -> None:
    rng = random.Random(7)
    for _ in range(20000):
        value = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if math.isfinite(value):
            for text in (repr(value), f"{value:.17g}", f"{value:.5e}", f"{value:.3f}"):
                assert _typed(loads(f"[{text}]")) == _typed(json.loads(f"[{text}]")), text


@pytest.mark.parametrize("text", ["", "[", "{'a':1}", "[01]", "[1,]", "nul"])
def test_malformed_text_is_refused_as_the_standard_library_refuses_it(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        loads(text)
