"""The caller's credentials reach a remote registry with ``auth.forward`` through the gateway's
routes — GraphQL (its batched loads included) and the bulk rows — as a value on the request's
sources, never from another request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow as pa
import pytest

from gateway.app import create_app
from gateway.auth import hash_key
from tests.federation.servers import GatewayServer
from tests.federation.test_federation import remote_entry
from xreg.config import ApiKey, Settings

KEYS = {"alice": "alice-key-" + "a" * 24, "bob": "bob-key-" + "b" * 24}
QUERY = '{ registry(id: "private") { messagegroups { nodes { xid messages { nodes { xid } } } } } }'


@pytest.fixture(scope="module")
def private(tmp_path_factory) -> Iterator[GatewayServer]:
    """A remote that answers only the holders of its keys (the gateway's keys too)."""
    server = GatewayServer("private", ["windgenerator-kafka-avro.xreg.json"], tmp_path_factory.mktemp("private"),
                           anonymous_read=False, api_keys=_keys())
    try:
        yield server.start()
    finally:
        server.stop()


def _keys() -> list[ApiKey]:
    return [ApiKey(name=n, sha256=hash_key(k), scopes=["read"]) for n, k in KEYS.items()]


async def _gateway(tmp_path, private: GatewayServer) -> tuple[Any, httpx.AsyncClient]:
    settings = Settings(data_dir=tmp_path, registry_id="test", base_url="http://gw.test/registry",
                        config_watch_seconds=0, api_keys=_keys(),
                        registries=[remote_entry("private", private.base_url, cache_ttl=60, auth={"forward": True},
                                                 breaker={"failures": 50})])
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    return lifespan, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")


def _as(name: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[name]}"} if name else {}


async def test_graphql_reads_a_forwarding_remote_as_its_caller(tmp_path, private):
    lifespan, client = await _gateway(tmp_path, private)
    try:
        private.wrapper.reset()
        alice = (await client.post("/graphql", json={"query": QUERY}, headers=_as("alice"))).json()
        assert "errors" not in alice, alice
        groups = alice["data"]["registry"]["messagegroups"]["nodes"]
        assert groups and any(g["messages"]["nodes"] for g in groups)  # the nested pages: batched loads
        asked = private.wrapper.requests
        again = (await client.post("/graphql", json={"query": QUERY}, headers=_as("alice"))).json()
        assert again == alice and private.wrapper.requests == asked  # alice's answers, cached for her
        bob = (await client.post("/graphql", json={"query": QUERY}, headers=_as("bob"))).json()
        assert bob == alice and private.wrapper.requests > asked  # bob's are his own
        anonymous = (await client.post("/graphql", json={"query": QUERY})).json()
        assert {e["extensions"]["code"] for e in anonymous["errors"]} == {"data_retrieval_error"}
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_bulk_rows_read_a_forwarding_remote_as_their_caller(tmp_path, private):
    lifespan, client = await _gateway(tmp_path, private)
    try:
        minted = await client.post("/graphql", json={"query": '{ registry(id: "private") { revision } }'},
                                   headers=_as("alice"))
        params = {"registry": "private", "entity": "messagegroups", "asOf": str(minted.json()["data"]["registry"]
                                                                               ["revision"]), "limit": "50"}
        rows = await client.get("/bulk/rows", params=params, headers=_as("alice"))
        assert rows.status_code == 200, rows.text
        assert pa.ipc.open_stream(rows.content).read_all().num_rows > 0
        refused = await client.get("/bulk/rows", params=params)
        assert refused.status_code != 200 and "401" in refused.json()["detail"]
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)
