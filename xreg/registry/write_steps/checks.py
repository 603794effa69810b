"""Validation of the entities a changeset wrote (``xreg.registry.validation``): each group,
version and meta, the values of default-version attributes a request carries without applying,
``matchversions`` across a resource's versions, and the documents' format and compatibility
(``xreg.registry.schema_checks``). Errors are collected on the changeset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg.errors import ValidationErrors, XRegistryError
from xreg.model.registry_model import ResourceDef
from xreg.registry.schema_checks import check_resource
from xreg.registry.validation import validate_entity, validate_values
from xreg.registry.write_steps.attributes import strip
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import EntityState, Unit


def validate(cs: Unit, level: str, state: EntityState, gtype: str, rtype: str | None = None) -> None:
    """Validate a written group or version; its errors are the changeset's."""
    group_attrs = None
    if rtype is not None:
        gstate = cs.states.get(Xid.parse(state.xid).group.key)
        group_attrs = gstate.doc if gstate else None
    try:
        validate_entity(level, state.body, model=cs.model, group_type=gtype, resource_type=rtype,
                        subject=cs.reported_as.get(state.xid.lower(), state.xid), group_attrs=group_attrs)
    except ValidationErrors as errs:
        cs.errors.extend(errs.errors)
    except XRegistryError as err:
        cs.errors.append(err)


def validate_meta(cs: Unit, rstate: EntityState, gtype: str, rtype: str) -> None:
    """Validate a written resource's ``meta``; its errors are the changeset's."""
    meta = rstate.body["meta"]
    try:
        validate_entity("meta", meta, model=cs.model, group_type=gtype, resource_type=rtype,
                        subject=meta["xid"])
    except ValidationErrors as errs:
        cs.errors.extend(errs.errors)
    except XRegistryError as err:
        cs.errors.append(err)


def check_ignored(cs: Unit, attrs: dict[str, Any], gtype: str, rtype: str, rxid: str) -> None:
    """Check the values of default-version attributes that are not applied (see
    :func:`~xreg.registry.validation.validate_values`); violations are this changeset's errors."""
    try:
        validate_values(strip(attrs, {"versionid", "epoch"}), model=cs.model, group_type=gtype,
                        resource_type=rtype, subject=rxid)
    except ValidationErrors as errs:
        cs.errors.extend(errs.errors)


def check_matchversions(rdef: ResourceDef, versions: list[EntityState], rxid: str, dirty: dict[str, str]) -> None:
    """core/model.md ``matchversions``: "all Versions of a Resource instance MUST have the same
    value for this attribute (or MUST be missing from all Versions). If an inconsistency is found
    then an error (mismatched_version_attribute) MUST be generated" — checked when a write
    touched a Version of the Resource, for models given through ``modelsource``: the built-in
    schema model marks ``format`` so, while real schema registries (schemastore.org's) hold
    Versions of one schema in several formats; there it is not enforced."""
    if not any(s.xid.lower() in dirty for s in versions):
        return
    for name, defn in rdef.attributes.items():
        if defn.matchversions and len({repr(s.body.get(name)) for s in versions}) > 1:
            raise XRegistryError("mismatched_version_attribute", rxid, name=name, path=name,
                                 detail=f"every version of {rxid} must have the same {name}")


async def check_documents(
    cs: Unit, rdef: ResourceDef, versions: list[EntityState], meta_old: dict[str, Any],
    meta_req: dict[str, Any], *, patch: bool,
) -> None:
    """Format and compatibility checks of the written versions (all of them when the
    resource's ``meta.compatibility`` changes); see ``xreg.registry.schema_checks``."""
    old_mode = meta_old.get("compatibility")
    mode = meta_req.get("compatibility", old_mode if patch else None)
    written = [s for s in versions if s.xid.lower() in cs.dirty]
    checked = versions if (mode or "none") != (old_mode or "none") else written
    cs.errors.extend(await check_resource(cs, rdef, checked, mode))
    for state in checked:
        if state.xid.lower() not in cs.dirty and state.doc is not None:
            cs.put_state(state, state.kind, state.ctype, state.doc)  # its recorded outcome changed
