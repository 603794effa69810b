"""Regular expressions from untrusted schemas, evaluated in linear time with RE2 (``google-re2``).

JSON Schema's ``pattern``, ``patternProperties`` and ``regex`` format, and the ``patternProperties``
the compatibility rules look at, are matched here, never with Python's backtracking ``re``: RE2
runs in time linear in the subject, so ``^(a+)+$`` against ``aaaa…a!`` costs microseconds.

RE2 lacks some syntax (look-around, back-references, possessive quantifiers). Such a pattern is
not evaluated at all: :func:`compile_pattern` raises :class:`UnsupportedPattern`, the schema is
accepted with a warning (see :func:`unsupported_patterns`), and a payload checked against it is
refused with that reason (``validated: false``). A pattern whose compiled program would exceed
:data:`MAX_PROGRAM_BYTES` is refused the same way.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import re2

#: Longest pattern compiled (characters).
MAX_PATTERN_LENGTH = 8192
#: Memory RE2 may use for one compiled pattern (its program and DFA cache), in bytes.
MAX_PROGRAM_BYTES = 8 << 20

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = MAX_PROGRAM_BYTES


class UnsupportedPattern(ValueError):
    """A pattern RE2 does not evaluate: ``reason`` says why."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"the pattern {pattern[:200]!r} is not evaluated by the gateway's linear-time "
                         f"regular expression engine (RE2): {reason}")
        self.pattern = pattern
        self.reason = reason


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (cached), or :class:`UnsupportedPattern`."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UnsupportedPattern(pattern, f"longer than {MAX_PATTERN_LENGTH} characters")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        detail = e.args[0] if e.args else str(e)
        raise UnsupportedPattern(pattern, detail.decode("utf-8", "replace") if isinstance(detail, bytes)
                                 else str(detail)) from None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (JSON Schema's unanchored matching)."""
    return compile_pattern(pattern).search(text) is not None


def is_regex(pattern: Any) -> bool:
    """The ``regex`` format: RE2 compiles it, or (syntax RE2 lacks) Python's ``re`` does; compiling
    is linear in either engine, only matching with ``re`` is not. A value that is not a string
    is not the format's concern (JSON Schema formats apply to strings only)."""
    if not isinstance(pattern, str):
        return True
    try:
        compile_pattern(pattern)
        return True
    except UnsupportedPattern:
        pass
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


#: Keywords whose value is a pattern, and those whose value's keys are patterns.
PATTERN_KEYWORDS = frozenset({"pattern"})
PATTERN_KEY_KEYWORDS = frozenset({"patternProperties"})
# Keywords whose values are data, not subschemas.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})


def unsupported_patterns(schema: Any) -> list[tuple[str, UnsupportedPattern]]:
    """``(JSON pointer, problem)`` for each pattern of a JSON Schema that RE2 cannot evaluate
    but that is a valid regular expression otherwise (an invalid one is the meta-schema's
    violation). Iterative: a deep document costs a bounded walk."""
    found: list[tuple[str, UnsupportedPattern]] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                where = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
                if key in _DATA_KEYWORDS:
                    continue
                if key in PATTERN_KEYWORDS and isinstance(value, str):
                    _note(value, where, found)
                elif key in PATTERN_KEY_KEYWORDS and isinstance(value, dict):
                    for pattern in value:
                        _note(pattern, f"{where}/{pattern.replace('~', '~0').replace('/', '~1')}", found)
                stack.append((value, where))
        elif isinstance(node, list):
            stack.extend((v, f"{path}/{i}") for i, v in enumerate(node))
    found.sort(key=lambda f: f[0])
    return found


def _note(pattern: str, where: str, found: list[tuple[str, UnsupportedPattern]]) -> None:
    try:
        compile_pattern(pattern)
    except UnsupportedPattern as e:
        if is_regex(pattern):
            found.append((where, e))
