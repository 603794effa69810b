"""The snapshot job: every entity type of the gateway's registries as Parquet, at one revision.

::

    python -m pyspark_xregistry.snapshot --url http://host:8080/graphql --out DIR [--since REVISION]

A snapshot writes ``DIR/<entity>/registry=<id>/*.parquet`` for each entity type and then
``DIR/manifest.json``: the revision and instance id of each registry, and per entity type the
revisions (and instances) it was read at, its rows per registry and the time. Every registry
has a directory, with an empty Parquet file carrying the schema when it has no rows, so every
entity directory reads. The entity types of one run are all read at the same pinned revisions,
so they agree with each other. Rerunning is idempotent: an entity type the manifest already
records at the current revisions of the same instances is not read again; the others are
replaced as a whole (written aside first, then moved in, then the manifest is rewritten).

``--since REVISION`` (or ``registry=REVISION,…``) writes only what changed after that revision,
with the ``change`` column, into ``DIR/changes/<registry>@<since>-<until>/`` with its own
manifest; rerunning it for the same revisions rewrites the same directory. It continues from
``DIR/manifest.json``: when that records another instance of a registry than the gateway
serves now (restored from a backup, rebuilt by an import), the job refuses
(:class:`~pyspark_xregistry.client.CheckpointMismatch`) — those revisions mean something else
there. A gateway that reports no instance ids cannot be checked (logged as a warning).

The bearer token comes from ``--token`` or the environment variable ``XREG_GATEWAY_TOKEN``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pyspark_xregistry.client import CheckpointMismatch, ClientConfig, GatewayClient
from pyspark_xregistry.schemas import ENTITIES
from pyspark_xregistry.session import build_session
from pyspark_xregistry.source import _revisions, check_instance

#: Environment variable holding the bearer token (keeps it off the command line).
TOKEN_ENV = "XREG_GATEWAY_TOKEN"
MANIFEST = "manifest.json"


def _pairs(revisions: dict[str, int]) -> str:
    return ",".join(f"{r}={v}" for r, v in sorted(revisions.items()))


def _parquet_counts(path: Path) -> dict[str, int]:
    """Rows per registry of a ``registry=``-partitioned Parquet directory (from file footers)."""
    import pyarrow.parquet as pq

    counts: dict[str, int] = {}
    for part in sorted(path.glob("registry=*")):
        registry = unquote(part.name.split("=", 1)[1])
        counts[registry] = sum(pq.ParquetFile(f).metadata.num_rows for f in part.glob("*.parquet"))
    return counts


def _write_json(path: Path, document: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _parse_since(value: str | None) -> int | dict[str, int] | None:
    return _revisions("--since", value)


def run(
    session: Any, url: str, out: Path, *, entities: Sequence[str] = tuple(ENTITIES),
    registries: Sequence[str] | None = None, since: int | dict[str, int] | None = None, token: str | None = None,
    page_size: int = 500, partitions: int | None = None, timeout: float = 30.0, retries: int = 3,
) -> dict[str, Any]:
    """Write a snapshot (or with ``since``, the changes) under ``out``; returns the manifest."""
    with GatewayClient(ClientConfig(url=url, token=token, timeout=timeout, retries=retries)) as gw:
        states = gw.registry_states()
    current = {r: state.revision for r, state in states.items()}
    selected = sorted(registries or current)
    unknown = [r for r in selected if r not in current]
    if unknown:
        raise SystemExit(f"the gateway serves no registry {unknown[0]!r} (it serves: {', '.join(current)})")
    pins = {r: current[r] for r in selected}
    instances = {r: states[r].instance for r in selected}
    froms = None
    if since is not None:
        froms = {r: since.get(r, 0) if isinstance(since, dict) else since for r in selected}
        # the checkpoint: the manifest of the snapshot (or change set) written to `out` before
        checkpoint = json.loads((out / MANIFEST).read_text()) if (out / MANIFEST).is_file() else {}
        for r in selected:
            check_instance(r, (checkpoint.get("instances") or {}).get(r), states[r])
    target = out if froms is None else out / "changes" / "+".join(f"{r}@{froms[r]}-{pins[r]}" for r in selected)
    manifest_path = target / MANIFEST
    previous = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    written = previous.get("entities", {})
    # read again: what is not at these revisions, or was read from another instance of a registry
    todo = [e for e in entities if (written.get(e, {}).get("revisions"), written.get(e, {}).get("instances"))
            != (pins, instances)]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    manifest: dict[str, Any] = {"kind": "snapshot" if froms is None else "changes", "gateway": url,
                                "revisions": pins, "instances": instances, "written_at": now, "entities": written}
    if froms is not None:
        manifest["since"] = froms
    if not todo:
        return manifest | {"written_at": previous.get("written_at", now), "unchanged": True}

    staging = out / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    options = {"url": url, "registry": ",".join(selected), "asOfRevision": _pairs(pins), "pageSize": str(page_size),
               "timeout": str(timeout), "retries": str(retries)}
    if froms is not None:
        options["sinceRevision"] = _pairs(froms)
    if any(instances.values()):  # the source refuses to read another instance than the one checked here
        options["instanceId"] = ",".join(f"{r}={i}" for r, i in sorted(instances.items()) if i)
    if token:
        options["token"] = token
    if partitions:
        options["numPartitions"] = str(partitions)
    for entity in todo:
        df = session.read.format("xregistry").options(**options, entity=entity).load()
        df.write.mode("overwrite").partitionBy("registry").parquet(str(staging / entity))
        with_schema(staging / entity, selected, df.schema)
    target.mkdir(parents=True, exist_ok=True)
    for entity in todo:
        entry = {"revisions": pins, "instances": instances,
                 "rows": {r: 0 for r in selected} | _parquet_counts(staging / entity), "written_at": now}
        if froms is not None:
            entry["changes"] = _change_counts(staging / entity)
        shutil.rmtree(target / entity, ignore_errors=True)
        os.replace(staging / entity, target / entity)
        written[entity] = entry
    shutil.rmtree(staging, ignore_errors=True)
    manifest["entities"] = dict(sorted(written.items()))
    _write_json(manifest_path, manifest)
    return manifest


#: Characters Spark escapes (as ``%XX``) in the values of partition directory names.
_PARTITION_ESCAPED = frozenset('"#%\'*/:=?\\[]^{\x7f') | {chr(c) for c in range(1, 32)}
#: The footer key where Spark keeps a Parquet file's Spark schema.
SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"
#: The file that carries the schema of a partition without rows.
EMPTY_FILE = "part-00000-empty.parquet"


def partition_dir(registry: str) -> str:
    """The directory Spark writes the rows of ``registry`` to (``registry=<escaped id>``)."""
    return "registry=" + "".join(f"%{ord(ch):02X}" if ch in _PARTITION_ESCAPED else ch for ch in registry)


def with_schema(path: Path, registries: Sequence[str], schema: Any) -> None:
    """Give every registry without rows in the ``registry``-partitioned Parquet directory ``path``
    an empty Parquet file with ``schema`` (the partition column left out), so that the directory
    always reads — with its columns — even when nothing was written (Spark writes no file then)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    data = StructType([f.__class__(f.name, f.dataType, True, f.metadata) for f in schema.fields
                       if f.name != "registry"])
    arrow = to_arrow_schema(data, timezone="UTC").with_metadata({SPARK_SCHEMA_KEY: data.json()})
    path.mkdir(parents=True, exist_ok=True)
    for registry in registries:
        part = path / partition_dir(registry)
        if not any(part.glob("*.parquet")):
            part.mkdir(exist_ok=True)
            pq.write_table(pa.Table.from_batches([], schema=arrow), part / EMPTY_FILE)


