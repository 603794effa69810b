"""``import`` checks schema documents like every write: a file holding a document that breaks its
format is rejected; ``--no-validate`` (migrating legacy data) imports it and records that it was
not validated."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gateway.cli import app


def test_import_refuses_an_invalid_schema_unless_validation_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XREG_DATA_DIR", str(tmp_path))
    doc = {"schemagroups": {"g": {"schemas": {"s": {"versions": {"1": {
        "format": "JsonSchema/draft-07", "schema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}}}}}}}}
    source = tmp_path / "schemas.json"
    source.write_text(json.dumps(doc))
    runner = CliRunner()
    refused = runner.invoke(app, ["import", str(source)])
    assert refused.exit_code == 1
    assert "format_violation" in " ".join(refused.output.split())
    migrated = runner.invoke(app, ["import", str(source), "--no-validate"])
    assert migrated.exit_code == 0, migrated.output
    exported = json.loads(runner.invoke(app, ["export"]).stdout)
    version = exported["schemagroups"]["g"]["schemas"]["s"]["versions"]["1"]
    assert version["formatvalidated"] is False and "switched off" in version["formatvalidatedreason"]


async def test_the_real_corpora_import_with_every_version_validated(tmp_path):
    """Every real document imports with the checks on; per format, how many versions validate
    (the rest link their document outside the registry, and say so)."""
    from collections import Counter

    from gateway.documents.normalise import normalise
    from gateway.documents.reader import read_document
    from gateway.registry.service import LocalRegistry
    from gateway.storage.sqlite import SQLiteStore
    from tests.corpus import DOCUMENTS

    tally: Counter[tuple[str, bool]] = Counter()
    for path in DOCUMENTS:
        async with LocalRegistry(SQLiteStore(tmp_path / f"{path.name}.db")) as registry:
            await registry.apply_document(normalise(read_document(path))[0])
            async for rec in registry.iter_ctype("schemagroups/schemas/versions"):
                name = str(rec.doc["format"]).split("/")[0].lower()
                tally[(name, rec.doc["formatvalidated"])] += 1
                if not rec.doc["formatvalidated"]:
                    assert "outside the registry" in rec.doc["formatvalidatedreason"], (path.name, rec.xid)
    assert dict(tally) == {("avro", True): 284, ("jsonstructure", True): 474, ("jsonschema", True): 22,
                           ("protobuf", True): 5, ("xmlschema", True): 5,
                           ("jsonschema", False): 724, ("protobuf", False): 1}
