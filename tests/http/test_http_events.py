"""``GET /events`` and ``xRegistry-xregcorrelationid`` (core/events.md) through the HTTP API."""

from __future__ import annotations

from typing import Any

import httpx

from tests.http.support import BASE

CORRELATION = "xRegistry-xregcorrelationid"


async def _events(client: httpx.AsyncClient, **params: Any) -> tuple[list[dict[str, Any]], httpx.Response]:
    response = await client.get("/events", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/cloudevents-batch+json")
    return response.json(), response


async def test_group_resource_version_writes_give_their_events_in_order(client: httpx.AsyncClient) -> None:
    """core/events.md, "Create a tree of entities", "Update a Version attribute", "Delete a Group"."""
    _, before = await _events(client)
    start = before.headers["link"]
    created = await client.put("/registry/messagegroups/g1/messages/m1/versions/v1", json={})
    assert created.status_code in (200, 201), created.text
    updated = await client.patch("/registry/messagegroups/g1/messages/m1/versions/v1", json={"name": "foo"})
    deleted = await client.delete("/registry/messagegroups/g1")
    assert deleted.status_code == 204
    ids = [r.headers[CORRELATION] for r in (created, updated, deleted)]
    assert len(set(ids)) == 3

    events, _ = await _events(client)
    got = [(e["type"], e["subject"], sorted(e.get("data", {}).get("changed", [])) or None, e["xregcorrelationid"])
           for e in events]
    assert got == [
        ("io.xregistry.registry.updated", "/", ["epoch", "messagegroups", "messagegroupscount", "modifiedat"], ids[0]),
        ("io.xregistry.group.created", "/messagegroups/g1", None, ids[0]),
        ("io.xregistry.resource.created", "/messagegroups/g1/messages/m1", None, ids[0]),
        ("io.xregistry.version.created", "/messagegroups/g1/messages/m1/versions/v1", None, ids[0]),
        ("io.xregistry.resource.updated", "/messagegroups/g1/messages/m1", ["epoch", "modifiedat", "name"], ids[1]),
        ("io.xregistry.version.updated", "/messagegroups/g1/messages/m1/versions/v1",
         ["epoch", "modifiedat", "name"], ids[1]),
        ("io.xregistry.registry.updated", "/", ["epoch", "messagegroups", "messagegroupscount", "modifiedat"], ids[2]),
        ("io.xregistry.group.deleted", "/messagegroups/g1", None, ids[2]),
        ("io.xregistry.resource.deleted", "/messagegroups/g1/messages/m1", None, ids[2]),
        ("io.xregistry.version.deleted", "/messagegroups/g1/messages/m1/versions/v1", None, ids[2]),
    ]
    for e in events:
        assert e["specversion"] == "1.0" and e["source"] == BASE and e["id"] and e["time"].endswith("Z")
    assert len({e["id"] for e in events}) == len(events)
    assert [e["xregposition"] for e in events] == sorted(
        (e["xregposition"] for e in events), key=lambda p: tuple(map(int, p.split("."))))
    assert start  # an empty log still links to where the next events will be
