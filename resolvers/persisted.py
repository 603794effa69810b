"""Persisted queries: which document a GraphQL request runs when it names one instead of sending it.

**Automatic persisted queries** (Apollo's protocol, ``apq_enabled``): a client sends only
``extensions.persistedQuery = {"version": 1, "sha256Hash": h}``. Known ``h``: its document runs.
Unknown: the error ``PersistedQueryNotFound`` (``extensions.code`` ``PERSISTED_QUERY_NOT_FOUND``),
after which the client sends the document with the hash; the hash must be the document's SHA-256
(else 400), and once the document has parsed and validated it is kept under ``h`` — in the
shared cache (``cache_url`` Redis: every replica knows it) for ``apq_ttl_seconds``, or with
``memory://`` in a per-process store of at most ``apq_memory_entries`` documents and
``apq_memory_bytes`` in all (least recently used dropped: its hash is a miss again, and the
client sends the document once more). Documents longer than ``apq_max_bytes`` run but are not
kept. ``GET`` works with the hash alone (queries only). A failing cache never fails a request:
it is a miss.

**Trusted documents** (``trusted_documents``, see :mod:`resolvers.trusted_documents`): callers
without ``trusted_documents_bypass_scope`` run only listed documents — named by id
(``documentId`` or the hash) or sent as their exact text; anything else is refused with
``PERSISTED_QUERY_NOT_ALLOWED`` (403). Callers with the scope may run any document and use
automatic persisted queries.
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from aiocache.base import BaseCache

from resolvers.context import Caller
from resolvers.trusted_documents import TrustedDocuments, sha256_hex
from xreg.config import Settings
from xreg.errors import GraphQLRequestError

log = logging.getLogger("xreg.graphql")

NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
NOT_ALLOWED = "PERSISTED_QUERY_NOT_ALLOWED"
#: What a response to a persisted-query miss may never be: stored by a shared cache.
MISS_CACHE_CONTROL = "private, no-cache, must-revalidate"
_SHA256 = re.compile(r"(?:sha256:)?([0-9a-fA-F]{64})")


def not_found() -> GraphQLRequestError:
    """Apollo's miss: clients retry with the document (404; 200 for ``application/json``)."""
    return GraphQLRequestError(NOT_FOUND, "PersistedQueryNotFound", 404, 200,
                               {"Cache-Control": MISS_CACHE_CONTROL})


def not_supported() -> GraphQLRequestError:
    """Apollo's answer when persisted queries are off: clients stop sending hashes."""
    return GraphQLRequestError(NOT_SUPPORTED, "PersistedQueryNotSupported", 400, 200,
                               {"Cache-Control": MISS_CACHE_CONTROL})


def bad_request(message: str) -> GraphQLRequestError:
    return GraphQLRequestError("BAD_REQUEST", message, 400)


@dataclass(frozen=True)
class Document:
    """The document a request runs, and the hash to keep it under once it has run (APQ)."""

    text: str
    register: str | None = None


