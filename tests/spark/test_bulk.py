"""The gateway's bulk read (``GET /bulk/rows``) and the data source's use of it, against live
gateways: rows equal to the GraphQL path's, the connector's schema, pins that hold across the
processes of one deployment, authentication, remote registries, refused pins."""

from __future__ import annotations

from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.app import create_app
from gateway.bulk import NEXT_HEADER, REVISION_HEADER, ROWS_PATH, arrow_schema
from pyspark_xregistry.bulk import LEGACY_NEXT_HEADER, BulkClient, KeyRange, key_ranges
from pyspark_xregistry.client import CheckpointMismatch, ClientConfig, GatewayClient, GatewayError
from pyspark_xregistry.schemas import ENTITIES, schema_for
from pyspark_xregistry.source import (
    BulkPartition,
    ChangesPartition,
    FilteringReader,
    ReadOptions,
    SnapshotPartition,
    XRegistryReader,
)
from tests.spark.conftest import CORPUS_COUNTS, REGISTRY_ID, TOKEN, serve
from tests.spark.test_remote_and_revisions import federating  # noqa: F401 - the fixture


class GraphQLReader(XRegistryReader):
    """The data source's reader kept on its GraphQL path (what user schemas of other types use)."""

    bulk = False  # type: ignore[assignment]


class FilteringGraphQLReader(FilteringReader):
    """The filtering reader kept on its GraphQL path."""

    bulk = False  # type: ignore[assignment]


