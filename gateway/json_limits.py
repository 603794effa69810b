"""One bound for every JSON value the gateway takes in: request bodies, GraphQL variables and
attribute values, imported documents, schema documents, remote answers.

:func:`loads` parses JSON text and :func:`check` checks a value already parsed (a GraphQL
literal, a document built in code); both refuse, with :class:`JSONLimitError` (a
``ValueError``), a value nested deeper than :data:`MAX_DEPTH` and a string that is not valid
Unicode (a lone surrogate such as ``"\\ud800"``, which no store can encode). Neither recurses:
a hostile value costs a bounded walk, never a ``RecursionError``. :func:`copy` copies a JSON
value without recursion either, so an entity stored deeper than the bound (by an older gateway)
can still be read and deleted.
"""

from __future__ import annotations

import json
from typing import Any

#: Deepest nesting accepted (objects and arrays). Real xRegistry documents stay below 20; JSON
#: Schema documents below 40.
MAX_DEPTH = 64


class JSONLimitError(ValueError):
    """A JSON value outside the bounds; ``detail`` says which, ``path`` where (JSON pointer)."""

    def __init__(self, detail: str, path: str = "") -> None:
        super().__init__(detail + (f" (at {path})" if path else ""))
        self.detail = detail
        self.path = path


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON text (``NaN`` and ``Infinity`` refused) within the bounds."""
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise JSONLimitError(f"the JSON is nested more than {max_depth} levels deep") from None
    check(value, max_depth=max_depth)
    return value


def check(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` when it is within the bounds; raises :class:`JSONLimitError` otherwise."""
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
    return value


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
