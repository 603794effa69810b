"""The real xRegistry documents the tests use, kept in the repository (``tests/data/xreg/``).

They are unchanged copies of documents written by other people (origins and licences in
``tests/data/README.md``; checksums in ``tests/data/xreg/SHA256SUMS``, verified by
``tests/unit/test_corpus.py``). Every test and benchmark reads them from here.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
XREG_DATA = REPO / "tests" / "data" / "xreg"
#: Every document of the corpus, by file name.
DOCUMENTS = sorted(XREG_DATA.glob("*.json"))
#: The 117-feed corpus (5,623 entities): the large real-world benchmark.
CORPUS_117 = XREG_DATA / "rts__ALL-117-feeders-merged.xreg.json"
SAMPLES = REPO / "samples"


def corpus_sample(path: Path, feeds: int = 3) -> Path:
    """The 117-feed corpus cut to its first ``feeds`` feeds, written to ``path``: each feed's
    endpoints, message groups and schema groups (those whose id is the feed's or starts with
    it and a dot), so that its references stay inside the sample. A benchmark's smoke run reads
    it in place of the whole corpus."""
    import json

    document = json.loads(CORPUS_117.read_text(encoding="utf-8"))
    kept: list[str] = []
    for name in document["messagegroups"]:
        if len(kept) == feeds:
            break
        if not any(name.startswith(feed + ".") for feed in kept):
            kept.append(name)
    for collection in ("endpoints", "messagegroups", "schemagroups"):
        document[collection] = {gid: group for gid, group in document[collection].items()
                                if any(gid == feed or gid.startswith(feed + ".") for feed in kept)}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path
