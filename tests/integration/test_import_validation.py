"""``import`` checks schema documents like every write: a file holding a document that breaks its
format is rejected; ``--no-validate`` (migrating legacy data) imports it and records that it was
not validated."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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

    from tests.corpus import DOCUMENTS
    from xreg.documents.normalise import normalise
    from xreg.documents.reader import read_document
    from xreg.registry.service import LocalRegistry
    from xreg.storage.sqlite import SQLiteStore

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


#: XIDs longer than any terminal: an output cut at 80 columns would lose them.
LONG_GROUP = "com.example.telemetry.plant.north.building-seven.floor-three.line-" + "a" * 40
LONG_SCHEMA = "SensorReadingWithAnExceptionallyLongNameThatNoTableColumnCouldHold"


def _three_versions_without_format() -> dict:
    """Three schema versions in three groups, each missing its required ``format``."""
    version = {"versions": {"1": {"schema": {"type": "object"}}}}
    return {"schemagroups": {LONG_GROUP: {"schemas": {LONG_SCHEMA: version}},
                             "g2": {"schemas": {"s2": version}}, "g3": {"schemas": {"s3": version}}}}


def _import(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """``xreg-gateway import`` as a process of its own, its output captured (not a terminal)."""
    env = {**os.environ, "XREG_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "gateway.cli", "import", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_rejected_file_reports_every_violation_in_one_run_with_whole_xids(tmp_path):
    source = tmp_path / f"{LONG_SCHEMA}.xreg.json"
    source.write_text(json.dumps(_three_versions_without_format()))
    done = _import(tmp_path, str(source))
    assert done.returncode == 1, done.stdout + done.stderr
    violations = [line.strip() for line in done.stdout.splitlines() if "required_attribute_missing" in line]
    subjects = [f"/schemagroups/{LONG_GROUP}/schemas/{LONG_SCHEMA}/versions/1", "/schemagroups/g2/schemas/s2/versions/1",
                "/schemagroups/g3/schemas/s3/versions/1"]
    assert [line.split(": ", 1)[0] for line in violations] == [f"required_attribute_missing at {s}" for s in subjects]
    assert all(line.endswith("are missing: format.") for line in violations)
    assert f"{source}: rejected, 3 violation(s):" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("│ ")]
    assert rows[-1].split("│")[1].strip() == source.name  # the table's file column is not cut either
    assert "1 of 1 file(s) rejected" in done.stderr


def test_import_as_json_lists_every_violation(tmp_path):
    good = tmp_path / "good.xreg.json"
    good.write_text(json.dumps({"schemagroups": {"ok": {"schemas": {"s": {"versions": {"1": {
        "format": "JsonSchema/draft-07", "schema": {"type": "object"}}}}}}}}))
    bad = tmp_path / "bad.xreg.json"
    bad.write_text(json.dumps(_three_versions_without_format()))
    done = _import(tmp_path, str(good), str(bad), "--format", "json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    accepted, rejected = result["files"]
    assert accepted == {"file": str(good), "rejected": False, "created": 3, "updated": 0, "unchanged": 0}
    assert rejected["file"] == str(bad) and rejected["rejected"] and rejected["more_violations"] == 0
    assert sorted(v["subject"] for v in rejected["violations"]) == sorted(
        f"/schemagroups/{g}/schemas/{s}/versions/1" for g, s in ((LONG_GROUP, LONG_SCHEMA), ("g2", "s2"), ("g3", "s3")))
    assert {(v["type"].rsplit("#", 1)[1], v["args"]["list"]) for v in rejected["violations"]} == {
        ("required_attribute_missing", "format")}


async def test_the_violations_listed_are_bounded(tmp_path, monkeypatch):
    """A file with more violations than the import lists reports the first ones and counts the rest."""
    from gateway import cli
    from xreg.config import Settings

    monkeypatch.setattr(cli, "MAX_VIOLATIONS", 2)
    source = tmp_path / "bad.xreg.json"
    source.write_text(json.dumps(_three_versions_without_format()))
    report = await cli.run_import(Settings(data_dir=tmp_path / "data"), [source], strict=False)
    found = report.violations[str(source)]
    assert len(found.listed) == 2 and found.more == 1 and found.count == 3
    assert cli._import_json(report)["files"][0]["more_violations"] == 1


def test_check_as_json(tmp_path):
    env = {**os.environ, "XREG_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--format", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"repairs": [], "invalid": []}
