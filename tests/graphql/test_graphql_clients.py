"""What the people at the keyboard ask of the GraphQL API over the 117-feed corpus: messages
reachable over a protocol in one step, typed validation results and readable registry names,
and the change feed in revision order."""

from __future__ import annotations

import json

from tests.corpus import CORPUS_117


def _reachable_over(protocol: str) -> set[str]:
    """The XIDs of the messages of the groups that endpoints of ``protocol`` reference, computed
    from the corpus document alone."""
    document = json.loads(CORPUS_117.read_text(encoding="utf-8"))
    groups = {ref.removeprefix("#").lower() for endpoint in document["endpoints"].values()
              if (endpoint.get("protocol") or "").lower() == protocol.lower()
              for ref in endpoint.get("messagegroups") or []}
    found = {f"/messagegroups/{gid}/messages/{mid}" for gid, group in document["messagegroups"].items()
             if f"/messagegroups/{gid}".lower() in groups for mid in group.get("messages") or {}}
    found |= {f"/endpoints/{eid}/messages/{mid}" for eid, endpoint in document["endpoints"].items()
              if (endpoint.get("protocol") or "").lower() == protocol.lower() for mid in endpoint.get("messages") or {}}
    return found


REACHABLE = """query($over: String!, $after: String) { messages(first: 500, after: $after,
    filter: {reachableOver: $over}) { totalCount nodes { xid } pageInfo { hasNextPage endCursor } } }"""


async def _all_reachable(corpus, over: str) -> tuple[int, set[str]]:
    xids: set[str] = set()
    after = None
    while True:
        page = (await corpus.data(REACHABLE, over=over, after=after))["messages"]
        xids |= {n["xid"] for n in page["nodes"]}
        if not page["pageInfo"]["hasNextPage"]:
            return page["totalCount"], xids
        after = page["pageInfo"]["endCursor"]


async def test_messages_reachable_over_kafka_are_those_of_the_groups_kafka_endpoints_reference(corpus):
    expected = _reachable_over("KAFKA")
    assert len(expected) > 56  # far more than the messages that declare `protocol: KAFKA` themselves
    total, xids = await _all_reachable(corpus, "KAFKA")
    assert total == len(expected)
    assert {x.lower() for x in xids} == {x.lower() for x in expected}


async def test_reachable_over_matches_like_the_typed_fields_and_combines_with_them(corpus):
    assert (await _all_reachable(corpus, "kafka"))[0] == len(_reachable_over("KAFKA"))  # case ignored
    mqtt = (await _all_reachable(corpus, "MQTT*"))[1]
    assert {x.lower() for x in mqtt} == {x.lower() for x in _reachable_over("MQTT/5.0")}
    assert (await _all_reachable(corpus, "NOPE"))[0] == 0
    both = """{ registry { messages(first: 1, filter: {reachableOver: "KAFKA", protocol: "KAFKA"}) {
        totalCount } } }"""
    count = (await corpus.data(both))["registry"]["messages"]["totalCount"]
    assert 0 < count <= 56


async def test_reachable_over_is_answered_by_the_store_not_by_reading_every_message(corpus):
    """Two store reads: the matching endpoints, then one page of messages — never every message."""
    from xreg.storage.sqlite import SQLiteStore

    store = corpus.registry.store
    assert isinstance(store, SQLiteStore)
    queries = []
    original = store.list

    async def recorded(query):
        page = await original(query)
        queries.append((query, len(page.items)))
        return page

    store.list = recorded  # type: ignore[method-assign]
    try:
        await corpus.data("""{ registry { messages(first: 5, filter: {reachableOver: "KAFKA"}) {
            nodes { xid } } } }""")
    finally:
        del store.list
    listed = [(q.ctype, n) for q, n in queries]
    assert ("endpoints", 180) in listed
    messages = [(q, n) for q, n in queries if q.ctype.endswith("/messages")]
    assert messages and all(q.parents for q, _ in messages) and all(n <= 6 for _, n in messages)


VALIDATION = ("formatvalidated", "formatvalidatedreason", "compatibilityvalidated", "compatibilityvalidatedreason")


async def test_schema_versions_carry_their_validation_results_as_typed_fields(corpus):
    query = """{ registry { schemas(first: 40) { nodes { xid formatvalidated defaultversion {
        formatvalidated formatvalidatedreason compatibilityvalidated compatibilityvalidatedreason
        attributes json } } } } }"""
    schemas = (await corpus.data(query))["registry"]["schemas"]["nodes"]
    versions = [s["defaultversion"] for s in schemas]
    assert versions and any(v["formatvalidated"] is True for v in versions)
    for schema, version in zip(schemas, versions, strict=True):
        assert {a: version[a] for a in VALIDATION} == {a: version["json"].get(a) for a in VALIDATION}
        assert not set(VALIDATION) & set(version["attributes"])  # typed, so no longer only inside `attributes`
        assert schema["formatvalidated"] == version["formatvalidated"]  # a schema shows its default version's
        if version["formatvalidated"] is False:
            assert version["formatvalidatedreason"]


async def test_registries_read_by_name_and_registry_is_never_null(corpus):
    found = (await corpus.data("{ registries { id registryid entityid } }"))["registries"]
    assert [(r["registryid"], r["entityid"]) for r in found] == [("test", "test")]
    assert found[0]["id"] != "test"  # the Relay id stays opaque
    query = """{ registry { registryid messages(first: 2) { nodes { registry { registryid } } } } }"""
    data = (await corpus.data(query))["registry"]
    assert [n["registry"]["registryid"] for n in data["messages"]["nodes"]] == ["test", "test"]
    error = await corpus.error('{ registry(id: "nope") { registryid } }')
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "nope" in error["message"]


