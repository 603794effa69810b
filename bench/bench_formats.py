"""Format validation benchmark: every inline schema document of a corpus through
``xreg.formats.core.validate`` in this process (what an evaluator worker runs), cold (empty analysis
cache) and cached (the same documents again).

Baseline in the same run: computing the documents' digests alone (what a cache hit costs at
least). Corpora: the 117-feed merge (``rts__ALL-117-feeders-merged.xreg.json``: 685 inline
schemas, JSON Structure and Avro) and the schemastore catalogue (``spec__schemastore_org.xreg.json``:
704 versions, all linking an external ``schemauri``, so nothing inline to validate: the script
says so and reports how many of their ``format`` values are supported).

Then the cost on the write path: each corpus imported into a fresh SQLite registry with the
schema checks on (format validation with a cold analysis cache, compatibility where a resource
sets one) against the same import with them off (``validate=False``, what ``import
--no-validate`` runs), in the same run.

``--smoke``: a sample of the 117-feed corpus (3 feeds, both formats inline) and the schemastore
catalogue, one run each — every step, in seconds.

Usage: python bench/bench_formats.py [--repeat 3] [--smoke] [FILE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.corpus import corpus_sample  # noqa: E402
from xreg.documents.normalise import normalise  # noqa: E402
from xreg.documents.reader import read_document  # noqa: E402
from xreg.formats.core import CACHE, resolve, validate  # noqa: E402
from xreg.formats.documents import digest  # noqa: E402
from xreg.registry.service import LocalRegistry  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402

DATA = REPO / "tests" / "data" / "xreg"
DEFAULT_FILES = [DATA / "rts__ALL-117-feeders-merged.xreg.json", DATA / "spec__schemastore_org.xreg.json"]


def versions(doc: dict[str, Any]) -> tuple[list[tuple[str, Any]], Counter[str]]:
    """(format, inline document) for inline schema versions, and the formats of linked ones."""
    inline: list[tuple[str, Any]] = []
    linked: Counter[str] = Counter()
    for group in (doc.get("schemagroups") or {}).values():
        for schema in (group.get("schemas") or {}).values():
            for version in (schema.get("versions") or {}).values():
                fmt = version.get("format") or schema.get("format") or group.get("format") or ""
                if "schema" in version:
                    inline.append((fmt, version["schema"]))
                elif "schemabase64" not in version:
                    linked[fmt] += 1
    return inline, linked


def run(items: list[tuple[str, Any]]) -> tuple[float, dict[str, float], Counter[str]]:
    per_format: dict[str, float] = defaultdict(float)
    outcome: Counter[str] = Counter()
    start = time.perf_counter()
    for fmt, document in items:
        t = time.perf_counter()
        result = validate(fmt, document)
        per_format[_name(fmt)] += time.perf_counter() - t
        outcome["valid" if result.valid else "invalid" if result.validated else "not validated"] += 1
    return time.perf_counter() - start, per_format, outcome


def bench(path: Path, repeat: int) -> float | None:
    """Prints the figures of validating ``path``'s inline schemas; returns cold / cached (None: nothing inline)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    inline, linked = versions(doc)
    print(f"\n{path.name}")
    if linked:
        supported = sum(n for fmt, n in linked.items() if resolve(fmt))
        print(f"  versions linking an external document: {sum(linked.values())} "
              f"(format supported: {supported}; not validated: the document is outside the registry)")
    if not inline:
        print("  inline schema documents: 0 — nothing to validate")
        return None
    counts = Counter(_name(fmt) for fmt, _ in inline)
    print(f"  inline schema documents: {len(inline)} ({', '.join(f'{k} {v}' for k, v in counts.most_common())})")
    baseline = min(_time(lambda: [digest(d) for _, d in inline]) for _ in range(repeat))
    colds: list[float] = []
    cached: list[float] = []
    per_format: dict[str, float] = {}
    outcome: Counter[str] = Counter()
    for _ in range(repeat):
        CACHE.clear()
        total, split, outcome = run(inline)
        if not colds or total < min(colds):
            per_format = split
        colds.append(total)
        cached.append(run(inline)[0])
    cold, warm = min(colds), min(cached)
    print(f"  outcome: {dict(outcome)}")
    print(f"  {'':34}{'total (ms)':>12}{'per doc (ms)':>14}")
    print(f"  {'digests only (baseline)':34}{baseline * 1e3:>12.1f}{baseline * 1e3 / len(inline):>14.3f}")
    print(f"  {'cold (empty cache)':34}{cold * 1e3:>12.1f}{cold * 1e3 / len(inline):>14.3f}")
    for name, seconds in sorted(per_format.items(), key=lambda kv: -kv[1]):
        print(f"    {name:32}{seconds * 1e3:>12.1f}{seconds * 1e3 / counts[name]:>14.3f}")
    print(f"  {'cached (same documents again)':34}{warm * 1e3:>12.1f}{warm * 1e3 / len(inline):>14.3f}")
    print(f"  cold / cached: {cold / warm:.1f}x   cached / digests: {warm / baseline:.2f}x")
    return cold / warm


def _name(fmt: str) -> str:
    resolved = resolve(fmt)
    return resolved[0].name if resolved else fmt


def _time(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def _import(path: Path, doc: dict[str, Any], validate_on: bool, tmp: Path, run: int) -> float:
    CACHE.clear()
    async with LocalRegistry(SQLiteStore(tmp / f"{path.stem}-{validate_on}-{run}.db")) as registry:
        start = time.perf_counter()
        await registry.apply_document(doc, validate=validate_on)
        return time.perf_counter() - start


def bench_import(path: Path, repeat: int) -> float:
    """Prints the import of ``path`` with the schema checks on and off; returns on / off."""
    doc, _ = normalise(read_document(path))
    with tempfile.TemporaryDirectory() as tmp:
        on = min(asyncio.run(_import(path, doc, True, Path(tmp), i)) for i in range(repeat))
        off = min(asyncio.run(_import(path, doc, False, Path(tmp), i)) for i in range(repeat))
    print(f"  import of {path.name}: checks on {on * 1000:.1f} ms, off (baseline) {off * 1000:.1f} ms, "
          f"ratio {on / off:.2f}x")
    return on / off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; the best is printed")
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            args.repeat, args.files = 1, [corpus_sample(Path(tmp) / "sample.json"), DEFAULT_FILES[1]]
        print(f"format validation, best of {args.repeat} (cache size {CACHE.maxsize})")
        cold_over_cached = {path.name: bench(path, args.repeat) for path in args.files}
        print(f"write path, best of {args.repeat} (analysis cache emptied before each import)")
        on_over_off = {path.name: bench_import(path, args.repeat) for path in args.files}
    print("summary: " + "; ".join(
        (f"{name}: validation cold {cold_over_cached[name]:.1f}× cached, " if cold_over_cached[name] else f"{name}: ")
        + f"import with the checks {ratio:.2f}× without" for name, ratio in on_over_off.items()))


if __name__ == "__main__":
    main()
