"""Writes of groups: create or update one (its own attributes), and the implicit creation of
a missing group under a resource being written (core/spec.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg.ids import check_id
from xreg.registry.write_steps.attributes import collection_attrs, keep_readonly, merge, strip, user_view
from xreg.registry.write_steps.checks import validate
from xreg.registry.write_steps.group_constraints import recheck_constraints
from xreg.registry.write_steps.ids import check_case, check_same_id
from xreg.registry.write_steps.registry_entity import implicit_registry
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import Unit


async def put_group(cs: Unit, gtype: str, gid: str, attrs: dict[str, Any], *, patch: bool = False) -> str:
    """Create or update a group (its own attributes; nested collections are not touched)."""
    gdef = cs.group_def(gtype)
    xid = str(Xid(gtype, gid))
    check_id(gid, subject=xid, attribute=gdef.id_attribute)
    check_same_id(attrs, gdef.id_attribute, gid, xid)
    state = await cs.state(xid)
    check_case(state, xid)
    cs.check_epoch(xid, attrs.get("epoch"), state.doc)
    existed = state.stored_rev is not None and state.doc is not None
    request = strip(attrs, set(gdef.resources) | collection_attrs(gdef.resources))
    base = user_view(state.doc or {}) if patch else {}
    user = merge(base, strip(request, {gdef.id_attribute}), patch)
    keep_readonly(user, gdef.attributes, state.doc)
    wrote = cs.finish(state, "group", gtype, user, attrs, {gdef.id_attribute: gid, "xid": xid})
    if wrote:
        validate(cs, "group", state, gtype)
        if existed:
            await recheck_constraints(cs, gdef, state)
    await implicit_registry(cs)
    return xid


async def implicit_group(cs: Unit, gtype: str, gid: str) -> None:
    """Create a missing group under a resource being written (core/spec.md)."""
    state = await cs.state(str(Xid(gtype, gid)))
    if state.doc is None:
        await put_group(cs, gtype, gid, {})
