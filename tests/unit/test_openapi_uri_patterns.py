"""The OpenAPI document's patterns for URI attributes accept exactly what the server accepts
(``xreg/registry/checker.py``), so a generated request is refused if and only if its URI
is: a looser pattern lets schemathesis's negative cases through (found as "schema-violating
request accepted" for a `documentation` URL with non-ASCII characters), a stricter one hides
values the server keeps."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.http_api.openapi import _URI_PATTERN, _URI_TEMPLATE_PATTERN
from xreg.registry.checker import _uri_problem

URI = re.compile(_URI_PATTERN)
TEMPLATE = re.compile(_URI_TEMPLATE_PATTERN)

#: characters and pieces around every rule: delimiters, forbidden characters, percent-encodings,
#: schemes, template expressions, non-ASCII (kept by the server)
PIECES = st.sampled_from([*"aZ09:/?#%{}<> \"\\^`|+.-_~!$&'()*,;=@[]\x00\x7f", "ü", "\U000f712c", "%41", "%4",
                          "http:", "{a}", "{+b,c:2}", "{1}", "{%41}"])
TEXTS = st.lists(PIECES, max_size=10).map("".join)


@settings(max_examples=3000, derandomize=True)
@given(TEXTS)
def test_the_uri_pattern_is_the_servers_rule(text: str):
    assert bool(URI.match(text)) == (_uri_problem(text) is None)


@settings(max_examples=3000, derandomize=True)
@given(TEXTS)
def test_the_uri_template_pattern_is_the_servers_rule(text: str):
    assert bool(TEMPLATE.match(text)) == (_uri_problem(text, template=True) is None)


def test_examples():
    assert URI.match("https://example.com/a?b=c#d") and URI.match("\U000f712c!") and URI.match("ü/ä")
    assert not URI.match("1a:b") and not URI.match("a b") and not URI.match("%zz") and not URI.match("x{y}")
    assert TEMPLATE.match("https://example.com/{id}") and not TEMPLATE.match("https://example.com/{")