def _change_counts(path: Path) -> dict[str, int]:
    """Rows per change type of a written change feed."""
    import pyarrow.parquet as pq

    out = {"upserted": 0, "deleted": 0}
    for f in path.glob("registry=*/*.parquet"):
        for value in pq.read_table(f, columns=["change"]).column("change").to_pylist():
            out[value] = out.get(value, 0) + 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``python -m pyspark_xregistry.snapshot``)."""
    parser = argparse.ArgumentParser(prog="python -m pyspark_xregistry.snapshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the gateway's GraphQL endpoint, e.g. http://host:8080/graphql")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--since", help="write only the changes after REVISION (or registry=REVISION,…)")
    parser.add_argument("--registry", action="append", help="registry id (repeatable; default: all)")
    parser.add_argument("--entity", action="append", choices=list(ENTITIES),
                        help="entity type (repeatable; default: all)")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"bearer token (default: ${TOKEN_ENV})")
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--partitions", type=int, help="partitions per entity type (default: by size)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--master", default="local[2]", help="Spark master (default: local[2])")
    parser.add_argument("--driver-memory", default="1g")
    args = parser.parse_args(argv)
    session = build_session(args.master, args.driver_memory)
    try:
        manifest = run(session, args.url, args.out, entities=args.entity or tuple(ENTITIES), registries=args.registry,
                       since=_parse_since(args.since), token=args.token, page_size=args.page_size,
                       partitions=args.partitions, timeout=args.timeout, retries=args.retries)
    except CheckpointMismatch as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    state = "unchanged" if manifest.get("unchanged") else "written"
    print(f"{manifest['kind']} {state}: revisions {_pairs(manifest['revisions'])}")
    for entity, entry in manifest["entities"].items():
        print(f"  {entity:15} {sum(entry['rows'].values()):>8} rows at {_pairs(entry['revisions'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
