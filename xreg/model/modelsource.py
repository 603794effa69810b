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

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from xreg.errors import XRegistryError
from xreg.model.registry_model import (
    ALL_TYPES,
    COMMON_ATTRIBUTES,
    META_ATTRIBUTES,
    ORDERED_VERSION_MODES,
    SCALAR_TYPES,
    VERSION_ATTRIBUTES,
    VERSION_MODES,
    RegistryModel,
)

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


@dataclass(frozen=True)
class ModelLimits:
    """Bounds of a model document (``XREG_MODEL_MAX_*``): everything derived from a model (its
    OpenAPI description, GraphQL schema, validation tables) grows with it, so a model beyond them
    is refused (``model_error``). The built-in model stays well inside the defaults."""

    max_bytes: int = 512 * 1024
    max_groups: int = 64
    max_resources: int = 128
    max_attributes: int = 4096


def _count_attributes(attrs: Any) -> int:
    """Attribute definitions in ``attrs`` (nested ``attributes``, ``item`` and ``ifvalues``
    siblings included), without recursion."""
    count, maps, definitions = 0, [attrs], list[Any]()
    while maps or definitions:
        if definitions:
            d = definitions.pop()
            if not isinstance(d, dict):
                continue
            maps.append(d.get("attributes"))
            definitions.append(d.get("item"))
            ifvalues = d.get("ifvalues")
            maps += [spec.get("siblingattributes") for spec in ifvalues.values()
                     if isinstance(spec, dict)] if isinstance(ifvalues, dict) else []
            continue
        node = maps.pop()
        if isinstance(node, dict):
            count += len(node)
            definitions += node.values()
    return count


def check_model_bounds(doc: dict[str, Any], limits: ModelLimits) -> None:
    """``model_error`` when ``doc`` (a model document) exceeds ``limits``."""
    size = len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if size > limits.max_bytes:
        raise _error(f"the model is {size} bytes long; at most {limits.max_bytes} are accepted (XREG_MODEL_MAX_BYTES)")
    groups: dict[str, Any] = doc["groups"] if isinstance(doc.get("groups"), dict) else {}
    if len(groups) > limits.max_groups:
        raise _error(f"the model has {len(groups)} group types; at most {limits.max_groups} are accepted "
                     "(XREG_MODEL_MAX_GROUPS)")
    resources = [r for g in groups.values() if isinstance(g, dict) and isinstance(g.get("resources"), dict)
                 for r in g["resources"].values()]
    if len(resources) > limits.max_resources:
        raise _error(f"the model has {len(resources)} resource types; at most {limits.max_resources} are accepted "
                     "(XREG_MODEL_MAX_RESOURCES)")
    holders = [doc, *(g for g in groups.values() if isinstance(g, dict))]
    attributes = sum(_count_attributes(h.get("attributes")) for h in holders)
    attributes += sum(_count_attributes(r.get(aspect)) for r in resources if isinstance(r, dict)
                      for aspect in ("attributes", "resourceattributes", "metaattributes"))
    if attributes > limits.max_attributes:
        raise _error(f"the model defines {attributes} attributes; at most {limits.max_attributes} are accepted "
                     "(XREG_MODEL_MAX_ATTRIBUTES)")


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


#: Attributes core/spec.md defines (``immutable`` is for them only).
_SPEC_DEFINED = frozenset({*COMMON_ATTRIBUTES, *VERSION_ATTRIBUTES, *META_ATTRIBUTES, "specversion", "registryid"})


def _check_immutable(attrs: Any, where: str, id_attribute: str | None = None) -> None:
    """core/model.md ``immutable``: "This MUST ONLY be used for server-controlled
    specification-defined attributes, such as specversion and <SINGULAR>id, and MUST NOT be used
    for extension attributes." (top-level definitions)."""
    for name, definition in (attrs or {}).items() if isinstance(attrs, dict) else ():
        if isinstance(definition, dict) and definition.get("immutable") and name not in _SPEC_DEFINED \
                and name != id_attribute:
            raise _error(f"{where}.{name}.immutable may only be true on attributes the specification defines")


def _check_matchversions(rdoc: dict[str, Any], where: str) -> None:
    """core/model.md ``matchversions``: "This aspect MUST only be true for attribute definitions
    that: Are within a Resource type's versioned attributes section. Are for scalar typed
    attributes." (checked at the top level of each section)."""
    for aspect in ("attributes", "resourceattributes", "metaattributes"):
        for name, definition in (rdoc.get(aspect) or {}).items():
            if not (isinstance(definition, dict) and definition.get("matchversions")):
                continue
            if aspect != "attributes" or name == "*" or definition.get("type") not in SCALAR_TYPES:
                raise _error(f"{where}.{aspect}.{name}.matchversions may only be true on a statically defined "
                             "scalar attribute of the versions")


_CONSTRAINT_ASPECTS = frozenset({"default", "enum", "equals"})


