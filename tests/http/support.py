"""Helpers of the HTTP API tests: settings with a writer and a reader key, the app with its
lifespan, clients through ASGI, problem-document assertions, and a real uvicorn server on
127.0.0.1 (a free port) for over-the-wire tests."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import httpx

from gateway.app import create_app
from gateway.auth import hash_key
from xreg.config import ApiKey, Settings

BASE = "http://gw.test/registry"
WRITE_KEY = "writer-key-" + "w" * 32
READ_KEY = "reader-key-" + "r" * 32


#: A small registry, written with ``POST /`` by the ``seeded`` fixture.
SEED: dict[str, Any] = {
    "messagegroups": {
        "orders": {
            "name": "Orders", "description": "Order events", "labels": {"team": "sales", "stage": "prod"},
            "messages": {
                "created": {"name": "OrderCreated", "description": "An order was *created*", "envelope": "CloudEvents/1.0",
                            "envelopemetadata": {"type": {"value": "com.example.order.created"}}},
                "cancelled": {"name": "OrderCancelled", "envelope": "CloudEvents/1.0", "labels": {"team": "billing"},
                              "envelopemetadata": {"type": {"value": "com.example.order.cancelled"}}},
            },
        },
        "Billing": {"name": "billing events", "labels": {"team": "billing"}, "priority": 2},
        "empty": {"priority": 10},
    },
    "schemagroups": {
        "sg1": {"name": "Schemas", "schemas": {
            "s1": {"versions": {
                "1.0": {"format": "JSONSchema/draft-07", "schema": {"type": "object"}, "createdat": "2024-01-01T00:00:00Z"},
                "2.0": {"format": "JSONSchema/draft-07", "schema": {"type": "string"}, "createdat": "2024-02-01T00:00:00Z"},
            }},
            "s2": {"format": "Binary/1.0", "schemabase64": "AAEC"},  # not a format the gateway checks
        }},
    },
    "endpoints": {"e1": {"usage": ["producer"], "envelope": "CloudEvents/1.0", "protocol": "HTTP", "priority": 1}},
}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings of a test gateway: its own data directory, a writer and a reader key."""
    values: dict[str, Any] = dict(
        data_dir=tmp_path, registry_id="test", base_url=BASE,
        api_keys=[ApiKey(name="writer", sha256=hash_key(WRITE_KEY), scopes=["read", "write"]),
                  ApiKey(name="reader", sha256=hash_key(READ_KEY), scopes=["read"])],
    )
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def running(settings: Settings):
    """The app of ``settings`` with its lifespan (registry opened) running."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        yield app


def asgi_client(app, key: str | None = WRITE_KEY) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test",
                             headers=bearer(key) if key else {})


async def revision(app) -> int:
    return await app.state.registry.store.current_revision()


def assert_problem(response: httpx.Response, status: int, type_: str) -> dict[str, Any]:
    """``response`` is the problem document of error ``type_`` with HTTP ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["type"].endswith("#" + type_), body
    assert body["title"] and body["status"] == status
    assert body["instance"] == response.headers["x-request-id"]
    assert "xregistry-root" in response.headers.get("link", "")
    return body


