"""Writes of resources and their versions: core/spec.md's resource processing algorithm
(:func:`put_resource`), one version (:func:`write_version`), a ``versions`` map, a new version,
the ``meta`` entity, the ``setdefaultversionid`` flag and a document from raw bytes. Each write
ends by settling the resource (``xreg.registry.write_steps.settle``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg.errors import XRegistryError
from xreg.ids import check_id
from xreg.model.registry_model import ANCESTOR_ID, ResourceDef
from xreg.registry import constraints
from xreg.registry.write_steps.attributes import RESOURCE_VIEW_ATTRIBUTES, keep_readonly, merge, strip, user_view
from xreg.registry.write_steps.checks import check_ignored
from xreg.registry.write_steps.documents import (
    alias_document_link,
    check_one_document,
    document_attributes,
    drop_other_documents,
)
from xreg.registry.write_steps.groups import implicit_group
from xreg.registry.write_steps.ids import (
    check_case,
    check_default_version_id,
    check_same_id,
    check_version_id,
    next_version_id,
)
from xreg.registry.write_steps.settle import settle_resource
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import EntityState, Unit


async def put_resource(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool = False,
) -> str:
    """Create or update a resource from its serialization (default version attributes,
    optional ``meta`` and ``versions``), following core/spec.md's resource processing
    algorithm."""
    rdef = cs.resource_def(gtype, rtype)
    rxid = str(Xid(gtype, gid, rtype, rid))
    check_id(rid, subject=rxid, attribute=rdef.id_attribute)
    check_same_id(body, rdef.id_attribute, rid, rxid)
    check_version_id(body, rxid)
    await implicit_group(cs, gtype, gid)
    rstate = await cs.state(rxid)
    check_case(rstate, rxid)
    vctype = f"{gtype}/{rtype}/versions"
    existing_versions = await cs.version_states(rxid, vctype)
    meta_in = body.get("meta")
    if meta_in is not None and not isinstance(meta_in, dict):
        raise XRegistryError("invalid_attribute", rxid, path="meta", name="meta", detail="meta must be an object")
    versions_in = body.get("versions")
    if versions_in is not None and not isinstance(versions_in, dict):
        raise XRegistryError("invalid_attribute", rxid, path="versions", name="versions",
                             detail="versions must be a map of versions")
    meta_old = (rstate.doc or {}).get("meta")
    xref = (meta_in or {}).get("xref", (meta_old or {}).get("xref") if patch else None)
    default_attrs = strip(body, RESOURCE_VIEW_ATTRIBUTES | {rdef.id_attribute})
    for name in ("epoch", "createdat", "modifiedat"):  # a resource's own are its default version's
        if body.get(name) is not None:
            default_attrs[name] = body[name]

    if xref:
        if default_attrs.keys() - {"versionid", "epoch"} or versions_in:
            raise XRegistryError("extra_xref_attribute", rxid, name=next(iter(default_attrs or versions_in or {})))
        for vstate in existing_versions:
            cs.put_state(vstate, "version", vctype, None)
    else:
        # 1. versions in the request
        requested = versions_in or {}
        for vid in sorted(requested, key=str.lower):
            vbody = requested[vid]
            if not isinstance(vbody, dict):
                raise XRegistryError("invalid_attribute", str(Xid(gtype, gid, rtype, rid, vid)), path="versions",
                                     name="versions", detail="each version must be an object")
            await write_version(cs, gtype, gid, rtype, rid, vid, vbody, rdef, patch=patch)
        # 2. default version attributes, unless that version was in the request
        target = default_attrs.get("versionid")
        if target is None:
            if rstate.doc is not None:
                target = (meta_old or {}).get("defaultversionid")
            elif (meta_in or {}).get("defaultversionid"):
                check_default_version_id(meta_in or {}, str(Xid.parse(rxid).meta_of()))
                target = (meta_in or {})["defaultversionid"]
            elif not versions_in:
                target = await next_version_id(cs, rxid, vctype)
        # a resource without versions (new, or an xref turned back into a normal resource)
        # gets its default version from the resource-level attributes
        needs_version = not existing_versions and not versions_in
        if target is None and needs_version:
            target = await next_version_id(cs, rxid, vctype)
        # a PATCH naming nothing is a touch of the default version (core/spec.md, epoch: "even
        # if no attributes were explicitly updated, such as a "patch" type of operation when no
        # attributes are specified"); one naming only ``meta`` updates the meta alone
        wants_update = (needs_version or rstate.doc is None or not patch or meta_in is None
                        or bool(default_attrs.keys() - {"versionid", "epoch"}))
        if target is not None and target not in (versions_in or {}) and wants_update:
            # the request addressed the resource: its default version's errors name the resource
            cs.reported_as[str(Xid(gtype, gid, rtype, rid, target)).lower()] = rxid
            await write_version(cs, gtype, gid, rtype, rid, target, default_attrs, rdef, patch=patch)
        else:
            # step 2 ignores them (the versions in the request win), but a request is refused
            # for an invalid value wherever it is
            check_ignored(cs, default_attrs, gtype, rtype, rxid)
    await settle_resource(cs, gtype, gid, rtype, rid, rdef, meta_in, patch=patch)
    return rxid


async def write_version(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, vid: str, body: dict[str, Any], rdef: ResourceDef,
    *, patch: bool,
) -> None:
    """Write one version's attributes (ids, documents, read-only attributes, constraint defaults)."""
    vxid = str(Xid(gtype, gid, rtype, rid, vid))
    check_id(vid, subject=vxid, attribute="versionid")
    check_version_id(body, vxid)
    check_same_id(body, "versionid", vid, vxid)
    if body.get(rdef.id_attribute) not in (None, rid):
        raise XRegistryError("mismatched_id", vxid, singular=rdef.singular, expected_id=rid,
                             invalid_id=body.get(rdef.id_attribute))
    state = await cs.state(vxid)
    check_case(state, vxid)
    cs.check_epoch(vxid, body.get("epoch"), state.doc)
    request = strip(body, RESOURCE_VIEW_ATTRIBUTES | {rdef.id_attribute})
    alias_document_link(request, rdef)
    check_one_document(request, rdef, vxid)
    if rdef.hasdocument and request.get(rdef.singular) is not None and "contenttype" not in request \
            and (not patch or not (state.doc or {}).get("contenttype")):
        # a document given inline in JSON metadata is JSON: its media type is the request's
        # (core/spec.md, "<RESOURCE>* Attribute Processing")
        request["contenttype"] = "application/json"
    base = user_view(state.doc or {}) if patch else {}
    if not patch and state.doc is not None and ANCESTOR_ID not in request:
        request[ANCESTOR_ID] = state.doc.get(ANCESTOR_ID)
    user = merge(base, strip(request, {"versionid"}), patch)
    keep_readonly(user, rdef.attributes, state.doc)
    if rdef.hasdocument:
        drop_other_documents(user, request, rdef)
    group = cs.states.get(Xid(gtype, gid).key)
    constraints.apply_defaults(user, constraints.in_force(cs.group_def(gtype), group.doc if group else None,
                                                          rtype))
    ids = {rdef.id_attribute: rid, "versionid": vid, "xid": vxid}
    cs.finish(state, "version", f"{gtype}/{rtype}/versions", user, body, ids)


