"""Collections on a small registry: messages merged across endpoints and message groups, labels,
extension attributes."""

from __future__ import annotations

CREATE_MESSAGE = """mutation($g: String!, $gid: String!, $id: String!, $attrs: JSON) {
  createResource(groupType: $g, groupId: $gid, resourceType: "messages", resourceId: $id, attributes: $attrs) { revision } }"""
MESSAGES = """query($first: Int, $after: String, $last: Int, $before: String, $sort: SortBy, $filter: MessageFilter) {
  registry { messages(first: $first, after: $after, last: $last, before: $before, sort: $sort, filter: $filter) {
    totalCount pageInfo { hasNextPage hasPreviousPage endCursor startCursor } nodes { xid name } } } }"""


async def seed(gql) -> None:
    for eid in ("e1", "e2"):
        await gql.data('mutation($id: String!) { createGroup(groupType: "endpoints", groupId: $id, '
                       'attributes: {usage: ["producer"]}) { revision } }', id=eid)
    names = {("endpoints", "e1", "m1"): "delta", ("endpoints", "e1", "m2"): "alpha", ("endpoints", "e2", "m3"): "echo",
             ("messagegroups", "g1", "m4"): "charlie", ("messagegroups", "g1", "m5"): "bravo",
             ("messagegroups", "g2", "m6"): "foxtrot"}
    for (g, gid, mid), name in names.items():
        cloudevent = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": f"com.example.{name}"}}}
        await gql.data(CREATE_MESSAGE, g=g, gid=gid, id=mid, attrs={"name": name, **(cloudevent if mid < "m4" else {})})


async def walk(gql, size: int, **args) -> list[str]:
    out, after = [], None
    while True:
        page = (await gql.data(MESSAGES, first=size, after=after, **args))["registry"]["messages"]
        out += [n["name"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            return out
        after = page["pageInfo"]["endCursor"]


async def test_messages_merge_across_endpoints_and_groups(empty):
    await seed(empty)
    by_xid = await walk(empty, 2)
    assert by_xid == ["delta", "alpha", "echo", "charlie", "bravo", "foxtrot"]  # XID order: endpoints first
    by_name = await walk(empty, 4, sort={"attribute": "name"})
    assert by_name == sorted(by_xid)
    by_name_desc = await walk(empty, 1, sort={"attribute": "name", "order": "DESC"})
    assert by_name_desc == sorted(by_xid, reverse=True)
    page = (await empty.data(MESSAGES, last=2, sort={"attribute": "name"}))["registry"]["messages"]
    assert [n["name"] for n in page["nodes"]] == ["echo", "foxtrot"] and page["totalCount"] == 6
    assert page["pageInfo"]["hasPreviousPage"] and not page["pageInfo"]["hasNextPage"]
    before = (await empty.data(MESSAGES, last=3, before=page["pageInfo"]["startCursor"],
                               sort={"attribute": "name"}))["registry"]["messages"]
    assert [n["name"] for n in before["nodes"]] == ["bravo", "charlie", "delta"]
    events = (await empty.data(MESSAGES, filter={"envelope": "cloudevents/1.0"}))["registry"]["messages"]
    assert events["totalCount"] == 3 and {n["name"] for n in events["nodes"]} == {"alpha", "delta", "echo"}
    raw = (await empty.data(MESSAGES, filter={"raw": ["envelopemetadata.type.value=*o", "name=b*"]}))
    assert {n["name"] for n in raw["registry"]["messages"]["nodes"]} == {"echo", "bravo"}


async def test_nested_filters_are_batched_per_listing(empty):
    await seed(empty)
    query = """{ registry { endpoints { nodes { endpointid
      events: messages(filter: {envelope: "CloudEvents/1.0"}, sort: {attribute: "name"}) { totalCount nodes { name } } } } } }"""
    empty.registry.store.stats.calls.clear()
    nodes = (await empty.data(query))["registry"]["endpoints"]["nodes"]
    assert {n["endpointid"]: [m["name"] for m in n["events"]["nodes"]] for n in nodes} == \
        {"e1": ["alpha", "delta"], "e2": ["echo"]}
    # the endpoints page, one for all their messages, and one for the cross-references among
    # those (filtered by the values of their targets, xreg.registry.reads)
    assert empty.registry.store.stats.calls["list"] == 3


async def test_labels_and_extension_attributes(empty):
    create = """mutation($id: String!, $attrs: JSON) { createGroup(groupType: "messagegroups", groupId: $id,
      attributes: $attrs) { revision } }"""
    await empty.data(create, id="a", attrs={"labels": {"team": "blue", "tier": "1"}, "xowner": "ops"})
    await empty.data(create, id="b", attrs={"labels": {"team": "red"}})
    await empty.data(create, id="c", attrs={})
    query = """query($filter: MessageGroupFilter) { registry { messagegroups(filter: $filter) {
      nodes { messagegroupid labels { key value } label(key: "team") attributes } } } }"""

    async def ids(labels):
        data = await empty.data(query, filter={"labels": labels})
        return [n["messagegroupid"] for n in data["registry"]["messagegroups"]["nodes"]]

    assert await ids([{"key": "team"}]) == ["a", "b"]
    assert await ids([{"key": "team", "value": "BLUE"}]) == ["a"]
    assert await ids([{"key": "team", "value": "r*"}, {"key": "tier"}]) == []
    nodes = (await empty.data(query))["registry"]["messagegroups"]["nodes"]
    first = nodes[0]
    assert first["labels"] == [{"key": "team", "value": "blue"}, {"key": "tier", "value": "1"}]
    assert first["label"] == "blue" and nodes[2]["label"] is None
    assert first["attributes"] == {"xowner": "ops"}
