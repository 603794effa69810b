"""Free-text search over the local registry: what each entity is found by, and what a search asks.

The write path gives every stored state a text (:func:`search_text`, the store's
``Write.text``): a *title* — the entity's id, name and the last segment of its XID — and a
*body* — its description, documentation, labels, the ids of its group and resource, the
message type (``envelopemetadata.type.value``) and the protocol, envelope and formats. A
message is found by its materialised attributes (see ``xreg.registry.materialise``), so a
message that inherits its description is found by it. The stores index the text (SQLite FTS5,
MongoDB's text index) and rank matches, titles weighing more than bodies.
"""

from __future__ import annotations

import re
from typing import Any

from xreg.errors import UserInputError
from xreg.xid import Xid

_WORD = re.compile(r"\w+")
#: Attributes whose text a body holds.
BODY_ATTRIBUTES = ("description", "documentation", "protocol", "envelope", "dataschemaformat", "format", "usage",
                   "channel")
#: Longest search accepted (characters) and most words in one.
MAX_LENGTH = 500
MAX_WORDS = 16


def search_text(kind: str, xid: str, doc: dict[str, Any], derived: dict[str, Any] | None) -> tuple[str, str]:
    """The ``(title, body)`` a state is found by (``derived``: a message's materialisation)."""
    attrs = (doc.get("default") or {}) if kind == "resource" else doc
    if derived:
        attrs = {**attrs, **derived["attributes"]}
    parsed = Xid.parse(xid) if xid != "/" else None
    own = parsed.id if parsed is not None else doc.get("registryid")
    title = [str(own or ""), _text(attrs.get("name"))]
    body = [_text(attrs.get(a)) for a in BODY_ATTRIBUTES]
    if parsed is not None:
        body += [parsed.group_id or "", (parsed.resource_id or "") if parsed.level == "version" else ""]
    labels = attrs.get("labels")
    if isinstance(labels, dict):
        body += [f"{k} {_text(v)}" for k, v in labels.items()]
    metadata = attrs.get("envelopemetadata")
    if isinstance(metadata, dict):
        kind_of = metadata.get("type")
        body.append(_text(kind_of.get("value") if isinstance(kind_of, dict) else kind_of))
    return " ".join(t for t in title if t), " ".join(b for b in body if b)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(v for v in value if isinstance(v, str))
    return ""


def search_words(text: str) -> tuple[str, ...]:
    """The words of a search (every one must match); a search with none is refused."""
    if len(text) > MAX_LENGTH:
        raise UserInputError(f"a search is at most {MAX_LENGTH} characters long")
    found = tuple(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    if not found:
        raise UserInputError("a search needs at least one word (letters or digits)")
    if len(found) > MAX_WORDS:
        raise UserInputError(f"a search has at most {MAX_WORDS} words, not {len(found)}")
    return found
