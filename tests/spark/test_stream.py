"""``spark.readStream.format("xregistry")``: the registry's events as a Structured Streaming source.

Two small gateways of their own (fresh stores, so two instances) serve on 127.0.0.1; writes go
through the HTTP API while queries with a checkpoint run. The stream is stepped with
``processAllAvailable()`` and ``Trigger.AvailableNow``, never with sleeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from gateway.auth import hash_key
from pyspark_xregistry.client import CheckpointMismatch
from pyspark_xregistry.mirror import ParquetMirror
from pyspark_xregistry.stream import MAX_INDEX, StreamOptions, XRegistryStreamReader, stream_schema
from tests.spark.conftest import TOKEN, serve
from xreg.config import ApiKey, Settings

#: Attributes the export renders differently from an entity's own view (inlined collections and
#: their URLs, the registry's model and capabilities); every other one must be equal.
_SKIPPED = ("url", "self", "shortself", "modelsource", "capabilities", "model")


class Registry:
    """One gateway: its GraphQL URL and an HTTP client for the xRegistry API (with the token)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.url = f"{base}/graphql"
        self.http = httpx.Client(base_url=f"{base}/registry", timeout=30,
                                 headers={"authorization": f"Bearer {TOKEN}"})

    def put(self, path: str, body: dict[str, Any]) -> None:
        resp = self.http.put(path, json=body)
        assert resp.status_code in (200, 201), resp.text

    def patch(self, path: str, body: dict[str, Any]) -> None:
        resp = self.http.patch(path, json=body)
        assert resp.status_code == 200, resp.text

    def delete(self, path: str) -> None:
        resp = self.http.delete(path)
        assert resp.status_code == 204, resp.text

    def events(self) -> list[dict[str, Any]]:
        """Every event retained, through ``GET /events``."""
        out: list[dict[str, Any]] = []
        params: dict[str, str] = {"limit": "1000"}
        while True:
            page = self.http.get(f"{self.base}/events", params=params).json()
            out += page
            if len(page) < 1000:
                return out
            params["after"] = page[-1]["xregposition"]

    def export(self) -> dict[str, dict[str, Any]]:
        """``GET /export``, flattened: XID → the entity's own attributes."""
        resp = self.http.get("/export")
        assert resp.status_code == 200, resp.text
        return flatten(resp.json())


def flatten(doc: dict[str, Any], xid: str = "/") -> dict[str, dict[str, Any]]:
    """Every entity of an exported document by XID (a collection ``X`` is a map beside ``Xcount``)."""
    own = {k: v for k, v in doc.items() if not (isinstance(v, dict) and f"{k}count" in doc)}
    out = {xid: own}
    for key, value in doc.items():
        if isinstance(value, dict) and f"{key}count" in doc:
            for child_id, child in value.items():
                out.update(flatten(child, f"{xid.rstrip('/')}/{key}/{child_id}"))
    return out


def comparable(entity: dict[str, Any]) -> dict[str, Any]:
    """The attributes the export and the document must agree on (``meta``'s too)."""
    return {k: comparable(v) if k == "meta" and isinstance(v, dict) else v
            for k, v in entity.items() if not k.endswith(_SKIPPED)}


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Registry, Registry]]:
    """Two fresh gateways (two registry instances) with the test token."""
    def app(name: str) -> Any:
        return create_app(Settings(
            data_dir=tmp_path_factory.mktemp(name), registry_id="main", anonymous_read=False,
            api_keys=[ApiKey(name="stream-tests", sha256=hash_key(TOKEN), scopes=["read", "write"])],
            history_keep_days=None))

    with serve(app("stream-a")) as a, serve(app("stream-b")) as b:
        yield Registry(a), Registry(b)


