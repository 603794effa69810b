"""The xregistry data source in a real local[2] Spark against a live gateway (117-feed corpus)."""

from __future__ import annotations

import json
import threading
from datetime import datetime

from pyspark.sql import functions as F

from pyspark_xregistry.schemas import schema_for
from tests.spark.conftest import CORPUS_COUNTS, REGISTRY_ID

MESSAGE = "/messagegroups/IO.AISstream/messages/IO.AISstream.PositionReport"


def test_counts_equal_the_gateways(read, gateway):
    rev = gateway.corpus_revision
    counts = {entity: read(entity, asOfRevision=rev).count() for entity in CORPUS_COUNTS}
    assert counts == {entity: gateway.total(entity, rev) for entity in CORPUS_COUNTS}
    assert counts == CORPUS_COUNTS


def test_rows_have_the_fixed_schema_and_typed_columns(read, gateway):
    df = read("messages", asOfRevision=gateway.corpus_revision)
    assert df.schema == schema_for("messages")
    row = df.filter(F.col("xid") == MESSAGE).first()
    assert (row.registry, row.group, row.id, row.grouptype) == (REGISTRY_ID, "IO.AISstream",
                                                                "IO.AISstream.PositionReport", "messagegroups")
    assert (row.envelope, row.dataschemaformat) == ("CloudEvents/1.0", "JsonStructure/draft-02")
    assert row.revision == gateway.corpus_revision and row.epoch >= 1
    assert isinstance(row.createdat, datetime)
    entity = json.loads(row.entity)
    assert entity["xid"] == MESSAGE and entity["envelopemetadata"]["type"]["value"] == "IO.AISstream.PositionReport"

    endpoint = read("endpoints", asOfRevision=gateway.corpus_revision).filter(
        F.col("id") == "IO.AISstream.Kafka").first()
    assert (endpoint.usage, endpoint.protocol, endpoint.deployed) == (["producer"], "KAFKA", False)
    assert endpoint.messagegroups == ["/messagegroups/IO.AISstream"]


def test_a_user_supplied_schema_is_honoured(read, gateway):
    df = read("endpoints", schema="xid STRING, epoch STRING, usage ARRAY<STRING>, protocoloptions STRING",
              asOfRevision=gateway.corpus_revision)
    assert df.columns == ["xid", "epoch", "usage", "protocoloptions"]
    row = df.filter(F.col("xid") == "/endpoints/IO.AISstream.Kafka").first()
    assert row.epoch == "1" and row.usage == ["producer"]
    assert json.loads(row.protocoloptions)["options"]["topic"] == "aisstream"


def test_partitions_by_group_read_every_row_once(read, gateway):
    df = read("messages", asOfRevision=gateway.corpus_revision, numPartitions=4)
    rows = df.select("xid", F.spark_partition_id().alias("part")).collect()
    assert len({r.part for r in rows}) == 4
    assert len(rows) == len({r.xid for r in rows}) == CORPUS_COUNTS["messages"]


def _reads(gateway) -> int:
    """Messages the gateway returned since the log was cleared."""
    return gateway.log.returned("Resources", "/messages/") + gateway.log.returned("MoreResources", "/messages/")


def test_message_columns_are_materialised_and_entity_is_declared(read, gateway):
    df = read("messages", asOfRevision=gateway.corpus_revision)
    kafka = df.filter(F.col("xid") == "/messagegroups/de.wsv.pegelonline.kafka/messages/"
                                      "de.wsv.pegelonline.kafka.CurrentMeasurement").first()
    assert (kafka.protocol, kafka.dataschemaformat, kafka.envelope) == ("KAFKA", "JsonStructure/draft-02",
                                                                        "CloudEvents/1.0")
    assert kafka.description  # inherited
    declared = json.loads(kafka.entity)
    assert "dataschemaformat" not in declared and declared["basemessageuri"].endswith("pegelonline.CurrentMeasurement")
    # inheriting rows no longer look empty: pushed-down filters match what the columns show
    assert df.filter(F.col("dataschemaformat").isNull()).count() < 60
    assert df.filter((F.col("protocol") == "KAFKA") & F.col("dataschemaformat").startswith("JsonStructure")).count() \
        == df.filter(F.col("protocol") == "KAFKA").count() == 56


def test_pushdown_reduces_what_the_gateway_returns(read, gateway):
    df = read("messages", asOfRevision=gateway.corpus_revision)
    gateway.log.clear()
    rows = df.select("group", "id", "protocol", "name").collect()
    # nothing pushed: the bulk read returns every row once, GraphQL none
    assert gateway.log.bulk_rows() == len(rows) == CORPUS_COUNTS["messages"] and _reads(gateway) == 0

    # pushed filters narrow the bulk read too (GraphQL only plans)
    kafka = sum(r.protocol == "KAFKA" for r in rows)
    gateway.log.clear()
    assert df.filter(F.col("protocol") == "KAFKA").count() == kafka
    assert gateway.log.bulk_rows() == kafka < len(rows) and _reads(gateway) == 0

    groups = ["IO.AISstream", "at.geosphere.tawes"]
    expected = sum(r.group in groups for r in rows)
    gateway.log.clear()
    assert df.filter(F.col("group").isin(groups)).count() == expected
    assert gateway.log.bulk_rows() == expected and _reads(gateway) == 0

    both = sum(r.group in groups and r.protocol == "AMQP" for r in rows)
    gateway.log.clear()
    assert df.filter(F.col("group").isin(groups) & (F.col("protocol") == "AMQP")).count() == both
    assert gateway.log.bulk_rows() == both < expected

    # the gateway matches case-insensitively; the rows Spark sees are exact
    gateway.log.clear()
    assert df.filter(F.col("protocol") == "kafka").count() == 0
    assert gateway.log.bulk_rows() == kafka

    gateway.log.clear()
    assert df.filter(F.col("registry") == "elsewhere").count() == 0
    assert gateway.log.bulk_rows() == 0 and _reads(gateway) == 0

    # anything else is left to Spark: the gateway returns everything (through the bulk read)
    gateway.log.clear()
    assert df.filter(F.col("name").startswith("Position")).count() == sum(
        (r.name or "").startswith("Position") for r in rows)
    assert gateway.log.bulk_rows() == len(rows) and _reads(gateway) == 0


