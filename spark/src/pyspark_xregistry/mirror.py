"""A Parquet copy of a registry kept current by a stream of its events (``includeDocument``).

Parquet files cannot be updated in place, so the mirror is a directory of *versions*:
``<path>/batch=<id>/`` holds the whole registry — one row per entity, ``xid``, ``position`` (of
the last event about it) and ``document`` (its JSON view) — as of micro-batch ``<id>``. Each
micro-batch reads the newest version written before it, drops the XIDs the batch is about, adds
those whose last event in the batch carries a document (the others were deleted) and writes the
next version; a replayed micro-batch rewrites its own version from the same predecessor, so the
result is the same (exactly once, with Spark's checkpoint). Older versions are removed once a
newer one is complete. A table format with ``MERGE`` (Delta Lake, Iceberg) does the same with
one statement per batch (docs/spark.md, "Streaming").

    query = (spark.readStream.format("xregistry").option("url", url).option("includeDocument", "true").load()
             .writeStream.foreachBatch(ParquetMirror(path)).option("checkpointLocation", ckpt).start())
    ParquetMirror(path).read(spark)           # the current copy
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

#: The mirror's columns.
MIRROR_SCHEMA = StructType([
    StructField("xid", StringType(), False),
    StructField("position", StringType(), False),
    StructField("document", StringType(), False),
])
_PREFIX = "batch="
#: Versions kept besides the newest (a reader may still be reading one).
KEEP = 1


def latest_per_subject(events: DataFrame) -> DataFrame:
    """The last event (by position) about each subject of ``events`` (XIDs compare case-insensitively)."""
    order = Window.partitionBy(F.lower("subject")).orderBy(F.col("revision").desc(), F.col("index").desc())
    return events.withColumn("_n", F.row_number().over(order)).filter("_n = 1").drop("_n")


class ParquetMirror:
    """``foreachBatch`` function keeping a Parquet copy of the registry at ``path`` (see the module doc)."""

    def __init__(self, path: str) -> None:
        self.path = path.rstrip("/")

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        latest = latest_per_subject(batch).select(
            F.col("subject").alias("xid"), "position", "document", F.lower("subject").alias("_key"))
        earlier = [v for v in self.versions(spark) if v < batch_id]
        base = (spark.read.schema(MIRROR_SCHEMA).parquet(self._dir(earlier[-1])) if earlier
                else spark.createDataFrame([], MIRROR_SCHEMA))
        kept = base.withColumn("_key", F.lower("xid")).join(latest.select("_key"), "_key", "left_anti")
        upserted = latest.filter(F.col("document").isNotNull())
        table = kept.drop("_key").unionByName(upserted.drop("_key"))
        table.write.mode("overwrite").parquet(self._dir(batch_id))
        for old in earlier[:-KEEP] if KEEP else earlier:
            self._delete(spark, self._dir(old))

    def read(self, spark: SparkSession) -> DataFrame:
        """The newest complete version (no rows before the first micro-batch)."""
        versions = self.versions(spark)
        if not versions:
            return spark.createDataFrame([], MIRROR_SCHEMA)
        return spark.read.schema(MIRROR_SCHEMA).parquet(self._dir(versions[-1]))

    def versions(self, spark: SparkSession) -> list[int]:
        """The batch ids of the complete versions (with Spark's ``_SUCCESS``), in order."""
        fs, root = self._fs(spark, self.path)
        if not fs.exists(root):
            return []
        out = []
        for status in fs.listStatus(root):
            name = status.getPath().getName()
            if name.startswith(_PREFIX) and name[len(_PREFIX):].isdigit() \
                    and fs.exists(status.getPath().suffix("/_SUCCESS")):
                out.append(int(name[len(_PREFIX):]))
        return sorted(out)

    def _dir(self, batch_id: int) -> str:
        return f"{self.path}/{_PREFIX}{batch_id}"

    @staticmethod
    def _fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
        """The Hadoop file system of ``path`` (local, HDFS, object stores) and the path on it."""
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        hpath = jvm.org.apache.hadoop.fs.Path(path)
        return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath

    def _delete(self, spark: SparkSession, path: str) -> None:
        fs, hpath = self._fs(spark, path)
        fs.delete(hpath, True)
