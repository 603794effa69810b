"""The write path keeps each message's materialisation in the store (xreg.registry.materialise):
in the same commit as the write, transitively through the reverse index, on both backends; a
store written before materialisation existed is brought up to date when opened."""

from __future__ import annotations

import json
import sqlite3

import pytest
from mongomock_motor import AsyncMongoMockClient
from typer.testing import CliRunner

from gateway.cli import app
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.registry.materialise import DERIVED, derived_of
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

G = "/messagegroups/g/messages/"


def chain_document() -> dict:
    return {"messagegroups": {"g": {"messages": {
        "root": {"description": "root", "envelope": "CloudEvents/1.0",
                 "envelopemetadata": {"type": {"value": "t"}, "source": {"value": "/root"}}},
        "mid": {"basemessageuri": G + "root", "protocol": "KAFKA", "protocoloptions": {"key": "k"}},
        "leaf": {"basemessageuri": G + "mid", "envelopemetadata": {"source": {"value": "/leaf"}}},
        "pinned": {"basemessageuri": G + "root/versions/1"},
        "alone": {"description": "no base"},
    }}}}


async def derived(registry: LocalRegistry, name: str, as_of: int | None = None) -> dict:
    rec = await registry.store.get(G + name, as_of=as_of)
    assert rec is not None
    return derived_of(rec.kind, rec.doc) or {}


@pytest.fixture(params=["sqlite", "mongomock"])
async def reg(request, tmp_path):
    store = (SQLiteStore(tmp_path / "r.db") if request.param == "sqlite"
             else MongoStore(client=AsyncMongoMockClient(), database="materialise"))
    async with LocalRegistry(store, registry_id="test") as registry:
        yield registry


async def test_a_chain_is_merged_from_its_end_back_up(reg):
    await reg.apply_document(chain_document())
    leaf = await derived(reg, "leaf")
    assert leaf["attributes"]["description"] == "root" and leaf["attributes"]["protocol"] == "KAFKA"
    assert leaf["attributes"]["envelopemetadata"] == {"type": {"value": "t"}, "source": {"value": "/leaf"}}
    assert leaf["inherited"] == {"description": G + "root", "envelope": G + "root", "protocol": G + "mid",
                                 "protocoloptions": G + "mid"}  # envelopemetadata: its own, merged
    assert leaf["chain"] == [G + "mid", G + "mid/versions/1", G + "root", G + "root/versions/1"]
    assert (await derived(reg, "pinned"))["chain"] == [G + "root/versions/1"]
    assert (await derived(reg, "alone"))["attributes"] == {"description": "no base"}
    version = await reg.store.get(G + "leaf/versions/1")
    assert version is not None and version.doc[DERIVED] == leaf  # the resource carries its default version's


async def test_writing_a_base_rematerialises_its_dependents_in_the_same_commit(reg):
    first = (await reg.apply_document(chain_document())).revision
    outcome = await reg.apply_document({"messagegroups": {"g": {"messages": {"root": {
        "description": "root v2", "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t2"}}}}}}})
    assert sorted(x for x in outcome.rematerialised if "/versions/" not in x) == [G + "leaf", G + "mid", G + "pinned"]
    assert outcome.updated and all("root" in x for x in outcome.updated)
    for name in ("mid", "leaf", "pinned"):
        rec = await reg.store.get(G + name)
        assert rec is not None and rec.revision == outcome.revision
        assert derived_of(rec.kind, rec.doc)["attributes"]["description"] == "root v2"
        assert rec.doc["default"]["epoch"] == 1  # not an xRegistry update of the message
    assert (await derived(reg, "leaf", as_of=first))["attributes"]["description"] == "root"
    assert (await derived(reg, "alone"))["attributes"] == {"description": "no base"}


