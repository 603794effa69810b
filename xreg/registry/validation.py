"""Validation of one entity: its attributes against the model, then the domain rules.

:func:`validate_entity` checks a group, version or meta entity: the model's definitions of its
level (:func:`entity_definitions`, checked by ``xreg.registry.checker``), its ids and ``xid``,
the group's ``constraints`` on versions, and the attribute rules of its domain
(``xreg.registry.rules``: ``core`` for every entity, ``messages``, ``endpoints``, ``schemas``).
:func:`validate_values` checks attribute values a request carries without applying them.
Every violation is collected; nothing stops at the first one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from xreg.errors import ValidationErrors, XRegistryError
from xreg.ids import id_problem, parse_xid
from xreg.model.registry_model import (
    COMMON_ATTRIBUTES,
    META_ATTRIBUTES,
    VERSION_ATTRIBUTES,
    AttributeDef,
    RegistryModel,
)
from xreg.registry import constraints
from xreg.registry.checker import Checker
from xreg.registry.rules import core, endpoints, messages, schemas


# -- entities -------------------------------------------------------------------------------
def _defs(raw: dict[str, dict[str, Any]]) -> dict[str, AttributeDef]:
    return {n: AttributeDef.from_json(n, d) for n, d in raw.items()}


_COMMON = _defs(COMMON_ATTRIBUTES)
# core/spec.md, "Version Entity": attributes beyond VERSION_ATTRIBUTES.
_VERSION = _defs({
    **VERSION_ATTRIBUTES,
    "format": {"type": "string"},
    "formatvalidated": {"type": "boolean", "readonly": True},
    "formatvalidatedreason": {"type": "string", "readonly": True},
    "compatibilityvalidated": {"type": "boolean", "readonly": True},
    "compatibilityvalidatedreason": {"type": "string", "readonly": True},
})
_META = _defs(META_ATTRIBUTES)
#: A Group instance's ``constraints`` (core/spec.md "constraints Attribute"): a map of
#: ``<RESOURCES>.<PATH>`` to ``default`` / ``enum`` / ``equals``.
_GROUP_CONSTRAINTS = AttributeDef("constraints", "map", item=AttributeDef("", "object", attributes={
    "default": AttributeDef("default", "any"), "enum": AttributeDef("enum", "array", item=AttributeDef("", "any")),
    "equals": AttributeDef("equals", "string")}))
LEVELS = ("group", "version", "meta")


def entity_definitions(
    level: str, *, model: RegistryModel, group_type: str, resource_type: str | None = None
) -> dict[str, AttributeDef]:
    """All attribute definitions of a ``group``, ``version`` or ``meta`` entity."""
    group = model.group(group_type)
    if group is None:
        raise XRegistryError("unknown_group_type", "/" + group_type, name=group_type)
    if level == "group":
        return {**_COMMON, group.id_attribute: AttributeDef(group.id_attribute, "string"),
                "constraints": _GROUP_CONSTRAINTS, **group.attributes}
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    resource = group.resources.get(resource_type or "")
    if resource is None:
        raise XRegistryError("unknown_resource_type", "/" + group_type, name=resource_type, group=group_type)
    rid = {resource.id_attribute: AttributeDef(resource.id_attribute, "string")}
    if level == "meta":
        return {**_COMMON, **_META, **rid, **resource.metaattributes}
    document: dict[str, AttributeDef] = {}
    if resource.hasdocument:  # core/spec.md: <RESOURCE>url, <RESOURCE>, <RESOURCE>base64
        s = resource.singular
        document = {f"{s}url": AttributeDef(f"{s}url", "url"), s: AttributeDef(s, "any"),
                    f"{s}base64": AttributeDef(f"{s}base64", "string")}
    return {**_COMMON, **_VERSION, **rid, **document, **resource.attributes}


def registry_definitions(model: RegistryModel) -> dict[str, AttributeDef]:
    """Attribute definitions of the registry entity (core/spec.md "Registry Entity")."""
    return {**_COMMON, "self": AttributeDef("self", "url", readonly=True),
            "registryid": AttributeDef("registryid", "string", required=True),
            "specversion": AttributeDef("specversion", "string"), **model.attributes}


def validate_entity(
    level: str,
    attrs: dict,
    *,
    model: RegistryModel,
    group_type: str,
    resource_type: str | None = None,
    subject: str,
    group_attrs: dict | None = None,
) -> None:
    """Validate one entity; raise :class:`ValidationErrors` listing every violation.

    ``level`` is ``group``, ``version`` or ``meta``; ``subject`` is the entity's XID;
    ``group_attrs`` are the owning group's attributes (for a message's envelope/protocol).
    """
    defs = dict(entity_definitions(level, model=model, group_type=group_type, resource_type=resource_type))
    defs["xid"] = AttributeDef("xid", "any", required=True)  # checked below: malformed_xid
    # ``self`` is REQUIRED "in API and document views" only (core/spec.md, Version and Meta
    # entities: "OPTIONAL/ignored in requests"); stored states may leave it to the views.
    defs["self"] = AttributeDef("self", "url", readonly=True)
    run = Checker(subject, model)
    run.check_object(attrs, defs, "", extensible="*" in defs, closed=model.closed)
    _check_ids(run, attrs, level, model, group_type, resource_type)
    core.entity_rules(run, attrs)
    if level == "group" and group_type == "endpoints":
        endpoints.group_rules(run, attrs)
    if level == "group" and group_type == "messagegroups":
        messages.group_rules(run, attrs)
    if level == "version":
        # core/model.md, groups.<STRING>.constraints: "The constraints MUST be applied to all
        # Versions of all Resources in the Group instances, and generate an error
        # (constraint_failure) if a violation is detected."
        in_force = constraints.in_force(model.group_def(group_type), group_attrs, resource_type or "")
        run.errors += constraints.violations(attrs, in_force, group_attrs, subject)
    if level == "version" and resource_type == "messages":
        messages.version_rules(run, attrs, group_attrs or {}, endpoint=group_type == "endpoints")
    if level == "version" and resource_type == "schemas":
        schemas.version_rules(run, attrs)
    if run.errors:
        raise ValidationErrors(run.errors)


def validate_values(
    attrs: dict, *, model: RegistryModel, group_type: str, resource_type: str, subject: str,
) -> None:
    """Validate the values of version attributes a request carries without them being applied —
    a new resource's default-version attributes next to the ``versions`` that win over them
    (core/spec.md, Resource Processing Algorithm, step 2). Each value present is checked as it
    would be on a version (types, nested definitions, non-empty strings, the
    ``<NAME>/<VERSION>`` forms); what is absent, and rules across attributes, are not: the
    attributes are not a version. Raises :class:`ValidationErrors` listing every violation."""
    defs = {n: replace(d, required=False) for n, d in entity_definitions(
        "version", model=model, group_type=group_type, resource_type=resource_type).items()}
    run = Checker(subject, model)
    run.check_object(attrs, defs, "", extensible="*" in defs, closed=model.closed)
    core.entity_rules(run, attrs)
    if resource_type == "messages":
        messages.value_rules(run, attrs)
    if run.errors:
        raise ValidationErrors(run.errors)


def _check_ids(run: Checker, attrs: dict, level: str, model: RegistryModel, group_type: str,
               resource_type: str | None) -> None:
    if level == "group":
        id_attrs = [model.group_def(group_type).id_attribute]
    else:
        id_attrs = [model.resource_def(group_type, resource_type or "").id_attribute]
    if level == "version":
        id_attrs.append("versionid")
    for name in id_attrs:  # core/spec.md, <SINGULAR>id: "Otherwise, an error (malformed_id)"
        value = attrs.get(name)
        if value is not None and id_problem(value):
            run.errors.append(XRegistryError("malformed_id", run.subject, id=value, path=name,
                                             detail=f'"{name}": {id_problem(value)}'))
    xid = attrs.get("xid")
    if xid is None:
        return
    try:  # core/spec.md, xid: "reference valid Group and Resource types. Otherwise ... malformed_xid"
        parts = parse_xid(xid, model, subject=run.subject)
    except XRegistryError as err:
        err.path = "xid"
        run.errors.append(err)
        return
    if (parts.level, parts.group_type, parts.resource_type) != (
        level, group_type, resource_type if level != "group" else None
    ):
        run.invalid("xid", f"must be the XID of this {level}, not {xid}")

