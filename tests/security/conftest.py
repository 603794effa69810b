"""Fixtures of the security tests: those of the HTTP API tests (the gateway app on a fresh SQLite
file, clients through ASGI, a real uvicorn server) and the federation tests' remote sources."""

from tests.federation.conftest import open_remote
from tests.http.conftest import anon, app, client, live, settings

__all__ = ["anon", "app", "client", "live", "open_remote", "settings"]
