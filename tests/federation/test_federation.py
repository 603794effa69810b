"""The federation: sources built from settings, reloaded without a restart, and collections
read across all of them with cursors that stay correct."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import replace

import pytest

from adapters.base import Listing, SourceUnavailable
from adapters.federation import ConfigError, Federation
from adapters.file import FileSource
from adapters.local import LocalSource
from adapters.merged import count_across, list_across
from adapters.remote import RemoteSource
from tests.federation.conftest import data_file
from xreg.config import Settings
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.errors import XRegistryError
from xreg.registry.filters import parse_filters, parse_sort
from xreg.registry.reads import collection_tree

CONTOSO = "contoso-erp-jsons07.xreg.json"


def remote_entry(rid: str, url: str, **extra) -> dict:
    """A remote's entry; its event log is not followed (these tests count the requests reads make).

    Its timeouts are far above any answer's time on a loaded machine, so no test's outcome depends
    on how fast a remote answers; a test about timeouts passes its own."""
    return {"id": rid, "kind": "xregistry", "url": url, "retries": 0, "backoff_seconds": 0.01,
            "timeouts": {"connect": 30, "read": 60, "total": 120}, "follow_events": False, **extra}


@pytest.fixture
async def federation(registry, remotes, tmp_path):
    """The local registry (holding the contoso document too), the three remotes and the same
    contoso document as a file registry: the same XIDs live in three registries."""
    doc, _ = normalise(read_document(data_file(CONTOSO)), strict=False)
    await registry.apply_document(doc)
    settings = Settings(data_dir=tmp_path, registry_id="test", config_watch_seconds=0, registries=[
        *(remote_entry(rid, server.base_url) for rid, server in remotes.items()),
        {"id": "erp-file", "kind": "file", "path": str(data_file(CONTOSO)), "priority": 200},
    ])
    fed = Federation(settings, LocalSource(registry))
    await fed.open()
    try:
        yield fed
    finally:
        await fed.close()


def listing_for(ctype: str, expr: str | None = None, sort: str | None = None):
    def make(source):
        if source.model.group(ctype.split("/")[0]) is None:
            return None
        tree = collection_tree(source.model, ctype)
        return Listing(ctypes=(ctype,), filters=parse_filters([expr], collections=tree) if expr else None,
                       sort=parse_sort(sort, collections=tree) if sort else None)
    return make


async def test_sources_in_priority_order_with_their_kinds(federation):
    sources = federation.ordered()
    assert [s.id for s in sources] == ["test", "erp", "iot", "transit", "erp-file"]
    assert [type(s) for s in sources] == [LocalSource, RemoteSource, RemoteSource, RemoteSource, FileSource]
    assert all(st.healthy for st in federation.status())
    with pytest.raises(XRegistryError) as exc:
        await federation.sources["erp-file"].put_group("messagegroups", "x", {}, mode="create", patch=False, epoch=None)
    assert exc.value.type == "action_not_supported"


@pytest.mark.parametrize("ctype,expr,sort", [
    ("messagegroups", None, None),
    ("messagegroups/messages", None, "name=desc"),
    ("messagegroups/messages", "envelope=CloudEvents*", "envelope"),
    ("schemagroups/schemas", None, "format"),
])
async def test_paging_across_registries_visits_every_row_once(federation, ctype, expr, sort):
    sources = federation.ordered()
    make = listing_for(ctype, expr, sort)
    expected = []
    for source in sources:
        own = make(source)
        if own is not None:
            page = await source.list(replace(own, limit=10_000))
            expected += [(source.id, e.xid) for e in page.items]
    total, errors = await count_across(sources, make)
    assert total == len(expected) and not errors
    assert len(set(expected)) == len(expected) > 20
    for size in (7, 50):
        for backward in (False, True):
            seen, cursor = [], None
            while True:
                base = Listing(ctypes=(ctype,), limit=size, backward=backward,
                               **({"before": cursor} if backward else {"after": cursor}),
                               sort=make(sources[0]).sort if make(sources[0]) else None)
                page = await list_across(
                    sources, base, lambda s, base=base: (lambda own: own and replace(own, sort=base.sort))(make(s)))
                batch = [(e.registry, e.xid) for e in page.items]
                seen = batch + seen if backward else seen + batch
                if not (page.has_prev if backward else page.has_next):
                    break
                cursor = page.cursors[0] if backward else page.cursors[-1]
            assert sorted(seen) == sorted(expected), (size, backward)
            assert len(seen) == len(set(seen))


async def test_the_same_xid_in_three_registries_is_three_rows(federation):
    sources = federation.ordered()
    make = listing_for("messagegroups", "messagegroupid=Contoso.ERP.EmployeeEvents")
    rows = []
    cursor = None
    while True:
        page = await list_across(sources, Listing(ctypes=("messagegroups",), limit=1, after=cursor), make)
        rows += [e.registry for e in page.items]
        if not page.has_next:
            break
        cursor = page.cursors[-1]
    assert rows == ["test", "erp", "erp-file"]  # ties on the XID go by registry priority


async def test_a_registry_that_is_down_leaves_the_others_answering(federation, faulty):
    settings = federation.settings.model_copy(update={"registries": [
        *federation.settings.registries,
        type(federation.settings.registries[0])(**remote_entry("dead", faulty[0].origin + "/500/registry")),
    ]})
    await federation.reload(settings)
    sources = federation.ordered()
    page = await list_across(sources, Listing(ctypes=("messagegroups",), limit=500), listing_for("messagegroups"))
    assert {e.registry for e in page.items} == {"test", "erp", "iot", "transit", "erp-file"}
    assert [e.registry for e in page.errors] == ["dead"] and "HTTP 500" in page.errors[0].reason
    status = {s.registry: s for s in federation.status()}
    assert not status["dead"].healthy and status["dead"].last_error and status["erp"].healthy


async def test_reload_keeps_unchanged_registries_and_replaces_changed_ones(federation, remotes, tmp_path):
    erp, iot = federation.sources["erp"], federation.sources["iot"]
    settings = federation.settings
    entries = [e for e in settings.registries if e.id != "transit"]
    changed = [e.model_copy(update={"cache_ttl": 1.0}) if e.id == "iot" else e for e in entries]
    changes = await federation.reload(settings.model_copy(update={"registries": changed}))
    assert sorted(changes) == ["changed iot", "removed transit"]
    assert federation.sources["erp"] is erp and federation.sources["iot"] is not iot
    assert "transit" not in federation.sources and federation.reloads == 1
    bad = settings.model_copy(update={"registry_id": "other"})
    with pytest.raises(ConfigError):
        await federation.reload(bad)
    assert federation.sources["erp"] is erp


async def test_invalid_settings_file_is_refused_and_the_running_set_stays(registry, remotes, tmp_path):
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(f"registry_id: test\nregistries:\n  - {{id: erp, kind: xregistry, url: '{remotes['erp'].base_url}'}}\n")
    settings = Settings(config=cfg, data_dir=tmp_path, config_watch_seconds=0.05)
    fed = Federation(settings, LocalSource(registry))
    await fed.open()
    fed.watch()
    try:
        assert list(fed.sources) == ["test", "erp"]
        cfg.write_text("registry_id: test\nregistries:\n  - {id: erp, kind: nonsense}\n")
        refused = await _next_reload(fed)  # the watcher has seen the change and refused it
        assert refused and "nonsense" in refused and fed.last_reload_error == refused
        assert list(fed.sources) == ["test", "erp"] and fed.reloads == 0
        cfg.write_text(f"registry_id: test\nregistries:\n"
                       f"  - {{id: erp, kind: xregistry, url: '{remotes['erp'].base_url}'}}\n"
                       f"  - {{id: iot, kind: xregistry, url: '{remotes['iot'].base_url}', priority: 1}}\n")
        assert await _next_reload(fed) is None
        assert list(fed.sources) == ["iot", "test", "erp"] and fed.reloads == 1 and fed.last_reload_error is None  # priority 1 first, then as listed
    finally:
        await fed.close()


async def _next_reload(fed: Federation) -> str | None:
    """The outcome of the next reload the watcher or SIGHUP attempts (the error, ``None`` when
    applied). The bound only ends a wait that would otherwise never end."""
    async with asyncio.timeout(60):
        return await fed.next_reload()


async def test_sighup_reloads(registry, remotes, tmp_path):
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text("registry_id: test\n")
    fed = Federation(Settings(config=cfg, data_dir=tmp_path, config_watch_seconds=0), LocalSource(registry))
    await fed.open()
    fed.watch()
    try:
        cfg.write_text(f"registry_id: test\nregistries:\n  - {{id: erp, kind: xregistry, url: '{remotes['erp'].base_url}'}}\n")
        os.kill(os.getpid(), signal.SIGHUP)
        assert await _next_reload(fed) is None
        assert list(fed.sources) == ["test", "erp"] and fed.reloads == 1
    finally:
        await fed.close()


async def test_file_registries_reload_when_their_document_changes(registry, tmp_path):
    doc = tmp_path / "doc.json"
    doc.write_text(data_file("windgenerator-kafka-avro.xreg.json").read_text())
    settings = Settings(data_dir=tmp_path, config_watch_seconds=0,
                        registries=[{"id": "wind", "kind": "file", "path": str(doc)}])
    fed = Federation(settings, LocalSource(registry))
    await fed.open()
    try:
        wind = fed.sources["wind"]
        before = [g.xid for g in (await wind.list(Listing(ctypes=("messagegroups",)))).items]
        assert await fed.reload(settings) == []  # unchanged file: nothing to do
        doc.write_text(data_file("lightbulb-avro.xreg.json").read_text())
        assert await fed.reload(settings) == ["reloaded wind"]
        assert fed.sources["wind"] is wind
        after = [g.xid for g in (await wind.list(Listing(ctypes=("messagegroups",)))).items]
        assert before and after and before != after
    finally:
        await fed.close()


async def test_a_document_that_cannot_be_loaded_fails_the_start(registry, tmp_path):
    doc = tmp_path / "broken.json"
    doc.write_text('{"messagegroups": ')
    fed = Federation(Settings(data_dir=tmp_path, registries=[{"id": "broken", "kind": "file", "path": str(doc)}]),
                     LocalSource(registry))
    with pytest.raises(ConfigError) as exc:
        await fed.open()
    assert "broken" in str(exc.value) and "broken.json" in str(exc.value)


async def test_file_registry_from_a_url(remotes, registry, tmp_path):
    # the document is our remote's /export: a file registry loaded over HTTP
    url = remotes["erp"].base_url + "/export"
    fed = Federation(Settings(data_dir=tmp_path, registries=[{"id": "snapshot", "kind": "file", "url": url}]),
                     LocalSource(registry))
    await fed.open()
    try:
        snapshot = fed.sources["snapshot"]
        assert await snapshot.count(Listing(ctypes=("messagegroups/messages",))) == 17
        assert fed.status()[1].healthy and fed.status()[1].url == url
    finally:
        await fed.close()


async def test_unavailable_errors_name_the_registry():
    err = SourceUnavailable("erp", "answered HTTP 500", "/messagegroups/x")
    assert err.type == "data_retrieval_error" and err.args_map["registry"] == "erp" and "'erp'" in err.detail