async def open_resource(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, *, create: bool,
) -> tuple[ResourceDef, EntityState]:
    """Checks shared by the single-version / meta writes; the resource's state, its versions loaded.

    ``create``: the resource (and its group) may be created implicitly; otherwise it must exist.
    A cross-reference resource has no versions of its own: writing one is refused."""
    rdef = cs.resource_def(gtype, rtype)
    rxid = str(Xid(gtype, gid, rtype, rid))
    check_id(rid, subject=rxid, attribute=rdef.id_attribute)
    rstate = await cs.state(rxid)
    check_case(rstate, rxid)
    if rstate.doc is None:
        if not create:
            raise XRegistryError("not_found", rxid)
        await implicit_group(cs, gtype, gid)
    elif create and (rstate.doc.get("meta") or {}).get("xref"):
        raise XRegistryError("bad_request", rxid, detail="the resource is a cross-reference (meta.xref): "
                             "write to its target, or remove the xref first")
    await cs.version_states(rxid, f"{gtype}/{rtype}/versions")
    return rdef, rstate


async def put_meta(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, attrs: dict[str, Any], *, patch: bool,
) -> None:
    """Replace (``patch=False``) or patch the ``meta`` entity of a resource (created, with its
    group, when it does not exist: a first version unless the meta sets ``xref``).

    Removing ``xref`` turns a cross-reference back into a normal resource with a new default
    version; setting it deletes the resource's versions."""
    rdef = cs.resource_def(gtype, rtype)
    rxid = str(Xid(gtype, gid, rtype, rid))
    check_id(rid, subject=rxid, attribute=rdef.id_attribute)
    rstate = await cs.state(rxid)
    check_case(rstate, rxid)
    if rstate.doc is None:  # missing parents are created implicitly (core/spec.md)
        await implicit_group(cs, gtype, gid)
    if not isinstance(attrs, dict):
        raise XRegistryError("invalid_attribute", str(Xid.parse(rxid).meta_of()), path="meta", name="meta",
                             detail="meta must be an object")
    check_default_version_id(attrs, str(Xid.parse(rxid).meta_of()))
    old_xref = ((rstate.doc or {}).get("meta") or {}).get("xref")
    new_xref = attrs.get("xref", old_xref if patch else None)
    vctype = f"{gtype}/{rtype}/versions"
    if new_xref:
        for vstate in await cs.version_states(rxid, vctype):
            cs.put_state(vstate, "version", vctype, None)
    elif not await cs.version_states(rxid, vctype):
        vid = attrs.get("defaultversionid") or await next_version_id(cs, rxid, vctype)
        await write_version(cs, gtype, gid, rtype, rid, vid, {}, rdef, patch=False)
    await settle_resource(cs, gtype, gid, rtype, rid, rdef, attrs, patch=patch)


