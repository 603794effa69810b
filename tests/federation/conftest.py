"""Fixtures of the federation tests: three gateways of our own serving different real documents
(the remotes), the faulty registry, the canary, the resetting socket — started once per session
on 127.0.0.1 — and remote sources over them with an in-memory cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.cache import RegistryCache, create_backend
from adapters.clock import SYSTEM_CLOCK, Clock
from adapters.remote import RemoteSource
from tests.corpus import XREG_DATA
from tests.federation.servers import GatewayServer, ResettingServer, Served, bound_socket, canary_app, faulty_app
from xreg.config import RegistryConfig

#: The remotes: registry id → the documents it serves.
REMOTES = {
    "erp": ["contoso-erp-jsons07.xreg.json"],
    "iot": ["mqtt-sparkplugB.xreg.json", "inkjet-proto3.xreg.json", "lightbulb-avro.xreg.json"],
    "transit": ["rts__gtfs.xreg.json"],
}


@pytest.fixture(scope="session")
def remotes(tmp_path_factory) -> Iterator[dict[str, GatewayServer]]:
    servers = {rid: GatewayServer(rid, docs, tmp_path_factory.mktemp(rid)) for rid, docs in REMOTES.items()}
    try:
        for server in servers.values():
            server.start()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(autouse=True)
def _fresh_remotes(request) -> None:
    """Every test starts with remotes that count from zero, without delay, with all capabilities."""
    if "remotes" in request.fixturenames:
        for server in request.getfixturevalue("remotes").values():
            server.wrapper.reset()


@pytest.fixture(scope="session")
def canary() -> Iterator[tuple[Served, Any]]:
    app, hits = canary_app()
    served = Served(app, bound_socket()).start()
    try:
        yield served, hits
    finally:
        served.stop()


@pytest.fixture(scope="session")
def faulty(canary) -> Iterator[tuple[Served, Any]]:
    app, hits = faulty_app(canary[0].origin)
    served = Served(app, bound_socket()).start()
    try:
        yield served, hits
    finally:
        served.stop()


@pytest.fixture(scope="session")
def resetting() -> Iterator[ResettingServer]:
    server = ResettingServer().start()
    try:
        yield server
    finally:
        server.stop()


def remote_config(rid: str, url: str, **overrides: Any) -> RegistryConfig:
    """A remote's settings with a test-sized back-off and timeouts far above any answer's time on a
    loaded machine (a test about timeouts passes its own). The remotes here are gateways,
    which offer their event log; these tests count the requests reads make and the TTL's effects,
    so the log is not followed (tests/federation/test_remote_events.py follows it)."""
    values: dict[str, Any] = dict(id=rid, kind="xregistry", url=url, backoff_seconds=0.01, max_backoff_seconds=2.0,
                                  timeouts={"connect": 30.0, "read": 60.0, "total": 120.0}, follow_events=False,
                                  probe_seconds=0)
    values.update(overrides)
    return RegistryConfig(**values)


def make_remote(config: RegistryConfig, backend=None, clock: Clock = SYSTEM_CLOCK) -> RemoteSource:
    """A remote source with its own in-memory cache (or a share of ``backend``), reading ``clock``."""
    cache = RegistryCache(backend or create_backend("memory://"), f"xreg:{config.id}:test", ttl=config.cache_ttl,
                          stale_while_revalidate=config.stale_while_revalidate, stale_if_error=config.stale_if_error,
                          clock=clock)
    return RemoteSource(config, cache, clock=clock)


@pytest.fixture
async def open_remote():
    """``await open_remote(config)``: an opened remote source, closed after the test."""
    opened: list[RemoteSource] = []

    async def make(config: RegistryConfig, backend=None, clock: Clock = SYSTEM_CLOCK) -> RemoteSource:
        source = make_remote(config, backend, clock)
        await source.open()
        opened.append(source)
        return source

    yield make
    for source in opened:
        await source.close()


def data_file(name: str) -> Path:
    """A document of the in-repository corpus."""
    return XREG_DATA / name
