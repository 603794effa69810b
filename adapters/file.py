"""A static registry: one xRegistry document, from a file or a URL, served read-only.

The document is read (JSON or YAML; by URL: JSON), normalised to 1.0-rc4 like an import
(``xreg.documents``) and loaded into a registry of its own on an SQLite file in a temporary
directory — so it is queried by the same engine as the local registry (filters, sorts, keyset
pages, history-free reads): a :class:`FileSource` holds a :class:`~adapters.local.LocalSource`
over that copy and hands it every read; it has no writes (``action_not_supported``).
A document that carries ``modelsource`` (as ``/export`` writes it) runs on that model, as the local
registry would: it is checked and installed before the entities (an invalid one fails the load),
and its groups and resources are served through the generic GraphQL types. A document that only
declares a ``model`` extends the gateway's built-in model with its group types.

:meth:`FileSource.refresh` loads the document again when it changed (the file's modification
time; a URL is fetched anew); the previous copy serves until the new one is complete, and is
removed at the next refresh (or on close).
"""

from __future__ import annotations

import builtins
import logging
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.base import ChangeItem, Entity, Listing, RegistrySource, SourcePage, SourceStatus, SourceUnavailable
from adapters.http_client import RemoteClient
from adapters.local import LocalSource
from xreg.config import RegistryConfig
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore

log = logging.getLogger("xreg.file")


class FileSource(RegistrySource):
    """A document served read-only (see the module documentation)."""

    kind = "file"
    writable = False
    searchable = True

    def __init__(self, config: RegistryConfig) -> None:
        self.config = config
        self.id = config.id
        self.base_url = config.base_url or ""
        self.model = RegistryModel.default()
        #: The loaded copy (``None`` until a load succeeded), read through :attr:`_reader`.
        self.registry: LocalRegistry | None = None
        self._reader: LocalSource | None = None
        self._dir: str | None = None
        self._stamp: Any = None
        self._retired: list[tuple[LocalRegistry, str | None]] = []
        self.loaded_at: float | None = None
        self.last_error: str | None = None
        self.last_error_at: float | None = None

    @property
    def origin(self) -> str:
        """Where the document comes from (path or URL)."""
        return str(self.config.path or self.config.url)

    async def open(self) -> None:
        await self.refresh()
        if self.registry is None:
            raise SourceUnavailable(self.id, f"could not load {self.origin}: {self.last_error}")

    async def refresh(self) -> bool:
        """Load the document again if it changed; ``True`` when a new copy now serves."""
        try:
            stamp = self._file_stamp()
            if stamp is not None and stamp == self._stamp and self.registry is not None:
                return False
            document = await self._read()
            registry, directory = await self._load(document)
        except (XRegistryError, OSError) as exc:
            self.last_error, self.last_error_at = f"{self.origin}: {getattr(exc, 'title', None) or exc}", time.time()
            log.error("registry %s: %s", self.id, self.last_error)
            return False
        for retired in self._retired:  # replaced a refresh ago: no read can still be using it
            await _dispose(*retired)
        self._retired = [(self.registry, self._dir)] if self.registry is not None else []
        self.registry, self.model, self._dir = registry, registry.model, directory
        self._reader = LocalSource(registry)
        self._stamp, self.loaded_at = stamp, time.time()
        return True

    async def close(self) -> None:
        for retired in [*self._retired, (self.registry, self._dir)]:
            await _dispose(*retired)
        self.registry, self._reader, self._dir, self._retired = None, None, None, []

    def status(self) -> SourceStatus:
        return SourceStatus(self.id, self.kind, self.origin, healthy=self.registry is not None,
                            last_success=self.loaded_at, last_error=self.last_error, last_error_at=self.last_error_at)

    def _file_stamp(self) -> Any:
        if self.config.path is None:
            return None  # a URL: fetched again on every refresh
        st = Path(self.config.path).stat()
        return (st.st_mtime_ns, st.st_size)

    async def _read(self) -> dict[str, Any]:
        if self.config.path is not None:
            return read_document(Path(self.config.path))
        client = RemoteClient(self.config)
        try:
            answer = await client.get(self.config.url or "")
        finally:
            await client.aclose()
        if answer.status == 404:
            raise XRegistryError("not_found", "/", detail=f"{self.config.url} answered 404")
        return answer.body

    async def _load(self, document: dict[str, Any]) -> tuple[LocalRegistry, str]:
        doc, _ = normalise(document, strict=False)
        model = RegistryModel.default()
        if isinstance(doc.get("model"), dict) and doc["model"].get("groups"):
            model = RegistryModel.merge([model.to_json(), doc["model"]])
        directory = tempfile.mkdtemp(prefix="xreg-file-")
        registry = LocalRegistry(SQLiteStore(Path(directory) / "registry.db"), model=model, registry_id=self.id,
                                 name=doc.get("name") or self.id, base_url=self.base_url)
        try:
            await registry.open()
            await registry.apply_document(doc, note=f"load {self.origin}")
        except BaseException:
            await _dispose(registry, directory)
            raise
        return registry, directory

    # -- reads: the loaded copy's ---------------------------------------------------------------
    def _copy(self) -> LocalSource:
        if self._reader is None:
            raise SourceUnavailable(self.id, f"the document {self.origin} is not loaded ({self.last_error})")
        return self._reader

    @property
    def instance_id(self) -> str | None:
        """The loaded copy's: each load of the document is a registry instance of its own."""
        return self._reader.instance_id if self._reader is not None else None

    async def revision(self) -> int:
        return await self._copy().revision()

    async def check_revision(self, as_of: int | None) -> None:
        await self._copy().check_revision(as_of)

    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, Entity]:
        return await self._copy().get_many(xids, as_of)

    async def list(self, listing: Listing, parent: str | None = None) -> SourcePage:
        return await self._copy().list(listing, parent)

    async def count(self, listing: Listing, parent: str | None = None) -> int:
        return await self._copy().count(listing, parent)

    async def list_children(self, parents: Sequence[str], listing: Listing) -> dict[str, SourcePage]:
        return await self._copy().list_children(parents, listing)

    async def complete(self, entities: Sequence[Entity]) -> builtins.list[dict[str, Any]]:
        return await self._copy().complete(entities)

    async def changes(
        self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
        limit: int = 100, after: str | None = None, by_revision: bool = False,
    ) -> tuple[builtins.list[ChangeItem], bool]:
        return await self._copy().changes(since, until=until, ctypes=ctypes, limit=limit, after=after,
                                          by_revision=by_revision)


async def _dispose(registry: LocalRegistry | None, directory: str | None) -> None:
    if registry is not None:
        try:
            await registry.close()
        except Exception:
            log.exception("closing a document copy failed")
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)

