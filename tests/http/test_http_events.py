"""``GET /events`` and ``xRegistry-xregcorrelationid`` (core/events.md) through the HTTP API."""

from __future__ import annotations

from typing import Any

import httpx

from tests.http.support import BASE, READ_KEY, asgi_client, make_settings, running

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


async def test_paging_follows_the_link_header(client: httpx.AsyncClient) -> None:
    for i in range(3):
        assert (await client.put(f"/registry/messagegroups/g{i}", json={})).status_code in (200, 201)
    everything, _ = await _events(client)
    assert len(everything) == 6
    seen: list[dict[str, Any]] = []
    url = "/events?limit=4"
    while True:
        response = await client.get(url)
        page = response.json()
        url = response.headers["link"].split(">")[0].lstrip("<")
        assert response.headers["link"].endswith('rel="next"') and "limit=4" in url
        if not page:
            break
        seen += page
    assert seen == everything
    assert f"after={everything[-1]['xregposition']}" in url  # an empty page: ask again from there


async def test_type_and_subject_filters(client: httpx.AsyncClient) -> None:
    for path in ("/registry/messagegroups/g1", "/registry/messagegroups/g1/messages/m1", "/registry/schemagroups/s"):
        assert (await client.put(path, json={})).status_code in (200, 201)
    created, response = await _events(client, type="io.xregistry.group.created,io.xregistry.resource.created")
    assert [e["subject"] for e in created] == ["/messagegroups/g1", "/messagegroups/g1/messages/m1", "/schemagroups/s"]
    assert "type=io.xregistry.group.created" in response.headers["link"]
    below, _ = await _events(client, subject="/messagegroups/g1/*")
    assert {e["subject"] for e in below} == {"/messagegroups/g1/messages/m1", "/messagegroups/g1/messages/m1/versions/1"}
    exact, _ = await _events(client, subject="/MESSAGEGROUPS/G1", type="io.xregistry.group.updated")
    assert [e["type"] for e in exact] == ["io.xregistry.group.updated"]


async def test_bad_parameters_are_spec_errors(client: httpx.AsyncClient) -> None:
    for params, says in (({"after": "x"}, "<revision>.<index>"), ({"after": "1.2.3"}, "<revision>.<index>"),
                         ({"limit": "0"}, "between 1 and"), ({"limit": "ten"}, "integer"),
                         ({"type": "io.xregistry.group.renamed"}, "io.xregistry.<entity>.<action>"),
                         ({"subject": "dirs"}, "XID")):
        response = await client.get("/events", params=params)
        assert response.status_code == 400, params
        problem = response.json()
        assert problem["type"].endswith("#bad_request") and says in problem["detail"], problem


async def test_reads_need_the_read_scope(tmp_path) -> None:
    """Like every read: anonymous callers only with ``anonymous_read`` (on by default), a wrong
    key never, a key with the ``read`` scope always."""
    async with running(make_settings(tmp_path, anonymous_read=False)) as app, \
            asgi_client(app, None) as anon, asgi_client(app, READ_KEY) as reader, \
            asgi_client(app, "wrong-key-" + "x" * 32) as stranger:
        assert (await anon.get("/events")).status_code == 401
        assert (await stranger.get("/events")).status_code == 401
        assert (await reader.get("/events")).status_code == 200


async def test_pruned_events_answer_events_gone(client: httpx.AsyncClient, app) -> None:
    for i in range(3):
        await client.put(f"/registry/messagegroups/g{i}", json={})
    first = (await _events(client))[0][0]["xregposition"]
    await app.state.registry.store.prune(keep_revisions=1)
    response = await client.get("/events", params={"after": first})
    assert response.status_code == 410
    problem = response.json()
    assert problem["type"].endswith("#events_gone") and first in problem["title"] and "without 'after'" in \
        problem["detail"]
    assert (await client.get("/events")).status_code == 200  # from the oldest retained


async def test_graphql_mutations_name_their_correlation_ids(client: httpx.AsyncClient) -> None:
    """core/events.md: "the response message for the interaction MUST include this value" — each
    mutation is one interaction: the response's ``extensions.xregcorrelationid`` lists them."""
    query = """mutation { a: createGroup(groupType: "messagegroups", groupId: "a") { revision }
                          b: createGroup(groupType: "messagegroups", groupId: "b") { revision } }"""
    body = (await client.post("/graphql", json={"query": query})).json()
    assert "errors" not in body, body
    ids = body["extensions"]["xregcorrelationid"]
    events, _ = await _events(client)
    assert len(ids) == 2 and [e["xregcorrelationid"] for e in events] == [ids[0], ids[0], ids[1], ids[1]]
    read = (await client.post("/graphql", json={"query": "{ registry { revision } }"})).json()
    assert "extensions" not in read


async def test_the_openapi_document_describes_get_events_and_its_answers_match(client: httpx.AsyncClient) -> None:
    import jsonschema_rs

    assert (await client.put("/registry/messagegroups/oa", json={})).status_code in (200, 201)
    document = (await client.get("/registry/openapi.json")).json()
    item = document["paths"]["/events"]
    assert item["servers"] == [{"url": "/"}]  # the route is at the root, not below the API prefix
    operation = item["get"]
    params = {p["name"]: p for p in operation["parameters"]}
    assert set(params) == {"after", "limit", "type", "subject"} and all(p["in"] == "query" for p in params.values())
    assert params["limit"]["schema"]["maximum"] == 1000 and params["type"]["explode"] is True
    ok = operation["responses"]["200"]
    assert {"Link", "X-Registry-Instance"} <= set(ok["headers"])
    assert {"400", "410", "4XX", "503"} <= set(operation["responses"])
    batch = ok["content"]["application/cloudevents-batch+json"]["schema"]

    events, _ = await _events(client, type="io.xregistry.group.created,io.xregistry.registry.updated")
    assert events and jsonschema_rs.validator_for(batch).is_valid(events)
    assert jsonschema_rs.validator_for(params["after"]["schema"]).is_valid(events[-1]["xregposition"])
    assert jsonschema_rs.validator_for(params["type"]["schema"]).is_valid(
        ["io.xregistry.group.created,io.xregistry.registry.updated"])
    assert not jsonschema_rs.validator_for(params["type"]["schema"]).is_valid(["io.xregistry.nope.created"])
    gone = await client.get("/events", params={"after": "x"})
    assert gone.status_code == 400 and not jsonschema_rs.validator_for(params["after"]["schema"]).is_valid("x")
