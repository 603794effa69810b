"""Patterns of untrusted schemas (``xreg.formats.regex``): RE2 matches in linear time, syntax
RE2 lacks is refused with the reason, and the ``regex`` format accepts what either engine
compiles and leaves non-strings alone."""

from __future__ import annotations

import pytest

from xreg.formats import regex
from xreg.formats.core import validate


def test_a_catastrophic_pattern_matches_in_linear_time():
    assert regex.search("^(a+)+$", "a" * 100_000) is True
    assert regex.search("^(a+)+$", "a" * 100_000 + "!") is False


@pytest.mark.parametrize("pattern", ["(?=a)a", r"(a)\1", "a{1000}{1000}", "x" * (regex.MAX_PATTERN_LENGTH + 1)])
def test_what_re2_does_not_evaluate_is_refused_with_the_reason(pattern):
    with pytest.raises(regex.UnsupportedPattern) as refused:
        regex.compile_pattern(pattern)
    assert "RE2" in str(refused.value) and refused.value.reason


def test_the_regex_format_takes_either_engine_and_ignores_non_strings():
    assert regex.is_regex("(?=a)a") and regex.is_regex("^a+$") and not regex.is_regex("[")
    assert regex.is_regex(["not", "a", "string"]) and regex.is_regex(3)


def test_a_schema_whose_pattern_re2_lacks_is_valid_with_a_warning():
    result = validate("JsonSchema/draft-07", {"properties": {"a": {"pattern": "(?=x)x"}}})
    assert result.valid
    assert [w.path for w in result.warnings] == ["/properties/a/pattern"] and "RE2" in result.warnings[0].message


def test_a_pattern_that_is_not_a_string_is_a_violation_not_a_crash():
    result = validate("JsonSchema/draft-04", {"properties": {"p": {"pattern": ["x"]}}})
    assert result.validated and [v.path for v in result.violations] == ["/properties/p/pattern"]
