"""Rewriting older xRegistry document shapes into the 1.0-rc4 document shape.

Real documents come in several generations: CloudEvents Registry 0.4/0.5-wip
(``definitiongroups`` / ``definitions``, ``metadata.attributes``), the 1.0
release candidates (``basemessageurl``, ``protocolmetadata``, ``schemauri``, ``#/`` JSON-pointer references)
and hand-made files (timestamps without an offset, ``"protocol": "None"``). :func:`normalise`
returns a new document in the rc4 shape plus one :class:`Normalisation` per change; with
``strict=True`` the first needed change is an ``invalid_attribute`` error instead.

Deliberately left alone: unknown (extension) attributes, ids of any length (65–128 characters
are valid, longer ones cannot be repaired and are the engine's to reject), absolute URLs, and
the content of schema documents.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xreg.errors import XRegistryError, invalid
from xreg.xid import Xid

__all__ = ["Normalisation", "normalise"]


@dataclass(frozen=True)
class Normalisation:
    """One change made by :func:`normalise`: where (an XID-like path), which rule, and what."""

    path: str
    rule: str
    detail: str


#: Group collections this module knows: plural → (singular, resource collection).
GROUPS = {
    "endpoints": ("endpoint", "messages"),
    "messagegroups": ("messagegroup", "messages"),
    "schemagroups": ("schemagroup", "schemas"),
}
RESOURCE_SINGULAR = {"messages": "message", "schemas": "schema"}
#: Collection names (lower-cased, older ones included) → rc4 name, at the top level and in a group.
TOP_COLLECTIONS = {**{g: g for g in GROUPS}, "definitiongroups": "messagegroups"}
GROUP_COLLECTIONS = {"messages": "messages", "schemas": "schemas", "definitions": "messages"}
LEGACY_COLLECTIONS = ("definitiongroups", "definitions")
#: Older attribute names → (rc4 name, or None to drop; rule).
LEGACY_ATTRIBUTES: dict[str, tuple[str | None, str]] = {
    "createdOn": ("createdat", "legacy-attribute-names"),
    "modifiedOn": ("modifiedat", "legacy-attribute-names"),
    "definitiongroupid": ("messagegroupid", "legacy-definitiongroups"),
    "definitionGroupId": ("messagegroupid", "legacy-definitiongroups"),
    "definitionid": ("messageid", "legacy-definitiongroups"),
    "definitionId": ("messageid", "legacy-definitiongroups"),
    "groupId": (None, "legacy-groupid"),
}
#: 0.4-wip ``type`` values that only said which kind of entity an object was.
LEGACY_TYPE_MARKERS = {
    "endpoint", "definitiongroup", "definition", "cloudevent", "messagegroup", "message",
    "schemagroup", "schema", "schemaversion",
}
#: AMQP 1.0 names spelled with ``-`` in rc4 (message/spec.md, endpoint/spec.md), keyed by the ``_`` spelling.
AMQP_MESSAGE_SECTIONS = {n.replace("-", "_"): n for n in (
    "application-properties", "message-annotations", "delivery-annotations")}
AMQP_MESSAGE_FIELDS = {
    "properties": {n.replace("-", "_"): n for n in (
        "message-id", "user-id", "reply-to", "correlation-id", "content-type", "content-encoding",
        "absolute-expiry-time", "group-id", "group-sequence", "reply-to-group-id")},
    "header": {n.replace("-", "_"): n for n in ("first-acquirer", "delivery-count")},
}
AMQP_ENDPOINT_OPTIONS = {n.replace("-", "_"): n for n in (
    "link-properties", "connection-properties", "distribution-mode", "connection-capabilities",
    "node-capabilities", "source-filters", "terminus-durability", "expiry-policy",
    "sender-settle-mode", "receiver-settle-mode")}
#: CloudEvents attributes that are always required (message/spec.md, "CloudEvents/1.0").
CE_ALWAYS_REQUIRED = ("id", "type", "source", "specversion")
CE_TYPE_NAMES = {"datetime": "timestamp", "var": "any"}
TIMESTAMP_ATTRIBUTES = ("createdat", "modifiedat")
_NO_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?$")
_HELPER = re.compile(r"(.+?)(url|count)")
_NOT_GROUP_MAPS = {"model", "modelsource", "capabilities", "meta"}


def normalise(doc: dict, *, strict: bool = False) -> tuple[dict, list[Normalisation]]:
    """Return ``doc`` rewritten into the xRegistry 1.0-rc4 document shape, and the changes made.

    The input is never modified. With ``strict=True`` nothing is rewritten: the first thing that
    would need a change raises ``XRegistryError("invalid_attribute")`` for that entity and
    attribute instead.
    """
    n = _Normaliser(doc, strict)
    try:
        return n.document(copy.deepcopy(doc)), n.changes
    except (AttributeError, TypeError) as exc:  # a collection or entity that is not a JSON object
        raise XRegistryError("parsing_data", "/", detail="not an xRegistry document: a collection or an entity is "
                             f"not a JSON object ({type(exc).__name__}: {exc})") from None


class _Normaliser:
    def __init__(self, doc: dict, strict: bool) -> None:
        self.strict = strict
        self.changes: list[Normalisation] = []
        self.pointer_roots = set(TOP_COLLECTIONS) | {
            k.lower() for k, v in doc.items() if isinstance(v, dict) and k.lower() not in _NOT_GROUP_MAPS
        }

    # -- recording ---------------------------------------------------------------------------

    def note(self, path: str, rule: str, attr: str, detail: str) -> None:
        if self.strict:
            raise invalid(path, attr, f"{detail} (older shape; rejected by --strict)")
        self.changes.append(Normalisation(path, rule, detail))

    def rename(self, ent: dict, old: str, new: str, path: str, rule: str, value: Any = ...) -> bool:
        """Rename ``ent[old]`` to ``new`` in place, keeping the key order; a conflicting ``new`` wins
        (nothing is changed) and an equal one makes ``old`` redundant (dropped)."""
        if old not in ent:
            return False
        if new in ent:
            if ent[new] != ent[old]:
                return False
            self.drop(ent, old, path, rule, f"same as {new}")
            return True
        self.note(path, rule, old, f"{old} -> {new}")
        _replace(ent, old, new, ent[old] if value is ... else value)
        return True

    def drop(self, ent: dict, attr: str, path: str, rule: str, why: str) -> None:
        self.note(path, rule, attr, f"{attr} dropped ({why})")
        del ent[attr]

    # -- document and collections ------------------------------------------------------------

    def document(self, doc: dict) -> dict:
        if "$schema" in doc:
            self.drop(doc, "$schema", "/", "legacy-toplevel", "not an xRegistry attribute")
        spec = doc.get("specversion")
        if spec is not None and not str(spec).startswith("1."):
            self.drop(doc, "specversion", "/", "legacy-toplevel", f"pre-1.0 version {spec!r}")
        self.common(doc, "/", "registry")
        self.collections(doc, "/", TOP_COLLECTIONS)
        for plural, (singular, _) in GROUPS.items():
            groups = doc.get(plural)
            if isinstance(groups, dict):
                doc[plural] = self.entities(groups, f"/{plural}", singular,
                                            functools.partial(self.group, plural))
        self.dataschema_formats(doc)
        return doc

    def dataschema_formats(self, doc: dict) -> None:
        """A message with ``dataschemauri`` but no ``dataschemaformat`` (rc4 requires both) takes
        the ``format`` of the schema it references, when that schema is in the same document."""
        for gtype in ("messagegroups", "endpoints"):
            for gid, group in (doc.get(gtype) or {}).items():
                if not isinstance(group, dict) or not isinstance(group.get("messages"), dict):
                    continue
                for mid, m in group["messages"].items():
                    if not isinstance(m, dict) or m.get("dataschemaformat") or not m.get("dataschemauri"):
                        continue
                    fmt = _schema_format(doc, m["dataschemauri"])
                    if fmt:
                        path = f"/{gtype}/{gid}/messages/{mid}"
                        self.note(path, "dataschemaformat-from-schema", "dataschemaformat",
                                  f"dataschemaformat {fmt!r} taken from {m['dataschemauri'].split('#')[0]}")
                        m["dataschemaformat"] = fmt

    def collections(self, ent: dict, path: str, known: dict[str, str]) -> None:
        """Rename older collection names (``definitiongroups``, ``schemaGroups``) and drop their
        0.x ``…Url`` / ``…Count`` helpers."""
        for key in list(ent):
            low = key.lower()
            target = known.get(low)
            if target and target != key and isinstance(ent[key], dict):
                rule = "legacy-definitiongroups" if low in LEGACY_COLLECTIONS else "legacy-attribute-names"
                if not self.rename(ent, key, target, path, rule) and isinstance(ent.get(target), dict):
                    self.note(path, rule, key, f"{key} merged into {target}")
                    ent[target] = {**ent.pop(key), **ent[target]}
                continue
            m = _HELPER.fullmatch(low)
            if m and m.group(1) in known and (m.group(1) in LEGACY_COLLECTIONS or key != low):
                self.drop(ent, key, path, "legacy-collection-helper", "0.x collection helper")

    def entities(self, coll: dict, base: str, singular: str, handle: Callable[[dict, str], None]) -> dict:
        """Normalise every entity of a map; re-key those whose legacy ``id`` differs from their key."""
        out: dict[str, Any] = {}
        for key, ent in coll.items():
            if not isinstance(ent, dict):
                out[key] = ent
                continue
            new_key = self.common(ent, f"{base}/{key}", singular, key,
                                  lambda k: k not in coll and k not in out) or key
            handle(ent, f"{base}/{new_key}")
            out[new_key] = ent
        return out

    def group(self, plural: str, g: dict, path: str) -> None:
        resources = GROUPS[plural][1]
        if plural == "endpoints":
            self.endpoint(g, path)
        elif plural == "messagegroups":
            self.legacy_format(g, path)
            self.protocol_none(g, path)
        self.collections(g, path, {k: v for k, v in GROUP_COLLECTIONS.items() if v == resources})
        items = g.get(resources)
        if isinstance(items, dict):
            rsingular = RESOURCE_SINGULAR[resources]
            g[resources] = self.entities(items, f"{path}/{resources}", rsingular,
                                         lambda r, p: self.resource(resources, r, p, g))

    def resource(self, plural: str, r: dict, path: str, group: dict) -> None:
        handle = self.message if plural == "messages" else self.schema
        handle(r, path, group)
        if isinstance(r.get("meta"), dict):
            self.common(r["meta"], f"{path}/meta", "meta")
        versions = r.get("versions")
        if isinstance(versions, dict):
            r["versions"] = self.entities(versions, f"{path}/versions", "version",
                                          lambda v, p: handle(v, p, group))

    # -- attributes every entity has ---------------------------------------------------------

    def common(self, ent: dict, path: str, singular: str, key: str | None = None,
               free: Callable[[str], bool] | None = None) -> str | None:
        """Id, legacy names and markers, timestamps, ``self`` and ``xref``; returns the entity's key."""
        for attr in list(ent):
            target, rule = LEGACY_ATTRIBUTES.get(attr, (None, ""))
            if rule and target is None:
                self.drop(ent, attr, path, rule, "the parent's id, implied by the location")
            elif rule and target is not None and attr != target:
                self.rename(ent, attr, target, path, rule)
            elif attr.lower() == f"{singular}id" and attr != f"{singular}id":
                self.rename(ent, attr, f"{singular}id", path, "legacy-attribute-names")
        if ent.get("type") in LEGACY_TYPE_MARKERS and singular != "meta":
            self.drop(ent, "type", path, "legacy-type", f"0.4-wip entity marker {ent['type']!r}")
        new_key = key
        if singular == "version" and "versionid" not in ent and "version" in ent and \
                isinstance(ent["version"], (str, int)) and str(ent["version"]) == key:
            self.rename(ent, "version", "versionid", path, "legacy-version-attr", value=key)
        if "id" in ent and singular != "meta":
            id_attr, value = f"{singular}id", ent["id"]
            if id_attr in ent:
                if ent[id_attr] == value:
                    self.drop(ent, "id", path, "legacy-id", f"same as {id_attr}")
            elif isinstance(value, (str, int)) and not isinstance(value, bool):
                self.rename(ent, "id", id_attr, path, "legacy-id", value=str(value))
                if key is not None and str(value) != key and free and free(str(value)):
                    self.note(path, "legacy-id", "id", f"map key {key!r} replaced by the entity's id {str(value)!r}")
                    new_key = str(value)
        xid = path if key is None else path.rsplit("/", 1)[0] + f"/{new_key}"
        for attr in TIMESTAMP_ATTRIBUTES:
            self.timestamp(ent, attr, path, attr)
        if isinstance(ent.get("deprecated"), dict):
            for attr in ("effective", "removal"):
                self.timestamp(ent["deprecated"], attr, path, f"deprecated.{attr}")
        self_value = ent.get("self")
        if isinstance(self_value, str) and self_value.startswith("#") and self_value != "#" + xid \
                and singular != "meta":
            self.drop(ent, "self", path, "stale-self", f"{self_value!r} does not locate this entity")
        self.reference(ent, "xref", path)
        return new_key

    def timestamp(self, ent: dict, attr: str, path: str, name: str) -> None:
        value = ent.get(attr)
        if isinstance(value, str) and _NO_OFFSET.match(value):
            self.note(path, "timestamp-timezone", name, f"{name} {value!r} has no offset; read as UTC")
            ent[attr] = value + "Z"

    def reference(self, holder: dict, attr: str, path: str, name: str | None = None) -> None:
        """Turn a ``#/...`` JSON-pointer value of ``holder[attr]`` into an XID."""
        value = holder.get(attr)
        xid = self.pointer_to_xid(value)
        if xid is not None:
            self.note(path, "json-pointer-ref", name or attr, f"{name or attr} {value!r} -> {xid!r}")
            holder[attr] = xid

    def pointer_to_xid(self, value: Any) -> str | None:
        if not isinstance(value, str) or not value.startswith("#/"):
            return None
        pointer, hash_, fragment = value[1:].partition("#")
        segments = [s.replace("~1", "/").replace("~0", "~") for s in pointer.split("/")[1:]]
        if not segments or segments[0].lower() not in self.pointer_roots:
            return None
        for i, names in ((0, TOP_COLLECTIONS), (2, GROUP_COLLECTIONS), (4, {"versions": "versions"})):
            if i < len(segments):
                low = segments[i].lower()
                segments[i] = names.get(low, low if i == 0 else segments[i])
        return "/" + "/".join(segments) + hash_ + fragment

    # -- endpoints ---------------------------------------------------------------------------

    def endpoint(self, e: dict, path: str) -> None:
        config = e.get("config")
        if isinstance(config, dict) and "protocoloptions" not in e:
            self.note(path, "legacy-endpoint-config", "config", "config -> protocol + protocoloptions")
            options = dict(e.pop("config"))
            if "protocol" in options and "protocol" not in e:
                e["protocol"] = options.pop("protocol")
            options.update(options.pop("options", None) or {})
            if isinstance(options.get("endpoints"), list):
                options["endpoints"] = [{"uri": u} if isinstance(u, str) else u for u in options["endpoints"]]
            e["protocoloptions"] = options
        if isinstance(e.get("usage"), str):
            self.note(path, "legacy-usage", "usage", f"usage {e['usage']!r} -> [{e['usage']!r}]")
            e["usage"] = [e["usage"]]
        self.legacy_format(e, path)
        for key in [k for k in e if k.lower() == "definitiongroups" and isinstance(e[k], list)]:
            if "messagegroups" in e:
                self.note(path, "legacy-definitiongroups", key, f"{key} merged into messagegroups")
                e["messagegroups"] = list(dict.fromkeys([*e["messagegroups"], *e.pop(key)]))
            else:
                self.rename(e, key, "messagegroups", path, "legacy-definitiongroups")
        self.rename(e, "protocolmetadata", "protocoloptions", path, "protocolmetadata")
        refs = e.get("messagegroups")
        if isinstance(refs, list):
            for i, value in enumerate(refs):
                xid = self.pointer_to_xid(value)
                if xid is not None:
                    self.note(path, "json-pointer-ref", f"messagegroups[{i}]", f"messagegroups {value!r} -> {xid!r}")
                    refs[i] = xid
        protocol_options = e.get("protocoloptions")
        if isinstance(protocol_options, dict):
            self.reference(protocol_options, "willmessage", path, "protocoloptions.willmessage")
            if _is_amqp(e.get("protocol")):
                self.amqp(protocol_options, AMQP_ENDPOINT_OPTIONS, path, "protocoloptions")

    # -- messages ----------------------------------------------------------------------------

    def message(self, m: dict, path: str, group: dict) -> None:
        self.legacy_format(m, path)
        metadata = m.get("metadata")
        if isinstance(metadata, dict):
            if _is_cloudevents(m.get("envelope")) or ("attributes" in metadata and "protocol" not in m):
                if "envelopemetadata" not in m:
                    self.note(path, "legacy-metadata", "metadata", "metadata.attributes -> envelopemetadata")
                    attrs = metadata.get("attributes")
                    rest = {k: v for k, v in metadata.items() if k != "attributes"}
                    _replace(m, "metadata", "envelopemetadata", {**rest, **(attrs if isinstance(attrs, dict) else {})})
            elif m.get("protocol") is not None:
                self.rename(m, "metadata", "protocoloptions", path, "legacy-metadata")
        for old, new in (("schemaurl", "dataschemauri"), ("schemaformat", "dataschemaformat"),
                         ("schema", "dataschema")):
            self.rename(m, old, new, path, "legacy-dataschema")
        for old in ("basemessageurl", "basemessage"):
            self.rename(m, old, "basemessageuri", path, "basemessageurl")
        self.rename(m, "protocolmetadata", "protocoloptions", path, "protocolmetadata")
        self.protocol_none(m, path)
        for attr in ("basemessageuri", "dataschemauri", "dataschemaxid"):
            self.reference(m, attr, path)
        metadata = m.get("envelopemetadata")
        if isinstance(metadata, dict):
            self.envelope_metadata(metadata, path)
        options = m.get("protocoloptions")
        if isinstance(options, dict) and _is_amqp(m.get("protocol", group.get("protocol"))):
            self.amqp(options, AMQP_MESSAGE_SECTIONS, path, "protocoloptions")
            for section, names in AMQP_MESSAGE_FIELDS.items():
                if isinstance(options.get(section), dict):
                    self.amqp(options[section], names, path, f"protocoloptions.{section}")

    def envelope_metadata(self, em: dict, path: str) -> None:
        nested = em.get("attributes")
        if isinstance(nested, dict) and nested and all(isinstance(v, dict) for v in nested.values()):
            self.note(path, "envelopemetadata-attributes", "envelopemetadata.attributes",
                      "envelopemetadata.attributes flattened into envelopemetadata")
            del em["attributes"]
            em.update({k: v for k, v in nested.items() if k not in em})
        for name, decl in em.items():
            if not isinstance(decl, dict):
                continue
            where = f"envelopemetadata.{name}"
            kind = decl.get("type")
            if isinstance(kind, str) and kind.lower() in CE_TYPE_NAMES:
                self.note(path, "ce-attribute-type", f"{where}.type",
                          f"{where}.type {kind!r} -> {CE_TYPE_NAMES[kind.lower()]!r}")
                decl["type"] = CE_TYPE_NAMES[kind.lower()]
            if name in CE_ALWAYS_REQUIRED and decl.get("required") is False:
                self.note(path, "ce-required-attribute", f"{where}.required",
                          f"{where}.required false -> true (always required in CloudEvents)")
                decl["required"] = True
            if name == "dataschema":
                self.reference(decl, "value", path, f"{where}.value")

    def amqp(self, options: dict, names: dict[str, str], path: str, where: str) -> None:
        for old in [k for k in options if k in names]:
            new = names[old]
            if isinstance(options.get(new), dict) and isinstance(options[old], dict):
                self.note(path, "amqp-option-names", f"{where}.{old}", f"{where}.{old} merged into {new}")
                options[new] = {**options.pop(old), **options[new]}
            else:
                self.rename(options, old, new, path, "amqp-option-names")

    # -- schemas -----------------------------------------------------------------------------

    def schema(self, s: dict, path: str, group: dict) -> None:
        self.rename(s, "schemauri", "schemaurl", path, "schemauri")  # rc4 names it <RESOURCE>url
        link = s.get("schemaurl")
        if not s.get("format") and not group.get("format") and isinstance(link, str) \
                and link.split("#", 1)[0].lower().endswith(".json"):
            # 0.x documents could leave the format out; a .json schema document is JSON Schema,
            # and draft-07 is what the 1.0 releases of such catalogues declare.
            self.note(path, "schema-format-inferred", "format",
                      "no format declared; the .json document is read as JSONSchema/draft-07")
            s["format"] = "JSONSchema/draft-07"

    # -- shared legacy rules -----------------------------------------------------------------

    def legacy_format(self, ent: dict, path: str) -> None:
        """0.x ``format`` naming the envelope (or, next to ``metadata``, the protocol)."""
        fmt = ent.get("format")
        if not isinstance(fmt, str):
            return
        if _is_cloudevents(fmt) and "envelope" not in ent:
            self.rename(ent, "format", "envelope", path, "legacy-format")
        elif "metadata" in ent and "protocol" not in ent and not _is_cloudevents(fmt):
            self.rename(ent, "format", "protocol", path, "legacy-format")

    def protocol_none(self, ent: dict, path: str) -> None:
        """``"protocol": "None"`` is a serialised null: no protocol (rc4 wants options with a protocol)."""
        if isinstance(ent.get("protocol"), str) and ent["protocol"].lower() in ("none", "null") \
                and not ent.get("protocoloptions"):
            self.drop(ent, "protocol", path, "protocol-none", f"{ent['protocol']!r} means no protocol")


