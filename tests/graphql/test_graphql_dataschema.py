"""A message's ``dataschema`` over GraphQL: the references of a level's messages resolved
together, only when the query reads what they point at, and each kind of reference (schema,
schema version, ``dataschemaxid``, inline, a URL outside the registries, a dangling one)."""

from __future__ import annotations

import pytest

from tests.graphql.conftest import recorded_reads

V1 = {"type": "object", "properties": {"n": {"type": "integer"}}}
V2 = {"type": "object", "properties": {"n": {"type": "number"}}}
SCHEMAS = "/schemagroups/sg/schemas"
JSON_SCHEMA = {"dataschemaformat": "JsonSchema/draft-07"}

DOC = {
    "schemagroups": {"sg": {"schemas": {
        f"s{i}": {"versions": {"1": {"format": "JsonSchema/draft-07", "schema": V1},
                               "2": {"format": "JsonSchema/draft-07", "schema": V2}}}
        for i in range(6)}}},
    "messagegroups": {"g": {"messages": {
        # a schema, by XID: its default version is the newest
        **{f"m{i}": {**JSON_SCHEMA, "dataschemauri": f"{SCHEMAS}/s{i}"} for i in range(6)},
        "version": {**JSON_SCHEMA, "dataschemauri": f"{SCHEMAS}/s0/versions/1"},     # a schema version
        "byxid": {**JSON_SCHEMA, "dataschemaxid": f"{SCHEMAS}/s1"},                  # dataschemaxid
        "inline": {**JSON_SCHEMA, "dataschema": {"type": "string"}},
        "elsewhere": {**JSON_SCHEMA, "dataschemauri": "https://schemas.example/thing.json"},  # outside the registries
        "dangling": {**JSON_SCHEMA, "dataschemauri": f"{SCHEMAS}/missing"},
        "plain": {"name": "no schema at all"},
    }}},
}

ALL = """{ registry { messagegroups(first: 1) { nodes { messages(first: 20) { nodes { messageid
  dataschema { format uri inline xid registryid schema { xid } version { xid versionid } document } } } } } } }"""


@pytest.fixture
async def schemas(empty):
    await empty.registry.apply_document(DOC)
    return empty


def _lookups(reads: list[list[str]]) -> list[set[str]]:
    """The store reads by XID, less those of schemas alone (a version's view reads its schema)."""
    resources = {f"{SCHEMAS}/s{i}" for i in range(6)}
    return [set(r) for r in reads if not set(r) <= resources]


def _by_id(body: dict) -> dict:
    (group,) = body["data"]["registry"]["messagegroups"]["nodes"]
    return {m["messageid"]: m["dataschema"] for m in group["messages"]["nodes"]}


async def test_every_kind_of_reference(schemas):
    body = await schemas(ALL)
    got = _by_id(body)
    assert got["m3"] == {"format": "JsonSchema/draft-07", "uri": f"{SCHEMAS}/s3", "inline": None, "xid": f"{SCHEMAS}/s3",
                         "registryid": "test", "schema": {"xid": f"{SCHEMAS}/s3"},
                         "version": {"xid": f"{SCHEMAS}/s3/versions/2", "versionid": "2"}, "document": V2}
    # a version reference: the version itself, and the schema it belongs to
    assert got["version"]["xid"] == f"{SCHEMAS}/s0/versions/1" and got["version"]["document"] == V1
    assert got["version"]["schema"] == {"xid": f"{SCHEMAS}/s0"}
    assert got["version"]["version"] == {"xid": f"{SCHEMAS}/s0/versions/1", "versionid": "1"}
    assert got["byxid"]["xid"] == f"{SCHEMAS}/s1" and got["byxid"]["uri"] is None
    assert got["inline"]["document"] == got["inline"]["inline"] == {"type": "string"}
    assert got["inline"]["xid"] is None and got["inline"]["schema"] is None
    assert got["elsewhere"] == {"format": "JsonSchema/draft-07", "uri": "https://schemas.example/thing.json", "inline": None, "xid": None,
                                "registryid": None, "schema": None, "version": None, "document": None}
    assert got["dangling"]["xid"] is None and got["dangling"]["uri"] == f"{SCHEMAS}/missing"
    assert got["plain"] is None
    # the dangling reference is the one error (a schema document elsewhere is not a registry reference)
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "unresolved_reference"
    assert error["extensions"]["args"]["reference"] == f"{SCHEMAS}/missing"
    assert error["path"][-1] == "dataschema" and error["path"][:3] == ["registry", "messagegroups", "nodes"]


async def test_a_levels_references_are_one_read_and_their_versions_another(schemas):
    with recorded_reads(schemas.registry.store) as reads:
        await schemas(ALL)
    targets = {f"{SCHEMAS}/s{i}" for i in range(6)} | {f"{SCHEMAS}/s0/versions/1", f"{SCHEMAS}/missing"}
    versions = {f"{SCHEMAS}/s{i}/versions/2" for i in range(6)}  # the schemas' default versions
    assert _lookups(reads) == [targets, versions]  # the version reference's schema was among the targets


async def test_nothing_is_read_of_a_schema_the_query_does_not_read(schemas):
    with recorded_reads(schemas.registry.store) as reads:
        data = await schemas.data("""{ registry { messagegroups(first: 1) { nodes { messages(first: 20) { nodes {
          dataschema { format uri inline } } } } } } }""")
    assert reads == []  # the groups and their messages are pages: nothing is looked up by XID
    nodes = data["registry"]["messagegroups"]["nodes"][0]["messages"]["nodes"]
    assert sum(1 for m in nodes if m["dataschema"] and m["dataschema"]["uri"]) == 9


@pytest.mark.parametrize("selection", [
    "dataschema { ...Target } } } } } } } fragment Target on DataSchema { document xid",
    "dataschema { ... on DataSchema { document xid } }",
    "dataschema { document xid }",
])
async def test_target_fields_are_found_through_fragments(schemas, selection):
    query = "{ registry { messagegroups(first: 1) { nodes { messages(first: 20) { nodes { messageid SELECTION } } } } } }"
    if "fragment" in selection:
        query = query.replace("SELECTION } } } } } }", "SELECTION }")
    with recorded_reads(schemas.registry.store) as reads:
        body = await schemas(query.replace("SELECTION", selection))
    assert len(_lookups(reads)) == 1  # the targets, together
    got = _by_id(body)
    assert got["m4"] == {"document": V2, "xid": f"{SCHEMAS}/s4"}
    assert got["inline"] == {"document": {"type": "string"}, "xid": None}


async def test_one_message_alone(schemas):
    data = await schemas.data("""{ lookup(xid: "/messagegroups/g/messages/version") { ... on Message {
      dataschema { xid schema { xid versions { nodes { versionid } } } version { versionid } } } } }""")
    ds = data["lookup"]["dataschema"]
    assert ds["xid"] == f"{SCHEMAS}/s0/versions/1" and ds["version"] == {"versionid": "1"}
    assert ds["schema"] == {"xid": f"{SCHEMAS}/s0", "versions": {"nodes": [{"versionid": "1"}, {"versionid": "2"}]}}
