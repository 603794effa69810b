"""Reading cross-reference Resources (core/spec.md "Cross Referencing Resources").

A source Resource whose ``meta.xref`` names an existing, non-cross-reference target is read as
the target: "all of the target Resource's attributes (except its <RESOURCE>id) will appear as
if they were locally defined", with the source's ids, ``self``/``xid`` ("Any attributes
referencing the source MUST use the source's metadata") and ``meta.xref`` ("MUST always appear").
A dangling ``xref`` (no target), or a target that is itself a cross-reference ("Recursive, or
transitively, following of xref XIDs is not done"), leaves the source as its ids and ``meta``.
The stored state is never changed: :func:`resolve` builds read-only records for views.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from xreg.registry.views import resource_id_attribute
from xreg.storage.base import Store
from xreg.storage.records import EntityRecord
from xreg.xid import Xid


def _xref(rec: EntityRecord) -> str | None:
    if rec.kind != "resource":
        return None
    value = (rec.doc.get("meta") or {}).get("xref")
    return value if isinstance(value, str) and value else None


def is_source(rec: EntityRecord) -> bool:
    """Whether ``rec`` is a cross-reference Resource (its ``meta.xref`` names a target)."""
    return _xref(rec) is not None


def as_source(source: EntityRecord, target: EntityRecord) -> EntityRecord:
    """The record of ``source`` showing ``target``'s meta attributes and default Version."""
    id_attr = resource_id_attribute(source)
    sid = source.id
    tmeta = {k: v for k, v in (target.doc.get("meta") or {}).items() if k not in ("xid", "xref")}
    tmeta.pop(resource_id_attribute(target), None)
    meta = {id_attr: sid, "xid": str(Xid.parse(source.xid).meta_of()), **tmeta,
            "xref": (source.doc.get("meta") or {})["xref"]}
    default = dict(target.doc.get("default") or {})
    default[id_attr] = sid
    return EntityRecord(xid=source.xid, kind=source.kind, ctype=source.ctype, doc={"meta": meta, "default": default},
                        revision=source.revision, rank=source.rank)


def dangling(source: EntityRecord) -> EntityRecord:
    """The record of a source whose target cannot be read: its ids and ``meta`` ("it will only
    show the xref and ID-like attributes"), its id also where a Resource's attributes are."""
    return replace(source, doc={**source.doc, "default": {resource_id_attribute(source): source.id}})


async def targets(store: Store, records: Sequence[EntityRecord], as_of: int | None = None) -> dict[str, EntityRecord]:
    """Source key -> the target record of each cross-reference in ``records`` that resolves."""
    refs = {rec.key: x for rec in records if (x := _xref(rec))}
    if not refs:
        return {}
    found = await store.get_many(sorted(set(refs.values())), as_of)
    out: dict[str, EntityRecord] = {}
    for key, xref in refs.items():
        target = found.get(xref.lower())
        if target is not None and target.kind == "resource" and _xref(target) is None:
            out[key] = target
    return out


async def resolve(store: Store, records: Sequence[EntityRecord], as_of: int | None = None) -> list[EntityRecord]:
    """``records`` with each resolvable cross-reference read as its target (see the module)."""
    found = await targets(store, records, as_of)
    return [as_source(rec, found[rec.key]) if rec.key in found else rec for rec in records]


def rekey_version(version: EntityRecord, source_xid: str, id_attribute: str) -> EntityRecord:
    """A target's Version record as a Version of the source Resource ``source_xid``."""
    source = Xid.parse(source_xid)
    xid = str(source.version(version.id))
    doc = {**version.doc, id_attribute: source.id, "xid": xid}
    return EntityRecord(xid=xid, kind=version.kind, ctype=version.ctype, doc=doc, revision=version.revision,
                        rank=version.rank)


async def versions_owner(store: Store, resource_xid: str, as_of: int | None = None) -> EntityRecord | None:
    """The target whose Versions a source Resource shows (``None``: not a resolvable xref)."""
    rec = await store.get(resource_xid, as_of)
    if rec is None:
        return None
    return (await targets(store, [rec], as_of)).get(rec.key)


async def source_version(store: Store, xid: str, as_of: int | None = None) -> EntityRecord | None:
    """The Version ``xid`` of a source Resource (its target's Version of that id), or ``None``."""
    parts = Xid.parse(xid)
    target = await versions_owner(store, str(parts.resource), as_of)
    if target is None:
        return None
    version = await store.get(str(Xid.parse(target.xid).version(parts.version_id or "")), as_of)
    return rekey_version(version, str(parts.resource), resource_id_attribute(target)) if version else None
