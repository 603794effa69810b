"""Queries over HTTP against the 117-feed corpus: collections, paging, filters, sort, nodes, XIDs."""

from __future__ import annotations

import base64

import pytest

from tests.corpus import REPO

ENDPOINT_PAGE = """
query($first: Int, $after: String, $last: Int, $before: String, $filter: EndpointFilter, $sort: SortBy) {
  registry { endpoints(first: $first, after: $after, last: $last, before: $before, filter: $filter, sort: $sort) {
    totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { xid protocol } } } }
}"""


async def endpoints(gql, **args):
    return (await gql.data(ENDPOINT_PAGE, **args))["registry"]["endpoints"]


async def test_registry_and_collection_totals(corpus):
    data = await corpus.data("""{
      registries { registryid }
      registry { id xid registryid entityid specversion revision asOf self
        endpoints { totalCount } messagegroups { totalCount } schemagroups { totalCount }
        messages { totalCount } schemas { totalCount } versions(resourceType: "schemas") { totalCount }
        groups(groupType: "endpoints") { totalCount } resources(resourceType: "messages") { totalCount } } }""")
    reg = data["registry"]
    assert data["registries"] == [{"registryid": "test"}]
    assert (reg["xid"], reg["registryid"], reg["entityid"], reg["specversion"]) == ("/", "test", "test", "1.0-rc4")
    assert reg["revision"] == await corpus.registry.store.current_revision() and reg["asOf"] is None
    assert reg["self"] == "http://gw/registry/"
    counts = {k: v["totalCount"] for k, v in reg.items() if isinstance(v, dict)}
    assert counts == {"endpoints": 415, "messagegroups": 545, "schemagroups": 217, "messages": 1538,
                      "schemas": 685, "versions": 685, "groups": 415, "resources": 1538}


async def test_forward_paging_walks_every_endpoint_once_in_xid_order(corpus):
    seen, after, pages = [], None, 0
    while True:
        page = await endpoints(corpus, first=100, after=after)
        seen += [e["node"]["xid"] for e in page["edges"]]
        pages += 1
        assert page["pageInfo"]["hasPreviousPage"] == (after is not None)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]
    assert pages == 5 and len(seen) == len(set(seen)) == 415
    assert seen == sorted(seen, key=str.lower)


async def test_backward_paging_gives_the_same_pages(corpus):
    first = await endpoints(corpus, first=7)
    second = await endpoints(corpus, first=7, after=first["pageInfo"]["endCursor"])
    back = await endpoints(corpus, last=7, before=second["edges"][0]["cursor"])
    assert [e["node"] for e in back["edges"]] == [e["node"] for e in first["edges"]]
    assert back["pageInfo"]["hasNextPage"] and not back["pageInfo"]["hasPreviousPage"]
    tail = await endpoints(corpus, last=3)
    everything = await endpoints(corpus, first=500)
    assert [e["node"] for e in tail["edges"]] == [e["node"] for e in everything["edges"][-3:]]
    assert tail["pageInfo"]["hasPreviousPage"] and not tail["pageInfo"]["hasNextPage"]


async def test_typed_and_raw_filters(corpus):
    assert (await endpoints(corpus, filter={"protocol": "KAFKA"}, first=0))["totalCount"] == 180
    assert (await endpoints(corpus, filter={"protocol": "kafka"}, first=0))["totalCount"] == 180
    assert (await endpoints(corpus, filter={"usage": "consumer"}, first=0))["totalCount"] == 1
    assert (await endpoints(corpus, filter={"protocol": "MQTT*"}, first=0))["totalCount"] == 118
    # raw expressions OR'd, each AND'd with the typed fields
    either = await endpoints(corpus, filter={"raw": ["protocol=KAFKA", "protocol=AMQP/1.0"]}, first=0)
    assert either["totalCount"] == 297
    both = await endpoints(corpus, filter={"usage": "producer", "raw": ["protocol=KAFKA", "protocol=AMQP/1.0"]},
                           first=500)
    kafka = await endpoints(corpus, filter={"usage": "producer", "protocol": "KAFKA"}, first=0)
    amqp = await endpoints(corpus, filter={"usage": "producer", "protocol": "AMQP/1.0"}, first=0)
    assert both["totalCount"] == len(both["edges"]) == kafka["totalCount"] + amqp["totalCount"]
    assert {e["node"]["protocol"] for e in both["edges"]} == {"KAFKA", "AMQP/1.0"}


