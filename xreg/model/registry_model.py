"""The registry model: which groups and resources a registry has, and their attributes.

A :class:`RegistryModel` is built from xRegistry model documents (``core/model.md``): the
project's own definitions of the message, endpoint and schema domains
(``definitions/*.json``), or any registry's ``/model`` — group and resource names the gateway
has never seen are represented the same way.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources as importlib_resources
from typing import Any

#: The scalar attribute types of core/spec.md "Data Types" (``urireference``, a name of earlier
#: drafts, is still accepted).
SCALAR_TYPES = frozenset(
    {"boolean", "decimal", "integer", "string", "timestamp", "uinteger", "uri", "uriabsolute",
     "urirelative", "uritemplate", "url", "urlabsolute", "urlrelative", "xid", "xidtype", "urireference"}
)
ALL_TYPES = SCALAR_TYPES | {"any", "array", "map", "object"}

#: Attributes every group, resource and version carries (core/spec.md, "Common Attributes").
COMMON_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "xid": {"type": "xid", "readonly": True, "immutable": True, "required": True},
    "self": {"type": "url", "readonly": True, "immutable": True, "required": True},
    "shortself": {"type": "url", "readonly": True, "immutable": True},
    "epoch": {"type": "uinteger", "readonly": True, "required": True},
    "name": {"type": "string"},
    "description": {"type": "string"},
    "documentation": {"type": "url"},
    "icon": {"type": "url"},
    "labels": {"type": "map", "item": {"type": "string"}},
    "createdat": {"type": "timestamp", "required": True},
    "modifiedat": {"type": "timestamp", "required": True},
    "deprecated": {
        "type": "object",
        "attributes": {
            "effective": {"type": "timestamp"},
            "removal": {"type": "timestamp"},
            "alternative": {"type": "url"},
            "docs": {"type": "url"},
            "*": {"type": "any"},
        },
    },
}

#: Version-only attributes (core/spec.md, "Version Entity").
VERSION_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "versionid": {"type": "string", "immutable": True, "required": True},
    "isdefault": {"type": "boolean", "readonly": True},
    "ancestor" + "id": {"type": "string"},
    "contenttype": {"type": "string"},
}

#: Meta entity attributes (core/spec.md, "Meta Entity").
META_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "xref": {"type": "xid"},
    "readonly": {"type": "boolean", "readonly": True},
    "compatibility": {"type": "string"},
    "defaultversionid": {"type": "string"},
    "defaultversionurl": {"type": "url", "readonly": True},
    "defaultversionsticky": {"type": "boolean"},
}

ANCESTOR_ID = "ancestor" + "id"

#: The ``versionmode`` algorithms of core/model.md; in the last three the server orders the
#: Versions and sets every ``ancestorid`` ("the ``singleversionroot`` aspect MUST be set to true").
VERSION_MODES = ("manual", "createdat", "modifiedat", "semver")
ORDERED_VERSION_MODES = frozenset(VERSION_MODES[1:])


@dataclass(frozen=True)
class AttributeDef:
    """One attribute definition (``name``, ``type``, constraints, nested definitions)."""

    name: str
    type: str = "any"
    required: bool = False
    readonly: bool = False
    immutable: bool = False
    #: core/model.md ``matchversions``: every Version of a Resource has the same value.
    matchversions: bool = False
    enum: tuple[Any, ...] | None = None
    strict: bool = True
    target: str | None = None
    default: Any = None
    item: AttributeDef | None = None
    attributes: dict[str, AttributeDef] | None = None
    ifvalues: dict[str, dict[str, AttributeDef]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, name: str, doc: dict[str, Any]) -> AttributeDef:
        item = doc.get("item")
        nested = doc.get("attributes")
        ifvalues = {
            str(value): {
                n: cls.from_json(n, d) for n, d in (spec.get("siblingattributes") or {}).items()
            }
            for value, spec in (doc.get("ifvalues") or {}).items()
        }
        enum = doc.get("enum")
        return cls(
            name=doc.get("name", name),
            type=doc.get("type", "any"),
            required=bool(doc.get("required", False)),
            readonly=bool(doc.get("readonly", False)),
            immutable=bool(doc.get("immutable", False)),
            matchversions=bool(doc.get("matchversions", False)),
            enum=tuple(enum) if enum is not None else None,
            strict=bool(doc.get("strict", True)),
            target=doc.get("target") or (item or {}).get("target"),
            default=doc.get("default"),
            item=cls.from_json("", item) if isinstance(item, dict) else None,
            attributes={n: cls.from_json(n, d) for n, d in nested.items()} if isinstance(nested, dict) else None,
            ifvalues=ifvalues,
        )


def _attr_map(docs: dict[str, Any] | None) -> dict[str, AttributeDef]:
    return {n: AttributeDef.from_json(n, d) for n, d in (docs or {}).items()}


@dataclass(frozen=True)
class ResourceDef:
    """A resource type of a group type (``messages``, ``schemas``, …)."""

    plural: str
    singular: str
    maxversions: int = 0
    hasdocument: bool = True
    setversionid: bool = True
    setdefaultversionsticky: bool = True
    singleversionroot: bool = False
    #: core/model.md ``versionmode`` (lower-cased): how Versions are ordered and their
    #: ``ancestorid`` set (``xreg.registry.versionmodes``).
    versionmode: str = "manual"
    attributes: dict[str, AttributeDef] = field(default_factory=dict)
    metaattributes: dict[str, AttributeDef] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def id_attribute(self) -> str:
        return f"{self.singular}id"

    @property
    def extensible(self) -> bool:
        """Whether attributes the model does not name are kept (a ``*`` definition)."""
        return "*" in self.attributes or not self.attributes


@dataclass(frozen=True)
class GroupDef:
    """A group type of the registry (``messagegroups``, ``endpoints``, ``schemagroups``, …)."""

    plural: str
    singular: str
    attributes: dict[str, AttributeDef] = field(default_factory=dict)
    resources: dict[str, ResourceDef] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def id_attribute(self) -> str:
        return f"{self.singular}id"


@dataclass(frozen=True)
class RegistryModel:
    """The model of one registry: its group types and their resource types."""

    groups: dict[str, GroupDef]
    attributes: dict[str, AttributeDef] = field(default_factory=dict)
    #: Whether attributes the model does not define (and no ``*`` permits) are refused
    #: (``unknown_attribute``): models given through ``modelsource``; the built-in one keeps them.
    closed: bool = False

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RegistryModel:
        """Build a model from a ``/model`` document whose ``$include``s are already resolved.

        ``ximportresources`` (a group importing resource types of another group, as endpoints
        import ``/messagegroups/messages``) is honoured.
        """
        raw_groups: dict[str, Any] = doc.get("groups") or {}
        groups: dict[str, GroupDef] = {}
        for plural, gdoc in raw_groups.items():
            resources = {
                rplural: _resource_from_json(rplural, rdoc)
                for rplural, rdoc in (gdoc.get("resources") or {}).items()
            }
            for imported in gdoc.get("ximportresources") or []:
                parts = [p for p in str(imported).split("/") if p]
                if len(parts) == 2 and parts[0] in raw_groups:
                    src = (raw_groups[parts[0]].get("resources") or {}).get(parts[1])
                    if src is not None and parts[1] not in resources:
                        resources[parts[1]] = _resource_from_json(parts[1], src)
            groups[plural] = GroupDef(
                plural=plural,
                singular=gdoc.get("singular") or plural.rstrip("s"),
                attributes=_attr_map(gdoc.get("attributes")),
                resources=resources,
                source=gdoc,
            )
        return cls(groups=groups, attributes=_attr_map(doc.get("attributes")))

    @classmethod
    def merge(cls, docs: Iterable[dict[str, Any]]) -> RegistryModel:
        """One model from several model documents (later group definitions extend earlier ones)."""
        combined: dict[str, Any] = {"groups": {}}
        for doc in docs:
            for plural, gdoc in (doc.get("groups") or {}).items():
                have = combined["groups"].setdefault(plural, {})
                for key, value in gdoc.items():
                    if key in ("attributes", "resources") and isinstance(value, dict):
                        have.setdefault(key, {}).update(value)
                    elif key == "ximportresources":
                        have.setdefault(key, [])
                        have[key] += [v for v in value if v not in have[key]]
                    else:
                        have[key] = value
            if doc.get("attributes"):
                combined.setdefault("attributes", {}).update(doc["attributes"])
        return cls.from_json(combined)

    @classmethod
    def default(cls) -> RegistryModel:
        """The gateway's own model: message, endpoint and schema domains (xRegistry 1.0-rc4)."""
        return _default_model()

    # -- look-ups -----------------------------------------------------------------------------
    def group(self, plural: str) -> GroupDef | None:
        return self.groups.get(plural)

    def group_def(self, plural: str) -> GroupDef:
        """The group type ``plural``, which the caller knows exists (``KeyError`` otherwise)."""
        return self.groups[plural]

    def resource_def(self, group_plural: str, resource_plural: str) -> ResourceDef:
        """A resource type the caller knows exists (``KeyError`` otherwise)."""
        return self.groups[group_plural].resources[resource_plural]

    def resource(self, group_plural: str, resource_plural: str) -> ResourceDef | None:
        g = self.groups.get(group_plural)
        return g.resources.get(resource_plural) if g else None

    def to_json(self) -> dict[str, Any]:
        """The model as an xRegistry ``/model`` document."""
        out: dict[str, Any] = {"groups": {}}
        for plural, g in self.groups.items():
            gdoc = {k: v for k, v in copy.deepcopy(g.source).items() if k not in ("ximportresources",)}
            gdoc["plural"] = plural
            gdoc["singular"] = g.singular
            gdoc["resources"] = {}
            for rplural, r in g.resources.items():
                rdoc = copy.deepcopy(r.source)
                rdoc.update(plural=rplural, singular=r.singular, maxversions=r.maxversions,
                            hasdocument=r.hasdocument)
                gdoc["resources"][rplural] = rdoc
            out["groups"][plural] = gdoc
        return out


