"""Import and export of real documents, through the engine and through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli import app, run_import
from tests.corpus import CORPUS_117, XREG_DATA
from xreg.config import Settings
from xreg.documents.normalise import normalise
from xreg.documents.reader import find_documents, read_document
from xreg.errors import XRegistryError
from xreg.registry.service import LocalRegistry
from xreg.storage.records import Query
from xreg.storage.sqlite import SQLiteStore

REAL_FILES = find_documents([XREG_DATA])
SERVER_MANAGED = {"self", "epoch", "modifiedat", "metaurl", "versionsurl", "defaultversionurl"}


def settings_for(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, registry_id="test")


async def load(registry: LocalRegistry, path: Path):
    doc, _ = normalise(read_document(path))
    return await registry.apply_document(doc, note=f"import {path.name}")


async def count(registry: LocalRegistry, ctype: str) -> int:
    return await registry.store.count(Query(ctype=ctype))


def test_the_real_corpus_is_all_there():
    assert len(REAL_FILES) == 14, [p.name for p in REAL_FILES]


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
async def test_every_real_file_imports(registry, path):
    outcome = await load(registry, path)
    assert outcome.created, "a real document creates entities"
    assert outcome.revision == await registry.store.current_revision()


async def test_117_feed_corpus_counts(registry):
    await load(registry, CORPUS_117)
    assert await count(registry, "endpoints") == 415
    assert await count(registry, "messagegroups") == 545
    assert await count(registry, "messagegroups/messages") == 1538
    assert await count(registry, "schemagroups") == 217
    assert await count(registry, "schemagroups/schemas") == 685


async def test_reimport_is_unchanged_and_writes_no_revision(registry):
    path = XREG_DATA / "rts__gtfs.xreg.json"
    first = await load(registry, path)
    rev = await registry.store.current_revision()
    again = await load(registry, path)
    assert not again.created and not again.updated and not again.deleted
    assert len(again.unchanged) >= len(first.created) - 1  # everything but the registry entity
    assert again.revision is None and await registry.store.current_revision() == rev


async def test_all_files_into_one_registry(tmp_path):
    """The 0.4-wip and the 1.0 Microsoft.Storage catalogues name the same group with ids that
    differ only in case: in one registry the second is refused (ids are unique
    case-insensitively), with a message saying so; every other file goes in."""
    report = await run_import(settings_for(tmp_path), [XREG_DATA], strict=False)
    rejected = {Path(p).name: reason for p, _, reason in report.rows if reason}
    assert list(rejected) == ["codegen__Microsoft.Storage.xreg.json"], rejected
    assert "/messagegroups/microsoft.storage already exists" in rejected["codegen__Microsoft.Storage.xreg.json"]
    assert len(report.rows) == 14
    assert any(rule.startswith("legacy") for rule in report.rules), report.rules


async def test_export_then_import_gives_the_same_entities(tmp_path):
    src = LocalRegistry(SQLiteStore(tmp_path / "a.db"), registry_id="a")
    dst = LocalRegistry(SQLiteStore(tmp_path / "b.db"), registry_id="b")
    async with src, dst:
        for name in ("rts__gtfs.xreg.json", "contoso-erp-jsons07.xreg.json", "spec__schemastore_org.xreg.json"):
            await load(src, XREG_DATA / name)
        exported = await src.export_document()
        strict_doc, notes = normalise(json.loads(json.dumps(exported)), strict=True)
        assert notes == []  # our own export is plain 1.0-rc4
        await dst.apply_document(strict_doc)
        again = await dst.export_document()
    assert entities(again) == entities(exported)
    assert len(entities(exported)) > 700


def entities(doc: dict) -> dict[str, dict]:
    """Every group, resource, meta and version of an exported document by XID, minus what the
    server recomputes on every write."""
    out: dict[str, dict] = {}

    def walk(node):
        if isinstance(node, dict):
            if "xid" in node and node["xid"] != "/":
                out[node["xid"]] = {k: v for k, v in node.items()
                                    if (k not in SERVER_MANAGED and not isinstance(v, dict)) or k == "labels"}
            for v in node.values():
                walk(v)

    walk(doc)
    return out


async def test_malformed_documents_are_rejected_and_change_nothing(tmp_path):
    good = XREG_DATA / "inkjet-proto3.xreg.json"
    bad_json = tmp_path / "broken.xreg.json"
    bad_json.write_text('{"messagegroups": {', encoding="utf-8")
    top_list = tmp_path / "list.xreg.json"
    top_list.write_text("[1, 2]", encoding="utf-8")
    bad_yaml = tmp_path / "broken.cereg.yaml"
    bad_yaml.write_text("messagegroups: [unclosed\n", encoding="utf-8")
    invalid = tmp_path / "invalid.xreg.json"
    doc = json.loads(good.read_text())
    gid = next(iter(doc["messagegroups"]))
    mid = next(iter(doc["messagegroups"][gid]["messages"]))
    doc["messagegroups"][gid]["messages"][mid]["dataschema"] = {"type": "string"}
    invalid.write_text(json.dumps(doc), encoding="utf-8")

    settings = settings_for(tmp_path)
    report = await run_import(settings, [good], strict=False)
    assert report.rejected == 0
    registry = LocalRegistry(SQLiteStore(settings.data_dir / "registry.db"))
    async with registry:
        rev = await registry.store.current_revision()
        before = await registry.export_document()

    report = await run_import(settings, [bad_json, top_list, bad_yaml, invalid], strict=False)
    reasons = {Path(p).name: reason for p, _, reason in report.rows}
    assert report.rejected == 4
    assert "broken.xreg.json" in reasons["broken.xreg.json"] and "parsing_data" in reasons["broken.xreg.json"]
    assert "list.xreg.json" in reasons["list.xreg.json"]
    assert "broken.cereg.yaml" in reasons["broken.cereg.yaml"]
    assert reasons["invalid.xreg.json"].startswith("invalid_attribute")
    assert f"/messagegroups/{gid}/messages/{mid}" in reasons["invalid.xreg.json"]
    assert "dataschema" in reasons["invalid.xreg.json"]
    async with registry:
        assert await registry.store.current_revision() == rev
        assert await registry.export_document() == before


async def test_strict_rejects_older_shapes(tmp_path):
    report = await run_import(settings_for(tmp_path), [XREG_DATA / "codegen-5675db7__Microsoft.Storage.0.4-wip.cereg.json"],
                              strict=True)
    assert report.rejected == 1 and "strict" in report.rows[0][2]


async def test_documents_with_unknown_group_types_are_rejected(registry):
    with pytest.raises(XRegistryError) as exc:
        await registry.apply_document({"widgets": {"w": {}}})
    assert exc.value.type == "unknown_group_type"


def test_cli_import_and_export(tmp_path, monkeypatch):
    monkeypatch.setenv("XREG_DATA_DIR", str(tmp_path))
    runner = CliRunner()
    result = runner.invoke(app, ["import", str(XREG_DATA / "rts__gtfs.xreg.json")])
    assert result.exit_code == 0, result.output
    assert "import summary" in result.output and "rts__gtfs.xreg.json" in result.output
    assert "json-pointer-ref" in result.output  # normalisations are listed
    out = tmp_path / "export.json"
    result = runner.invoke(app, ["export", "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["specversion"] == "1.0-rc4"
    assert len(doc["messagegroups"]) == 6 and len(doc["endpoints"]) == 3

    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    result = runner.invoke(app, ["import", str(bad)])
    assert result.exit_code == 1
    assert "bad.json" in result.output


async def test_custom_model_document_round_trips_through_the_import_command(tmp_path):
    """A document of a registry with its own model (``modelsource`` and its groups) exported and
    imported by the ``import`` command: the model is installed first, then the entities; the
    re-exported document is the same; an import whose model existing entities would violate is
    rejected whole."""
    model = {"groups": {"dirs": {"plural": "dirs", "singular": "dir", "attributes": {"owner": {"type": "string"}},
                                 "resources": {"files": {"plural": "files", "singular": "file", "maxversions": 3}}}}}
    doc = {"modelsource": model, "dirs": {"d1": {"owner": "me", "files": {"f": {"versions": {
        "1": {"fileid": "f", "versionid": "1", "file": {"a": 1}}, "2": {"fileid": "f", "versionid": "2",
                                                                      "filebase64": "AAEC"}}}}}}}
    src = tmp_path / "custom.xreg.json"
    src.write_text(json.dumps(doc))
    report = await run_import(settings_for(tmp_path / "a"), [src], strict=True)
    assert report.rejected == 0, report.rows
    async with LocalRegistry(SQLiteStore(str(tmp_path / "a" / "registry.db"))) as registry:
        assert list(registry.model.groups) == ["dirs"]
        exported = await registry.export_document()
    assert exported["modelsource"] == model
    assert exported["dirs"]["d1"]["owner"] == "me"
    assert exported["dirs"]["d1"]["files"]["f"]["versions"]["2"]["filebase64"] == "AAEC"
    again = tmp_path / "again.xreg.json"
    again.write_text(json.dumps(exported))
    report = await run_import(settings_for(tmp_path / "b"), [again], strict=True)
    assert report.rejected == 0, report.rows
    async with LocalRegistry(SQLiteStore(str(tmp_path / "b" / "registry.db"))) as registry:
        second = await registry.export_document()
    strip = ("epoch", "createdat", "modifiedat")

    def shape(d):
        if isinstance(d, dict):
            return {k: shape(v) for k, v in d.items() if k not in strip}
        return d
    assert shape(second) == shape(exported)
    # the built-in model's data in a registry refuses a document whose model drops it
    builtin = tmp_path / "builtin.xreg.json"
    builtin.write_text(json.dumps({"messagegroups": {"g": {"messages": {"m": {"description": "d"}}}}}))
    assert (await run_import(settings_for(tmp_path / "c"), [builtin], strict=True)).rejected == 0
    report = await run_import(settings_for(tmp_path / "c"), [src], strict=True)
    assert report.rejected == 1 and "model_compliance_error" in report.rows[0][2]
