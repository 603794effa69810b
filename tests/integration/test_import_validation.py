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
