"""A stale federated answer says so: a remote held down while its cached answers are served
stale is named, with since when, in the GraphQL ``extensions.stale``, the ``Cache-Status``
header and its ``Registry.status``; its status follows its circuit breaker and a health probe
driven by the test's clock, before any request fails."""

from __future__ import annotations

import asyncio

import httpx

from adapters import staleness
from gateway.app import create_app
from tests.federation.conftest import remote_config
from tests.federation.test_federation import remote_entry
from tests.support.clock import ManualClock
from xreg.config import Settings

GROUP = "/messagegroups/Contoso.ERP.EmployeeEvents"
START = 1_000_000.0
START_RFC3339 = "1970-01-12T13:46:40Z"


class Ticks:
    """A clock whose sleeps end one at a time when the test calls :meth:`tick`."""

    def __init__(self) -> None:
        self.now = START
        self.asleep = asyncio.Event()
        self._wake: asyncio.Queue[None] = asyncio.Queue()

    async def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        self.asleep.set()
        await self._wake.get()
        self.now = max(self.now, until)

    async def tick(self) -> None:
        """End the sleep under way and wait until the sleeper sleeps again."""
        await self.asleep.wait()
        self.asleep.clear()
        self._wake.put_nowait(None)
        await self.asleep.wait()

    @property
    def clock(self):
        from adapters.clock import Clock

        return Clock(wall=lambda: self.now, monotonic=lambda: self.now, sleep=self.sleep)


async def test_a_stale_answer_names_its_registry_and_since_when(remotes, open_remote):
    erp = remotes["erp"]
    time = ManualClock(START)
    source = await open_remote(remote_config("erp", erp.base_url, cache_ttl=20, stale_while_revalidate=0,
                                             stale_if_error=600, retries=0), clock=time.clock)
    assert source.status().state == "reachable"
    with staleness.collecting() as report:
        assert GROUP.lower() in await source.get_many([GROUP])
    assert not report  # fresh from the remote
    erp.wrapper.down()
    time.advance(25)
    with staleness.collecting() as report:
        assert GROUP.lower() in await source.get_many([GROUP])
    (stale,) = report.as_json()
    assert stale["registry"] == "erp" and stale["since"] == START_RFC3339
    assert "503" in stale["reason"] and stale["unreachableSince"] == "1970-01-12T13:47:05Z"
    assert report.by_registry["erp"].ttl == -5  # fresh until START + 20, served at START + 25
    status = source.status()
    assert status.state == "unreachable" and status.stale_since == START + 25
    assert status.unreachable_since == START + 25 and "503" in (status.last_error or "")
    erp.wrapper.down(False)
    with staleness.collecting() as report:
        await source.get_many(["/messagegroups/Contoso.ERP.Other"])  # the remote answers again (a 404)
    assert not report
    assert source.status().state == "reachable" and source.status().stale_since is None


async def test_the_probe_shows_a_remote_down_before_any_request_fails(remotes, open_remote):
    erp = remotes["erp"]
    ticks = Ticks()
    source = await open_remote(remote_config("erp", erp.base_url, probe_seconds=60, retries=0,
                                             breaker={"failures": 1, "reset_seconds": 30}), clock=ticks.clock)
    await ticks.asleep.wait()
    assert source.status().state == "reachable"
    erp.wrapper.down()
    erp.wrapper.clear()
    await ticks.tick()  # one probe
    status = source.status()
    assert status.state == "unreachable" and status.breaker == "open" and "503" in (status.last_error or "")
    assert erp.wrapper.hits == {"/registry/": 1}  # the probe is one GET of the root
    erp.wrapper.down(False)
    await ticks.tick()  # the circuit is half open after 30 s: the probe is its trial
    assert source.status().state == "reachable" and source.status().breaker == "closed"


async def test_no_probe_while_the_registry_is_being_asked(remotes, open_remote):
    erp = remotes["erp"]
    ticks = Ticks()
    source = await open_remote(remote_config("erp", erp.base_url, probe_seconds=60), clock=ticks.clock)
    await ticks.asleep.wait()
    erp.wrapper.clear()
    ticks.now += 30
    await source.get_many([GROUP])  # asked 30 s into the interval
    await ticks.tick()
    assert erp.wrapper.requests == 1  # no probe: it answered 30 s ago


async def test_graphql_and_http_say_which_registry_is_stale(tmp_path, remotes):
    erp = remotes["erp"]
    time = ManualClock(START)
    settings = Settings(data_dir=tmp_path, registry_id="test", base_url="http://gw.test/registry",
                        config_watch_seconds=0, registries=[remote_entry(
                            "erp", erp.base_url, cache_ttl=20, stale_while_revalidate=0, stale_if_error=600,
                            probe_seconds=0)])
    app = create_app(settings, clock=time.clock)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")
    await app.state.registry.apply_document({"endpoints": {"hr": {
        "usage": ["consumer"], "protocol": "HTTP", "messagegroups": [erp.base_url + GROUP]}}})
    query = '{ registry { lookup(xid: "/endpoints/hr") { ... on Endpoint { messagegroups { registryid xid } } } } }'
    health = "{ registries { registryid status { state unreachableSince staleSince lastError } } }"
    try:
        fresh = await client.get("/graphql", params={"query": query})
        assert fresh.status_code == 200 and "extensions" not in fresh.json(), fresh.text
        assert "cache-status" not in fresh.headers
        groups = fresh.json()["data"]["registry"]["lookup"]["messagegroups"]
        assert groups == [{"registryid": "erp", "xid": GROUP}]
        erp.wrapper.down()
        time.advance(25)
        stale = await client.get("/graphql", params={"query": query})
        body = stale.json()
        assert stale.status_code == 200 and body["data"]["registry"]["lookup"]["messagegroups"] == groups
        (entry,) = body["extensions"]["stale"]
        assert entry["registry"] == "erp" and entry["since"] == START_RFC3339 and "503" in entry["reason"]
        assert stale.headers["cache-status"] == '"xreg/erp"; hit; ttl=-5; detail=unreachable'
        assert stale.headers["cache-control"] == "no-cache"
        posted = (await client.post("/graphql", json={"query": query})).json()
        assert posted["extensions"]["stale"] == body["extensions"]["stale"]
        rows = {r["registryid"]: r["status"] for r in (await client.post("/graphql", json={"query": health})).json()[
            "data"]["registries"]}
        assert rows["erp"]["state"] == "UNREACHABLE" and rows["erp"]["staleSince"] == "1970-01-12T13:47:05Z"
        assert rows["erp"]["unreachableSince"] == "1970-01-12T13:47:05Z" and "503" in rows["erp"]["lastError"]
        assert rows["test"]["state"] == "REACHABLE" and rows["test"]["staleSince"] is None
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)
