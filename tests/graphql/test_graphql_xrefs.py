"""Cross-reference Resources through GraphQL (core/spec.md "Cross Referencing Resources"), on
each embedded store (the HTTP tests' ``store_client``: SQLite, and MongoDB through mongomock):
the source is served with its target's attributes, ``meta`` and Versions under its own ids, as
the xRegistry API serves it (tests/http/test_http_xrefs.py), and filters and sorting read the
values it is served with."""

from __future__ import annotations

from typing import Any

from tests.http.test_http_model_features import dirs_model, install

SOURCE = "/dirs/d2/files/x"

RESOURCE = """query($xid: String!) { entity: lookup(xid: $xid) { ... on GenericResource {
  xid entityid versionid isdefault epoch json
  meta { json }
  versions(first: 10) { totalCount nodes { xid entityid json } }
  defaultversion { xid } } } }"""

FILES = """query($dir: String!, $filter: Filter, $sort: SortBy) { entity: lookup(xid: $dir) { ... on GenericGroup {
  resources(resourceType: "files", first: 10, filter: $filter, sort: $sort) { totalCount nodes { xid } } } } }"""

ALL_FILES = """query($filter: Filter, $sort: SortBy, $first: Int, $after: String) { registry {
  resources(resourceType: "files", first: $first, after: $after, filter: $filter, sort: $sort) {
    totalCount nodes { xid } pageInfo { hasNextPage endCursor } } } }"""


async def gql(client, query: str, **variables: Any) -> dict[str, Any]:
    r = await client.post("/graphql", json={"query": query, "variables": variables})
    assert r.status_code == 200 and "errors" not in r.json(), r.text
    return r.json()["data"]


async def setup(client) -> None:
    """``/dirs/d1/files/f1`` (two Versions, the default one of tier gold), ``/dirs/d1/files/f0`` (tier bronze) and
    ``/dirs/d3/files/f3`` (tier silver); the source ``/dirs/d2/files/x`` references f1."""
    await install(client, dirs_model())
    for path, body in (("/dirs/d1/files/f1", {"versions": {"1": {"tier": "old"}, "2": {"tier": "gold", "size": 5}}}),
                       ("/dirs/d1/files/f0", {"tier": "bronze", "size": 9}),
                       ("/dirs/d3/files/f3", {"tier": "silver", "size": 1}),
                       (SOURCE, {"meta": {"xref": "/dirs/d1/files/f1"}})):
        r = await client.put("/registry" + path, json=body)
        assert r.status_code == 201, r.text


async def test_source_serves_the_targets_attributes(store_client):
    """"When this source Resource (mySchema) is retrieved, all of the target Resource's
    attributes (except its <RESOURCE>id) will appear as if they were locally defined"; "Any
    attributes referencing the source MUST use the source's metadata"; "The xref attribute MUST
    always appear when the source's meta sub-object is serialized". GraphQL shows what the
    xRegistry API shows."""
    await setup(store_client)
    over_http = (await store_client.get("/registry" + SOURCE + "?inline=meta")).json()
    target = (await store_client.get("/registry/dirs/d1/files/f1")).json()
    source = (await gql(store_client, RESOURCE, xid=SOURCE))["entity"]
    assert source["xid"] == SOURCE and source["entityid"] == "x"
    assert source["versionid"] == target["versionid"] == "2" and source["isdefault"] is True
    assert source["epoch"] == target["epoch"]
    shown = source["json"]
    for name in ("fileid", "xid", "self", "versionid", "tier", "size", "epoch", "createdat", "modifiedat"):
        assert shown.get(name) == over_http.get(name), name
    meta = source["meta"]["json"]
    assert meta == over_http["meta"]
    assert meta["xref"] == "/dirs/d1/files/f1" and meta["xid"] == SOURCE + "/meta" and meta["fileid"] == "x"
    assert meta["defaultversionid"] == "2"


