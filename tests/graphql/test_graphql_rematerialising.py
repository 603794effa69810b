"""While the dependents of a written base wait for the background worker
(xreg.registry.rematerialise), an answer holding one is flagged stale (``extensions.stale``,
``Cache-Status``) rather than served silently; once the worker is done it is current again."""

from __future__ import annotations

import asyncio
import time

import httpx

from gateway.app import create_app
from tests.graphql.conftest import REGISTRY_ID, WRITE_KEY, make_settings, open_registry, serve_asgi
from tests.support.rematerialising import drained
from xreg.registry.rematerialise import Rematerialiser

G = "/messagegroups/g/messages/"
STATUS = "{ registries { registryid status { staleSince } } }"
LOOKUP = """query($xid: String!) { lookup(xid: $xid) { ... on Message { description } } }"""


def document(description: str) -> dict:
    messages: dict = {"base": {"description": description}, "alone": {"description": "alone"}}
    messages.update({f"d{i}": {"basemessageuri": G + "base"} for i in range(3)})
    return {"messagegroups": {"g": {"messages": messages}}}


async def test_a_dependent_waiting_for_its_rematerialisation_is_answered_stale(tmp_path):
    registry = open_registry(tmp_path / "registry.db")
    registry.rematerialise_inline = 1
    async with registry, serve_asgi(registry, make_settings(tmp_path)) as gql:
        await registry.apply_document(document("v1"))
        now = time.time()
        # the app's own worker stays away: this test holds the lease (and works under its name)
        assert await registry.store.rematerialise_lease("test", now, now + 3600)
        outcome = await registry.apply_document(document("v2"))
        assert outcome.deferred
        response = await gql.post(LOOKUP, {"xid": G + "d1"})
        body = response.json()
        assert body["data"]["lookup"]["description"] == "v1"  # what the store holds until the worker comes
        [stale] = body["extensions"]["stale"]
        assert stale["registry"] == REGISTRY_ID and stale["reason"] == "rematerialising"
        assert response.headers["cache-status"].endswith("detail=rematerialising")
        [status] = (await gql.data(STATUS))["registries"]
        assert status["registryid"] == REGISTRY_ID and status["status"]["staleSince"] is not None
        alone = (await gql.post(LOOKUP, {"xid": G + "alone"})).json()
        assert "stale" not in (alone.get("extensions") or {})  # only answers holding a waiting dependent
        await Rematerialiser(registry, holder="test").run_until_idle()
        body = (await gql.post(LOOKUP, {"xid": G + "d1"})).json()
        assert body["data"]["lookup"]["description"] == "v2"
        assert "stale" not in (body.get("extensions") or {})
        assert (await gql.data(STATUS))["registries"][0]["status"]["staleSince"] is None


async def test_the_apps_worker_catches_up_after_a_write_over_http(tmp_path):
    registry = open_registry(tmp_path / "registry.db")
    registry.rematerialise_inline = 1
    app = create_app(make_settings(tmp_path), registry=registry)
    worker: Rematerialiser = app.state.rematerialiser
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        await registry.apply_document(document("v1"))
        response = await client.patch("/registry/messagegroups/g/messages/base", json={"description": "v2"},
                                      headers={"Authorization": f"Bearer {WRITE_KEY}"})
        assert response.status_code == 200, response.text
        async with asyncio.timeout(60):  # a guard against a hang, not a measure
            await drained(worker, registry)
        for i in range(3):
            rec = await registry.store.get(f"{G}d{i}")
            assert rec is not None and rec.doc["default"]["@materialised"]["attributes"]["description"] == "v2"
        assert await registry.store.rematerialisations() == []


async def test_an_item_noted_while_the_store_is_read_is_not_forgotten(tmp_path):
    """A commit deferring work lands after the worker read the store's items but before it took
    them up: the item stays known (the answers stay flagged, the worker is not idle)."""
    registry = open_registry(tmp_path / "registry.db")
    registry.rematerialise_inline = 1
    async with registry:
        await registry.apply_document(document("v1"))
        read = registry.store.rematerialisations
        deferred: list[str] = []

        async def read_then_commit() -> list:
            items = await read()
            if not deferred:  # the write lands once, right after the read
                deferred.extend((await registry.apply_document(document("v2"))).deferred)
            return items

        registry.store.rematerialisations = read_then_commit  # type: ignore[method-assign]
        assert await registry.refresh_rematerialising() == []  # what the store held when read
        assert deferred and set(registry.rematerialising) == set(deferred)
        registry.store.rematerialisations = read  # type: ignore[method-assign]
        worker = Rematerialiser(registry, holder="test")
        assert await worker.run_until_idle() > 0
        assert registry.rematerialising == {}
        rec = await registry.store.get(f"{G}d0")
        assert rec is not None and rec.doc["default"]["@materialised"]["attributes"]["description"] == "v2"
