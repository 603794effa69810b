"""Trusted documents: the allowlist of GraphQL operations a deployment accepts (``trusted_documents``).

The file is what the client tooling produces at build time, in either format:

* Apollo's persisted query manifest (``generate-persisted-query-manifest``):
  ``{"format": "apollo-persisted-query-manifest", "version": 1,
  "operations": [{"id", "name", "type", "body"}]}``;
* GraphQL Codegen's client preset ``persisted-documents.json`` (also Relay's
  ``persisted_queries.json``): ``{"<hash>": "<document>"}``.

A request names a listed document by its id (``documentId``, or the id as
``extensions.persistedQuery.sha256Hash``) or by the SHA-256 of its text, or sends the text
itself, which is accepted when it is exactly a listed document's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

APOLLO_FORMAT = "apollo-persisted-query-manifest"
_TYPES = frozenset({"query", "mutation", "subscription"})


def sha256_hex(text: str) -> str:
    """The hex SHA-256 of ``text`` as UTF-8 (Apollo's ``sha256Hash``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TrustedDocuments:
    """The allowlist: documents by id and by the SHA-256 of their text."""

    def __init__(self, by_id: dict[str, str]) -> None:
        self.by_id = dict(by_id)
        self.by_hash = {sha256_hex(body): body for body in self.by_id.values()}

    def __len__(self) -> int:
        return len(self.by_id)

    def find(self, ref: str) -> str | None:
        """The document an id or hash names (``sha256:<hex>`` accepted), or ``None``."""
        found = self.by_id.get(ref)
        if found is None:
            found = self.by_hash.get(ref.removeprefix("sha256:").lower())
        return found

    def allows(self, text: str) -> bool:
        """Whether ``text`` is exactly one of the listed documents."""
        return sha256_hex(text) in self.by_hash

    @classmethod
    def parse(cls, document: Any, where: str = "trusted documents") -> TrustedDocuments:
        """The allowlist of a manifest already parsed; ``ValueError`` naming the problem."""
        if not isinstance(document, dict):
            raise ValueError(f"{where}: expected a JSON object (an Apollo manifest or {{hash: document}})")
        if "format" in document or "operations" in document:
            return cls(_apollo(document, where))
        bad = [k for k, v in document.items() if not isinstance(v, str) or not v.strip()]
        if bad:
            raise ValueError(f"{where}: the document of {bad[0]!r} is not a non-empty string")
        return cls(document)

    @classmethod
    def load(cls, path: Path) -> TrustedDocuments:
        """The allowlist in the file ``path``; ``ValueError`` naming the file and the problem."""
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"trusted_documents {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ValueError(f"trusted_documents {path}: not JSON ({exc})") from None
        return cls.parse(document, f"trusted_documents {path}")


def _apollo(document: dict[str, Any], where: str) -> dict[str, str]:
    if document.get("format") != APOLLO_FORMAT or document.get("version") != 1:
        raise ValueError(f"{where}: expected format {APOLLO_FORMAT!r} version 1, got "
                         f"{document.get('format')!r} version {document.get('version')!r}")
    operations = document.get("operations")
    if not isinstance(operations, list):
        raise ValueError(f"{where}: 'operations' must be a list")
    out: dict[str, str] = {}
    for n, op in enumerate(operations):
        if not isinstance(op, dict) or not isinstance(op.get("id"), str) or not op["id"]:
            raise ValueError(f"{where}: operation {n} has no id")
        if not isinstance(op.get("body"), str) or not op["body"].strip():
            raise ValueError(f"{where}: operation {op['id']!r} has no body")
        if op.get("type") is not None and op["type"] not in _TYPES:
            raise ValueError(f"{where}: operation {op['id']!r} has an unknown type {op['type']!r}")
        out[op["id"]] = op["body"]
    return out
