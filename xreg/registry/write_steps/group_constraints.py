"""Group ``constraints`` across entities (core/model.md, ``groups.<STRING>.constraints``): the
stored versions of an updated group, and the versions a cross-reference (``meta.xref``) brings
under another group's constraints. Each entity's own constraints are checked with its
validation (``xreg.registry.validation``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xreg.model.registry_model import GroupDef
from xreg.registry import constraints
from xreg.registry.write_steps.unit import EntityState
from xreg.storage.records import Query
from xreg.storage.semantics import Condition, Cursor
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import Unit


async def recheck_constraints(cs: Unit, gdef: GroupDef, state: EntityState) -> None:
    """The stored Versions of an updated Group against its constraints (its own
    ``constraints`` or an ``equals``-named attribute may have changed): core/model.md "The
    constraints MUST be applied to all Versions of all Resources in the Group instances"."""
    for rtype in gdef.resources:
        in_force = constraints.in_force(gdef, state.doc, rtype)
        if not any(c.enum or c.equals for c in in_force):
            continue
        key = state.xid.lower()
        page = await cs.store.list(Query(ctype=f"{gdef.plural}/{rtype}/versions", after=Cursor(key + "/"),
                                           before=Cursor(key + "0")))
        for rec in page.items:
            if rec.key.startswith(key + "/") and rec.key not in cs.dirty:
                cs.errors += constraints.violations(rec.doc, in_force, state.doc, rec.xid)
        # and the Versions its cross-references show (core/model.md: xref'd Resources "MUST" adhere)
        sources = await cs.store.list(Query(ctype=f"{gdef.plural}/{rtype}", parent=state.xid,
                                              any_of=((Condition(("meta", "xref"), "exists"),),)))
        for source in sources.items:
            target = str((source.doc.get("meta") or {}).get("xref") or "").lower()
            if target.count("/") != 4:
                continue
            versions = await cs.store.list(Query(ctype=f"{target.split('/')[1]}/{rtype}/versions", parent=target))
            for rec in versions.items:
                cs.errors += constraints.violations(rec.doc, in_force, state.doc, rec.xid)


async def check_xref_constraints(cs: Unit) -> None:
    """core/model.md: "The enum and equals constraints, if specified, MUST be adhered to by
    the [xref'd] Resource. Note that this includes changes to the Resource in its original
    location that would then violate any of the Groups' constraints that xref that
    Resource" (``default`` is not applied: the source is a reference). The Versions written
    here, of Resources some cross-reference names, against the Groups of those sources;
    a source written here (its ``xref`` set or changed) against all its target's Versions.
    One store query per resource collection type involved, none when nothing is involved."""
    written: dict[str, list[EntityState]] = {}  # target resource key -> its Versions written here
    ctypes: set[str] = set()
    for key, what in cs.dirty.items():
        state = cs.states[key]
        if what == "deleted" or state.doc is None:
            continue
        if state.kind == "version":
            written.setdefault(key.rsplit("/", 2)[0], []).append(state)
        elif state.kind == "resource" and (state.doc.get("meta") or {}).get("xref"):
            written.setdefault("", [])
        else:
            continue
        rtype = state.ctype.split("/")[1]
        ctypes |= {f"{g}/{rtype}" for g, gdef in cs.model.groups.items() if rtype in gdef.resources}
    sources: dict[str, EntityState] = {}
    for ctype in sorted(ctypes):
        page = await cs.store.list(Query(ctype=ctype, any_of=((Condition(("meta", "xref"), "exists"),),)))
        for rec in page.items:
            sources[rec.key] = cs.states.get(rec.key) or EntityState(rec.xid, rec.kind, rec.ctype, rec.doc,
                                                                     rec.revision)
    sources |= {k: st for k, st in cs.states.items()
                if st.kind == "resource" and k in cs.dirty and (st.doc or {}).get("meta", {}).get("xref")}
    for key, source in sorted(sources.items()):
        xref = str(((source.doc or {}).get("meta") or {}).get("xref") or "").lower()
        if not xref:
            continue
        if key in cs.dirty:  # a new or changed reference: every Version of its target
            page = await cs.store.list(Query(ctype=f"{xref.split('/')[1]}/{xref.split('/')[3]}/versions",
                                               parent=xref))
            versions = [cs.states.get(r.key) or EntityState(r.xid, r.kind, r.ctype, r.doc, r.revision)
                        for r in page.items]
            versions += [v for v in written.get(xref, ()) if v.xid.lower() not in {r.key for r in page.items}]
        else:
            versions = written.get(xref, [])
        if not versions:
            continue
        parts = Xid.parse(source.xid)
        group = await cs.state(str(parts.group))
        in_force = [c for c in constraints.in_force(cs.group_def(parts.group_type or ""), group.doc,
                                                    parts.resource_type or "") if c.enum or c.equals]
        for version in versions:
            if in_force and version.doc is not None:
                cs.errors += constraints.violations(version.doc, in_force, group.doc, version.xid)
