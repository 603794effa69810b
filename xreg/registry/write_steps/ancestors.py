"""Versions' ``ancestorid`` per the resource type's ``versionmode`` (core/model.md): assigned,
checked (no cycle, one root when ``singleversionroot``) and repaired after deletes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xreg.errors import XRegistryError, invalid
from xreg.model.registry_model import ANCESTOR_ID, ResourceDef
from xreg.registry.versionmodes import ORDERED_MODES, chained_ancestors, newest

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import EntityState, Unit


def set_ancestor(cs: Unit, state: EntityState, ancestor: str) -> None:
    """Give a version a new ``ancestorid``: "Any modification to the ancestorid attribute MUST
    result in the owning Version's epoch and modifiedat attributes be updated appropriately,
    regardless of whether the change [...] was explicitly part of a request or indirectly
    changed due to changes to other Versions" (core/spec.md)."""
    if state.body.get(ANCESTOR_ID) == ancestor:
        return
    doc = {**state.body, ANCESTOR_ID: ancestor}
    if state.stored_rev is not None and state.xid.lower() not in cs.bumped:
        cs.stamp(doc, {}, state.body)
    cs.put_state(state, state.kind, state.ctype, doc)


def assign_ancestors(cs: Unit, versions: list[EntityState], rxid: str, rdef: ResourceDef) -> None:
    """``ancestorid`` per the versionmode (core/model.md): in ``manual`` mode for versions
    that lack one, in the ordered modes for all; then a cycle check and, when the resource
    type has ``singleversionroot``, the one-root rule."""
    by_id = {s.id: s for s in versions}
    for s in versions:  # checked before any is compared or ordered by it
        if s.body.get(ANCESTOR_ID) and not isinstance(s.body[ANCESTOR_ID], str):
            raise invalid(s.xid, ANCESTOR_ID, "must be a string")
    if rdef.versionmode in ORDERED_MODES:
        for vid, ancestor in chained_ancestors(versions, rdef.versionmode).items():
            set_ancestor(cs, by_id[vid], ancestor)
        return
    fresh = sorted((s for s in versions if not s.body.get(ANCESTOR_ID)), key=lambda s: s.xid.lower())
    settled = [s for s in versions if s.body.get(ANCESTOR_ID)]
    for s in fresh:
        vid = s.id
        s.body[ANCESTOR_ID] = newest(settled, "manual") if settled else vid
        settled.append(s)
    for s in versions:
        anc = s.body.get(ANCESTOR_ID)
        vid = s.id
        if anc == "request":
            s.body[ANCESTOR_ID] = anc = vid
        if not isinstance(anc, str):  # checked here: it is used before the entity's validation
            raise invalid(s.xid, ANCESTOR_ID, "must be a string")
        if anc not in by_id:
            raise XRegistryError("unknown_id", s.xid, singular="version", id=anc,
                                 detail=f"ancestorid {anc!r} names no version of {rxid}")
    for s in versions:  # cycles: walking ancestors must reach a root
        seen: list[str] = []
        cur = s.id
        while True:
            nxt = by_id[cur].body[ANCESTOR_ID]
            if nxt == cur:
                break
            if cur in seen:
                raise XRegistryError("ancestor_circular_reference", rxid, list=", ".join(seen))
            seen.append(cur)
            cur = nxt
    roots = sorted(s.id for s in versions if s.body.get(ANCESTOR_ID) == s.id)
    if rdef.singleversionroot and len(roots) > 1:
        # core/model.md, singleversionroot: "the server MUST generate an error
        # (multiple_roots) if any request results in a state where more than one Version of a
        # Resource is a root"
        raise XRegistryError("multiple_roots", rxid, plural=rdef.plural,
                             detail=f"versions {', '.join(roots)} would all be roots")


def repair_ancestors(cs: Unit, versions: list[EntityState], rdef: ResourceDef) -> None:
    """Ancestors after versions were deleted (core/model.md, "Deleted Ancestor"): in
    ``manual`` mode an orphan becomes a root, in the ordered modes the chain is recomputed."""
    if rdef.versionmode in ORDERED_MODES:
        by_id = {s.id: s for s in versions}
        for vid, ancestor in chained_ancestors(versions, rdef.versionmode).items():
            set_ancestor(cs, by_id[vid], ancestor)
        return
    ids = {s.id for s in versions}
    for s in versions:
        if s.body.get(ANCESTOR_ID) not in ids:
            set_ancestor(cs, s, s.id)
