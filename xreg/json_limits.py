"""One bound for every JSON value the gateway takes in: request bodies, GraphQL variables and
attribute values, imported documents, schema documents, remote answers.

:func:`loads` parses JSON text and :func:`check` checks a value already parsed (a GraphQL
literal, a document built in code); both refuse, with :class:`JSONLimitError` (a
``ValueError``), a value nested deeper than :data:`MAX_DEPTH` and a string that is not valid
Unicode (a lone surrogate such as ``"\\ud800"``, which no store can encode). Neither recurses:
a hostile value costs a bounded walk, never a ``RecursionError``. :func:`check_attributes`
applies the one depth rule to an entity's attributes: :data:`MAX_VALUE_DEPTH`, the document
bound less the nesting a registry document adds around them. :func:`copy` copies a JSON
value without recursion either, so an entity stored deeper than the bound (by an older gateway)
can still be read and deleted.

Both first take a fast path that can only say "within the bounds": one level of containers at a
time, no paths built. :func:`loads` skips the strings when its text cannot decode to a surrogate
(no ``\\ud8`` to ``\\udf`` escape in either case, no surrogate in the text itself, UTF-8 bytes);
:func:`check` encodes all of them at once. A value the fast path does not clear goes through the
full walk, which raises the same error, with the same path, as it always has.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deepest nesting accepted (objects and arrays) in a document: a request body, an imported file,
#: a remote's answer. Real xRegistry documents stay below 20; JSON Schema documents below 40.
MAX_DEPTH = 64
#: The containers a registry document puts around an attribute value of a version, the deepest
#: entity in any document the gateway writes: the registry, a group map, the group, a resource map,
#: the resource, its versions map, the version (``/export``, ``PUT /`` bodies, ``?inline`` answers
#: a federating gateway reads).
ENTITY_NESTING = 7
#: Deepest attribute value (and JSON document kept as JSON) accepted: the one depth rule — what the
#: API accepts can always be exported, imported again and read by a federating gateway, whose
#: documents are bounded by :data:`MAX_DEPTH`.
MAX_VALUE_DEPTH = MAX_DEPTH - ENTITY_NESTING


class JSONLimitError(ValueError):
    """A JSON value outside the bounds; ``detail`` says which, ``path`` where (JSON pointer)."""

    def __init__(self, detail: str, path: str = "") -> None:
        super().__init__(detail + (f" (at {path})" if path else ""))
        self.detail = detail
        self.path = path


#: An escape that may decode to a surrogate (``\\ud800`` to ``\\udfff``), in any case; also matches
#: an escaped backslash before ``ud8...`` (a false alarm costs only the full walk).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
#: A surrogate itself: in text, or UTF-8-encoded in bytes (``json.loads`` decodes bytes with
#: ``surrogatepass``).
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")
_SURROGATE_UTF8 = re.compile(rb"\xed[\xa0-\xbf]")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON text (``NaN`` and ``Infinity`` refused) within the bounds."""
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise JSONLimitError(f"the JSON is nested more than {max_depth} levels deep") from None
    if _may_hold_surrogate(text) or not _nested_within(value, max_depth):
        _walk(value, max_depth)
    return value


def check(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` when it is within the bounds; raises :class:`JSONLimitError` otherwise."""
    if not _within(value, max_depth):
        _walk(value, max_depth)
    return value


def _may_hold_surrogate(text: str | bytes) -> bool:
    """Whether parsing ``text`` may yield a string holding a surrogate (never False when it may)."""
    if isinstance(text, str):
        return ("\\" in text and _SURROGATE_ESCAPE.search(text) is not None) or \
            (not text.isascii() and _SURROGATE_CHAR.search(text) is not None)
    if json.detect_encoding(text) not in ("utf-8", "utf-8-sig"):
        return True  # (UTF-16 and UTF-32 text: the full walk)
    return (b"\\" in text and _SURROGATE_ESCAPE_BYTES.search(text) is not None) or \
        (b"\xed" in text and _SURROGATE_UTF8.search(text) is not None)


def _nested_within(value: Any, max_depth: int) -> bool:
    """Whether no container of ``value`` is ``max_depth`` levels deep: one level at a time."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(max_depth):
        if not level:
            return True
        level = [item for node in level for item in (node.values() if isinstance(node, dict) else node)
                 if isinstance(item, (dict, list))]
    return not level


def _within(value: Any, max_depth: int) -> bool:
    """:func:`_nested_within`, and every string (key or value) free of surrogates: all of them
    joined and encoded once (UTF-8 refuses any surrogate, paired or not)."""
    texts: list[Any] = [value] if isinstance(value, str) else []
    level = [value] if isinstance(value, (dict, list)) else []
    for depth in range(max_depth + 1):
        if not level:
            break
        if depth == max_depth:
            return False
        below: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                texts.extend(node)
            for item in node.values() if isinstance(node, dict) else node:
                if isinstance(item, (dict, list)):
                    below.append(item)
                elif isinstance(item, str):
                    texts.append(item)
        level = below
    try:
        joined = "".join(texts)
    except TypeError:
        return False  # (a key that is not a string: the full walk)
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk(value: Any, max_depth: int) -> None:
    """The full walk: raises the error for the first value outside the bounds, with its path."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            _unicode(node, path)
        elif isinstance(node, dict):
            if depth >= max_depth:
                raise JSONLimitError(f"the JSON is nested more than {max_depth} levels deep", path)
            for key, item in node.items():
                if isinstance(key, str):
                    _unicode(key, path)
                if isinstance(item, (dict, list, str)):
                    stack.append((item, depth + 1, f"{path}/{key}"))
        elif isinstance(node, list):
            if depth >= max_depth:
                raise JSONLimitError(f"the JSON is nested more than {max_depth} levels deep", path)
            stack.extend((item, depth + 1, f"{path}/{i}") for i, item in enumerate(node)
                         if isinstance(item, (dict, list, str)))


def check_attributes(attrs: dict[str, Any]) -> dict[str, Any]:
    """``attrs`` (an entity's attributes) when each value is within :data:`MAX_VALUE_DEPTH` and
    the bounds of :func:`check`; raises :class:`JSONLimitError` (``path`` from the attribute)."""
    for name, value in attrs.items():
        _unicode(name, "")
        try:
            check(value, max_depth=MAX_VALUE_DEPTH)
        except JSONLimitError as exc:
            detail = exc.detail.replace("the JSON is", "the value is")
            raise JSONLimitError(detail, f"/{name}{exc.path}") from None
    return attrs


def _unicode(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JSONLimitError(f"a string is not valid Unicode (a lone surrogate at character {exc.start})",
                             path) from None


def copy(value: Any) -> Any:
    """A deep copy of a JSON value, without recursion (any depth)."""
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, (dict, list)):
                fresh: Any = {} if isinstance(item, dict) else []
                stack.append((item, fresh))
                item = fresh
            if isinstance(target, dict):
                target[key] = item
            else:
                target.append(item)
    return root
