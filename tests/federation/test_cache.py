"""Caching remote answers: hits and misses, stale-while-revalidate, stale-if-error, a Redis
shared by replicas, and answers kept per caller when the caller's credentials are forwarded."""

from __future__ import annotations

import asyncio

import pytest

from adapters.base import Listing, SourceUnavailable
from adapters.cache import BoundedMemoryCache, create_backend
from adapters.caller import ANONYMOUS, Caller
from gateway.auth import hash_key
from tests.federation.conftest import remote_config
from tests.federation.servers import GatewayServer
from tests.support.clock import ManualClock
from xreg.config import ApiKey
from xreg.registry.filters import parse_filters
from xreg.registry.reads import collection_tree

GROUP = "/messagegroups/Contoso.ERP.EmployeeEvents"


async def test_hits_and_misses(remotes, open_remote):
    erp = remotes["erp"]
    source = await open_remote(remote_config("erp", erp.base_url))
    erp.wrapper.reset()
    await source.get_many([GROUP])
    await source.get_many([GROUP])
    await source.list(Listing(ctypes=("endpoints",)))
    await source.list(Listing(ctypes=("endpoints",), limit=2))
    assert erp.wrapper.requests == 2
    stats = source.status().cache
    assert stats["hits"] == 2 and stats["misses"] == 2


async def test_stale_answers_are_served_while_revalidated(remotes, open_remote):
    erp = remotes["erp"]
    time = ManualClock()
    source = await open_remote(remote_config("erp", erp.base_url, cache_ttl=20, stale_while_revalidate=30),
                               clock=time.clock)
    await source.get_many([GROUP])
    time.advance(25)  # stale, within stale-while-revalidate
    erp.wrapper.reset()
    erp.wrapper.hold()  # the revalidation waits at the remote; the read must not wait for it
    try:
        found = await asyncio.wait_for(source.get_many([GROUP]), 60)  # (the bound only ends a wait for ever)
        assert GROUP.lower() in found
        assert erp.wrapper.requests == 0
    finally:
        erp.wrapper.release()
    await source.cache.settle()
    assert erp.wrapper.requests == 1  # revalidated in the background
    stats = source.status().cache
    assert stats["stale_hits"] == 1 and stats["revalidations"] == 1
    await source.get_many([GROUP])
    assert erp.wrapper.requests == 1  # fresh again


async def test_stale_answers_are_served_when_the_remote_is_down(tmp_path, open_remote):
    server = GatewayServer("wind", ["windgenerator-kafka-avro.xreg.json"], tmp_path).start()
    time = ManualClock()
    try:
        source = await open_remote(remote_config("wind", server.base_url, cache_ttl=20, stale_while_revalidate=0,
                                                 stale_if_error=60, retries=0), clock=time.clock)
        groups = await source.list(Listing(ctypes=("messagegroups",)))
        xids = [g.xid for g in groups.items]
        assert xids and await source.get_many(xids)
    finally:
        server.stop()
    time.advance(25)  # everything is stale now, and the remote gone
    assert [g.xid for g in (await source.list(Listing(ctypes=("messagegroups",)))).items] == xids
    assert sorted(await source.get_many(xids)) == sorted(x.lower() for x in xids)
    with pytest.raises(SourceUnavailable):
        await source.get_many(["/messagegroups/never-seen"])
    stats = source.status().cache
    assert stats["stale_on_error"] == 2 and not source.status().healthy, stats


async def test_replicas_share_a_redis_cache(remotes, open_remote, redis):
    erp = remotes["erp"]
    config = remote_config("erp", erp.base_url, cache_ttl=60)
    first = await open_remote(config, create_backend(redis.url))
    second = await open_remote(config, create_backend(redis.url))  # another gateway process
    erp.wrapper.reset()
    page = await first.list(Listing(ctypes=("messagegroups/messages",), limit=5))
    entities = await first.get_many([GROUP])
    assert erp.wrapper.requests == 2
    assert [e.xid for e in (await second.list(Listing(ctypes=("messagegroups/messages",), limit=5))).items] == \
        [e.xid for e in page.items]
    assert (await second.get_many([GROUP]))[GROUP.lower()].view == entities[GROUP.lower()].view
    assert erp.wrapper.requests == 2  # the second replica asked Redis, not the remote
    assert second.status().cache["hits"] == 2