async def put_versions(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, versions: dict[str, Any], *, patch: bool,
) -> None:
    """Create or update several versions of one resource (a ``versions`` map), then settle the
    resource: ancestors, default version, ``maxversions``."""
    rdef, rstate = await open_resource(cs, gtype, gid, rtype, rid, create=True)
    if not versions and rstate.doc is None:
        raise XRegistryError("bad_request", rstate.xid, detail="a resource needs at least one version")
    for vid in sorted(versions, key=str.lower):
        vbody = versions[vid]
        if not isinstance(vbody, dict):
            raise XRegistryError("bad_request", str(Xid.parse(rstate.xid).version(vid)),
                                 detail="a version must be an object")
        await write_version(cs, gtype, gid, rtype, rid, vid, vbody, rdef, patch=patch)
    await settle_resource(cs, gtype, gid, rtype, rid, rdef, None, patch=True)


async def post_version(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool = False,
) -> str:
    """Create a version (a new ``versionid`` unless ``body`` names one; an existing one is
    updated) and return its id. Resource-level attributes in ``body`` are ignored."""
    rdef, rstate = await open_resource(cs, gtype, gid, rtype, rid, create=True)
    check_version_id(body, rstate.xid)
    vid = body.get("versionid")
    if vid is None:
        vid = await next_version_id(cs, rstate.xid, f"{gtype}/{rtype}/versions")
    elif not rdef.setversionid:
        raise XRegistryError("versionid_not_allowed", rstate.xid, plural=rtype)
    check_id(vid, subject=str(Xid.parse(rstate.xid).version(vid)), attribute="versionid")
    await put_versions(cs, gtype, gid, rtype, rid, {vid: body}, patch=patch)
    return vid


async def set_default_version(cs: Unit, gtype: str, gid: str, rtype: str, rid: str, vid: str | None) -> None:
    """The ``setdefaultversionid`` flag: make ``vid`` the sticky default version, or with
    ``None`` go back to "default = newest"."""
    rdef, rstate = await open_resource(cs, gtype, gid, rtype, rid, create=False)
    if vid is None:
        meta: dict[str, Any] = {"defaultversionsticky": False}
    else:
        ids = {s.id for s in await cs.version_states(rstate.xid, f"{gtype}/{rtype}/versions")}
        if vid not in ids:
            raise XRegistryError("unknown_id", rstate.xid, singular="version", id=vid,
                                 detail=f"setdefaultversionid names no version of {rstate.xid}")
        meta = {"defaultversionid": vid, "defaultversionsticky": True}
    await settle_resource(cs, gtype, gid, rtype, rid, rdef, meta, patch=True)


async def put_document(
    cs: Unit, gtype: str, gid: str, rtype: str, rid: str, vid: str | None, attrs: dict[str, Any],
    content: bytes, content_type: str | None, *, new_version: bool = False,
) -> str | None:
    """Write a version's document from raw bytes, with metadata ``attrs`` patched in.

    The target is version ``vid``, or a new version (``new_version``; ``attrs`` may name
    its ``versionid``), or else the resource's default version. JSON content is kept as the
    ``<RESOURCE>`` attribute, anything else as ``<RESOURCE>base64``; a ``<RESOURCE>uri`` in
    ``attrs`` (alias ``<RESOURCE>url``) links an external document and needs empty content.
    ``contenttype`` becomes ``content_type`` (removed when ``None``). Returns the id of the
    version created by ``new_version``."""
    rdef = cs.resource_def(gtype, rtype)
    subject = str(Xid(gtype, gid, rtype, rid, vid or None))
    if not rdef.hasdocument:
        raise XRegistryError("bad_request", subject, detail=f"{rtype} have no documents (hasdocument is false)")
    body = {**attrs, **document_attributes(rdef, content, content_type, attrs, subject=subject)}
    if new_version:
        return await post_version(cs, gtype, gid, rtype, rid, body, patch=True)
    if vid is not None:
        await put_versions(cs, gtype, gid, rtype, rid, {vid: body}, patch=True)
    else:
        await put_resource(cs, gtype, gid, rtype, rid, body, patch=True)
    return None
