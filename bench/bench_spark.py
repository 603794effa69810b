"""Spark data source benchmark: rows/s of three kinds of read of messages through the gateway
with 1, 2 and 4 partitions, each against ``spark.read.json`` of the exported document doing the
same work, in the same run:

``snapshot``     every message; the baseline explodes the document into one row per message
``filtered``     the messages of a tenth of the groups (``group IN (…)``, pushed to the gateway);
                 the baseline reads the whole document and filters it
``incremental``  the messages written after a revision (``sinceRevision``: one message in each
                 group rewritten after the load); the baseline reads the whole document and keeps
                 the messages modified after that revision's time

Two data sets: the 117-feed corpus (1,538 messages) and generated message groups (100,000
messages by default). For each, the registry is loaded into a fresh SQLite store, exported as one
1.0-rc4 document, and served by the gateway app under uvicorn on 127.0.0.1 (``--workers``
processes). The data source reads these snapshots through the gateway's bulk read
(``GET /bulk/rows``: Arrow record batches built by the gateway, two key ranges of a partition at a
time). Each figure also shows the CPU time the gateway spent serving it. Spark
runs local[2] with a 1 GB driver. Every measurement materialises every column of every row
(``write.format("noop")``); the figure is the median of ``--repeat`` runs after one warm-up.

The baseline reads the exported document with an explicit schema (groups and messages as maps,
each message as its JSON text) and explodes it into one row per message: the same rows from a
local file, without the gateway, GraphQL, HTTP or the data source. A multi-line JSON document is
one split, so the baseline always runs as one task.

``--smoke``: a sample of the corpus (3 feeds) and 100 generated messages, 2 partitions, one timed
run each, no warm-up — every step; Spark's start-up dominates it.

Usage: python bench/bench_spark.py [--messages 100000] [--groups 1000] [--repeat 3] [--skip-large | --skip-corpus]
       [--workers 2] [--partitions 1,2,4] [--kinds snapshot,filtered,incremental] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.corpus import corpus_sample  # noqa: E402
from xreg.documents.normalise import normalise  # noqa: E402
from xreg.documents.reader import read_document  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402

CORPUS = REPO / "tests" / "data" / "xreg" / "rts__ALL-117-feeders-merged.xreg.json"
REGISTRY_ID = "bench"
PARTITIONS = (1, 2, 4)
KINDS = ("snapshot", "filtered", "incremental")
#: The exported document as Spark reads it: groups and their messages as maps, messages as JSON text.
DOCUMENT_SCHEMA = ("messagegroups MAP<STRING, STRUCT<messages: MAP<STRING, STRING>>>, "
                   "endpoints MAP<STRING, STRUCT<messages: MAP<STRING, STRING>>>")


def generated(groups: range, per_group: int) -> dict[str, Any]:
    """Message groups of CloudEvents messages shaped like the corpus' ones."""
    def message(g: int, m: int) -> dict[str, Any]:
        return {
            "name": f"Event{m}", "description": f"generated message {m} of group {g}", "envelope": "CloudEvents/1.0",
            "envelopemetadata": {"type": {"value": f"bench.g{g:05d}.Event{m}"},
                                 "source": {"value": "https://example.invalid/bench"}},
            "dataschemaformat": "JsonSchema/draft-07", "dataschemauri": f"/schemagroups/bench/schemas/Event{m}",
        }

    return {"messagegroups": {f"bench.g{g:05d}": {"description": f"generated group {g}", "messages": {
        f"m{m:04d}": message(g, m) for m in range(per_group)}} for g in groups}}


#: What a message's view shows besides its declared attributes (the registry's to set).
SERVED = frozenset({"self", "xid", "versionid", "isdefault", "ancestorid", "epoch", "createdat", "modifiedat",
                    "metaurl", "meta", "versionsurl", "versionscount", "versions"})


def rewritten(document: dict[str, Any]) -> dict[str, Any]:
    """The first message of each message group of ``document`` with a new description."""
    def changed(message: dict[str, Any]) -> dict[str, Any]:  # (its modifiedat and epoch are the registry's)
        kept = {k: v for k, v in message.items() if k not in SERVED}
        return kept | {"description": f"{message.get('description')}, rewritten"}

    return {"messagegroups": {gid: {"messages": {mid: changed(message)
                                                 for mid, message in list(group.get("messages", {}).items())[:1]}}
                              for gid, group in document.get("messagegroups", {}).items()}}


