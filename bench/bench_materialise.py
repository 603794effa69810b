"""Materialised messages: what keeping the materialised view (and the search index) costs, and
what filtering on it costs.

Prints, each against a baseline measured in the same run (SQLite):

- import of the 117-feed corpus (1,538 messages, 1,006 inheriting) with the materialisation and
  search text the write path now keeps, against the same import with both switched off (the
  gateway before them);
- writing one base message that N messages inherit from (its dependents re-materialised in the
  same commit), against writing a message nothing inherits from;
- a typed filter on a materialised attribute (``dataschemaformat``, inherited by half the
  messages) over ``--messages`` messages, against the same filter on the declared attribute;
  and a free-text search, against the declared filter.

``--smoke``: a sample of the corpus (3 feeds), 200 generated messages, one run — every step, in seconds.

Usage: python bench/bench_materialise.py [--messages 100000] [--runs 5] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import xreg.registry.changeset as changeset_module  # noqa: E402
from adapters.base import Listing  # noqa: E402
from adapters.local import LocalSource  # noqa: E402
from tests.corpus import corpus_sample  # noqa: E402
from xreg.documents.normalise import normalise  # noqa: E402
from xreg.documents.reader import read_document  # noqa: E402
from xreg.registry.filters import parse_filters  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.semantics import Sort  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402

CORPUS = REPO / "tests" / "data" / "xreg" / "rts__ALL-117-feeders-merged.xreg.json"
MESSAGES = ("messagegroups/messages",)


async def _nothing(*_: Any, **__: Any) -> list[str]:
    return []  # nothing materialised, nothing deferred


class Switched:
    """The gateway without materialisation and search text (the baseline)."""

    def __enter__(self) -> None:
        self.saved = changeset_module.materialise, changeset_module.search_text
        changeset_module.materialise = _nothing  # type: ignore[assignment]
        changeset_module.search_text = lambda *_: None  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        changeset_module.materialise, changeset_module.search_text = self.saved


async def import_once(tmp: Path, name: str, doc: dict) -> float:
    async with LocalRegistry(SQLiteStore(tmp / f"{name}.db")) as registry:
        t0 = time.perf_counter()
        await registry.apply_document(doc)
        return time.perf_counter() - t0


async def bench_import(tmp: Path, runs: int, corpus: Path = CORPUS) -> float:
    """Prints the import of ``corpus`` with and without the view; returns their ratio."""
    doc, _ = normalise(read_document(corpus))
    with_view, without = [], []
    for i in range(runs):
        with_view.append(await import_once(tmp, f"with{i}", doc))
        with Switched():
            without.append(await import_once(tmp, f"without{i}", doc))
    a, b = statistics.median(with_view), statistics.median(without)
    print(f"import of {'the 117-feed corpus' if corpus == CORPUS else corpus.name} (median of {runs}):")
    print(f"  materialised + search text   {a * 1000:8.1f} ms")
    print(f"  baseline: neither            {b * 1000:8.1f} ms")
    print(f"  ratio                        {a / b:8.2f}x  (target: at most 1.5x)")
    return a / b


def synthetic(n: int, groups: int = 100) -> dict:
    """``n`` messages in ``groups`` groups; every other one inherits its format, envelope and
    description from one of 100 bases (in group ``bases``)."""
    bases = {f"base{i}": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": f"com.example.{i}"}},
                          "description": f"sensor reading kind {i}", "dataschemaformat": "JsonSchema/draft-07",
                          "dataschemauri": f"https://example.com/schemas/{i}.json"} for i in range(100)}
    doc: dict[str, Any] = {"messagegroups": {"bases": {"messages": bases}}}
    per = n // groups
    for g in range(groups):
        messages = {}
        for m in range(per):
            if m % 2:
                messages[f"m{m}"] = {"basemessageuri": f"/messagegroups/bases/messages/base{m % 100}",
                                     "protocol": "KAFKA", "protocoloptions": {"key": "id"}}
            else:
                messages[f"m{m}"] = {"description": f"plain message {m}", "dataschemaformat": "Avro/1.11.3",
                                     "dataschemauri": f"https://example.com/avro/{m}.avsc"}
        doc["messagegroups"][f"g{g:03d}"] = {"messages": messages}
    return doc


async def timed(fn: Any, runs: int) -> tuple[float, Any]:
    out, times = None, []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


async def bench_filters(tmp: Path, n: int, runs: int) -> tuple[float, float]:
    """Prints the filters' and the writes' figures; returns materialised count / declared count
    and base write / plain write."""
    doc = synthetic(n)
    async with LocalRegistry(SQLiteStore(tmp / "big.db")) as registry:
        t0 = time.perf_counter()
        for gid in list(doc["messagegroups"]):  # one commit per group, as a catalogue grows
            await registry.apply_document({"messagegroups": {gid: doc["messagegroups"][gid]}})
        loaded = time.perf_counter() - t0
        source = LocalSource(registry)
        total = sum(len(g["messages"]) for g in doc["messagegroups"].values())
        print(f"\n{total:,} messages loaded in {loaded:.1f} s (one commit per group)")
        jsonschema = parse_filters(["dataschemaformat=JsonSchema*"])

        def count(declared: bool, search: tuple[str, ...] | None = None, filters: Any = jsonschema) -> Any:
            return lambda: source.count(Listing(MESSAGES, filters=filters, declared=declared, search=search))

        def page(declared: bool) -> Any:
            return lambda: source.list(Listing(MESSAGES, filters=jsonschema, declared=declared, limit=50,
                                               sort=Sort(("name",))))

        rows = []
        for label, fn in (("count, materialised dataschemaformat", count(False)),
                          ("count, declared dataschemaformat (baseline)", count(True)),
                          ("first page of 50, materialised", page(False)),
                          ("first page of 50, declared (baseline)", page(True)),
                          ("count, search \"sensor reading\"", count(False, ("sensor", "reading"), None))):
            seconds, result = await timed(fn, runs)
            found = result if isinstance(result, int) else len(result.items)
            rows.append((label, seconds, found))
        base = rows[1][1]
        print(f"{'query':48} {'ms':>9} {'found':>8} {'vs declared':>12}")
        for label, seconds, found in rows:
            print(f"{label:48} {seconds * 1000:9.1f} {found:8,} {seconds / base:11.2f}x")

        base_xid = "/messagegroups/bases/messages/base1"  # inherited at every size: by m1 of each group
        plain_xid = "/messagegroups/g000/messages/m0"

        async def write(xid: str, text: str) -> Any:
            async def build(cs: Any) -> None:
                gid, rid = xid.split("/")[2], xid.split("/")[4]
                await cs.put_resource("messagegroups", gid, "messages", rid, {"description": text}, patch=True)
            _, outcome = await registry.write(build, subject=xid, note="bench")
            return outcome

        dependents = 0
        base_times, plain_times = [], []
        for i in range(runs):
            t0 = time.perf_counter()
            outcome = await write(base_xid, f"changed {i}")
            base_times.append(time.perf_counter() - t0)
            dependents = len([x for x in outcome.rematerialised if "/versions/" not in x])
            t0 = time.perf_counter()
            await write(plain_xid, f"changed {i}")
            plain_times.append(time.perf_counter() - t0)
        print(f"\nwrite of a base inherited by {dependents:,} messages (re-materialised in the same commit): "
              f"{statistics.median(base_times) * 1000:.1f} ms; of a message nothing inherits from (baseline): "
              f"{statistics.median(plain_times) * 1000:.1f} ms")
        return rows[0][1] / base, statistics.median(base_times) / statistics.median(plain_times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.runs = 200, 1
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_sample(Path(tmp) / "sample.json") if args.smoke else CORPUS
        imported = await bench_import(Path(tmp), args.runs, corpus)
        counted, written = await bench_filters(Path(tmp), args.messages, args.runs)
    print(f"summary: import with the view {imported:.2f}× without; count on the materialised attribute "
          f"{counted:.2f}× on the declared one; writing a base {written:.1f}× writing a plain message")


if __name__ == "__main__":
    asyncio.run(main())
