"""Settling a resource after its versions were written: ancestors, the default version
(``defaultversionid`` / ``defaultversionsticky``), ``maxversions`` pruning, ``meta.xref``, then
the resource row (its ``meta`` and a copy of the default version)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg import json_limits
from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel, ResourceDef
from xreg.registry.versionmodes import newest, order_key
from xreg.registry.write_steps.ancestors import assign_ancestors, repair_ancestors
from xreg.registry.write_steps.attributes import META_READONLY, check_depth, merge, strip, user_view
from xreg.registry.write_steps.checks import check_documents, check_matchversions, validate, validate_meta
from xreg.registry.write_steps.ids import check_default_version_id, check_same_id
from xreg.registry.write_steps.registry_entity import implicit_registry
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import Unit


async def settle_resource(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, rdef: ResourceDef, meta_in: dict[str, Any] | None,
    *, patch: bool,
) -> None:
    """Ancestors, default version, maxversions, then the resource row (meta + default copy)."""
    resource = Xid(gtype, gid, rtype, rid)
    rxid, mxid = str(resource), str(resource.meta_of())
    vctype = f"{gtype}/{rtype}/versions"
    rstate = await cs.state(rxid)
    versions = await cs.version_states(rxid, vctype)
    meta_old = dict((rstate.doc or {}).get("meta") or {})
    meta_req = dict(meta_in or {})
    check_depth(meta_req, mxid)
    cs.check_epoch(mxid, meta_req.get("epoch"), meta_old if rstate.doc else None)
    check_same_id(meta_req, rdef.id_attribute, rid, mxid)
    xref = meta_req.get("xref", meta_old.get("xref") if patch else None)
    if xref:
        check_xref(xref, gtype, rtype, rxid, cs.model)

    if not xref:
        if not versions:
            raise XRegistryError("bad_request", rxid, detail="a resource must have at least one version")
        assign_ancestors(cs, versions, rxid, rdef)
        await check_documents(cs, rdef, versions, meta_old, meta_req, patch=patch or meta_in is None)
        keep_old = patch or meta_in is None
        was_sticky = bool(meta_old.get("defaultversionsticky", False)) if keep_old else False
        check_default_version_id(meta_req, rxid)
        explicit = meta_req.get("defaultversionid")
        if "defaultversionsticky" in meta_req:
            given = meta_req["defaultversionsticky"]
            if given is not None and not isinstance(given, bool):  # core/spec.md: a Boolean
                raise XRegistryError("invalid_attribute", mxid, path="defaultversionsticky",
                                     name="defaultversionsticky", detail="must be a boolean")
            sticky = bool(given)
        elif patch and "defaultversionid" in meta_req:  # patched id alone: sticky unless null
            sticky = explicit is not None
        else:
            sticky = was_sticky
        by_id = {s.id for s in versions}
        if sticky:
            # sticky without an id: the version the versionmode picks, unless already pinned
            # (core/spec.md, "defaultversionid Attribute")
            wanted = explicit if explicit is not None else (
                meta_old.get("defaultversionid") if was_sticky else None) or newest(versions, rdef.versionmode)
            if wanted not in by_id:
                raise XRegistryError("unknown_id", rxid, singular="version", id=wanted,
                                     detail=f"defaultversionid names no version of {rxid}")
            default_id = wanted
        else:
            default_id = newest(versions, rdef.versionmode)
        if sticky and rdef.maxversions == 1 and meta_req.get("defaultversionsticky"):
            # core/spec.md, defaultversionsticky: setting it to true when maxversions is 1
            raise XRegistryError("setdefaultversionsticky_false", mxid)
        # maxversions: prune the oldest versions (per the versionmode) that are not the
        # default; with maxversions 1 the default is not skipped (core/model.md)
        if rdef.maxversions and len(versions) > rdef.maxversions:
            if rdef.maxversions == 1:
                default_id, sticky = newest(versions, rdef.versionmode), False
            removable = sorted((s for s in versions if s.id != default_id), key=order_key(rdef.versionmode))
            for victim in removable[: len(versions) - rdef.maxversions]:
                cs.put_state(victim, "version", vctype, None)
            versions = [s for s in versions if s.doc is not None]
            repair_ancestors(cs, versions, rdef)
        if cs.model.closed:  # the built-in schema model's format: see check_matchversions
            check_matchversions(rdef, versions, rxid, cs.dirty)
        default_state = next(s for s in versions if s.id == default_id)
        default_copy = json_limits.copy(default_state.doc)
    else:
        default_id, sticky, default_copy = None, False, {}

    # meta attributes
    user_meta = merge(user_view(meta_old) if patch or meta_in is None else {},
                       strip(meta_req, META_READONLY | {rdef.id_attribute, "defaultversionid"}),
                       patch or meta_in is None)
    user_meta.pop("defaultversionsticky", None)
    user_meta.pop("defaultversionid", None)  # set below; a cross-reference has none
    if xref:
        user_meta["xref"] = xref
    else:
        user_meta.pop("xref", None)
    if default_id is not None:
        user_meta["defaultversionid"] = default_id
        user_meta["defaultversionsticky"] = bool(sticky)
    meta_ids = {rdef.id_attribute: rid, "xid": mxid}
    key = rxid.lower()
    collection_changed = key in cs.children_changed
    old_meta_user = user_view(meta_old)
    meta_changed = rstate.doc is None or old_meta_user != user_view({**meta_ids,
                                                                      **user_meta}) or collection_changed
    if meta_changed or (cs.touch and meta_in is not None):
        meta_doc = {**meta_ids, **user_meta}
        cs.stamp(meta_doc, meta_req, meta_old if rstate.doc else None)
        if meta_old.get("xref") and not xref:
            # core/spec.md, converting a cross-reference back into a normal Resource: "The
            # Resource's meta.epoch value MUST be greater than the original Resource's
            # previously known value (if any) and greater than the target Resource's
            # meta.epoch value", "epoch = max(original_Epoch, target_Resource_Epoch) + 1"
            # (a target that no longer exists counts as zero)
            target = await cs.state(str(meta_old["xref"]))
            target_meta = (target.doc or {}).get("meta") if target.kind == "resource" else None
            target_epoch = int((target_meta or {}).get("epoch", 0) or 0)
            meta_doc["epoch"] = max(int(meta_old.get("epoch", 0)), target_epoch) + 1
    else:
        meta_doc = meta_old
    new_doc = {"meta": meta_doc, "default": default_copy}
    if rstate.doc != new_doc:
        cs.put_state(rstate, "resource", f"{gtype}/{rtype}", new_doc)
    elif rstate.stored_rev is not None:
        cs.unchanged.add(key)
    for vstate in versions:
        if vstate.doc is not None and vstate.xid.lower() in cs.dirty:
            validate(cs, "version", vstate, gtype, rtype)
    if meta_doc is not meta_old:  # written: changed, or touched (with the request's timestamps)
        validate_meta(cs, rstate, gtype, rtype)
    await implicit_registry(cs)


def check_xref(xref: Any, gtype: str, rtype: str, rxid: str, model: RegistryModel) -> None:
    """``malformed_xref`` unless ``xref`` is the XID of another resource of the same type."""
    try:
        target = Xid.parse(xref)
    except XRegistryError:
        target = None
    if target is None or target.level != "resource" or (target.group_type, target.resource_type) != (gtype, rtype):
        raise XRegistryError("malformed_xref", rxid, xref=xref,
                             detail=f"xref must be the XID of a {rtype[:-1] if rtype.endswith('s') else rtype} "
                                    f"(/{gtype}/<id>/{rtype}/<id>)")
    if xref.lower() == rxid.lower():
        raise XRegistryError("malformed_xref", rxid, xref=xref, detail="a resource cannot reference itself")