def _stream(spark: Any, registry: Registry, **options: str) -> Any:
    reader = (spark.readStream.format("xregistry").option("url", registry.url).option("token", TOKEN)
              .option("includeDocument", "true"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_a_parquet_mirror_kept_by_a_restarted_stream_equals_the_export(spark_session, registries, tmp_path: Path):
    reg, _ = registries
    mirror, checkpoint = ParquetMirror(str(tmp_path / "mirror")), str(tmp_path / "checkpoint")
    seen: list[dict[str, Any]] = []

    def sink(batch: Any, batch_id: int) -> None:
        seen.extend(row.asDict() for row in batch.collect())
        mirror(batch, batch_id)

    def start(**trigger: Any) -> Any:
        writer = _stream(spark_session, reg, maxEventsPerTrigger="12").writeStream.foreachBatch(sink)
        return writer.option("checkpointLocation", checkpoint).trigger(**trigger).start() if trigger else \
            writer.option("checkpointLocation", checkpoint).start()

    reg.put("/messagegroups/g1", {"name": "one"})
    query = start()
    try:
        reg.put("/messagegroups/g1/messages/m1/versions/v1", {"name": "first"})
        reg.put("/schemagroups/s1", {"name": "schemas"})
        query.processAllAvailable()
        reg.patch("/messagegroups/g1/messages/m1/versions/v1", {"name": "renamed"})
        reg.put("/messagegroups/g2", {"name": "two"})
        reg.put("/messagegroups/g2/messages/gone/versions/v1", {})
        query.processAllAvailable()
    finally:
        query.stop()
    batches_before = len(list((tmp_path / "checkpoint" / "commits").iterdir()))
    assert batches_before >= 2

    # written while no query runs: picked up from the checkpoint by the next run
    reg.delete("/messagegroups/g2/messages/gone")
    reg.put("/messagegroups/g1/messages/m2/versions/v1", {"description": "later"})
    reg.patch("/messagegroups/g1", {"description": "changed while stopped"})
    query = start(availableNow=True)
    query.awaitTermination()
    assert query.exception() is None

    ids = [row["id"] for row in seen]
    assert len(ids) == len(set(ids)), "an event was delivered twice"
    assert ids == [e["id"] for e in reg.events()]  # every event, in order, across the restart

    rows = mirror.read(spark_session).collect()
    assert len(rows) == len({r["xid"].lower() for r in rows}), "the mirror holds an entity twice"
    exported = reg.export()
    mirrored = {r["xid"]: json.loads(r["document"]) for r in rows}
    assert set(mirrored) == set(exported)
    for xid, entity in exported.items():  # a Resource's export holds its meta and versions, not its default's
        own, copy = comparable(entity), comparable(mirrored[xid])
        assert {k: copy.get(k) for k in own} == own, xid
        if "meta" not in entity:
            assert copy == own, xid
    assert "/messagegroups/g2/messages/gone" not in mirrored
    assert mirrored["/messagegroups/g1"]["description"] == "changed while stopped"


def test_a_checkpoint_of_another_instance_is_refused(spark_session, registries, tmp_path: Path):
    reg, other = registries
    reg.put("/messagegroups/first", {})
    checkpoint = str(tmp_path / "checkpoint")
    query = (_stream(spark_session, reg).writeStream.format("noop")
             .option("checkpointLocation", checkpoint).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    other.put("/messagegroups/elsewhere", {})

    query = (_stream(spark_session, other).writeStream.format("noop")
             .option("checkpointLocation", checkpoint).start())
    try:
        with pytest.raises(Exception, match="instance_mismatch"):
            query.processAllAvailable()
    finally:
        query.stop()


def test_offsets_name_their_instance_and_starting_positions(registries):
    reg, other = registries
    reg.put("/messagegroups/offsets", {})

    def reader(registry: Registry, **options: str) -> XRegistryStreamReader:
        opts = StreamOptions.parse({"url": registry.url, "token": TOKEN, **options})
        return XRegistryStreamReader(opts, stream_schema(False))

    start = reader(reg).initialOffset()
    assert start["position"] == "" and start["instance"]
    end = reader(reg).latestOffset(start, None)
    assert end["instance"] == start["instance"] and end["position"] == reg.events()[-1]["xregposition"]
    latest = reader(reg, startingPosition="latest").initialOffset()
    assert latest["position"].endswith(f".{MAX_INDEX}")
    assert reader(reg).latestOffset(latest, None) == latest  # nothing after the latest position yet
    assert reader(reg, startingPosition="3").initialOffset()["position"] == f"3.{MAX_INDEX}"

    with pytest.raises(CheckpointMismatch, match="instance_mismatch"):
        reader(other).latestOffset(end, None)
    with pytest.raises(CheckpointMismatch, match="instance_mismatch"):
        reader(other, instanceId=start["instance"]).initialOffset()
    with pytest.raises(ValueError, match="position"):
        StreamOptions.parse({"url": reg.url, "startingPosition": "x.1"})