async def test_nested_collection_filter_and_message_search(corpus):
    data = (await corpus.data("""{ registry {
      groups: messagegroups(filter: {raw: ["messages.protocol=KAFKA"]}, first: 0) { totalCount }
      kafka: messages(filter: {protocol: "KAFKA"}, first: 0) { totalCount }
      position: messages(filter: {format: "JsonStructure*", raw: ["envelopemetadata.type.value=*PositionReport"]}) {
        totalCount nodes { xid dataschemaformat envelopemetadata } } } }"""))["registry"]
    assert data["groups"]["totalCount"] > 0
    assert data["kafka"]["totalCount"] > data["groups"]["totalCount"]
    assert data["position"]["totalCount"] == len(data["position"]["nodes"]) > 0
    for node in data["position"]["nodes"]:
        assert node["dataschemaformat"].startswith("JsonStructure")
        assert node["envelopemetadata"]["type"]["value"].endswith("PositionReport")


async def test_sort_orders_and_pages_by_attribute(corpus):
    everything = await endpoints(corpus, first=500, sort={"attribute": "protocol", "order": "DESC"})
    keys = [(e["node"]["protocol"].lower(), e["node"]["xid"].lower()) for e in everything["edges"]]
    assert keys == sorted(keys, reverse=True)
    page1 = await endpoints(corpus, first=150, sort={"attribute": "protocol", "order": "DESC"})
    page2 = await endpoints(corpus, first=150, after=page1["pageInfo"]["endCursor"],
                            sort={"attribute": "protocol", "order": "DESC"})
    assert [e["node"] for e in page1["edges"] + page2["edges"]] == [e["node"] for e in everything["edges"][:300]]


@pytest.mark.parametrize("args, code", [
    ({"first": 501}, "BAD_USER_INPUT"),
    ({"first": -1}, "BAD_USER_INPUT"),
    ({"first": 1, "last": 1}, "BAD_USER_INPUT"),
    ({"after": "not-a-cursor"}, "BAD_USER_INPUT"),
    ({"filter": {"raw": ["protocol=="]}}, "bad_filter"),
    ({"filter": {"raw": ["excludeall", "protocol=KAFKA"]}}, "bad_filter"),
    ({"sort": {"attribute": "labels.*"}}, "bad_sort"),
])
async def test_bad_arguments_are_clear_errors(corpus, args, code):
    error = await corpus.error(ENDPOINT_PAGE, **args)
    assert error["extensions"]["code"] == code
    assert error["path"] == ["registry", "endpoints"]
    if code.islower():  # a registry error: the problem details of the HTTP binding come along
        assert error["extensions"]["type"].endswith("#" + code) and error["extensions"]["title"]


async def test_nested_pages_follow_their_cursors(corpus):
    query = """query($after: String, $last: Int, $before: String, $sort: SortBy) {
      lookup(xid: "/messagegroups/IO.AISstream") { ... on MessageGroup {
        all: messages(first: 100, sort: $sort) { totalCount nodes { xid } }
        page: messages(first: 5, after: $after, sort: $sort) { totalCount pageInfo { hasNextPage hasPreviousPage endCursor }
          nodes { xid } }
        back: messages(last: $last, before: $before, sort: $sort) { pageInfo { hasPreviousPage hasNextPage }
          nodes { xid } } } } }"""
    for sort in (None, {"attribute": "name", "order": "DESC"}):
        seen, after, after_index = [], None, -1
        while True:
            group = (await corpus.data(query, after=after, last=2, sort=sort))["lookup"]
            page = group["page"]
            seen += [n["xid"] for n in page["nodes"]]
            assert page["pageInfo"]["hasPreviousPage"] == (after is not None)
            if not page["pageInfo"]["hasNextPage"]:
                break
            after, after_index = page["pageInfo"]["endCursor"], len(seen) - 1
        everything = [n["xid"] for n in group["all"]["nodes"]]
        assert seen == everything and len(seen) == page["totalCount"] == group["all"]["totalCount"] > 10
        back = (await corpus.data(query, last=2, before=after, sort=sort))["lookup"]["back"]
        assert [n["xid"] for n in back["nodes"]] == everything[after_index - 2:after_index]
        assert back["pageInfo"] == {"hasPreviousPage": True, "hasNextPage": True}


