"""Remote registries read at a snapshot: a writable remote of our own on 127.0.0.1, changed
between the pages of one snapshot (see adapters/remote.py, "snapshot")."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from adapters.base import Listing
from gateway.app import create_app
from gateway.auth import hash_key
from tests.federation.conftest import remote_config
from tests.federation.servers import GatewayServer
from tests.support.clock import ManualClock
from tests.support.live import LiveServer
from xreg.config import Settings
from xreg.errors import XRegistryError

TOKEN = "snapshot-tests-writer"
DOCUMENTS = ["contoso-erp-jsons07.xreg.json", "mqtt-sparkplugB.xreg.json"]
GROUPS = Listing(ctypes=("messagegroups",), limit=1)
MESSAGES = Listing(ctypes=("messagegroups/messages",), limit=3)


@pytest.fixture(scope="module")
def writable(tmp_path_factory) -> Iterator[GatewayServer]:
    """A remote that accepts writes with :data:`TOKEN` (reads stay anonymous)."""
    server = GatewayServer("snap", DOCUMENTS, tmp_path_factory.mktemp("snap"),
                           api_keys=[{"name": "writer", "sha256": hash_key(TOKEN), "scopes": ["read", "write"]}])
    try:
        yield server.start()
    finally:
        server.stop()


def write(server: GatewayServer, document: dict) -> None:
    """An import through the remote's own API (its GraphQL endpoint)."""
    resp = httpx.post(server.origin + "/graphql", timeout=30, trust_env=False,
                      headers={"authorization": f"Bearer {TOKEN}"},
                      json={"query": "mutation($d: JSON!) { importDocument(document: $d) { revision } }",
                            "variables": {"d": document}})
    assert resp.status_code == 200 and not resp.json().get("errors"), resp.text


async def test_a_snapshot_holds_what_it_fetched(writable, open_remote):
    source = await open_remote(remote_config("snap", writable.base_url, cache_ttl=0))
    snap = await source.revision()
    pinned = Listing(ctypes=GROUPS.ctypes, limit=1, as_of=snap)
    first = await source.list(pinned)
    groups_before = await source.count(pinned)
    messages_pinned = Listing(ctypes=MESSAGES.ctypes, limit=3, as_of=snap)
    first_messages = await source.list(messages_pinned)
    group = first.items[0].xid
    in_group = await source.count(messages_pinned, group)
    assert groups_before >= 2 and in_group >= 1 and first.has_next

    write(writable, {"messagegroups": {"zzz.added": {"messages": {"m": {"name": "m"}}},
                                       group.rsplit("/", 1)[1]: {"messages": {"added.too": {"name": "x"}}}}})
    writable.wrapper.clear()

    # later pages, counts and nested pages of the same snapshot: the data as it was, no request
    rest, after = [], first.cursors[-1]
    while True:
        page = await source.list(Listing(ctypes=GROUPS.ctypes, limit=1, as_of=snap, after=after))
        rest += [e.xid for e in page.items]
        if not page.has_next:
            break
        after = page.cursors[-1]
    assert "/messagegroups/zzz.added" not in rest and len(rest) == groups_before - 1
    assert await source.count(pinned) == groups_before
    assert await source.count(messages_pinned, group) == in_group
    children = await source.list_children([group], messages_pinned)
    assert all(not e.xid.endswith("/added.too") for e in children[group.lower()].items)
    second = await source.list(Listing(ctypes=MESSAGES.ctypes, limit=3, as_of=snap, after=first_messages.cursors[-1]))
    assert second.items and all(e.as_of == snap and e.revision is None for e in second.items)
    root = (await source.get_many(["/"], as_of=snap))["/"]
    assert root.as_of == snap
    assert writable.wrapper.requests == 1  # the root, the first entity asked for by XID; no collection again
    writable.wrapper.clear()
    await source.get_many(["/"], as_of=snap)
    assert writable.wrapper.requests == 0

    # a new snapshot sees the change
    fresh = await source.revision()
    assert fresh > snap
    now = Listing(ctypes=GROUPS.ctypes, as_of=fresh)
    assert await source.count(now) == groups_before + 1
    assert await source.count(Listing(ctypes=MESSAGES.ctypes, as_of=fresh), group) == in_group + 1