async def test_a_failing_redis_never_fails_a_read(remotes, open_remote):
    erp = remotes["erp"]
    source = await open_remote(remote_config("erp", erp.base_url), create_backend("redis://127.0.0.1:9/0"))
    found = await source.get_many([GROUP])
    assert GROUP.lower() in found and source.status().cache["errors"] >= 1


async def test_forwarded_credentials_are_part_of_the_cache_key(tmp_path, open_remote, redis):
    keys = {"alice": "alice-key-" + "a" * 24, "bob": "bob-key-" + "b" * 24}
    server = GatewayServer("private", ["windgenerator-kafka-avro.xreg.json"], tmp_path, anonymous_read=False,
                           api_keys=[ApiKey(name=n, sha256=hash_key(k), scopes=["read"]) for n, k in keys.items()]).start()
    try:
        config = remote_config("private", server.base_url, auth={"forward": True}, breaker={"failures": 50})
        source = await open_remote(config, create_backend(redis.url))
        listing = Listing(ctypes=("messagegroups",))
        server.wrapper.reset()
        alice = source.for_caller(Caller(f"Bearer {keys['alice']}"))
        assert (await alice.list(listing)).items
        assert (await alice.list(listing)).items
        assert server.wrapper.requests == 1
        assert (await source.for_caller(Caller(f"Bearer {keys['bob']}")).list(listing)).items
        assert server.wrapper.requests == 2  # bob's answer is his own
        with pytest.raises(SourceUnavailable) as exc:
            await source.for_caller(ANONYMOUS).list(listing)
        assert "HTTP 401" in exc.value.reason
    finally:
        server.stop()


async def test_a_versions_resource_is_read_along_with_it(remotes, open_remote):
    """Who asks for a version (a data schema reference) asks for its resource next: both are
    read in the same wave, the second ask costs nothing."""
    erp = remotes["erp"]
    schema = "/schemagroups/Contoso.ERP/schemas/Contoso.ERP.EmployeeData"
    source = await open_remote(remote_config("erp", erp.base_url))
    erp.wrapper.clear()
    assert list(await source.get_many([schema + "/versions/1"])) == [(schema + "/versions/1").lower()]
    assert set(erp.wrapper.hits) == {f"/registry{schema}/versions/1$details", f"/registry{schema}$details"}
    assert schema.lower() in await source.get_many([schema])
    assert erp.wrapper.requests == 2
    assert source.status().cache["misses"] == 1 and source.status().cache["hits"] == 1


async def test_the_memory_backend_keeps_at_most_its_bound_dropping_the_oldest_stored():
    backend = create_backend("memory://", memory_entries=3)
    assert isinstance(backend, BoundedMemoryCache)
    for i in range(10):
        await backend.set(f"k{i}", i, ttl=3600)
        assert backend.entries <= 3
    assert await backend.multi_get(["k6", "k7", "k8", "k9"]) == [None, 7, 8, 9]
    await backend.set("k7", "again", ttl=3600)  # stored anew: now the youngest
    await backend.set("k10", 10, ttl=3600)
    assert backend.entries == 3
    assert await backend.multi_get(["k7", "k8", "k9", "k10"]) == ["again", None, 9, 10]
    with pytest.raises(ValueError):
        create_backend("memory://", memory_entries=0)


async def test_answers_under_keys_of_the_callers_choosing_stay_within_the_bound(remotes, open_remote):
    erp = remotes["erp"]
    backend = create_backend("memory://", memory_entries=4)
    assert isinstance(backend, BoundedMemoryCache)
    source = await open_remote(remote_config("erp", erp.base_url), backend)
    tree = collection_tree(source.model, "messagegroups")

    def named(i: int) -> Listing:  # a filter the remote evaluates: each answer under a key of its own
        return Listing(ctypes=("messagegroups",), filters=parse_filters([f"name=soak-{i}"], collections=tree))

    for i in range(12):
        await source.list(named(i))
        assert backend.entries <= 4
    erp.wrapper.reset()
    await source.list(named(11))  # the latest answer is kept
    assert erp.wrapper.requests == 0
    await source.list(named(0))  # the first one was dropped
    assert erp.wrapper.requests == 1
