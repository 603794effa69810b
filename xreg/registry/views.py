"""Serialise stored entity states as xRegistry JSON (core/spec.md "JSON Serialization").

Stored records hold an entity's own attributes (and a message's materialisation, which views
leave out: see ``xreg.registry.materialise``); these functions add what a view shows:
``self`` URLs, the ``<COLLECTION>url`` / ``<COLLECTION>count`` pairs, and for a resource its
default version's attributes with ``meta`` and ``versions`` links.
"""

from __future__ import annotations

import functools
from typing import Any

from xreg.model.modelsource import STORED_KEY as MODEL_SOURCE_KEY
from xreg.model.registry_model import RegistryModel
from xreg.registry.capabilities import STORED_KEY as CAPABILITIES_KEY
from xreg.registry.materialise import DERIVED
from xreg.storage.records import EntityRecord
from xreg.xid import Xid

SPEC_VERSION = "1.0-rc4"


def url_for(base_url: str, xid: str) -> str:
    """The ``self`` URL of an entity: the registry's base URL followed by the XID."""
    return base_url.rstrip("/") + (xid if xid != "/" else "/")


def _below_resource(xid: str, *segments: str) -> str:
    """The XID of the ``meta`` (``"meta"``) or a version (``"versions", <VID>``) of resource
    ``xid``: appended to a stored resource's XID (four segments), else through :class:`Xid`."""
    if xid.count("/") == 4 and xid[:1] == "/" and not xid.endswith("/") and "//" not in xid:
        return "/".join((xid, *segments))
    parsed = Xid.parse(xid)
    return str(parsed.meta_of() if segments == ("meta",) else parsed.version(segments[-1]))


def registry_view(rec: EntityRecord, model: RegistryModel, base_url: str, counts: dict[str, int]) -> dict[str, Any]:
    """The registry entity with one ``<GROUPS>url`` / ``<GROUPS>count`` per group type."""
    doc = dict(rec.doc)
    doc.pop(MODEL_SOURCE_KEY, None)  # served as modelsource when asked for
    doc.pop(CAPABILITIES_KEY, None)  # served as capabilities
    out: dict[str, Any] = {"specversion": SPEC_VERSION, "registryid": doc.pop("registryid"),
                           "self": url_for(base_url, "/"), "xid": "/"}
    doc.pop("xid", None)
    out.update(doc)
    for gtype in model.groups:
        out[f"{gtype}url"] = url_for(base_url, f"/{gtype}")
        out[f"{gtype}count"] = counts.get(gtype, 0)
    return out


def group_view(rec: EntityRecord, model: RegistryModel, base_url: str, counts: dict[str, int]) -> dict[str, Any]:
    """A group with one ``<RESOURCES>url`` / ``<RESOURCES>count`` per resource type."""
    gdef = model.group(rec.ctype)
    id_attr = gdef.id_attribute if gdef else f"{rec.ctype.rstrip('s')}id"
    doc = dict(rec.doc)
    out: dict[str, Any] = {id_attr: doc.pop(id_attr, rec.id), "self": url_for(base_url, rec.xid), "xid": rec.xid}
    doc.pop("xid", None)
    out.update(doc)
    for rtype in (gdef.resources if gdef else {}):
        out[f"{rtype}url"] = url_for(base_url, f"{rec.xid}/{rtype}")
        out[f"{rtype}count"] = counts.get(rtype, 0)
    return out


def meta_view(rec: EntityRecord, base_url: str) -> dict[str, Any]:
    """The ``meta`` entity of a resource record."""
    meta = dict(rec.doc.get("meta") or {})
    xid = meta.pop("xid") if "xid" in meta else _below_resource(rec.xid, "meta")
    id_attr = next((k for k in meta if k.endswith("id") and k not in ("defaultversionid",)), None)
    out: dict[str, Any] = {}
    if id_attr:
        out[id_attr] = meta.pop(id_attr)
    out.update({"self": url_for(base_url, xid), "xid": xid})
    dv = meta.get("defaultversionid")
    out.update(meta)
    out.setdefault("readonly", False)
    if dv is not None:
        out["defaultversionurl"] = url_for(base_url, _below_resource(rec.xid, "versions", str(dv)))
    return out