async def test_snapshots_expire_and_are_bounded(writable, open_remote):
    time = ManualClock()
    source = await open_remote(remote_config("snap", writable.base_url, snapshot_ttl=30, snapshot_max=2),
                               clock=time.clock)
    old = await source.revision()
    await source.count(Listing(ctypes=GROUPS.ctypes, as_of=old))
    time.advance(31)
    with pytest.raises(XRegistryError) as exc:
        await source.list(Listing(ctypes=GROUPS.ctypes, as_of=old))
    assert exc.value.type == "bad_request" and "snapshot" in exc.value.detail and "'snap'" in exc.value.detail
    with pytest.raises(XRegistryError):
        await source.check_revision(old)
    a = await source.revision()
    b = await source.revision()
    c = await source.revision()
    await source.check_revision(b)
    await source.check_revision(c)
    with pytest.raises(XRegistryError):  # the least recently used of three, beyond snapshot_max
        await source.check_revision(a)
    with pytest.raises(XRegistryError):  # never minted
        await source.get_many(["/"], as_of=c + 100)
    await source.check_revision(None)


def _graphql(base: str, query: str, **variables) -> dict:
    resp = httpx.post(base + "/graphql", json={"query": query, "variables": variables}, timeout=30, trust_env=False)
    body = resp.json()
    assert resp.status_code == 200 and not body.get("errors"), body
    return body["data"]


def _graphql_errors(base: str, query: str, **variables) -> str:
    body = httpx.post(base + "/graphql", json={"query": query, "variables": variables}, timeout=30,
                      trust_env=False).json()
    assert body.get("errors"), body
    return "; ".join(e["message"] for e in body["errors"])


COUNTS = """query($v: Int) { registry(id: "snap", asOf: $v) {
  messagegroups { totalCount nodes { xid } } messages { totalCount } } }"""


def test_a_snapshot_minted_by_one_gateway_is_read_alike_by_another(writable, redis, tmp_path):
    """Two gateways (app instances with their own connections and memory) sharing one Redis,
    as replicas or uvicorn workers do: a pinned read is the same whichever of them answers."""
    def app(name: str):
        return create_app(Settings(data_dir=tmp_path / name, registry_id="own", config_watch_seconds=0,
                                   cache_url=redis.url, anonymous_read=True,
                                   registries=[{"id": "snap", "kind": "xregistry", "url": writable.base_url}]))

    with LiveServer(app("a")) as a, LiveServer(app("b")) as b:
        pinned = _graphql(a.url, '{ registry(id: "snap") { revision } }')["registry"]["revision"]
        writable.wrapper.clear()
        on_b = _graphql(b.url, COUNTS, v=pinned)["registry"]
        assert on_b["messagegroups"]["totalCount"] >= 2 and on_b["messages"]["totalCount"] >= 1
        fetched = writable.wrapper.requests
        assert fetched >= 1  # B fetched the collections under the snapshot A minted

        write(writable, {"messagegroups": {"zzz.shared": {"messages": {"m": {"name": "m"}}}}})
        writable.wrapper.clear()
        on_a = _graphql(a.url, COUNTS, v=pinned)["registry"]
        assert on_a == on_b  # the data B held, not the remote's new state
        assert writable.wrapper.requests == 0  # and A never asked the remote for it

        newer = _graphql(b.url, '{ registry(id: "snap") { revision } }')["registry"]["revision"]
        assert newer > pinned  # one counter for both gateways
        fresh = _graphql(a.url, COUNTS, v=newer)["registry"]
        assert fresh["messagegroups"]["totalCount"] == on_b["messagegroups"]["totalCount"] + 1

        never = _graphql_errors(b.url, COUNTS, v=newer + 50)
        assert "not a live snapshot" in never
