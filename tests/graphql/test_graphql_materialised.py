"""Materialised messages in GraphQL: what users see, filter and sort is the message as it really
is (message/spec.md, ``basemessage``), kept in the store by the write path; ``declared`` and
``inheritedFrom`` say what the message states itself and where the rest comes from."""

from __future__ import annotations

import json

import httpx

from tests.corpus import CORPUS_117
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.registry.materialise import DERIVED

PEGEL = "/messagegroups/de.wsv.pegelonline.kafka/messages/de.wsv.pegelonline.kafka.CurrentMeasurement"
PEGEL_BASE = "/messagegroups/de.wsv.pegelonline/messages/de.wsv.pegelonline.CurrentMeasurement"

MESSAGE = """query($xid: String!, $asOf: Int) { lookup(xid: $xid, asOf: $asOf) { ... on Message {
    description protocol envelope dataschemaformat envelopemetadata protocoloptions
    dataschema { format uri schema { xid } }
    declared { description protocol dataschemaformat dataschema { format } }
    inheritedFrom { attribute xid registryid } unresolvedBase } } }"""


async def test_the_pegelonline_lookup_shows_the_inherited_attributes(corpus):
    m = (await corpus.data(MESSAGE, xid=PEGEL))["lookup"]
    assert m["dataschemaformat"] == "JsonStructure/draft-02"
    assert m["description"] and m["envelope"] == "CloudEvents/1.0"
    assert m["dataschema"]["schema"]["xid"].startswith("/schemagroups/de.wsv.pegelonline")
    assert m["protocol"] == "KAFKA" and m["protocoloptions"] == {"key": "{station_id}"}  # its own
    assert m["declared"] == {"description": None, "protocol": "KAFKA", "dataschemaformat": None, "dataschema": None}
    inherited = {i["attribute"]: (i["registryid"], i["xid"]) for i in m["inheritedFrom"]}
    assert inherited["dataschemaformat"] == ("test", PEGEL_BASE) and "protocol" not in inherited
    assert m["unresolvedBase"] is None


async def test_typed_filters_match_materialised_values_unless_declared(corpus):
    query = """query($declared: Boolean!) { registry { messages(first: 1,
        filter: {protocol: "KAFKA", format: "JsonStructure*", declared: $declared}) { totalCount } } }"""
    assert (await corpus.data(query, declared=False))["registry"]["messages"]["totalCount"] == 56
    assert (await corpus.data(query, declared=True))["registry"]["messages"]["totalCount"] == 0
    raw = """{ registry { messages(first: 1, filter: {raw: ["dataschemaformat=JsonStructure*", "protocol=KAFKA"]})
        { totalCount } } }"""
    assert (await corpus.data(raw))["registry"]["messages"]["totalCount"] > 56  # OR of the two expressions


async def test_sort_reads_materialised_values(corpus):
    query = """query($declared: Boolean!) { registry { messages(first: 3, filter: {protocol: "KAFKA",
        declared: $declared}, sort: {attribute: "dataschemaformat", order: DESC}) { nodes { dataschemaformat } } } }"""
    nodes = (await corpus.data(query, declared=False))["registry"]["messages"]["nodes"]
    assert [n["dataschemaformat"] for n in nodes] == ["JsonStructure/draft-02"] * 3
    declared = (await corpus.data(query, declared=True))["registry"]["messages"]["nodes"]
    assert len(declared) == 3  # same rows, ordered by what they declare (nothing): by XID