async def test_source_versions_are_the_targets(store_client):
    """The source "appears to be a normal Resource that exists within" its Group: its Versions
    are the target's, shown under the source's XIDs, one by one too."""
    await setup(store_client)
    source = (await gql(store_client, RESOURCE, xid=SOURCE))["entity"]
    versions = source["versions"]
    assert versions["totalCount"] == 2
    assert [v["xid"] for v in versions["nodes"]] == [SOURCE + "/versions/1", SOURCE + "/versions/2"]
    assert all(v["entityid"] in ("1", "2") and v["json"]["fileid"] == "x" for v in versions["nodes"])
    assert [v["json"]["tier"] for v in versions["nodes"]] == ["old", "gold"]
    assert source["defaultversion"] == {"xid": SOURCE + "/versions/2"}
    one = (await gql(store_client, "query($xid: String!) { entity: lookup(xid: $xid) { ... on GenericVersion { xid } } }", xid=SOURCE + "/versions/1"))
    assert one["entity"] == {"xid": SOURCE + "/versions/1"}


async def test_filters_and_sort_read_the_targets_values(store_client):
    """core/spec.md: "From a consumption (read) perspective, aside from the presence of the xref
    attribute, the Resource appears to be a normal Resource [...] All of the
    specification-defined features (e.g. inline, filter request flags) MAY be used when
    retrieving the Resource": a filter matches the source by the target's attributes, and a
    sort places it by them — through GraphQL and the xRegistry API alike."""
    await setup(store_client)
    gold = {"raw": ["tier=gold"]}
    assert (await gql(store_client, FILES, dir="/dirs/d2", filter=gold))["entity"]["resources"] == {
        "totalCount": 1, "nodes": [{"xid": SOURCE}]}
    everywhere = (await gql(store_client, ALL_FILES, filter=gold))["registry"]["resources"]
    assert sorted(n["xid"] for n in everywhere["nodes"]) == ["/dirs/d1/files/f1", SOURCE]
    assert everywhere["totalCount"] == 2
    # the source's own (empty) default Version does not match
    none = {"raw": ["tier=null"]}
    assert (await gql(store_client, FILES, dir="/dirs/d2", filter=none))["entity"]["resources"]["totalCount"] == 0
    by_size = (await gql(store_client, ALL_FILES, sort={"attribute": "size"}))["registry"]["resources"]
    assert [n["xid"] for n in by_size["nodes"]] == [
        "/dirs/d3/files/f3", "/dirs/d1/files/f1", SOURCE, "/dirs/d1/files/f0"]
    down = (await gql(store_client, ALL_FILES, sort={"attribute": "size", "order": "DESC"}))["registry"]["resources"]
    assert [n["xid"] for n in down["nodes"]] == [
        "/dirs/d1/files/f0", SOURCE, "/dirs/d1/files/f1", "/dirs/d3/files/f3"]
    # paged: the source keeps its place across pages
    seen, after = [], None
    while True:
        page = (await gql(store_client, ALL_FILES, sort={"attribute": "size"}, first=1, after=after))
        conn = page["registry"]["resources"]
        seen += [n["xid"] for n in conn["nodes"]]
        if not conn["pageInfo"]["hasNextPage"]:
            break
        after = conn["pageInfo"]["endCursor"]
    assert seen == [n["xid"] for n in by_size["nodes"]]
    # and the xRegistry API the same
    r = await store_client.get("/registry/dirs/d2/files?filter=tier=gold")
    assert list(r.json()) == ["x"], r.text
    r = await store_client.get("/registry/dirs/d2/files?filter=tier=bronze")
    assert r.json() == {}, r.text
    r = await store_client.get("/registry/dirs/d2/files?filter=versions.tier=old")
    assert list(r.json()) == ["x"], r.text


async def test_a_dangling_source_is_matched_by_its_own_state(store_client):
    """"In these "dangling xref" situations, the serialization of the source Resource will not
    include any target Resource attributes or nested collections": no target value matches it,
    its ids still do."""
    await setup(store_client)
    assert (await store_client.delete("/registry/dirs/d1/files/f1")).status_code in (200, 204)
    source = (await gql(store_client, RESOURCE, xid=SOURCE))["entity"]
    assert source["versionid"] is None and source["versions"]["totalCount"] == 0
    assert source["meta"]["json"]["xref"] == "/dirs/d1/files/f1"
    gold = {"raw": ["tier=gold"]}
    assert (await gql(store_client, FILES, dir="/dirs/d2", filter=gold))["entity"]["resources"]["totalCount"] == 0
    own = {"raw": ["fileid=x"]}
    assert (await gql(store_client, FILES, dir="/dirs/d2", filter=own))["entity"]["resources"]["nodes"] == [
        {"xid": SOURCE}]
