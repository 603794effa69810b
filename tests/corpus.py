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