async def test_deleting_a_base_leaves_its_dependents_as_declared(reg):
    await reg.apply_document(chain_document())

    async def drop(cs):
        await cs.delete(G + "mid")

    await reg.write(drop, subject=G + "mid", note="delete")
    leaf = await derived(reg, "leaf")
    assert leaf["unresolved"] == {"reference": G + "mid", "reason": "dangling"}
    assert leaf["attributes"] == {"envelopemetadata": {"source": {"value": "/leaf"}}}
    again = await reg.apply_document({"messagegroups": {"g": {"messages": {"mid": {"description": "back"}}}}})
    assert G + "leaf" in again.rematerialised
    assert (await derived(reg, "leaf"))["attributes"]["description"] == "back"


async def test_a_cycle_is_refused_naming_the_chain_and_nothing_is_written(reg):
    await reg.apply_document(chain_document())
    before = await reg.store.current_revision()
    with pytest.raises(XRegistryError) as caught:
        await reg.apply_document({"messagegroups": {"g": {"messages": {"root": {"basemessageuri": G + "leaf"}}}}})
    assert caught.value.type == "invalid_attribute" and caught.value.args_map["name"] == "basemessageuri"
    assert "circular" in caught.value.detail
    assert all(G + n in caught.value.detail for n in ("root/versions/1", "leaf/versions/1", "mid/versions/1"))
    assert await reg.store.current_revision() == before


async def test_a_long_chain_stops_at_the_depth_bound(reg):
    messages = {f"m{i:02d}": {"basemessageuri": G + f"m{i + 1:02d}"} for i in range(40)}
    messages["m40"] = {"description": "the end"}
    await reg.apply_document({"messagegroups": {"g": {"messages": messages}}})
    top = await derived(reg, "m00")
    assert top["unresolved"]["reason"] == "too_deep" and "description" not in top["attributes"]
    assert (await derived(reg, "m20"))["attributes"]["description"] == "the end"


async def test_a_store_written_before_materialisation_is_materialised_when_opened(tmp_path):
    path = tmp_path / "old.db"
    async with LocalRegistry(SQLiteStore(path), registry_id="test") as registry:
        await registry.apply_document(chain_document())
    with sqlite3.connect(path) as db:  # what an older gateway left behind
        db.execute("UPDATE states SET doc = json_remove(json_remove(doc, '$.\"@materialised\"'), "
                   "'$.default.\"@materialised\"') WHERE doc IS NOT NULL")
        db.execute("DELETE FROM links")
    async with LocalRegistry(SQLiteStore(path), registry_id="test") as registry:
        assert (await derived(registry, "leaf"))["attributes"]["description"] == "root"
        assert [r.key for r in await registry.store.referrers([G + "root"])] == [
            G + "leaf", G + "leaf/versions/1", G + "mid", G + "mid/versions/1"]
        pinned = await registry.store.referrers([G + "root/versions/1"])
        assert {G + "pinned", G + "pinned/versions/1"} <= {r.key for r in pinned}


def test_import_reports_dangling_bases_and_export_can_materialise(tmp_path, monkeypatch):
    monkeypatch.setenv("XREG_DATA_DIR", str(tmp_path))
    doc = chain_document()
    doc["messagegroups"]["g"]["messages"]["orphan"] = {"basemessageuri": G + "nowhere"}
    source = tmp_path / "doc.json"
    source.write_text(json.dumps(doc))
    runner = CliRunner()
    result = runner.invoke(app, ["import", str(source), "--verbose"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # as wrapped to the terminal's width
    assert "1 message(s) name a base message that is not in the registry" in output
    assert f"{G}orphan: basemessageuri {G}nowhere is not in the registry" in output
    declared = json.loads(runner.invoke(app, ["export"]).stdout)
    materialised = json.loads(runner.invoke(app, ["export", "--materialised"]).stdout)
    leaf = G.strip("/").split("/")
    assert "description" not in declared[leaf[0]]["g"]["messages"]["leaf"]
    assert materialised[leaf[0]]["g"]["messages"]["leaf"]["description"] == "root"
    assert materialised[leaf[0]]["g"]["messages"]["leaf"]["versions"]["1"]["protocol"] == "KAFKA"
    assert DERIVED not in json.dumps(declared)
    assert Settings().data_dir == tmp_path

