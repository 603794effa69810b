"""The snapshot job: Parquet per entity type partitioned by registry, a manifest, idempotent
reruns, and change-only runs with --since."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pyspark_xregistry.schemas import schema_for
from pyspark_xregistry.snapshot import main, run
from tests.spark.conftest import REGISTRY_ID


def _files(path):
    return {f: f.stat().st_mtime_ns for f in sorted(path.rglob("*.parquet"))}


def test_snapshot_job_writes_parquet_and_a_manifest_idempotently(spark_session, gateway, tmp_path, capsys):
    out = tmp_path / "snapshot"
    assert main(["--url", gateway.url, "--out", str(out), "--token", gateway.token, "--partitions", "2"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    pinned = manifest["revisions"][REGISTRY_ID]
    assert manifest["kind"] == "snapshot" and manifest["written_at"]
    for entity, entry in manifest["entities"].items():
        assert entry["revisions"] == {REGISTRY_ID: pinned}
        assert entry["rows"] == {REGISTRY_ID: gateway.total(entity, pinned)}, entity
        table = pq.read_table(out / entity / f"registry={REGISTRY_ID}")
        assert table.num_rows == entry["rows"][REGISTRY_ID]
        assert set(table.column_names) == set(schema_for(entity).fieldNames()) - {"registry"}
    assert "snapshot written" in capsys.readouterr().out

    before = _files(out)
    again = run(spark_session, gateway.url, out, token=gateway.token)
    assert again["unchanged"] and _files(out) == before
    assert json.loads((out / "manifest.json").read_text()) == manifest

    gateway.import_document({"messagegroups": {"spark.snapshot": {"messages": {"new": {"name": "new"}}}}})
    later = run(spark_session, gateway.url, out, token=gateway.token, entities=["messages"])
    now = later["revisions"][REGISTRY_ID]
    assert now > pinned
    assert later["entities"]["messages"]["rows"][REGISTRY_ID] == gateway.total("messages", now)
    assert later["entities"]["endpoints"] == manifest["entities"]["endpoints"]
    assert pq.read_table(out / "messages").num_rows == gateway.total("messages", now)

    changes = run(spark_session, gateway.url, out, token=gateway.token, since=pinned, entities=["messages"])
    where = out / "changes" / f"{REGISTRY_ID}@{pinned}-{now}"
    assert changes["kind"] == "changes" and (where / "manifest.json").is_file()
    assert changes["entities"]["messages"]["changes"] == {"upserted": 1, "deleted": 0}
    rows = pq.read_table(where / "messages").to_pylist()
    assert [(r["xid"], r["change"]) for r in rows] == [("/messagegroups/spark.snapshot/messages/new", "upserted")]
    assert run(spark_session, gateway.url, out, token=gateway.token, since=pinned, entities=["messages"])["unchanged"]


def test_an_incremental_run_without_changes_writes_readable_empty_directories(spark_session, gateway, tmp_path):
    now = gateway.revision()
    manifest = run(spark_session, gateway.url, tmp_path, token=gateway.token, since=now,
                   entities=["messages", "schemas"])
    where = tmp_path / "changes" / f"{REGISTRY_ID}@{now}-{now}"
    for entity in ("messages", "schemas"):
        assert manifest["entities"][entity]["rows"] == {REGISTRY_ID: 0}
        assert manifest["entities"][entity]["changes"] == {"upserted": 0, "deleted": 0}
        df = spark_session.read.parquet(str(where / entity))
        assert df.count() == 0
        expected = schema_for(entity, changes=True)
        # every column, with its type; the registry comes back as the partition column
        assert {f.name: f.dataType for f in df.schema.fields} == {f.name: f.dataType for f in expected.fields}
    assert json.loads((where / "manifest.json").read_text()) == manifest


def test_an_empty_registry_selection_of_a_snapshot_reads_as_empty(spark_session, gateway, tmp_path):
    """A filter that matches nothing still leaves the snapshot directory readable: the schema is there."""
    from pyspark_xregistry.snapshot import with_schema

    df = spark_session.read.format("xregistry").options(url=gateway.url, token=gateway.token,
                                                        entity="endpoints").load().limit(0)
    out = tmp_path / "endpoints"
    df.write.mode("overwrite").partitionBy("registry").parquet(str(out))
    with_schema(out, [REGISTRY_ID, "a:b"], df.schema)
    back = spark_session.read.parquet(str(out))
    assert back.count() == 0 and set(back.columns) == set(schema_for("endpoints").fieldNames())
    assert {p.name for p in out.glob("registry=*")} == {f"registry={REGISTRY_ID}", "registry=a%3Ab"}