def _rows(reader_type: type[XRegistryReader], url: str, entity: str, token: str | None = TOKEN,
          pushed: dict[str, frozenset[str]] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Every row a reader yields (planned and read here, as Spark would, with filters ``pushed``),
    sorted by XID."""
    given = {"url": url, "entity": entity, **({"token": token} if token else {})}
    opts = ReadOptions.parse(given | {k: str(v) for k, v in options.items()})
    reader = reader_type(opts, schema_for(entity, changes="sinceRevision" in options))
    reader.pushed.update(pushed or {})
    assert reader.bulk == (reader_type not in (GraphQLReader, FilteringGraphQLReader))
    partitions = reader.partitions()
    kind = ChangesPartition if "sinceRevision" in options else BulkPartition if reader.bulk else SnapshotPartition
    assert all(isinstance(p, kind) for p in partitions)
    rows = [row for p in partitions for batch in reader.read(p) for row in batch.to_pylist()]
    return sorted(rows, key=lambda r: (r["registry"], r["xid"]))


@pytest.mark.parametrize("entity", list(ENTITIES))
def test_bulk_rows_equal_the_graphql_paths(gateway, entity):
    bulk = _rows(XRegistryReader, gateway.url, entity, asOfRevision=gateway.corpus_revision, numPartitions=3)
    graphql = _rows(GraphQLReader, gateway.url, entity, asOfRevision=gateway.corpus_revision)
    assert len(bulk) == CORPUS_COUNTS[entity]
    assert bulk == graphql


PUSHED: list[tuple[str, dict[str, frozenset[str]]]] = [
    ("messages", {"protocol": frozenset({"KAFKA"})}),
    ("messages", {"protocol": frozenset({"kafka"})}),  # the gateway matches it, the exact check drops it
    ("messages", {"group": frozenset({"IO.AISstream", "at.geosphere.tawes", "IO.AISstream.amqp"}),
                  "envelope": frozenset({"CloudEvents/1.0"})}),
    ("messages", {"id": frozenset({"IO.AISstream.ShipStaticData", "nothing"})}),
    # more groups than a filter carries (MAX_FILTER_EXPRESSIONS): every group listed, the ranges of these read
    ("messages", {"group": frozenset({"IO.AISstream", *(f"no.such.group.{i}" for i in range(80))})}),
    ("messagegroups", {"group": frozenset({"IO.AISstream", "at.geosphere.tawes"})}),
    ("messagegroups", {"envelope": frozenset({"CloudEvents/1.0"})}),
    ("endpoints", {"protocol": frozenset({"KAFKA"})}),
    ("schemaversions", {"format": frozenset({"Avro/1.11.3"})}),
    ("schemas", {"group": frozenset({"IO.AISstream.jstruct", "DE.Autobahn.jstruct"})}),
]


@pytest.mark.parametrize(("entity", "pushed"), PUSHED)
def test_filtered_bulk_rows_equal_the_graphql_paths(gateway, entity, pushed):
    """Pushed filters narrow the bulk read (the gateway filters, the connector checks exactly)."""
    bulk = _rows(FilteringReader, gateway.url, entity, pushed=pushed, asOfRevision=gateway.corpus_revision,
                 numPartitions=2)  # (read in bulk: _rows checks the partitions)
    graphql = _rows(FilteringGraphQLReader, gateway.url, entity, pushed=pushed,
                    asOfRevision=gateway.corpus_revision)
    assert bulk == graphql
    assert bulk or pushed == {"protocol": frozenset({"kafka"})}
    assert all(row[column] in values for row in bulk for column, values in pushed.items())


def test_change_feed_rows_equal_the_graphql_paths(gateway):
    """A change feed (``sinceRevision``) reads in bulk too: upserted rows as a snapshot's, deleted
    ones with their ids alone, each with the revision of its change."""
    # an entity written before the feed's start, deleted in it (its own: the gateway is shared)
    gateway.import_document({"messagegroups": {"bulk.changes.old": {"messages": {"old": {"name": "old"}}}}})
    before = gateway.revision()
    gateway.import_document({"messagegroups": {"bulk.changes": {"messages": {"a": {"name": "a"}, "b": {}}}},
                             "schemagroups": {"bulk.changes": {"schemas": {"s": {"versions": {"1": {
                                 "format": "JsonSchema/draft-07", "schema": {"type": "object"}}}}}}}})
    gateway.graphql('mutation($x: String!) { deleteEntity(xid: $x) { revision } }',
                    x="/messagegroups/bulk.changes/messages/b")
    gateway.graphql('mutation($x: String!) { deleteEntity(xid: $x) { revision } }',
                    x="/messagegroups/bulk.changes.old/messages/old")
    after = gateway.revision()
    feeds = {}
    for entity in ("messages", "messagegroups", "schemaversions"):
        bulk = _rows(XRegistryReader, gateway.url, entity, sinceRevision=before, asOfRevision=after)
        graphql = _rows(GraphQLReader, gateway.url, entity, sinceRevision=before, asOfRevision=after)
        assert bulk == graphql and bulk, entity
        feeds[entity] = bulk
    changes = {r["xid"]: r["change"] for r in feeds["messages"]}
    assert changes["/messagegroups/bulk.changes/messages/b"] == "deleted"
    assert changes["/messagegroups/bulk.changes/messages/a"] == "upserted"
    assert changes["/messagegroups/bulk.changes.old/messages/old"] == "deleted"
    # in pages of 2 rows (a deleted entity among them), the same feed
    with BulkClient(ClientConfig(url=gateway.url, token=TOKEN), "messages", page_rows=2) as paged:
        pages = list(paged.changes(REGISTRY_ID, after, before, None))
    assert len(pages) > 1 and sorted(x for b in pages for x in b.column("xid").to_pylist()) == sorted(changes)


@pytest.mark.parametrize("entity", list(ENTITIES))
def test_the_gateway_builds_the_connectors_schema(entity):
    assert arrow_schema(entity).equals(to_arrow_schema(schema_for(entity), timezone="UTC"))


def _base(gateway) -> str:
    return gateway.url.removesuffix("/graphql")


def test_the_bulk_read_needs_the_read_scope(gateway):
    params = {"registry": REGISTRY_ID, "entity": "messagegroups", "asOf": str(gateway.corpus_revision), "limit": "5"}
    anonymous = httpx.get(_base(gateway) + ROWS_PATH, params=params, timeout=30)
    assert anonymous.status_code == 401 and "www-authenticate" in anonymous.headers
    assert anonymous.json()["type"].endswith("unauthorized")
    wrong = httpx.get(_base(gateway) + ROWS_PATH, params=params, timeout=30, headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = httpx.get(_base(gateway) + ROWS_PATH, params=params, timeout=30, headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.headers["content-type"] == "application/vnd.apache.arrow.stream"
    assert pa.ipc.open_stream(ok.content).read_all().num_rows == 5


def test_bulk_headers_are_outside_the_xregistry_namespace(gateway):
    """core/http.md keeps ``xRegistry-*`` headers for the attributes of the entity a response
    describes; the bulk read's paging and revision headers are the gateway's own
    (``X-Registry-Bulk-Before``, ``X-Registry-Bulk-Revision``, like ``X-Registry-Instance``)."""
    params = {"registry": REGISTRY_ID, "entity": "messagegroups", "asOf": str(gateway.corpus_revision), "limit": "5"}
    ok = httpx.get(_base(gateway) + ROWS_PATH, params=params, timeout=30, headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200, ok.text
    assert ok.headers[NEXT_HEADER] and ok.headers[REVISION_HEADER] == str(gateway.corpus_revision)
    assert NEXT_HEADER == "X-Registry-Bulk-Before" and REVISION_HEADER == "X-Registry-Bulk-Revision"
    assert not [h for h in ok.headers if h.lower().startswith("xregistry-")]


def _rows_app(header: str) -> Starlette:
    """A gateway's ``/bulk/rows`` reduced to paging: rows ``a``…``e`` of one column, two per answer
    (the last ones of the range first), the next ``before`` in ``header``."""
    keys = ["a", "b", "c", "d", "e"]

    async def rows(request: Request) -> Response:
        before = request.query_params.get("before")
        inside = [k for k in keys if before is None or k < before]
        page = inside[-2:]
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, pa.schema([("xid", pa.string())])) as writer:
            writer.write_batch(pa.record_batch([pa.array(page)], names=["xid"]))
        headers = {header: page[0]} if len(page) == 2 and inside[:-2] else {}
        return Response(sink.getvalue().to_pybytes(), media_type="application/vnd.apache.arrow.stream",
                        headers=headers)

    return Starlette(routes=[Route("/bulk/rows", rows)])


@pytest.mark.parametrize("header", [NEXT_HEADER, LEGACY_NEXT_HEADER])
def test_the_connector_pages_by_the_bulk_header(header):
    """The connector follows ``X-Registry-Bulk-Before`` (and the ``xRegistry-bulk-before`` of
    gateways of earlier releases) until an answer names no next page."""
    with serve(_rows_app(header)) as url:
        client = BulkClient(ClientConfig(url=url + "/graphql"), "messagegroups", page_rows=2)
        with client:
            batches = client.read(KeyRange("r", 1, None, None, None, 5))
    assert [x for b in batches for x in b.column("xid").to_pylist()] == ["a", "b", "c", "d", "e"]


def test_a_change_feed_from_a_gateway_without_one_is_refused_with_a_reason():
    """A gateway of an earlier release ignores ``since`` and answers a snapshot page: the
    connector says so instead of reading rows without their ``change``."""
    with serve(_rows_app(NEXT_HEADER)) as url:
        with BulkClient(ClientConfig(url=url + "/graphql"), "messagegroups", page_rows=2) as client:
            with pytest.raises(GatewayError, match="no change feed"):
                list(client.changes("r", 5, 1, None))


def _problem(gateway, **params: Any) -> tuple[int, dict[str, Any]]:
    resp = httpx.get(_base(gateway) + ROWS_PATH, params=params, timeout=30,
                     headers={"authorization": f"Bearer {TOKEN}"})
    return resp.status_code, resp.json()


def test_bad_requests_and_pins_are_refused_with_a_reason(gateway):
    rev = gateway.corpus_revision
    status, body = _problem(gateway, registry=REGISTRY_ID, entity="messages", asOf=gateway.revision() + 100)
    assert status == 400 and "not readable" in body["detail"]
    status, body = _problem(gateway, registry=REGISTRY_ID, entity="messages", asOf=rev, instanceId="another")
    assert status == 409 and body["type"].endswith("instance_mismatch")
    status, body = _problem(gateway, registry=REGISTRY_ID, entity="messages")
    assert status == 400 and "asOf is required" in body["detail"]
    status, body = _problem(gateway, registry=REGISTRY_ID, entity="things", asOf=rev)
    assert status == 400 and "entity must be one of" in body["detail"]
    status, body = _problem(gateway, registry="nowhere", entity="messages", asOf=rev)
    assert status == 404 and "nowhere" in body["detail"]
    status, body = _problem(gateway, registry=REGISTRY_ID, entity="messages", asOf=rev, limit=0)
    assert status == 400 and "limit" in body["detail"]
    for extra in ({"filter": "messageid=x"}, {"before": "/messagegroups/x"}):  # not silently ignored
        status, body = _problem(gateway, registry=REGISTRY_ID, entity="messages", asOf=rev, since=0, **extra)
        assert status == 400 and "do not apply to a change feed" in body["detail"]

    # the data source's client reports them as errors, a checkpoint of another instance as such
    config = ClientConfig(url=gateway.url, token=TOKEN, retries=0)
    with BulkClient(config, "messages") as bulk:
        with pytest.raises(CheckpointMismatch, match="instance_mismatch"):
            bulk.read(KeyRange(REGISTRY_ID, rev, "another", None, None, 0))
        with pytest.raises(GatewayError, match="not readable"):
            bulk.read(KeyRange(REGISTRY_ID, gateway.revision() + 100, None, None, None, 0))


def test_key_ranges_tile_the_registry(gateway):
    """Ranges cut at group boundaries read every row once, also when group ids prefix each other."""
    config = ClientConfig(url=gateway.url, token=TOKEN)
    rev = gateway.revision()
    with GatewayClient(config) as gw, BulkClient(config, "messages") as bulk:
        instance = gw.registry_states()[REGISTRY_ID].instance
        groups = [(f"/{gtype}/{ref.id}", ref.children) for gtype in ("endpoints", "messagegroups")
                  for ref in gw.group_refs(REGISTRY_ID, rev, gtype, raw=None, child_type="messages")]
        ranges = key_ranges(REGISTRY_ID, rev, instance, groups, 37)
        assert len(ranges) > 20 and ranges[0].after is None and ranges[-1].before is None
        xids = [x for r in ranges for b in bulk.read(r) for x in b.column("xid").to_pylist()]
        whole = bulk.read(KeyRange(REGISTRY_ID, rev, instance, None, None, 0))
        one_page = bulk.read(ranges[3])
    assert len(xids) == len(set(xids)) == gateway.total("messages", rev)
    # in pages of 7 rows (the last ones first), a range reads the same rows in the same order
    with BulkClient(config, "messages", page_rows=7) as paged:
        pages = paged.read(ranges[3])
    assert len(pages) > 2 and all(b.num_rows <= 7 for b in pages)
    assert pa.Table.from_batches(pages).equals(pa.Table.from_batches(one_page))
    assert pa.Table.from_batches(whole).column("xid").to_pylist() == sorted(xids, key=str.lower)


def test_a_pin_holds_across_the_processes_of_a_deployment(gateway):
    """Two gateway processes over one store (uvicorn workers, replicas) answer the ranges of one
    read alike while writes land: every range at the pinned revision."""
    before = gateway.revision()
    expected = _rows(XRegistryReader, gateway.url, "messages", asOfRevision=before)
    gateway.import_document({"messagegroups": {"0000.bulk.first": {"messages": {"a": {"name": "a"}}},
                                               "IO.AISstream": {"messages": {"IO.AISstream.PositionReport": {
                                                   "description": "rewritten"}}}}})
    assert gateway.revision() > before
    with serve(create_app(gateway.settings)) as other:
        config = ClientConfig(url=gateway.url, token=TOKEN)
        with GatewayClient(config) as gw:
            instance = gw.registry_states()[REGISTRY_ID].instance
            groups = [(f"/{gtype}/{ref.id}", ref.children) for gtype in ("endpoints", "messagegroups")
                      for ref in gw.group_refs(REGISTRY_ID, before, gtype, raw=None, child_type="messages")]
        ranges = key_ranges(REGISTRY_ID, before, instance, groups, 100)
        with BulkClient(config, "messages") as mine, \
                BulkClient(ClientConfig(url=f"{other}/graphql", token=TOKEN), "messages") as theirs:
            rows = [row for i, r in enumerate(ranges) for b in (mine, theirs)[i % 2].read(r) for row in b.to_pylist()]
    assert sorted(rows, key=lambda r: r["xid"]) == expected
    assert not any(r["group"] == "0000.bulk.first" for r in rows)


def test_a_remote_registry_is_read_in_bulk(federating):  # noqa: F811 - the fixture
    url, _ = federating
    for entity in ("endpoints", "messagegroups", "messages"):
        bulk = _rows(XRegistryReader, url, entity, None, registry="erp", numPartitions=2)
        graphql = _rows(GraphQLReader, url, entity, None, registry="erp")
        assert bulk and {r["registry"] for r in bulk} == {"erp"}
        # each read pins a snapshot of its own: the same rows but for the revision column
        assert [{**r, "revision": 0} for r in bulk] == [{**r, "revision": 0} for r in graphql]
        assert len({r["revision"] for r in bulk}) == 1
    # a snapshot that was never minted is refused, naming the registry
    resp = httpx.get(url.removesuffix("/graphql") + ROWS_PATH, timeout=30,
                     params={"registry": "erp", "entity": "messages", "asOf": "999999"})
    assert resp.status_code == 400 and "not a live snapshot" in resp.json()["detail"]


def test_spark_reads_a_projection_in_bulk_and_other_schemas_through_graphql(read, gateway):
    rev = gateway.corpus_revision
    full = {r.xid: (r.revision, r.createdat) for r in read("schemas", asOfRevision=rev).collect()}
    gateway.log.clear()
    some = read("schemas", schema="createdat TIMESTAMP, xid STRING NOT NULL, revision BIGINT", asOfRevision=rev)
    assert some.columns == ["createdat", "xid", "revision"]
    assert {r.xid: (r.revision, r.createdat) for r in some.collect()} == full
    # planned through GraphQL (registries, groups), read in bulk
    assert gateway.log.bulk_rows() == CORPUS_COUNTS["schemas"] and gateway.log.returned("Resources", "/schemas/") == 0
    gateway.log.clear()
    other = read("schemas", schema="xid STRING, revision STRING", asOfRevision=rev).collect()
    assert {r.xid: r.revision for r in other} == {x: str(rev_) for x, (rev_, _) in full.items()}
    assert gateway.log.bulk_rows() == 0 and gateway.log.returned("Resources", "/schemas/") == CORPUS_COUNTS["schemas"]


def test_a_pushed_group_reads_the_ranges_of_its_groups_alone(gateway):
    """More group ids than a filter expression carries: planning lists every group, the read
    covers only the ranges of those pushed."""
    opts = ReadOptions.parse({"url": gateway.url, "entity": "messages", "token": TOKEN,
                              "asOfRevision": str(gateway.corpus_revision)})
    reader = FilteringReader(opts, schema_for("messages"))
    reader.pushed["group"] = frozenset({"IO.AISstream", *(f"no.such.group.{i}" for i in range(80))})
    ranges = [r for p in reader.partitions() for r in p.ranges]
    assert ranges and all(r.after and r.after.endswith("/io.aisstream/") for r in ranges)