async def test_no_resolved_message_of_the_corpus_lacks_its_bases_format(corpus):
    """Every message whose chain resolves has the format its chain carries (counted over the
    whole corpus, against a materialisation computed here from the document)."""
    doc, _ = normalise(read_document(CORPUS_117))
    messages = {f"/messagegroups/{g}/messages/{m}".lower(): body for g, group in doc["messagegroups"].items()
                for m, body in (group.get("messages") or {}).items()}

    def expected(body: dict, depth: int = 0):
        if body.get("dataschemaformat") is not None or depth > 32:
            return body.get("dataschemaformat")
        base = messages.get(str(body.get("basemessageuri", "")).lower())
        return expected(base, depth + 1) if base else None

    query = """query($after: String) { registry { messages(first: 500, after: $after) {
        nodes { xid dataschemaformat basemessageuri } pageInfo { hasNextPage endCursor } } } }"""
    seen, after, missing = 0, None, []
    while True:
        page = (await corpus.data(query, after=after))["registry"]["messages"]
        for node in page["nodes"]:
            seen += 1
            want = expected(messages[node["xid"].lower()])
            if node["dataschemaformat"] != want:
                missing.append(node["xid"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    inheriting = sum(1 for b in messages.values() if b.get("basemessageuri") and not b.get("dataschemaformat")
                     and expected(b))
    assert seen == len(messages) == 1538 and inheriting > 900
    assert missing == []


async def test_writing_a_base_changes_its_dependents_at_the_new_revision_only(empty):
    create = """mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"""
    doc = {"messagegroups": {"g": {"messages": {
        "base": {"envelope": "CloudEvents/1.0", "description": "the base",
                 "envelopemetadata": {"type": {"value": "com.example.base"}, "source": {"value": "/a"}}},
        "middle": {"basemessageuri": "/messagegroups/g/messages/base", "protocol": "KAFKA",
                   "protocoloptions": {"key": "id"}},
        "leaf": {"basemessageuri": "/messagegroups/g/messages/middle",
                 "envelopemetadata": {"source": {"value": "/leaf"}}},
    }}}}
    before = (await empty.data(create, doc=doc))["importDocument"]["revision"]
    leaf = "/messagegroups/g/messages/leaf"
    m = (await empty.data(MESSAGE, xid=leaf))["lookup"]
    assert m["description"] == "the base" and m["protocol"] == "KAFKA"
    assert m["envelopemetadata"] == {"type": {"value": "com.example.base"}, "source": {"value": "/leaf"}}
    update = """mutation { updateResource(groupType: "messagegroups", groupId: "g",
        resourceType: "messages", resourceId: "base", attributes: {description: "changed", envelope: "CloudEvents/1.0",
                     envelopemetadata: {type: {value: "com.example.v2"}}}) { revision } }"""
    after = (await empty.data(update))["updateResource"]["revision"]
    now = (await empty.data(MESSAGE, xid=leaf))["lookup"]
    assert now["description"] == "changed" and now["envelopemetadata"]["type"] == {"value": "com.example.v2"}
    assert "source" in now["envelopemetadata"]  # the leaf's own
    old = (await empty.data(MESSAGE, xid=leaf, asOf=before))["lookup"]
    assert old["description"] == "the base" and old["envelopemetadata"]["type"] == {"value": "com.example.base"}
    assert after == before + 1  # one commit: the base and its two dependents


async def test_a_circular_chain_is_refused_and_nothing_is_written(empty):
    create = """mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"""
    await empty.data(create, doc={"messagegroups": {"g": {"messages": {
        "a": {"basemessageuri": "/messagegroups/g/messages/b"}, "b": {"description": "b"}}}}})
    error = await empty.error("""mutation { updateResource(groupType: "messagegroups", groupId: "g",
        resourceType: "messages", resourceId: "b", attributes: {basemessageuri: "/messagegroups/g/messages/a"}) { revision } }""")
    assert error["extensions"]["code"] == "invalid_attribute"
    assert "circular" in error["message"] and "/messagegroups/g/messages/a" in error["message"]
    m = (await empty.data(MESSAGE, xid="/messagegroups/g/messages/b"))["lookup"]
    assert m["description"] == "b"


async def test_a_dangling_base_is_not_an_error_and_resolves_once_created(empty):
    create = """mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"""
    await empty.data(create, doc={"messagegroups": {"g": {"messages": {
        "child": {"basemessageuri": "/messagegroups/g/messages/later", "protocol": "KAFKA",
                  "protocoloptions": {"key": "k"}}}}}})
    m = (await empty.data(MESSAGE, xid="/messagegroups/g/messages/child"))["lookup"]
    assert m["unresolvedBase"] == "/messagegroups/g/messages/later" and m["description"] is None
    await empty.data(create, doc={"messagegroups": {"g": {"messages": {"later": {"description": "here now"}}}}})
    m = (await empty.data(MESSAGE, xid="/messagegroups/g/messages/child"))["lookup"]
    assert m["unresolvedBase"] is None and m["description"] == "here now"


async def test_the_xregistry_api_and_export_stay_declared(empty):
    create = """mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"""
    await empty.data(create, doc={"messagegroups": {"g": {"messages": {
        "base": {"description": "the base"}, "child": {"basemessageuri": "/messagegroups/g/messages/base"}}}}})
    client: httpx.AsyncClient = empty.client
    body = (await client.get("/registry/messagegroups/g/messages/child")).json()
    assert "description" not in body and body["basemessageuri"] == "/messagegroups/g/messages/base"
    version = (await client.get("/registry/messagegroups/g/messages/child/versions/1")).json()
    assert "description" not in version
    export = (await client.get("/registry/export")).text
    assert DERIVED not in export and json.loads(export)["messagegroups"]["g"]["messages"]["child"].get(
        "description") is None


# -- free-text search ----------------------------------------------------------------------------

SEISMIC = ("org.fdsn.event", "USGS.Earthquakes", "JP.JMA.Quake")


async def test_a_search_for_earthquake_returns_the_seismic_feeds_first(corpus):
    query = """query($after: String) { registry { messages(search: "earthquake", first: 6, after: $after) {
        totalCount nodes { xid description } pageInfo { hasNextPage endCursor } } } }"""
    first = (await corpus.data(query))["registry"]["messages"]
    groups = [n["xid"].split("/")[2] for n in first["nodes"]]
    assert len(groups) == 6 and all(g.startswith(SEISMIC) for g in groups), groups
    seen, after = [], None
    while True:
        page = (await corpus.data(query, after=after))["registry"]["messages"]
        seen += [n["xid"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == len(set(seen)) == first["totalCount"] >= 10
    # the AMQP/MQTT variants declare no description: they are found by the one they inherit
    assert "/messagegroups/USGS.Earthquakes.amqp/messages/USGS.Earthquakes.amqp.Event" in seen


async def test_search_combines_with_filters_and_nested_collections(corpus):
    query = """{ registry { messages(search: "earthquake", filter: {protocol: "KAFKA"}) { nodes { xid protocol } }
        messagegroups(search: "earthquakes", first: 50) { nodes { messagegroupid } } } }"""
    data = (await corpus.data(query))["registry"]
    kafka = data["messages"]["nodes"]
    assert kafka and all(n["protocol"] == "KAFKA" for n in kafka)
    assert "USGS.Earthquakes" in {g["messagegroupid"] for g in data["messagegroups"]["nodes"]}
    nested = """{ registry { messagegroups(filter: {raw: ["messagegroupid=USGS.Earthquakes*"]}) { nodes {
        messages(search: "event") { nodes { xid } } } } } }"""
    groups = (await corpus.data(nested))["registry"]["messagegroups"]["nodes"]
    assert groups and all(len(g["messages"]["nodes"]) == 1 for g in groups)


async def test_a_plain_word_in_raw_says_how_to_search(corpus):
    error = await corpus.error('{ registry { messages(filter: {raw: ["earthquake"]}) { totalCount } } }')
    assert error["extensions"]["code"] == "bad_filter"
    assert 'messages(search: "earthquake")' in error["message"] + error["extensions"].get("detail", "")
    empty = await corpus.error('{ registry { messages(search: "  ") { totalCount } } }')
    assert empty["extensions"]["code"] == "BAD_USER_INPUT"
    ok = await corpus.data('{ registry { messages(first: 1, filter: {raw: ["description"]}) { totalCount } } }')
    assert ok["registry"]["messages"]["totalCount"] > 0  # an attribute test stays one
