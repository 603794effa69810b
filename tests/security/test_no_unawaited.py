"""No coroutine is left behind un-awaited: the GraphQL executor's ``gather`` closes what a
failing field kept from starting (a root field failing first left its siblings' resolvers
"never awaited", each keeping its frame until collected — one per hostile request).
"""

from __future__ import annotations

import gc
import inspect
import sys
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from resolvers.gathering import gather
from tests.http.support import SEED, WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer

#: Queries whose first root field fails (a non-null field: the whole ``data`` is null) while
#: the others have not started.
FAILING_FIRST = [
    '{ validateMessage(xid: "/messagegroups/nope/messages/x", data: {}) { valid } registry { name '
    'messagegroups { nodes { xid } } } }',
    '{ nodes(ids: ["x", "y"]) { id } registry { name } again: registry { id } }',
]


async def test_a_failing_gather_closes_the_coroutines_it_did_not_start():
    async def fails() -> None:
        raise ValueError("the first fails")

    async def leaf() -> int:
        return 1

    async def completing(inner) -> int:  # a field's completion awaiting its resolver
        return await inner

    inner = leaf()
    later, other = completing(inner), leaf()
    with pytest.raises(ValueError, match="the first fails"):
        await gather(fails(), later, other)
    assert {inspect.getcoroutinestate(c) for c in (later, inner, other)} == {inspect.CORO_CLOSED}


def test_graphql_answers_with_a_failed_field_leave_no_coroutine_behind(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    reported: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(f"{u.exc_value!r} in {u.object!r}"))
    settings = make_settings(tmp_path)
    with LiveServer(create_app(settings)) as live, \
            httpx.Client(base_url=live.url, headers=bearer(WRITE_KEY), trust_env=False, timeout=30) as client:
        assert client.post("/registry/", json=SEED).status_code == 200
        for query in FAILING_FIRST * 3:
            answer = client.post("/graphql", json={"query": query})
            assert answer.status_code == 200 and answer.json()["data"] is None and answer.json()["errors"]
    gc.collect()
    assert reported == []
