"""Model documents a client gives the registry (``modelsource``, core/model.md "Creating or
Updating the Registry Model"): their checks and the model built from them.

:func:`check_model_source` refuses, with ``model_error`` (or ``model_required_true`` /
``model_scalar_default``), a document that is not a model: unknown model-language attributes,
group and resource names that are not valid or not unique, unknown attribute types, aspects of
the wrong type, ``default`` values where the spec forbids them. :func:`model_of_source` is the
model a checked document defines; an empty document (or ``null``) defines a registry without
groups. A registry whose model was never set uses the built-in one
(:meth:`RegistryModel.default`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from gateway.errors import XRegistryError
from gateway.model.registry_model import ALL_TYPES, SCALAR_TYPES, RegistryModel

SUBJECT = "/modelsource"
#: The key of the registry entity's stored state that holds its modelsource (not an attribute
#: name, so never an attribute).
STORED_KEY = "@modelsource"

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: Longest plural of a group or resource type (the name of its collection).
MAX_PLURAL = 57
_ATTRIBUTE_NAME = re.compile(r"^([a-z_][a-z0-9_]{0,62}|\*)$")

REGISTRY_KEYS = frozenset({"$schema", "description", "documentation", "labels", "attributes", "groups"})
GROUP_KEYS = frozenset({"plural", "singular", "description", "icon", "labels", "modelversion",
                        "modelcompatiblewith", "attributes", "ximportresources", "constraints", "resources"})
RESOURCE_KEYS = frozenset({"plural", "singular", "description", "icon", "labels", "modelversion",
                           "modelcompatiblewith", "maxversions", "setversionid", "hasdocument", "versionmode",
                           "singleversionroot", "validateformat", "validatecompatibility", "strictvalidation",
                           "typemap", "attributes", "resourceattributes", "metaattributes"})
ATTRIBUTE_KEYS = frozenset({"name", "type", "target", "namecharset", "description", "enum", "strict",
                            "matchversions", "readonly", "immutable", "required", "default", "attributes",
                            "item", "ifvalues"})
ITEM_KEYS = frozenset({"type", "target", "namecharset", "attributes", "item"})
_BOOLEAN_ASPECTS = ("setversionid", "hasdocument", "singleversionroot", "validateformat", "validatecompatibility",
                    "strictvalidation")
#: The version modes this registry implements (capabilities ``versionmodes``).
VERSION_MODES = ("manual",)


def _error(detail: str) -> XRegistryError:
    return XRegistryError("model_error", SUBJECT, detail=detail)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _error(f"{where} must be an object")
    return value


def _unknown(doc: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    extra = sorted(k for k in doc if k not in allowed)
    if extra:
        raise _error(f"{where} has unknown model attributes: {', '.join(extra)}")


def _check_attributes(attrs: Any, where: str, *, nested: bool = False) -> None:
    """Attribute definitions: an entity's (``nested=False``: valid attribute names) or an
    object's (any non-empty key: objects may use an extended name character set)."""
    for name, definition in _object(attrs, where).items():
        if not name if nested else not _ATTRIBUTE_NAME.match(name):
            raise _error(f'"{name}" ({where}) is not a valid attribute name')
        _check_attribute(definition, f"{where}.{name}")


def _check_attribute(definition: Any, where: str, *, item: bool = False) -> None:
    d = _object(definition, where)
    _unknown(d, ITEM_KEYS if item else ATTRIBUTE_KEYS, where)
    kind = d.get("type")
    if kind not in ALL_TYPES:
        raise _error(f"{where}.type must be one of {', '.join(sorted(ALL_TYPES))}, not {kind!r}")
    for aspect in ("readonly", "immutable", "required", "strict", "matchversions"):
        if aspect in d and not isinstance(d[aspect], bool):
            raise _error(f"{where}.{aspect} must be a boolean")
    if "enum" in d and not isinstance(d["enum"], list):
        raise _error(f"{where}.enum must be an array of values")
    if d.get("default") is not None:
        if kind not in SCALAR_TYPES:
            raise XRegistryError("model_scalar_default", SUBJECT, name=where)
        if not d.get("required"):
            raise XRegistryError("model_required_true", SUBJECT, name=where)
    if kind in ("map", "array"):
        if "item" not in d:
            raise _error(f"{where} ({kind}) needs an item definition")
        _check_attribute(d["item"], f"{where}.item", item=True)
    elif "item" in d:
        raise _error(f"{where}.item is only allowed on maps and arrays")
    if "attributes" in d:
        if kind != "object":
            raise _error(f"{where}.attributes is only allowed on objects")
        _check_attributes(d["attributes"], f"{where}.attributes", nested=True)
    for value, spec in _object(d.get("ifvalues") or {}, f"{where}.ifvalues").items():
        sibling = _object(spec, f"{where}.ifvalues.{value}")
        _check_attributes(sibling.get("siblingattributes") or {}, f"{where}.ifvalues.{value}.siblingattributes",
                          nested=item)


