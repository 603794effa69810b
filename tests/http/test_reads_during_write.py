"""SQLite readers never wait for the writer: ``/healthz``, an HTTP page with a filter and a GraphQL
page with ``totalCount`` are answered while a large write holds the store's write transaction
open (on an event), and show the registry as it was before that write."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.http.support import SEED, asgi_client, make_settings, running

#: A bound on requests that must not wait for the held write: reached only when they do (a hang).
HANG = 60
PAGE = ("{ registry { messagegroups(first: 2, filter: {labels: [{key: \"team\"}]}) { totalCount "
        "nodes { xid } } } }")


async def test_health_and_pages_are_answered_while_a_large_write_is_held_open(tmp_path: Path):
    async with running(make_settings(tmp_path)) as app, asgi_client(app) as client:
        assert (await client.post("/registry", json=SEED)).status_code == 200
        store = app.state.registry.store
        before = await store.current_revision()
        release, entered = asyncio.Event(), asyncio.Event()

        async def large_write() -> None:
            async with store._transaction() as db:  # what a commit holds while it writes
                await db.execute("INSERT INTO revisions(at, note) VALUES (0, 'held')")
                await db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                                     [(f"filler{i}", "x" * 200) for i in range(20_000)])
                entered.set()
                await release.wait()

        writer = asyncio.create_task(large_write())
        await entered.wait()
        async with asyncio.timeout(HANG):
            health = await client.get("/healthz")
            page = await client.get("/registry/messagegroups", params={"filter": "labels.team=billing"})
            graphql = await client.post("/graphql", json={"query": PAGE})
        assert not writer.done()
        assert health.status_code == 200 and health.json()["revision"] == before
        assert page.status_code == 200 and set(page.json()) == {"Billing"}
        body = graphql.json()
        assert "errors" not in body, body
        assert body["data"]["registry"]["messagegroups"]["totalCount"] == 2
        release.set()
        await writer
