"""Stored groups and resources build their views when first read (``adapters.local.StoredEntity``):
every attribute they answer without building them is the one the built view answers."""

from __future__ import annotations

from dataclasses import replace

from adapters.base import Entity
from adapters.local import LocalSource, StoredEntity
from tests.graphql.conftest import open_registry
from xreg.registry.reads import Selection, render, select

#: Names no view holds, and the ones a view shows differently from the stored record.
EXTRA = ("nope", "self", "xid", "isdefault", "meta", "metaurl", "versionsurl", "versionscount", "versionid",
         "messageuri", "messageurl", "schemauri", "schemaurl", "@materialised", "messagescount", "schemasurl")


async def test_lazy_entities_answer_as_built_views(corpus_db):
    async with open_registry(corpus_db) as reg:
        source = LocalSource(reg)
        records = []
        for ctype in ("endpoints", "messagegroups", "schemagroups", "messagegroups/messages",
                      "endpoints/messages", "schemagroups/schemas"):
            records += (await select(reg.store, Selection(ctype, limit=150))).items
        lazy = await source._entities(records, None)
        views = await render(reg.store, reg.model, records, base_url=source.base_url, include_meta=True,
                             with_counts=False)
        checked = materialised = 0
        for rec, entity, view in zip(records, lazy, views, strict=True):
            assert isinstance(entity, StoredEntity)
            meta = view.pop("meta", None) if rec.kind == "resource" else None
            built = source._materialisation(rec, view) if rec.ctype in source.messages else None
            attributes = built.attributes if built is not None else view
            fresh = await source._entities([rec], None)  # another lazy one: read before anything is built
            pending = fresh[0].pending_chain()
            for name in {*attributes, *view, *(rec.doc.get("default") or rec.doc), *EXTRA}:
                assert fresh[0].attribute(name) == attributes.get(name), (rec.xid, name)
                assert fresh[0].declared(name) == view.get(name), (rec.xid, name)
                assert fresh[0].origin(name) == (built.inherited.get(name) if built else None), (rec.xid, name)
                checked += 1
            assert pending == (built.pending if built is not None else None)
            # building it gives the eager entity
            assert (entity.view, entity.meta, entity.materialised) == (view, meta, built)
            assert entity.attributes == attributes
            materialised += built is not None
            plain = replace(entity, materialised=None)
            assert type(plain) is Entity and plain.view == view and plain.materialised is None
        assert materialised > 100 and checked > 10000
