"""Reading a Version's document for a format, its digest, and the bounded cache of analyses.

A document reaches the validators as the registry holds it: ``bytes`` (raw content, e.g. from
``<RESOURCE>base64``), ``str`` (a text document inlined as a JSON string, as Protobuf and XSD
documents are), any other JSON value (a JSON document inlined as itself), or ``None`` (no
document). core/model.md ("validateformat") makes no document, an empty document and
``hasdocument: false`` the same case: every format here treats it as a violation ("the document
is empty"), since none of them defines an empty schema.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from xreg import json_limits
from xreg.formats.model import Violation

EMPTY = Violation("", "the document is empty")

#: Deepest JSON nesting read (the evaluator's workers set it from ``XREG_EVAL_MAX_DEPTH``).
MAX_DEPTH = json_limits.MAX_DEPTH

#: Held while a validator records Python warnings (``warnings.catch_warnings`` is process-wide).
WARNINGS_LOCK = threading.Lock()

T = TypeVar("T")


class DocumentError(Exception):
    """The document cannot be read as the format's kind of document (JSON or text)."""

    def __init__(self, violation: Violation):
        super().__init__(str(violation))
        self.violation = violation


def _is_empty(document: Any) -> bool:
    return document is None or (isinstance(document, (str, bytes)) and not document.strip())


def load_text(document: Any) -> str:
    """The document as text: ``str`` as is, ``bytes`` decoded as UTF-8."""
    if _is_empty(document):
        raise DocumentError(EMPTY)
    if isinstance(document, bytes):
        try:
            return document.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DocumentError(Violation("", f"the document is not UTF-8 text (byte {e.start})")) from e
    if isinstance(document, str):
        return document
    raise DocumentError(Violation("", f"expected a text document, got a JSON {_json_kind(document)}"))


def load_json(document: Any) -> Any:
    """The document as a JSON value.

    ``bytes`` are JSON text. A ``str`` is JSON text when it starts like a JSON object, array,
    string, number or literal; any other string (``string``, ``com.example.Type``) is taken as the
    JSON string value itself, which is how a bare Avro type name arrives inline. Other values are
    JSON values already."""
    if _is_empty(document):
        raise DocumentError(EMPTY)
    if isinstance(document, bytes):
        text = load_text(document)
    elif isinstance(document, str):
        text = document
        if not _looks_like_json(text):
            return text
    else:
        return document
    try:
        return json_limits.loads(text, max_depth=MAX_DEPTH)
    except json_limits.JSONLimitError as e:
        raise DocumentError(Violation(e.path, e.detail)) from e
    except json.JSONDecodeError as e:
        raise DocumentError(Violation("", f"the document is not JSON: {e.msg}", e.lineno, e.colno)) from e


def _looks_like_json(text: str) -> bool:
    head = text.lstrip()[:5]
    return bool(head) and (head[0] in '{["-0123456789' or head.startswith(("true", "false", "null")))


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def digest(document: Any) -> str:
    """A SHA-256 digest identifying the document's content (text and bytes by their UTF-8
    bytes, other JSON values by their canonical JSON serialisation)."""
    if document is None:
        data = b"none:"
    elif isinstance(document, bytes):
        data = b"bytes:" + document
    elif isinstance(document, str):
        data = b"bytes:" + document.encode("utf-8", "surrogatepass")
    else:
        data = b"json:" + json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     default=str).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


class LRUCache(Generic[T]):
    """A thread-safe least-recently-used map with at most ``maxsize`` entries."""

    def __init__(self, maxsize: int):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self._items: OrderedDict[Any, T] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: Any, compute: Callable[[], T]) -> T:
        """The cached value for ``key``, computing and storing it on a miss."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
            self.misses += 1
        value = compute()
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        """Drop every entry and reset the hit and miss counts."""
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)