def is_type_name(value: object) -> bool:
    """Whether ``value`` can be a group or resource type's plural (the name of its collection)."""
    return isinstance(value, str) and len(value) <= MAX_PLURAL and bool(_NAME.match(value))


def _check_names(kind: str, key: str, doc: dict[str, Any], taken: set[str], where: str) -> None:
    plural = doc.get("plural", key)
    singular = doc.get("singular")
    if plural != key:
        raise _error(f"{where}.plural ({plural!r}) must be the key of its definition ({key!r})")
    for what, name, limit in (("plural", plural, MAX_PLURAL), ("singular", singular, 63)):
        if not isinstance(name, str) or not _NAME.match(name) or len(name) > limit:
            raise _error(f"{where}.{what} must be a valid attribute name of at most {limit} characters")
    if plural == singular:
        raise _error(f"{where}: plural and singular must differ")
    for name in (str(plural), str(singular)):
        if name in taken:
            raise _error(f"{kind} name {name!r} ({where}) is used twice")
        taken.add(name)


def check_model_source(doc: Any) -> dict[str, Any]:
    """``doc`` when it is a model this registry can host (``None`` is ``{}``), else ``model_error``
    (or ``model_required_true`` / ``model_scalar_default``) naming the problem."""
    if doc is None:
        return {}
    doc = _object(doc, "the model")
    _unknown(doc, REGISTRY_KEYS, "the model")
    _check_attributes(doc.get("attributes") or {}, "attributes")
    groups = _object(doc.get("groups") or {}, "groups")
    group_names: set[str] = set()
    for gkey, gdoc in groups.items():
        where = f"groups.{gkey}"
        gdoc = _object(gdoc, where)
        _unknown(gdoc, GROUP_KEYS, where)
        _check_names("group", gkey, gdoc, group_names, where)
        _check_attributes(gdoc.get("attributes") or {}, f"{where}.attributes")
        resource_names: set[str] = set()
        resources = _object(gdoc.get("resources") or {}, f"{where}.resources")
        for rkey, rdoc in resources.items():
            rwhere = f"{where}.resources.{rkey}"
            rdoc = _object(rdoc, rwhere)
            _unknown(rdoc, RESOURCE_KEYS, rwhere)
            _check_names("resource", rkey, rdoc, resource_names, rwhere)
            maxv = rdoc.get("maxversions", 0)
            if not isinstance(maxv, int) or isinstance(maxv, bool) or maxv < 0:
                raise _error(f"{rwhere}.maxversions must be an unsigned integer")
            for aspect in _BOOLEAN_ASPECTS:
                if aspect in rdoc and not isinstance(rdoc[aspect], bool):
                    raise _error(f"{rwhere}.{aspect} must be a boolean")
            if rdoc.get("versionmode", "manual") not in VERSION_MODES:
                raise _error(f"{rwhere}.versionmode {rdoc['versionmode']!r} is not supported "
                             f"(supported: {', '.join(VERSION_MODES)})")
            for aspect in ("attributes", "resourceattributes", "metaattributes"):
                _check_attributes(rdoc.get(aspect) or {}, f"{rwhere}.{aspect}")
        for imported in gdoc.get("ximportresources") or []:
            parts = [p for p in str(imported).split("/") if p]
            source = _object(groups.get(parts[0]) or {}, "groups") if len(parts) == 2 else {}
            if parts[-1:] == [] or parts[-1] not in (source.get("resources") or {}):
                raise _error(f"{where}.ximportresources: {imported!r} names no resource type of this model")
    return doc


def model_of_source(doc: dict[str, Any] | None) -> RegistryModel:
    """The model a checked modelsource defines (closed: see ``RegistryModel.closed``)."""
    return replace(RegistryModel.from_json(doc or {}), closed=True)
