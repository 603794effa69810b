"""Fixtures of the security tests: the gateway app on a fresh SQLite file and clients through
ASGI (those of the HTTP API tests)."""

from tests.http.conftest import anon, app, client, settings

__all__ = ["anon", "app", "client", "settings"]