async def load(db: Path, export: Path, documents: Callable[[], Any]) -> tuple[int, int, str, list[str]]:
    """Import the documents into a fresh store, rewrite one message per group and export the
    registry; returns the messages, the revision before the rewrite and its time, and the groups."""
    registry = LocalRegistry(SQLiteStore(db), registry_id=REGISTRY_ID)
    await registry.open()
    try:
        for doc in documents():
            await registry.apply_document(doc)
        since = await registry.store.current_revision()
        written = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        await registry.apply_document(rewritten(await registry.export_document()))
        document = await registry.export_document()
    finally:
        await registry.close()
    export.write_text(json.dumps(document))
    messages = sum(len(g.get("messages", {})) for t in ("messagegroups", "endpoints")
                   for g in document.get(t, {}).values())
    return messages, since, written, sorted(document.get("messagegroups", {}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(data_dir: Path, workers: int) -> tuple[subprocess.Popen, str]:
    """The gateway app under uvicorn on 127.0.0.1 over ``data_dir`` (``workers`` processes);
    returns the process and its GraphQL URL."""
    port = free_port()
    env = os.environ | {"XREG_DATA_DIR": str(data_dir), "XREG_REGISTRY_ID": REGISTRY_ID}
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "gateway.app:create_app", "--host",
                             "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-level", "warning",
                             "--no-access-log"],
                            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:  # until it serves (a busy machine starts it slowly) or exits
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc, f"http://127.0.0.1:{port}/graphql"
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise SystemExit("the gateway did not start")
        time.sleep(0.2)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    pids = [pid] + [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()] \
        if Path(f"/proc/{pid}/task/{pid}/children").exists() else [pid]
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def timed(action: Callable[[], Any], repeat: int, gateway_pid: int | None = None,
          warmup: bool = True) -> tuple[float, float]:
    """Median seconds of ``repeat`` runs of ``action`` after one warm-up run (unless not
    ``warmup``), and the median CPU seconds the gateway spent meanwhile."""
    if warmup:
        action()
    runs, cpu = [], []
    for _ in range(repeat):
        c0 = cpu_seconds(gateway_pid) if gateway_pid else 0.0
        t0 = time.perf_counter()
        action()
        runs.append(time.perf_counter() - t0)
        cpu.append((cpu_seconds(gateway_pid) - c0) if gateway_pid else 0.0)
    return statistics.median(runs), statistics.median(cpu)


def bench_dataset(
    session: Any, label: str, tmp: Path, documents: Callable[[], Any], repeat: int, workers: int,
    partitions: tuple[int, ...] = PARTITIONS, warmup: bool = True, kinds: tuple[str, ...] = KINDS,
) -> list[dict]:
    from pyspark.sql import functions as F

    data_dir, export = tmp / label, tmp / f"{label}.xreg.json"
    data_dir.mkdir()
    t0 = time.perf_counter()
    messages, since, written, groups = asyncio.run(load(data_dir / "registry.db", export, documents))
    print(f"\n{label}: {messages} messages loaded and exported in {time.perf_counter() - t0:.1f}s "
          f"({export.stat().st_size / 1e6:.1f} MB document)", flush=True)
    chosen = groups[:: 10]  # a tenth of the groups
    proc, url = start_gateway(data_dir, workers)
    results = []
    try:
        doc = session.read.schema(DOCUMENT_SCHEMA).option("multiLine", True).json(str(export))
        exploded = (doc.select(F.explode("messagegroups").alias("group", "g")).unionByName(
            doc.select(F.explode("endpoints").alias("group", "g")))
            .select("group", F.explode("g.messages").alias("id", "message")))
        baselines = {
            "snapshot": exploded,
            "filtered": exploded.filter(F.col("group").isin(chosen)),
            "incremental": exploded.filter(F.get_json_object("message", "$.modifiedat") > F.lit(written)),
        }
        def source(n: int) -> Any:  # (a DataFrameReader keeps the options it is given: one per read)
            return session.read.format("xregistry").option("url", url).option("entity", "messages").option(
                "numPartitions", n)

        reads = {
            "snapshot": lambda n: source(n).load(),
            "filtered": lambda n: source(n).load().filter(F.col("group").isin(chosen)),
            "incremental": lambda n: source(n).option("sinceRevision", since).load(),
        }
        for kind, baseline in ((k, b) for k, b in baselines.items() if k in kinds):
            rows = baseline.count()
            seconds, _ = timed(lambda b=baseline: b.write.format("noop").mode("overwrite").save(), repeat,
                               warmup=warmup)
            base = {"dataset": label, "kind": kind, "source": "spark.read.json (exported document)", "partitions": 1,
                    "rows": rows, "seconds": seconds, "gateway_cpu": 0.0}
            results.append(base)
            report(base, base)
            for n in partitions if kind != "incremental" else partitions[:1]:  # (a feed is one partition)
                df = reads[kind](n)
                read = df.count()  # (a feed also holds the messages re-materialised with a rewritten base)
                assert read == rows or kind == "incremental", (kind, read, rows)
                seconds, cpu = timed(lambda df=df: df.write.format("noop").mode("overwrite").save(), repeat, proc.pid,
                                     warmup)
                results.append({"dataset": label, "kind": kind, "source": "xregistry data source", "partitions": n,
                                "rows": read, "seconds": seconds, "gateway_cpu": cpu})
                report(results[-1], base)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return results


def report(r: dict, baseline: dict) -> None:
    """Print one figure as soon as it is measured, with its ratio to the baseline of the same run."""
    r["rows_per_s"] = max(r["rows"], 1) / r["seconds"]  # (an empty read: as one row)
    print(f"  {r['kind']:11} {r['source']:38} {r['partitions']:>2} partitions  {r['rows']:>7} rows  "
          f"{r['seconds']:7.2f}s  "
          f"{r['rows_per_s']:>9.0f} rows/s  {r['rows_per_s'] / baseline['rows_per_s']:5.2f}x "
          f"baseline  gateway CPU {r['gateway_cpu']:6.2f}s", flush=True)


def kinds_of(text: str) -> tuple[str, ...]:
    """``--kinds``: comma-separated names among :data:`KINDS` (an unknown one is refused)."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(unknown)}: choose among {', '.join(KINDS)}")
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000, help="messages of the generated data set")
    parser.add_argument("--groups", type=int, default=1000, help="message groups they are spread over")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (median)")
    parser.add_argument("--skip-large", action="store_true", help="only the 117-feed corpus")
    parser.add_argument("--skip-corpus", action="store_true", help="only the generated data set")
    parser.add_argument("--partitions", default=",".join(map(str, PARTITIONS)),
                        help="partition counts of the data source, comma-separated (default: 1,2,4)")
    parser.add_argument("--kinds", type=kinds_of, default=",".join(KINDS),
                        help="the kinds of read, comma-separated (default: all)")
    parser.add_argument("--workers", "--gateway-workers", dest="gateway_workers", type=int, default=1,
                        help="uvicorn worker processes of the gateway")
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.groups, args.repeat, args.partitions = 100, 10, 1, "2"

    from pyspark_xregistry.snapshot import build_session

    session = build_session("local[2]", "1g")
    session.sparkContext.setLogLevel("ERROR")
    per_group = max(1, args.messages // args.groups)

    def generated_documents():
        step = max(1, 10_000 // per_group)
        for start in range(0, args.groups, step):
            yield generated(range(start, min(start + step, args.groups)), per_group)

    print(f"Spark {session.version} local[2], Python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"gateway: {args.gateway_workers} uvicorn worker(s)")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        partitions = tuple(int(n) for n in args.partitions.split(","))
        kinds = args.kinds
        corpus = corpus_sample(Path(tmp) / "sample.json") if args.smoke else CORPUS
        if not args.skip_corpus:
            results += bench_dataset(session, "corpus-sample" if args.smoke else "117-feed-corpus", Path(tmp),
                                     lambda: [normalise(read_document(corpus))[0]], args.repeat,
                                     args.gateway_workers, partitions, not args.smoke, kinds)
        if not args.skip_large:
            results += bench_dataset(session, f"generated-{per_group * args.groups}", Path(tmp), generated_documents,
                                     args.repeat, args.gateway_workers, partitions, not args.smoke, kinds)
    session.stop()
    baselines = {(r["dataset"], r["kind"]): r for r in results if r["source"] != "xregistry data source"}
    print("summary: the data source's rows/s against spark.read.json's doing the same work: " + ", ".join(
        f"{r['dataset']} {r['kind']} {r['partitions']} partitions "
        f"{r['rows_per_s'] / baselines[r['dataset'], r['kind']]['rows_per_s']:.2f}×"
        for r in results if r["source"] == "xregistry data source"))


if __name__ == "__main__":
    main()
