"""The fast path of ``xreg.json_limits``: it clears only what is within the bounds, and a value it
does not clear gets the error (detail and path) of the full walk. Its boundary: a surrogate
escape in either case, a valid surrogate pair, a key holding a lone surrogate, deep nesting,
surrogates that reach the parser unescaped (in text, as UTF-8 bytes, in UTF-16 text)."""

from __future__ import annotations

import json

import pytest

from xreg.json_limits import MAX_DEPTH, JSONLimitError, check, loads

LONE = "a string is not valid Unicode (a lone surrogate at character {})"
DEEP = f"the JSON is nested more than {MAX_DEPTH} levels deep"


def nested(depth: int, inner: str) -> str:
    """``inner`` (JSON text) under ``depth`` objects, each holding it at key ``a``."""
    return '{"a":' * depth + inner + "}" * depth


def refused(text: str | bytes) -> JSONLimitError:
    with pytest.raises(JSONLimitError) as caught:
        loads(text)
    return caught.value


@pytest.mark.parametrize("escape", ["\\ud800", "\\uD800", "\\uDbFf", "\\udc00", "\\uDFFF", "\\udE01"])
@pytest.mark.parametrize("kind", [str, bytes])
def test_an_escaped_lone_surrogate_in_either_case_is_refused(escape, kind):
    text = '{"a": {"name": "x' + escape + '"}}'
    error = refused(text if kind is str else text.encode())
    assert (error.detail, error.path) == (LONE.format(1), "/a/name")


@pytest.mark.parametrize("pair", ["\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud83D\\uDe00"])
def test_an_escaped_surrogate_pair_is_one_character_and_accepted(pair):
    text = '{"smile": "' + pair + '", "' + pair + '": 1}'
    assert loads(text) == {"smile": "\U0001f600", "\U0001f600": 1}
    assert loads(text.encode()) == loads(text)
    assert check(loads(text)) == loads(text)


def test_a_pair_in_the_wrong_order_is_two_lone_surrogates():
    assert refused('["\\ude00\\ud83d"]').detail == LONE.format(0)


def test_a_key_holding_a_lone_surrogate_is_refused_at_its_object():
    error = refused('{"ok": {"x\\uDC00y": 1}}')
    assert (error.detail, error.path) == (LONE.format(1), "/ok")
    with pytest.raises(JSONLimitError) as caught:
        check({"ok": {"x\udc00y": 1}})
    assert (caught.value.detail, caught.value.path) == (LONE.format(1), "/ok")


def test_a_lone_surrogate_nested_deep_is_refused_with_its_path():
    depth = MAX_DEPTH - 1
    error = refused(nested(depth, '{"\\ud801": 1}'))
    assert (error.detail, error.path) == (LONE.format(0), "/a" * depth)
    error = refused(nested(depth, '["", "\\udfff"]'))
    assert (error.detail, error.path) == (LONE.format(0), "/a" * depth + "/1")


def test_the_depth_bound_is_exact_on_the_fast_path():
    assert loads(nested(MAX_DEPTH - 1, "[]")) and loads(nested(MAX_DEPTH, "1"))
    assert loads(nested(3, "1"), max_depth=3)
    for text, max_depth, path in ((nested(MAX_DEPTH, "[]"), MAX_DEPTH, "/a" * MAX_DEPTH),
                                  (nested(MAX_DEPTH - 1, "[[]]"), MAX_DEPTH, "/a" * (MAX_DEPTH - 1) + "/0"),
                                  (nested(3, "[]"), 3, "/a/a/a")):
        with pytest.raises(JSONLimitError) as caught:
            loads(text, max_depth=max_depth)
        assert (caught.value.detail, caught.value.path) == (DEEP.replace(str(MAX_DEPTH), str(max_depth)), path)
        with pytest.raises(JSONLimitError) as caught:
            check(json.loads(text), max_depth=max_depth)
        assert caught.value.path == path


def test_a_lone_surrogate_and_a_value_too_deep_give_the_full_walks_error():
    """Both problems at once: the error the full walk meets first (last member first)."""
    text = '{"deep": ' + nested(MAX_DEPTH, "1") + ', "name": "\\ud800"}'
    assert refused(text).path == "/name"
    text = '{"name": "\\ud800", "deep": ' + nested(MAX_DEPTH, "1") + "}"
    assert refused(text).detail == DEEP


@pytest.mark.parametrize("text", [
    '{"a": "\ud800"}',  # a surrogate in the text itself, not escaped
    b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 (decoded with surrogatepass)
    '{"a": "\ud800"}'.encode("utf-16-le", "surrogatepass"),
    '{"a": "\udfff"}'.encode("utf-32", "surrogatepass"),
], ids=["text", "utf-8", "utf-16", "utf-32"])
def test_a_surrogate_that_is_not_escaped_is_refused(text):
    error = refused(text)
    assert (error.detail, error.path) == (LONE.format(0), "/a")


def test_an_escaped_backslash_before_ud800_is_text():
    assert loads('{"a": "\\\\ud800"}') == {"a": "\\ud800"}
    assert loads(b'{"a": "\\\\uD800", "b": "\xed\x9f\xbf"}') == {"a": "\\uD800", "b": "\ud7ff"}


def test_check_refuses_any_surrogate_in_a_built_value():
    for value, path in (({"a": ["ok", "\ud83d\ude00"]}, "/a/1"),  # a pair of code points: not encodable
                        ({"a": {"b": "caf\u00e9"}, "c": "\udc00"}, "/c"),
                        ("\ud800", "")):
        with pytest.raises(JSONLimitError) as caught:
            check(value)
        assert caught.value.path == path
    assert check({"a": ["caf\u00e9", "\U0001f600"], 1: "x", "\u00e9": {}})
    with pytest.raises(JSONLimitError) as caught:
        check({1: "x", "b": {2: "\ud800"}})
    assert caught.value.path == "/b/2"