async def test_node_and_lookup_by_xid(corpus):
    xid = "/messagegroups/IO.AISstream/messages/IO.AISstream.PositionReport"
    found = await corpus.data("""query($xid: String!) { lookup(xid: $xid) { __typename id xid
        ... on Message { messageid name entityid type group { __typename xid } meta { xid epoch defaultversionid }
          defaultversion { __typename xid versionid isdefault resource { xid } } } } }""", xid=xid)
    msg = found["lookup"]
    assert msg["__typename"] == "Message" and msg["xid"] == xid and msg["messageid"] == msg["entityid"]
    assert msg["group"] == {"__typename": "MessageGroup", "xid": "/messagegroups/IO.AISstream"}
    assert msg["meta"]["xid"] == xid + "/meta" and msg["meta"]["defaultversionid"] == "1"
    assert msg["defaultversion"] == {"__typename": "MessageVersion", "xid": xid + "/versions/1", "versionid": "1",
                                     "isdefault": True, "resource": {"xid": xid}}
    assert base64.urlsafe_b64decode(msg["id"] + "==").decode() == "test" + xid
    again = await corpus.data("query($id: ID!, $ids: [ID!]!) { node(id: $id) { xid } nodes(ids: $ids) { xid } }",
                              id=msg["id"], ids=[msg["id"], base64.urlsafe_b64encode(b"elsewhere/x").decode()])
    assert again == {"node": {"xid": xid}, "nodes": [{"xid": xid}, None]}
    meta = await corpus.data('query($x: String!) { lookup(xid: $x) { __typename ... on Meta { resource { xid } } } }',
                             x=xid + "/meta")
    assert meta["lookup"] == {"__typename": "Meta", "resource": {"xid": xid}}
    assert (await corpus.data('{ lookup(xid: "/endpoints/nope") { xid } }'))["lookup"] is None
    assert (await corpus.error('{ node(id: "%%%") { xid } }'))["extensions"]["code"] == "BAD_USER_INPUT"
    assert (await corpus.error('{ lookup(xid: "endpoints") { xid } }'))["extensions"]["code"] == "malformed_xid"


async def test_dataschema_resolves_the_referenced_schema(corpus):
    data = await corpus.data("""{ lookup(xid: "/messagegroups/IO.AISstream/messages/IO.AISstream.PositionReport") {
      ... on Message { dataschemauri dataschema { format uri xid inline
        schema { __typename xid format } version { __typename xid versionid format } document } } } }""")
    ds = data["lookup"]["dataschema"]
    target = "/schemagroups/IO.AISstream.jstruct/schemas/IO.AISstream.PositionReport"
    assert ds["uri"] == data["lookup"]["dataschemauri"] == ds["xid"] == target
    assert ds["schema"] == {"__typename": "Schema", "xid": target, "format": "JsonStructure/draft-02"}
    assert ds["version"]["xid"] == target + "/versions/1" and ds["version"]["__typename"] == "SchemaVersion"
    assert ds["inline"] is None and ds["format"] == "JsonStructure/draft-02"
    assert ds["document"]["name"] == "PositionReport" and "properties" in ds["document"]


async def test_endpoints_reference_their_message_groups(corpus):
    data = await corpus.data("""{ lookup(xid: "/endpoints/IO.AISstream.Kafka") { ... on Endpoint {
      endpointid usage protocol protocoloptions envelopeoptions attributes
      messagegroups { xid messagegroupid messages { totalCount nodes { messageid basemessage { xid } } } } } } }""")
    ep = data["lookup"]
    assert ep["endpointid"] == "IO.AISstream.Kafka" and ep["usage"] == ["producer"] and ep["protocol"] == "KAFKA"
    assert ep["protocoloptions"]["options"]["topic"] == "aisstream" and ep["attributes"] == {}
    (group,) = ep["messagegroups"]
    assert group["xid"] == "/messagegroups/IO.AISstream" and group["messages"]["totalCount"] == 23


async def test_generic_interfaces_and_unknown_types(corpus):
    data = await corpus.data("""{ registry { groups(groupType: "schemagroups", first: 1) { nodes { __typename type
      resources(resourceType: "schemas", first: 1) { nodes { __typename type versions { nodes { __typename } } } } } } } }""")
    group = data["registry"]["groups"]["nodes"][0]
    assert (group["__typename"], group["type"]) == ("SchemaGroup", "schemagroups")
    schema = group["resources"]["nodes"][0]
    assert (schema["__typename"], schema["type"], schema["versions"]["nodes"][0]["__typename"]) == \
        ("Schema", "schemas", "SchemaVersion")
    bad = await corpus.error('{ registry { groups(groupType: "widgets") { totalCount } } }')
    assert bad["extensions"]["code"] == "unknown_group_type"
    bad = await corpus.error('{ registry { resources(resourceType: "widgets") { totalCount } } }')
    assert bad["extensions"]["code"] == "unknown_resource_type"


async def test_model_and_json_views(corpus):
    data = await corpus.data("""{ registry { model json } lookup(xid: "/schemagroups/IO.AISstream.jstruct") {
      json ... on SchemaGroup { schemas(first: 1) { nodes { json } } } } }""")
    assert set(data["registry"]["model"]["groups"]) == {"endpoints", "messagegroups", "schemagroups"}
    assert data["registry"]["json"]["endpointscount"] == 415
    assert data["lookup"]["json"]["schemascount"] == 23
    assert data["lookup"]["schemas"]["nodes"][0]["json"]["versionscount"] == 1


async def test_the_manual_example_runs(corpus):
    page = (REPO / "docs" / "graphql.md").read_text(encoding="utf-8")
    example = page.split("```graphql\n", 1)[1].split("```", 1)[0]
    data = await corpus.data(example)
    assert data["registry"]["endpoints"]["totalCount"] == 180
    assert data["registry"]["messages"]["nodes"][0]["dataschema"]["document"]