def _schema_format(doc: dict, ref: Any) -> str | None:
    """The ``format`` of the schema (or schema version) an XID names inside ``doc``, if any."""
    if not isinstance(ref, str) or not ref.startswith("/"):
        return None
    try:
        target = Xid.parse(ref.split("#", 1)[0].rstrip("/"))
    except XRegistryError:
        return None
    if (target.group_type, target.resource_type) != ("schemagroups", "schemas") or target.meta:
        return None
    group = (doc.get("schemagroups") or {}).get(target.group_id)
    schema = ((group or {}).get("schemas") or {}).get(target.resource_id) if isinstance(group, dict) else None
    if not isinstance(schema, dict):
        return None
    given = schema.get("versions")
    versions: dict[str, Any] = given if isinstance(given, dict) else {}
    if target.version_id is not None:
        version = versions.get(target.version_id)
        return version.get("format") if isinstance(version, dict) else None
    candidates = [schema, *(v for v in versions.values() if isinstance(v, dict))]
    if isinstance(group, dict):
        candidates.append(group)
    return next((c["format"] for c in candidates if isinstance(c.get("format"), str) and c["format"]), None)


def _replace(ent: dict, old: str, new: str, value: Any) -> None:
    """Put ``value`` under ``new`` where ``old`` was, keeping the order of the other keys."""
    items = [(new, value) if k == old else (k, v) for k, v in ent.items()]
    ent.clear()
    ent.update(items)


def _is_cloudevents(value: Any) -> bool:
    return isinstance(value, str) and value.lower().startswith("cloudevents")


def _is_amqp(value: Any) -> bool:
    return isinstance(value, str) and value.lower() in ("amqp/1.0", "amqp")
