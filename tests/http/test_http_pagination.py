"""Pagination: ?limit, Link headers (next / prev / first / last, count) and keyset cursors that
stay correct while another task inserts and deletes entities between pages."""

from __future__ import annotations

import asyncio
import re

import httpx

from tests.http.support import assert_problem

LINK = re.compile(r"<([^>]*)>;rel=(\w+)(?:;count=(\d+))?")


def links(response: httpx.Response) -> dict[str, tuple[str, int | None]]:
    """``rel -> (path and query, count)`` of a response's Link headers."""
    out = {}
    for value in response.headers.get_list("link"):
        for url, rel, n in LINK.findall(value):
            out[rel] = (url.replace("http://gw.test", ""), int(n) if n else None)
    return out


async def walk(client, url: str, rel: str = "next") -> list[list[str]]:
    pages = []
    while url:
        response = await client.get(url)
        assert response.status_code == 200, response.text
        pages.append(list(response.json()))
        url = links(response).get(rel, (None,))[0]
    return pages


async def make_groups(client, names) -> None:
    response = await client.post("/registry/messagegroups", json={n: {"name": n.upper()} for n in names})
    assert response.status_code == 200, response.text


async def test_pages_and_links(client):
    names = [f"g{i:02d}" for i in range(25)]
    await make_groups(client, names)
    first = await client.get("/registry/messagegroups?limit=10")
    rels = links(first)
    assert list(first.json()) == names[:10]
    assert {"next", "first", "last"} <= set(rels) and "prev" not in rels
    assert rels["next"][1] == rels["first"][1] == rels["last"][1] == 25
    pages = await walk(client, "/registry/messagegroups?limit=10")
    assert pages == [names[:10], names[10:20], names[20:]]
    last = await client.get(rels["last"][0])
    assert list(last.json()) == names[15:] and "next" not in links(last)
    assert await walk(client, rels["last"][0], "prev") == [names[15:], names[5:15], names[:5]]
    second = await client.get(links(first)["next"][0])
    assert list((await client.get(links(second)["prev"][0])).json()) == names[:10]
    assert list((await client.get(links(second)["first"][0])).json()) == names[:10]


async def test_pages_follow_the_sort(client):
    names = [f"g{i:02d}" for i in range(12)]
    await make_groups(client, names)
    pages = await walk(client, "/registry/messagegroups?limit=5&sort=name=desc")
    assert [g for p in pages for g in p] == names[::-1]
    response = await client.get("/registry/messagegroups?limit=5&sort=name=desc")
    token = links(response)["next"][0].split("page=")[1]
    assert_problem(await client.get(f"/registry/messagegroups?limit=5&page={token}"), 400, "bad_request")


async def test_without_limit_the_server_pages_by_its_default(tmp_path):
    from tests.http.support import asgi_client, make_settings, running

    async with running(make_settings(tmp_path, page_size_default=4, page_size_max=6)) as app:
        async with asgi_client(app) as client:
            await make_groups(client, [f"g{i}" for i in range(9)])
            response = await client.get("/registry/messagegroups")
            assert len(response.json()) == 4 and "next" in links(response)
            capped = await client.get("/registry/messagegroups?limit=100")
            assert len(capped.json()) == 6  # never more than page_size_max
            assert sum(map(len, await walk(client, "/registry/messagegroups"))) == 9


async def test_cursors_stay_correct_while_another_task_writes(client):
    stable = [f"s{i:03d}" for i in range(60)]
    doomed = [f"t{i:03d}" for i in range(0, 60, 2)]
    await make_groups(client, stable + doomed)
    stop, wrote = asyncio.Event(), asyncio.Event()
    writes = []

    async def churn() -> None:
        n = 0
        while not stop.is_set():
            await client.post("/registry/messagegroups", json={f"n{n:03d}": {}, f"a{n:03d}": {}})
            if n < len(doomed):
                await client.delete(f"/registry/messagegroups/{doomed[n]}")
            writes.append(n)
            wrote.set()
            n += 1

    writer = asyncio.create_task(churn())
    try:
        seen: list[str] = []
        url = "/registry/messagegroups?limit=7"
        while url:
            response = await client.get(url)
            seen += list(response.json())
            url = links(response).get("next", (None,))[0]
            await wrote.wait()  # the writer wrote between these pages
            wrote.clear()
    finally:
        stop.set()
        await writer
    assert len(writes) > 3, "the writer ran between the pages"
    assert len(seen) == len(set(seen)), "no entity is returned twice"
    assert seen == sorted(seen, key=str.lower), "pages continue where the last one ended"
    assert [g for g in seen if g.startswith("s")] == stable, "entities present throughout are all returned"
