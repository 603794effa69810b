"""Time travel: a registry read as of a revision, and the changes since a revision."""

from __future__ import annotations

CREATE = """mutation($id: String!, $name: String!) { createGroup(groupType: "endpoints", groupId: $id,
  attributes: {name: $name, usage: ["producer"]}) { revision } }"""
RENAME = """mutation($id: String!, $name: String!) { updateGroup(groupType: "endpoints", groupId: $id,
  attributes: {name: $name}) { revision } }"""
DELETE = """mutation($xid: String!) { deleteEntity(xid: $xid) { revision } }"""
AS_OF = """query($rev: Int) { registry(asOf: $rev) { revision asOf
  endpoints { totalCount nodes { xid name registry { asOf } } }
  lookup(xid: "/endpoints/a") { ... on Endpoint { name epoch } } } }"""
CHANGES = """query($since: Int!, $until: Int, $after: String, $first: Int, $collections: [String!]) {
  registry { changes(since: $since, until: $until, after: $after, first: $first, collections: $collections) {
    pageInfo { hasNextPage endCursor } nodes { xid kind collection type revision node { xid ... on Entity { name } } } } } }"""


async def test_read_as_of_a_revision_and_the_changes_since(empty):
    r1 = (await empty.data(CREATE, id="a", name="first"))["createGroup"]["revision"]
    r2 = (await empty.data(RENAME, id="a", name="second"))["updateGroup"]["revision"]
    r3 = (await empty.data(CREATE, id="b", name="other"))["createGroup"]["revision"]
    r4 = (await empty.data(DELETE, xid="/endpoints/a"))["deleteEntity"]["revision"]
    assert r1 < r2 < r3 < r4

    then = (await empty.data(AS_OF, rev=r1))["registry"]
    assert (then["revision"], then["asOf"]) == (r1, r1)
    assert then["lookup"] == {"name": "first", "epoch": 1}
    assert then["endpoints"] == {"totalCount": 1, "nodes": [{"xid": "/endpoints/a", "name": "first",
                                                              "registry": {"asOf": r1}}]}
    assert (await empty.data(AS_OF, rev=r3))["registry"]["lookup"] == {"name": "second", "epoch": 2}
    now = (await empty.data(AS_OF))["registry"]
    assert now["asOf"] is None and now["revision"] == r4 and now["lookup"] is None
    assert [n["xid"] for n in now["endpoints"]["nodes"]] == ["/endpoints/b"]

    feed = (await empty.data(CHANGES, since=r1, collections=["endpoints"]))["registry"]["changes"]
    assert [(n["xid"], n["type"], n["revision"], n["node"]) for n in feed["nodes"]] == [  # in revision order
        ("/endpoints/b", "UPSERTED", r3, {"xid": "/endpoints/b", "name": "other"}),
        ("/endpoints/a", "DELETED", r4, None),
    ]
    assert feed["nodes"][0]["kind"] == "group" and feed["nodes"][0]["collection"] == "endpoints"
    until = (await empty.data(CHANGES, since=r1, until=r2, collections=["endpoints"]))["registry"]["changes"]
    assert [(n["xid"], n["type"], n["node"]["name"]) for n in until["nodes"]] == [("/endpoints/a", "UPSERTED", "second")]
    # paging through the feed (the registry entity changed too)
    seen, after = [], None
    while True:
        page = (await empty.data(CHANGES, since=0, first=1, after=after))["registry"]["changes"]
        seen += [n["xid"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == ["/endpoints/b", "/", "/endpoints/a"]  # r3, then r4's two (the registry's epoch too) by XID


async def test_unreadable_revisions_are_clear_errors(empty):
    current = await empty.registry.store.current_revision()
    error = await empty.error(AS_OF, rev=current + 5)
    assert error["extensions"]["code"] == "bad_request" and "not readable" in error["extensions"]["detail"]
    error = await empty.error(CHANGES, since=-1)
    assert error["extensions"]["code"] == "bad_request"
    error = await empty.error('{ lookup(xid: "/", asOf: 99) { xid } }')
    assert error["extensions"]["code"] == "bad_request"


CHECKPOINT = """query($since: Int!, $instance: String) { registry { instanceId asOf
  changes(since: $since, instanceId: $instance) { nodes { xid revision } } } }"""


async def test_a_checkpoint_is_checked_against_the_registry_instance(empty):
    instance = (await empty.data("{ registry { instanceId } }"))["registry"]["instanceId"]
    assert instance == empty.registry.instance_id == empty.registry.store.instance_id
    assert (await empty.data("query { registry(asOf: 1) { instanceId } }"))["registry"]["instanceId"] == instance
    rev = (await empty.data(CREATE, id="a", name="first"))["createGroup"]["revision"]
    feed = (await empty.data(CHECKPOINT, since=rev - 1, instance=instance))["registry"]["changes"]["nodes"]
    assert ("/endpoints/a", rev) in [(n["xid"], n["revision"]) for n in feed]
    assert (await empty.data(CHECKPOINT, since=rev, instance=instance))["registry"]["changes"]["nodes"] == []

    other = "0f8fad5b-d9cb-469f-a165-70867728950e"
    error = await empty.error(CHECKPOINT, since=rev - 1, instance=other)
    assert error["extensions"]["code"] == "instance_mismatch" and error["path"] == ["registry", "changes"]
    assert error["extensions"]["args"]["instanceid"] == instance and other in error["message"]
    for since, instance_id in ((rev + 1, instance), (rev + 1, None)):  # a checkpoint ahead of the registry
        error = await empty.error(CHECKPOINT, since=since, instance=instance_id)
        assert error["extensions"]["code"] == "instance_mismatch"
        assert f"revision {since} is ahead of this registry's current revision {rev}" in error["extensions"]["detail"]