def version_view(rec: EntityRecord, default_id: str | None, base_url: str) -> dict[str, Any]:
    """A version, with ``isdefault`` (its declared attributes: the materialisation left out)."""
    doc = dict(rec.doc)
    doc.pop(DERIVED, None)
    id_attr = next((k for k in doc if k.endswith("id") and k not in ("versionid", "ancestorid")), None)
    out: dict[str, Any] = {}
    if id_attr:
        out[id_attr] = doc.pop(id_attr)
    out["versionid"] = doc.pop("versionid") if "versionid" in doc else rec.id
    out["self"] = url_for(base_url, rec.xid)
    out["xid"] = doc.pop("xid", rec.xid)
    out.update(doc)
    if id_attr:
        _served_link(out, id_attr[:-2])
    out["isdefault"] = rec.id == default_id
    return out


def _served_link(view: dict[str, Any], singular: str) -> None:
    """An external document's link as 1.0-rc4 names it, ``<RESOURCE>url``: states written by
    older gateways hold ``<RESOURCE>uri`` (renamed in place, keeping the attribute's position)."""
    uri = f"{singular}uri"
    if uri in view and f"{singular}url" not in view:
        items = [(f"{singular}url" if k == uri else k, v) for k, v in view.items()]
        view.clear()
        view.update(items)


def resource_id_attribute(rec: EntityRecord) -> str:
    """The ``<singular>id`` attribute of a resource record (its ``meta``'s, else from its type)."""
    meta = rec.doc.get("meta") or {}
    for key in meta:  # nearly always the first key
        if key.endswith("id") and key != "defaultversionid":
            return key
    return _id_attribute_of(rec.ctype)


@functools.cache
def _id_attribute_of(ctype: str) -> str:
    return f"{ctype.split('/')[-1].rstrip('s')}id"


#: What a resource's view shows that its default version's stored attributes do not (or not as
#: stored): besides its id attribute and its ``<singular>uri`` / ``<singular>url`` link.
RESOURCE_VIEW_OWN = frozenset({"versionid", "self", "xid", "isdefault", "metaurl", "meta", "versionsurl",
                               "versionscount", DERIVED})


def default_versionid(rec: EntityRecord) -> Any:
    """A resource view's ``versionid``: its default version's (else ``meta``'s
    ``defaultversionid``); ``None`` when the record holds no default version attributes."""
    default = rec.doc.get("default") or {}
    if not any(k != DERIVED for k in default):
        return None
    return default.get("versionid", (rec.doc.get("meta") or {}).get("defaultversionid"))


def resource_view(
    rec: EntityRecord, base_url: str, versions_count: int, *, include_meta: bool = False,
) -> dict[str, Any]:
    """A resource: its default version's attributes, then ``meta`` and ``versions`` links."""
    meta = rec.doc.get("meta") or {}
    default = dict(rec.doc.get("default") or {})
    default.pop(DERIVED, None)
    id_attr = resource_id_attribute(rec)
    out: dict[str, Any] = {id_attr: meta[id_attr] if id_attr in meta else rec.id}
    if default:  # (attributes besides the derived ones: :func:`default_versionid`, without a second look)
        out["versionid"] = default.pop("versionid", meta.get("defaultversionid"))
    default.pop(id_attr, None)
    default.pop("xid", None)
    out["self"] = url_for(base_url, rec.xid)
    out["xid"] = rec.xid
    out.update(default)
    _served_link(out, id_attr[:-2])
    if default or "versionid" in out:
        out["isdefault"] = True
    out["metaurl"] = url_for(base_url, _below_resource(rec.xid, "meta"))
    if include_meta:
        out["meta"] = meta_view(rec, base_url)
    out["versionsurl"] = url_for(base_url, f"{rec.xid}/versions")
    out["versionscount"] = versions_count
    return out
