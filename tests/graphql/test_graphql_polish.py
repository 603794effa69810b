"""Typed version connections, the change feed's total, and bad paging arguments failing only
their own field."""

from __future__ import annotations

import pytest

from tests.graphql.test_graphql_history import CREATE, DELETE, RENAME

SCHEMA = "/schemagroups/g/schemas/s"
MESSAGE = "/messagegroups/mg/messages/m"


async def _resources_with_two_versions(gql) -> None:
    """Schema ``s`` and message ``m``, with versions 1 and 2 written (created with their groups)."""
    for version, doc in (("1", {"type": "string"}), ("2", {"type": "integer"})):
        await gql.data("""mutation($v: String!, $doc: JSON!) {
          s: createVersion(groupType: "schemagroups", groupId: "g", resourceType: "schemas", resourceId: "s",
            versionId: $v, attributes: {format: "JsonSchema/draft-07", schema: $doc}) { created }
          m: createVersion(groupType: "messagegroups", groupId: "mg", resourceType: "messages", resourceId: "m",
            versionId: $v, attributes: {name: "M"}) { created } }""", v=version, doc=doc)


async def test_schema_and_message_versions_are_typed_without_fragments(empty):
    await _resources_with_two_versions(empty)
    data = await empty.data("""query($s: String!, $m: String!) { schema: lookup(xid: $s) { ... on Schema {
        versions { __typename totalCount nodes { __typename versionid format schema }
                   edges { __typename cursor node { format } } } } }
      message: lookup(xid: $m) { ... on Message { versions { __typename nodes { versionid name messageid } } } }
      resource: lookup(xid: $s) { ... on Resource { versions { __typename nodes { __typename versionid } } } } }""",
                            s=SCHEMA, m=MESSAGE)
    schema = data["schema"]["versions"]
    assert schema["__typename"] == "SchemaVersionConnection" and schema["totalCount"] == 2
    assert [(n["__typename"], n["versionid"], n["schema"]) for n in schema["nodes"]] == [
        ("SchemaVersion", "1", {"type": "string"}), ("SchemaVersion", "2", {"type": "integer"})]
    assert [(e["__typename"], e["node"]["format"]) for e in schema["edges"]] == [
        ("SchemaVersionEdge", "JsonSchema/draft-07")] * 2
    message = data["message"]["versions"]
    assert message["__typename"] == "MessageVersionConnection"
    # (the message model keeps one version: maxversions 1)
    assert [(n["versionid"], n["name"], n["messageid"]) for n in message["nodes"]] == [("2", "M", "m")]
    # through the Resource interface: the same typed connection
    assert data["resource"]["versions"]["__typename"] == "SchemaVersionConnection"
    # across the registry: the connection of the resource type asked for
    across = await empty.data("""{ registry {
      s: versions(resourceType: "schemas") { __typename ... on SchemaVersionConnection { nodes { format } } }
      m: versions(resourceType: "messages") { __typename ... on MessageVersionConnection { nodes { messageid } } } } }""")
    assert across["registry"]["s"] == {"__typename": "SchemaVersionConnection",
                                       "nodes": [{"format": "JsonSchema/draft-07"}] * 2}
    assert across["registry"]["m"] == {"__typename": "MessageVersionConnection", "nodes": [{"messageid": "m"}]}


async def test_change_feed_has_a_total_count_over_all_its_pages(empty):
    r1 = (await empty.data(CREATE, id="a", name="first"))["createGroup"]["revision"]
    await empty.data(RENAME, id="a", name="second")
    await empty.data(CREATE, id="b", name="other")
    await empty.data(CREATE, id="c", name="third")
    await empty.data(DELETE, xid="/endpoints/c")
    query = """query($since: Int!, $collections: [String!]) { registry {
      changes(since: $since, first: 1, collections: $collections) { totalCount nodes { xid } pageInfo { hasNextPage } } } }"""
    feed = (await empty.data(query, since=r1, collections=["endpoints"]))["registry"]["changes"]
    # a, b and c's tombstone changed after r1; one per page
    assert feed["totalCount"] == 3 and len(feed["nodes"]) == 1 and feed["pageInfo"]["hasNextPage"]
    everything = (await empty.data(query, since=0))["registry"]["changes"]
    assert everything["totalCount"] == 4  # the registry entity too
    until = await empty.data("""query($r: Int!) { registry { changes(since: 0, until: $r) { totalCount } } }""", r=r1)
    assert until["registry"]["changes"]["totalCount"] == 2  # the registry and a, as of r1


@pytest.mark.parametrize("field", [
    'endpoints(after: "not-a-cursor") { totalCount }',
    'endpoints(first: 100000) { totalCount }',
    'versions(resourceType: "schemas", before: "###") { totalCount }',
    'changes(since: 0, after: "not-a-cursor") { totalCount }',
])
async def test_a_bad_paging_argument_nulls_only_its_field(corpus, field):
    body = await corpus(f'{{ registry {{ registryid bad: {field} good: messagegroups(first: 2) {{ totalCount }} }} }}')
    (error,) = body["errors"]
    assert error["path"] == ["registry", "bad"] and error["extensions"]["code"] in ("BAD_USER_INPUT", "bad_request")
    registry = body["data"]["registry"]
    assert registry["bad"] is None
    assert registry["registryid"] == "test" and registry["good"]["totalCount"] == 545


async def test_a_bad_cursor_in_a_nested_connection_nulls_only_that_connection(corpus):
    body = await corpus("""{ lookup(xid: "/messagegroups/IO.AISstream") { ... on MessageGroup { xid
      bad: messages(after: "garbage") { totalCount } good: messages(first: 1) { totalCount } } } }""")
    assert [e["path"] for e in body["errors"]] == [["lookup", "bad"]]
    assert body["data"]["lookup"]["xid"] == "/messagegroups/IO.AISstream"
    assert body["data"]["lookup"]["bad"] is None and body["data"]["lookup"]["good"]["totalCount"] > 1