#: A UI's page: 100 endpoints, each with its message groups' first 50 messages and their schema documents.
NATURAL_PAGE = """{ registry { endpoints(first: 100) { totalCount pageInfo { hasNextPage endCursor }
    nodes { id xid name description protocol usage envelope
      messagegroups { xid name messages(first: 50) { nodes { id xid name description protocol dataschemaformat
        dataschema { format document } } } } } } } }"""
#: Every version of every message of every group of 500 endpoints: asks for far more than any screen.
ABUSIVE = """{ registry { endpoints(first: 500) { nodes { messagegroups { messages(first: 500) { nodes { xid
    versions(first: 500) { nodes { xid } } } } } } } } }"""


async def test_a_natural_ui_page_passes_the_default_cost_limit_and_abuse_does_not(corpus):
    page = (await corpus.data(NATURAL_PAGE))["registry"]["endpoints"]
    assert len(page["nodes"]) == 100
    documents = [m["dataschema"]["document"] for e in page["nodes"] for g in e["messagegroups"]
                 for m in g["messages"]["nodes"] if m["dataschema"]]
    assert documents and all(documents)
    error = await corpus.error(ABUSIVE)
    assert error["extensions"]["code"] == "QUERY_TOO_COSTLY"
    assert error["extensions"]["maxCost"] == 500_000 < error["extensions"]["cost"]


FEED = """query($since: Int!, $order: ChangeOrder, $after: String, $first: Int) { registry {
    changes(since: $since, order: $order, after: $after, first: $first, collections: ["endpoints"]) {
      pageInfo { hasNextPage endCursor } nodes { xid revision } } } }"""
CREATE = """mutation($id: String!) { createGroup(groupType: "endpoints", groupId: $id,
    attributes: {usage: ["producer"]}) { revision } }"""


async def _feed(client, order: str | None, first: int) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    after = None
    while True:
        page = (await client.data(FEED, since=0, order=order, after=after, first=first))["registry"]["changes"]
        seen += [(n["xid"], n["revision"]) for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            return seen
        after = page["pageInfo"]["endCursor"]


async def test_the_change_feed_is_in_revision_order_unless_asked_for_xid_order(empty):
    revisions = {xid: (await empty.data(CREATE, id=xid))["createGroup"]["revision"] for xid in ("c", "a", "b")}
    by_revision = [(f"/endpoints/{x}", revisions[x]) for x in ("c", "a", "b")]
    assert await _feed(empty, None, 10) == by_revision
    assert await _feed(empty, "REVISION", 1) == by_revision  # page by page, the same
    assert await _feed(empty, "XID", 1) == sorted(by_revision)
    first = (await empty.data(FEED, since=0, order="XID", first=1))["registry"]["changes"]["pageInfo"]["endCursor"]
    error = await empty.error(FEED, since=0, order="REVISION", after=first)
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "other order" in error["message"]


async def test_reachable_over_follows_only_references_into_the_registry(empty):
    """A reference to another host reaches nothing here (the write path refuses references to
    anything but a message group); one that names a group of this registry (any case) does."""
    create = """mutation($type: String!, $id: String!, $attributes: JSON!) { createGroup(groupType: $type,
        groupId: $id, attributes: $attributes) { revision } }"""
    message = """mutation($g: String!, $m: String!) { createResource(groupType: "messagegroups", groupId: $g,
        resourceType: "messages", resourceId: $m, attributes: {}) { revision } }"""
    for gid in ("reached", "other", "third"):
        await empty.data(create, type="messagegroups", id=gid, attributes={})
        await empty.data(message, g=gid, m="m")
    await empty.data(create, type="endpoints", id="k", attributes={"usage": ["producer"], "protocol": "KAFKA",
        "messagegroups": ["#/messagegroups/REACHED", "http://elsewhere.test/messagegroups/other"]})
    await empty.data(create, type="endpoints", id="m", attributes={"usage": ["producer"], "protocol": "MQTT/5.0",
                                                                   "messagegroups": ["/messagegroups/other"]})
    found = (await empty.data("""{ messages(first: 10, filter: {reachableOver: "KAFKA"}) {
        nodes { xid } } }"""))["messages"]["nodes"]
    assert [n["xid"] for n in found] == ["/messagegroups/reached/messages/m"]


def test_only_in_registry_references_to_groups_of_the_type_name_a_group():
    from xreg.registry.reads import _group_key

    assert _group_key("#/messagegroups/A.B", "messagegroups") == "/messagegroups/a.b"
    assert _group_key("/messagegroups/g/", "messagegroups") == "/messagegroups/g"
    for reference in (None, 7, ["/messagegroups/g"], "", "#", "messagegroups/g", "//evil.test/messagegroups/g",
                      "http://evil.test/messagegroups/g", "/schemagroups/g", "/messagegroups/g/messages/m",
                      "#/messagegroups", "/messagegroups/g?x=1", "/messagegroups/" + "g" * 10_000):
        assert _group_key(reference, "messagegroups") is None, reference


def test_the_graphiql_examples_pass_the_default_cost_limit_with_a_wide_margin():
    from graphql import parse

    from gateway.graphiql_examples import EXAMPLES
    from resolvers.cost import operation_cost
    from resolvers.schema import build_schema
    from xreg.config import Settings

    settings = Settings()
    schema = build_schema(settings)._schema
    for example in EXAMPLES:
        cost = operation_cost(schema, parse(example.query), None, example.variables or None,
                              default_page_size=settings.page_size_default,
                              max_page_size=settings.graphql_max_page_size)
        assert 0 < cost <= settings.graphql_max_cost // 10, (example.name, cost)