def _resource_from_json(plural: str, doc: dict[str, Any]) -> ResourceDef:
    mode = str(doc.get("versionmode") or "manual").lower()
    return ResourceDef(
        plural=plural,
        singular=doc.get("singular") or plural.rstrip("s"),
        maxversions=int(doc.get("maxversions", 0) or 0),
        hasdocument=bool(doc.get("hasdocument", True)),
        setversionid=bool(doc.get("setversionid", True)),
        setdefaultversionsticky=bool(doc.get("setdefaultversionsticky", True)),
        singleversionroot=bool(doc.get("singleversionroot", mode in ORDERED_VERSION_MODES)),
        versionmode=mode,
        attributes=_attr_map(doc.get("attributes")),
        metaattributes=_attr_map(doc.get("metaattributes")),
        source=doc,
    )


DEFINITION_FILES = ("message.json", "endpoint.json", "schema.json")


def load_definition(name: str) -> dict[str, Any]:
    """One of the project's model definition files, with ``$include`` references resolved."""
    files = importlib_resources.files("xreg.model") / "definitions"
    raw = json.loads((files / name).read_text(encoding="utf-8"))
    return _resolve_includes(raw, files)


def _resolve_includes(node: Any, base: Any) -> Any:
    if isinstance(node, dict):
        if "$include" in node:
            target = str(node["$include"])
            file_part, _, pointer = target.partition("#")
            doc = json.loads((base / file_part.split("/")[-1]).read_text(encoding="utf-8"))
            for part in [p for p in pointer.split("/") if p]:
                doc = doc[part]
            merged = dict(_resolve_includes(doc, base))
            merged.update({k: _resolve_includes(v, base) for k, v in node.items() if k != "$include"})
            return merged
        return {k: _resolve_includes(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve_includes(v, base) for v in node]
    return node


@lru_cache(maxsize=1)
def _default_model() -> RegistryModel:
    return RegistryModel.merge(load_definition(name) for name in DEFINITION_FILES)
