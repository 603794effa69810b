"""The real documents in tests/data/xreg are the unchanged copies their checksums name."""

from __future__ import annotations

import hashlib

from tests.corpus import DOCUMENTS, XREG_DATA


def test_every_document_matches_its_checksum() -> None:
    sums = {}
    for line in (XREG_DATA / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.lstrip("*")] = digest
    assert sorted(sums) == [p.name for p in DOCUMENTS]
    for path in DOCUMENTS:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sums[path.name], path.name
