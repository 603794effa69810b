"""The JSON text of the gateway's answers (GraphQL responses, the xRegistry HTTP API's bodies):
compact, UTF-8, not ASCII-escaped.

:func:`dumps` encodes with orjson, several times faster than the standard library's encoder (the
encoding of a large GraphQL answer is a measurable part of its request: ``bench/bench_graphql.py``).
What orjson refuses — an integer beyond 64 bits, which a stored document may hold, or a key that is
not a string — is encoded by the standard library's encoder instead, in the same compact form. The two differ
only in how they write some floats (``1e-7`` against ``1e-07``), and orjson writes ``NaN`` and
infinities as ``null`` where the standard library refuses them; no value the gateway takes in
holds them (``xreg.json_limits``).

:func:`loads` decodes stored documents with orjson, about twice as fast as the standard library's
decoder, to the same values: text holding a run of 19 or more digits (where orjson would give a
float for an integer beyond 64 bits) and text orjson refuses (``NaN``, lone surrogates) are
decoded by the standard library's decoder.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

#: the standard library's encoder in the same form (one encoder for every call)
_fallback = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


#: bytes -> b"0" for digits, b" " otherwise: a run of digits is found with one ``in``
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_NUMBER = b"0" * 19


def loads(text: str | bytes) -> Any:
    """The value of JSON ``text``: what ``json.loads`` gives (and raises)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _LONG_NUMBER not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON text, UTF-8 encoded."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _fallback(value).encode("utf-8")
