"""Entity stores: the :class:`~xreg.storage.base.Store` interface and its backends.

:func:`create_store` picks a backend from a URL: ``sqlite:///relative/path.db`` or
``sqlite:////absolute/path.db`` (:class:`~xreg.storage.sqlite.SQLiteStore`), and
``mongodb://`` / ``mongodb+srv://`` (:class:`~xreg.storage.mongo.MongoStore`).
"""

from __future__ import annotations

from xreg.storage.base import Store
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

SQLITE_PREFIX = "sqlite:///"


def create_store(url: str) -> Store:
    """The store a URL names; ``ValueError`` for an unsupported or malformed URL."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        path = url[len(SQLITE_PREFIX):] if url.startswith(SQLITE_PREFIX) else ""
        if not path:
            raise ValueError(f"malformed SQLite store URL {url!r}: use sqlite:///relative.db or sqlite:////abs/path.db")
        return SQLiteStore(path)
    if scheme in ("mongodb", "mongodb+srv"):
        return MongoStore(url)
    raise ValueError(
        f"unsupported store URL {url!r}: expected sqlite:///<path>, mongodb://... or mongodb+srv://..."
    )
