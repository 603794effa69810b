"""Concurrent writers over the wire: 50 GraphQL writers and 50 HTTP writers at once against one
real uvicorn server (admission control on), every write acknowledged — no spurious
``server_busy`` — and every acknowledged write in the store.

Writes of one process run one at a time, so the last of 50 concurrent GraphQL writers waits for
the 49 before it: the admission line's timeout is set above that wait (on a loaded machine the
default 5 s is not), so that a refusal here could only be the write path's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from gateway.app import create_app
from tests.http.support import WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer

WRITERS = 50
EACH = 4
UPDATE = """mutation($g: String!, $n: Int!) {
  updateGroup(groupType: "messagegroups", groupId: $g, attributes: {n: $n}) { revision } }"""


async def test_fifty_graphql_and_fifty_http_writers_at_once(tmp_path: Path):
    app = create_app(make_settings(tmp_path, admission_queue_timeout_seconds=120))
    async with LiveServer(app) as live, httpx.AsyncClient(base_url=live.url, headers=bearer(WRITE_KEY), timeout=120,
                                                           limits=httpx.Limits(max_connections=2 * WRITERS)) as client:
        for g in ("viagraphql", "viahttp"):
            assert (await client.put(f"/registry/messagegroups/{g}", json={})).status_code == 201

        async def graphql_writer(w: int) -> list[int]:
            out = []
            for i in range(EACH):
                response = await client.post("/graphql", json={"query": UPDATE, "variables": {"g": "viagraphql",
                                                                                              "n": w * EACH + i}})
                body = response.json()
                assert response.status_code == 200 and "errors" not in body, body
                out.append(body["data"]["updateGroup"]["revision"])
            return out

        async def http_writer(w: int) -> list[int]:
            statuses = []
            for i in range(EACH):
                response = await client.patch("/registry/messagegroups/viahttp", json={f"w{w}": i})
                statuses.append(response.status_code)
            return statuses

        results = await asyncio.gather(*(graphql_writer(w) for w in range(WRITERS)),
                                       *(http_writer(w) for w in range(WRITERS)))
        revisions = [r for rs in results[:WRITERS] for r in rs]
        assert len(set(revisions)) == WRITERS * EACH  # each acknowledged write is its own commit
        assert {s for ss in results[WRITERS:] for s in ss} == {200}
        for g in ("viagraphql", "viahttp"):
            group = (await client.get(f"/registry/messagegroups/{g}")).json()
            assert group["epoch"] == 1 + WRITERS * EACH
        assert all(group[f"w{w}"] == EACH - 1 for w in range(WRITERS))
        assert app.state.admission.rejected("graphql") == 0 and app.state.admission.rejected("http") == 0