def _static_definition(defs: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    """The attribute definition ``path`` names through ``object`` attributes (not ``*``)."""
    found: dict[str, Any] | None = None
    for part in path:
        if not isinstance(defs, dict) or part == "*" or not isinstance(defs.get(part), dict):
            return None
        found = defs[part]
        defs = found.get("attributes") or {}
    return found


def _check_constraints(gdoc: dict[str, Any], where: str) -> None:
    """core/model.md ``groups.<STRING>.constraints``: each key "MUST reference a scalar attribute
    (top-level, or nested within objects) [...] MUST only reference statically-defined
    attributes", ``<RESOURCES>`` "MUST be the plural name of the Resource type"; an ``equals``
    naming no Group attribute of the model, or one of another scalar type: "an error
    (model_error) MUST be generated"."""
    raw = gdoc.get("constraints")
    if raw is None:
        return
    resources = gdoc.get("resources") or {}
    for key, spec in _object(raw, where).items():
        here = f"{where}.{key}"
        spec = _object(spec, here)
        _unknown(spec, _CONSTRAINT_ASPECTS, here)
        parts = [p for p in str(key).split(".") if p]
        rdoc = resources.get(parts[0]) if parts else None
        if len(parts) < 2 or not isinstance(rdoc, dict):
            raise _error(f"{here} must be <RESOURCES>.<PATH> naming a resource type of this group")
        defs = {**COMMON_ATTRIBUTES, **VERSION_ATTRIBUTES, **(rdoc.get("attributes") or {})}
        target = _static_definition(defs, parts[1:])
        kind = (target or {}).get("type")
        if kind not in SCALAR_TYPES:
            raise _error(f"{here} must name a statically defined scalar attribute of {parts[0]}")
        enum = spec.get("enum")
        if enum is not None and not isinstance(enum, list):
            raise _error(f"{here}.enum must be an array of values")
        allowed = (target or {}).get("enum")
        if enum and allowed and (target or {}).get("strict", True) and any(v not in allowed for v in enum):
            # "a proper subset of any enum defined if the Resource's enum is strict"
            raise _error(f"{here}.enum must be a subset of the attribute's strict enum")
        equals = spec.get("equals")
        if equals:  # "When specified with an empty string, it MUST be treated as if it were not specified"
            group_attr = _static_definition({**COMMON_ATTRIBUTES, **(gdoc.get("attributes") or {})},
                                            str(equals).split(".")) if isinstance(equals, str) else None
            if group_attr is None:
                raise _error(f"{here}.equals must name a statically defined attribute of the group")
            if group_attr.get("type") != kind:
                raise _error(f"{here}.equals names a {group_attr.get('type')} attribute, not a {kind}")


def check_model_source(doc: Any, limits: ModelLimits | None = None) -> dict[str, Any]:
    """``doc`` when it is a model this registry can host (``None`` is ``{}``), else ``model_error``
    (or ``model_required_true`` / ``model_scalar_default``) naming the problem; a model beyond
    ``limits`` (default: :class:`ModelLimits`'s) is refused before anything else is checked."""
    if doc is None:
        return {}
    doc = _object(doc, "the model")
    check_model_bounds(doc, limits or ModelLimits())
    _unknown(doc, REGISTRY_KEYS, "the model")
    _check_attributes(doc.get("attributes") or {}, "attributes")
    _check_immutable(doc.get("attributes"), "attributes")
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
            mode = rdoc.get("versionmode", "manual")
            if not isinstance(mode, str) or mode.lower() not in VERSION_MODES:
                raise _error(f"{rwhere}.versionmode {mode!r} is not supported "
                             f"(supported: {', '.join(VERSION_MODES)})")
            if mode.lower() in ORDERED_VERSION_MODES and rdoc.get("singleversionroot") is False:
                # core/model.md, versionmode createdat / modifiedat / semver: "When this
                # versionmode is used, the singleversionroot aspect MUST be set to true."
                raise _error(f"{rwhere}.singleversionroot must be true with versionmode {mode!r}")
            for aspect in ("attributes", "resourceattributes", "metaattributes"):
                _check_attributes(rdoc.get(aspect) or {}, f"{rwhere}.{aspect}")
            _check_matchversions(rdoc, rwhere)
            for aspect in ("attributes", "resourceattributes", "metaattributes"):
                _check_immutable(rdoc.get(aspect), f"{rwhere}.{aspect}", f"{rdoc.get('singular')}id")
        _check_constraints(gdoc, f"{where}.constraints")
        _check_immutable(gdoc.get("attributes"), f"{where}.attributes", f"{gdoc.get('singular')}id")
        for imported in gdoc.get("ximportresources") or []:
            parts = [p for p in str(imported).split("/") if p]
            source = _object(groups.get(parts[0]) or {}, "groups") if len(parts) == 2 else {}
            if parts[-1:] == [] or parts[-1] not in (source.get("resources") or {}):
                raise _error(f"{where}.ximportresources: {imported!r} names no resource type of this model")
    return doc


def model_of_source(doc: dict[str, Any] | None) -> RegistryModel:
    """The model a checked modelsource defines (closed: see ``RegistryModel.closed``)."""
    return replace(RegistryModel.from_json(doc or {}), closed=True)