def _marker_document(tick: int) -> dict:
    """One atomic write touching a message group at each end of the key order."""
    messages = {"marker": {"description": f"tick {tick}"}, f"m{tick}": {"description": f"added by tick {tick}"}}
    return {"messagegroups": {gid: {"messages": messages} for gid in ("0000.spark.first", "zzzz.spark.last")}}


def test_a_snapshot_stays_consistent_while_another_task_writes(read, gateway):
    commits: list[int] = []
    lock = threading.Lock()

    def write() -> None:
        with lock:
            commits.append(gateway.import_document(_marker_document(len(commits))))

    for _ in range(3):
        write()
    before_read = len(commits)
    gateway.log.before_bulk = write  # another write lands before each of the read's bulk reads
    try:
        rows = read("messages", numPartitions=4, pageSize=100).select(
            "xid", "group", "description", "revision", F.spark_partition_id().alias("part")).collect()
    finally:
        gateway.log.before_bulk = None

    # each row carries the revision that wrote it; the last write before the pin wrote the markers
    pinned = max(r.revision for r in rows)
    assert {r.revision for r in rows if r.xid.endswith("/messages/marker")} == {pinned}
    assert any(rev > pinned for rev in commits[before_read:]), "no write landed during the read"
    assert len(rows) == len({r.xid for r in rows}) == gateway.total("messages", pinned)
    first = [r for r in rows if r.group == "0000.spark.first"]
    last = [r for r in rows if r.group == "zzzz.spark.last"]
    assert {r.part for r in first}.isdisjoint({r.part for r in last}), "the two groups should be read apart"
    marker = {r.group: r.description for r in first + last if r.xid.endswith("/messages/marker")}
    assert marker["0000.spark.first"] == marker["zzzz.spark.last"]
    assert len(first) == len(last) == int(marker["0000.spark.first"].split()[1]) + 2


def test_an_incremental_load_picks_up_exactly_the_changes(read, gateway):
    before = gateway.revision()
    gateway.import_document({"messagegroups": {"spark.incremental": {"messages": {
        "a": {"name": "a"}, "b": {"name": "b"}}}}})
    gateway.graphql('mutation($a: JSON!) { updateResource(groupType: "messagegroups", groupId: "IO.AISstream", '
                    'resourceType: "messages", resourceId: "IO.AISstream.ShipStaticData", attributes: $a) '
                    '{ revision } }', a={"description": "changed"})
    gateway.graphql('mutation($x: String!) { deleteEntity(xid: $x) { revision } }',
                    x="/messagegroups/IO.AISstream/messages/IO.AISstream.StandardClassBPositionReport")
    after = gateway.revision()

    df = read("messages", sinceRevision=before)
    assert df.schema == schema_for("messages", changes=True)
    rows = {r.xid: r for r in df.collect()}
    # the AMQP variants of the two messages inherit from them: what they are changed with them
    amqp = "/messagegroups/IO.AISstream.amqp/messages/IO.AISstream.amqp."
    assert {x: r.change for x, r in rows.items()} == {
        "/messagegroups/spark.incremental/messages/a": "upserted",
        "/messagegroups/spark.incremental/messages/b": "upserted",
        "/messagegroups/IO.AISstream/messages/IO.AISstream.ShipStaticData": "upserted",
        "/messagegroups/IO.AISstream/messages/IO.AISstream.StandardClassBPositionReport": "deleted",
        amqp + "ShipStaticData": "upserted",
        amqp + "StandardClassBPositionReport": "upserted",
    }
    assert all(before < r.revision <= after for r in rows.values())
    assert rows["/messagegroups/IO.AISstream/messages/IO.AISstream.ShipStaticData"].description == "changed"
    assert rows[amqp + "ShipStaticData"].description == "changed"  # materialised
    assert "description" not in json.loads(rows[amqp + "ShipStaticData"].entity)  # declared
    assert rows[amqp + "StandardClassBPositionReport"].envelope is None  # its base is gone
    deleted = rows["/messagegroups/IO.AISstream/messages/IO.AISstream.StandardClassBPositionReport"]
    assert (deleted.group, deleted.id, deleted.entity) == ("IO.AISstream", "IO.AISstream.StandardClassBPositionReport",
                                                           None)
    assert read("messages", sinceRevision=after).count() == 0
    assert df.filter(F.col("registry") == "elsewhere").count() == 0