class _LocalStore:
    """Persisted queries of one process, least recently used dropped first: at most ``entries``
    documents of at most ``max_bytes`` in all (their UTF-8 size), each for ``ttl`` seconds."""

    def __init__(self, entries: int, max_bytes: int, ttl: float) -> None:
        self.entries = entries
        self.max_bytes = max_bytes
        self.ttl = ttl
        #: The UTF-8 size of the documents kept (never above ``max_bytes``).
        self.bytes = 0
        self._items: OrderedDict[str, tuple[float, str, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> str | None:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] < time.monotonic():
            self._drop(key)
            return None
        self._items.move_to_end(key)
        return item[1]

    def set(self, key: str, text: str) -> None:
        size = len(text.encode("utf-8", "surrogatepass"))
        if key in self._items:
            self._drop(key)
        if size > self.max_bytes:
            return
        self._items[key] = (time.monotonic() + self.ttl, text, size)
        self.bytes += size
        while len(self._items) > self.entries or self.bytes > self.max_bytes:
            self._drop(next(iter(self._items)))

    def _drop(self, key: str) -> None:
        self.bytes -= self._items.pop(key)[2]


class PersistedQueries:
    """Resolves the document of a request (see the module documentation)."""

    def __init__(self, settings: Settings, trusted: TrustedDocuments | None = None) -> None:
        self.settings = settings
        self.trusted = trusted
        self.local = _LocalStore(settings.apq_memory_entries, settings.apq_memory_bytes, settings.apq_ttl_seconds)

    @classmethod
    def from_settings(cls, settings: Settings) -> PersistedQueries:
        """With the trusted documents of ``settings`` loaded (``ValueError`` when the file is bad)."""
        trusted = TrustedDocuments.load(settings.trusted_documents) if settings.trusted_documents else None
        if trusted is not None:
            log.info("trusted documents: %d operations from %s", len(trusted), settings.trusted_documents)
        return cls(settings, trusted)

    # -- the APQ store --------------------------------------------------------------------------
    @staticmethod
    def key(sha256: str) -> str:
        return f"xreg:apq:{sha256}"

    async def lookup(self, sha256: str, shared: BaseCache | None) -> str | None:
        """The document kept under ``sha256`` (``shared``: the Redis cache, else this process)."""
        if shared is None:
            return self.local.get(sha256)
        try:
            found = await shared.get(self.key(sha256))
        except Exception as exc:
            log.warning("persisted query lookup failed: %s: %s", type(exc).__name__, exc)
            return None
        return found if isinstance(found, str) else None

    async def keep(self, sha256: str, text: str, shared: BaseCache | None) -> None:
        """Keep ``text`` under its hash (a document longer than ``apq_max_bytes`` is not kept)."""
        if len(text.encode("utf-8")) > self.settings.apq_max_bytes:
            log.info("persisted query %s not kept: longer than %d bytes", sha256[:12], self.settings.apq_max_bytes)
            return
        if shared is None:
            self.local.set(sha256, text)
            return
        try:
            await shared.set(self.key(sha256), text, ttl=self.settings.apq_ttl_seconds)
        except Exception as exc:
            log.warning("persisted query not kept: %s: %s", type(exc).__name__, exc)

    # -- requests ---------------------------------------------------------------------------------
    def bypasses(self, principal: Caller) -> bool:
        """Whether ``principal`` may run documents that are not trusted."""
        if self.trusted is None:
            return True
        scope = self.settings.trusted_documents_bypass_scope
        return scope is not None and principal.can(scope)

    async def resolve(self, params: dict[str, Any], principal: Caller, shared: BaseCache | None) -> Document:
        """The document ``params`` (a GraphQL-over-HTTP request) runs; :class:`GraphQLRequestError`
        when it names an unknown one, an untrusted one, or is malformed."""
        query = params.get("query")
        if query is not None and not isinstance(query, str):
            raise bad_request("query must be a string.")
        free = self.bypasses(principal)
        hashed = _persisted_hash(params.get("extensions"))
        document_id = params.get("documentId")
        if document_id is not None:
            if not isinstance(document_id, str) or not document_id:
                raise bad_request("documentId must be a non-empty string.")
            if query is not None:
                raise bad_request("Send either documentId or query, not both.")
            return Document(await self._named(document_id, free, shared))
        if hashed is not None:
            if self.trusted is None and not self.settings.apq_enabled:
                raise not_supported()
            if query is None:
                return Document(await self._named(hashed, free, shared))
            if sha256_hex(query) != hashed:
                raise bad_request("provided sha does not match query")
        if query is None or not query.strip():
            raise bad_request("The request has no query.")
        if not free and not (self.trusted is not None and self.trusted.allows(query)):
            raise GraphQLRequestError(
                NOT_ALLOWED, "This operation is not in the trusted documents; send a listed document "
                             "(by its id or its exact text).", 403)
        register = hashed if hashed is not None and free and self.settings.apq_enabled else None
        return Document(query, register)

    async def _named(self, ref: str, free: bool, shared: BaseCache | None) -> str:
        found = self.trusted.find(ref) if self.trusted is not None else None
        match = _SHA256.fullmatch(ref)
        if found is None and free and self.settings.apq_enabled and match:
            found = await self.lookup(match.group(1).lower(), shared)
        if found is None:
            raise not_found()
        return found


def _persisted_hash(extensions: Any) -> str | None:
    """``extensions.persistedQuery.sha256Hash`` (lower-cased), checked; ``None`` when absent."""
    if extensions is None:
        return None
    if not isinstance(extensions, dict):
        raise bad_request("extensions must be a JSON object.")
    persisted = extensions.get("persistedQuery")
    if persisted is None:
        return None
    if not isinstance(persisted, dict):
        raise bad_request("extensions.persistedQuery must be a JSON object.")
    if persisted.get("version") != 1:
        raise bad_request("Unsupported persisted query version")
    sha = persisted.get("sha256Hash")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", sha):
        raise bad_request("extensions.persistedQuery.sha256Hash must be a hex SHA-256.")
    return sha.lower()
