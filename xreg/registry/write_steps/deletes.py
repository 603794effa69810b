"""Deletes: an entity and everything below it; a version's resource settled afterwards."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg.errors import XRegistryError
from xreg.registry.write_steps.ancestors import repair_ancestors
from xreg.registry.write_steps.settle import settle_resource
from xreg.storage.records import Query
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import EntityState, Unit


async def delete(cs: Unit, xid: str, *, epoch: Any = None) -> None:
    """Delete an entity and everything below it."""
    state = await cs.state(xid)
    if state.doc is None or state.xid != xid:
        raise XRegistryError("not_found", xid)
    if state.kind == "registry":
        raise XRegistryError("action_not_supported", xid, action="DELETE")
    check = state.doc.get("meta", state.doc) if state.kind == "resource" else state.doc
    cs.check_epoch(xid, epoch, check)
    for ctype in descendant_ctypes(cs, state):
        page = await cs.store.list(Query(ctype=ctype, parent=xid))
        for rec in page.items:
            cs.put_state(cs.load_record(rec.xid, rec), rec.kind, rec.ctype, None)
    cs.put_state(state, state.kind, state.ctype, None)
    if state.kind == "version":
        vxid = Xid.parse(xid)
        gtype, gid, rtype, rid, _ = vxid.parts
        rdef = cs.resource_def(gtype, rtype)
        rxid = str(vxid.resource)
        remaining = await cs.version_states(rxid, state.ctype)
        if not remaining:
            raise XRegistryError("bad_request", xid,
                                 detail="the last version of a resource cannot be deleted; delete the resource")
        rstate = await cs.state(rxid)
        meta = (rstate.doc or {}).get("meta") or {}
        keep_sticky = meta.get("defaultversionsticky") and meta.get("defaultversionid") != vxid.version_id
        repair_ancestors(cs, remaining, rdef)
        await settle_resource(cs, gtype, gid, rtype, rid, rdef,
                                    {"defaultversionsticky": bool(keep_sticky),
                                     **({"defaultversionid": meta.get("defaultversionid")} if keep_sticky else {})},
                                    patch=True)


def descendant_ctypes(cs: Unit, state: EntityState) -> list[str]:
    """The collection types below an entity (versions before their resources)."""
    if state.kind == "group":
        gdef = cs.group_def(state.ctype)
        return [c for r in gdef.resources for c in (f"{state.ctype}/{r}/versions", f"{state.ctype}/{r}")]
    if state.kind == "resource":
        return [f"{state.ctype}/versions"]
    return []
