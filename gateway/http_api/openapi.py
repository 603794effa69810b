"""An OpenAPI 3.1 description of the served API, generated from the registry model
(``GET <prefix>/openapi.json``): every path of every group and resource type, its methods, the
flags each accepts, bodies, responses and problem documents, and bearer authentication.

The document is linear in the model: what several operations share (problem responses, the
``inline``/``filter``/``sort`` parameters of a level, document responses, the XID patterns that
name every type of the model) is one component referred to with ``$ref``. It is built and
encoded once per model (:func:`openapi_body`).

Over 600 lines: one document whose parts name each other's components (``$ref``) as they are built.
"""

from __future__ import annotations

import asyncio
import re
import threading
import weakref
from collections import OrderedDict
from typing import Any

from gateway.http_api.event_log_openapi import events_path_item
from gateway.http_api.flags import IGNORES, SPEC_VERSIONS
from gateway.http_api.inline import Level, inlineable
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.ids import MAX_ID_LENGTH
from xreg.json_encoding import dumps
from xreg.model.modelsource import REGISTRY_KEYS
from xreg.model.registry_model import (
    COMMON_ATTRIBUTES,
    META_ATTRIBUTES,
    VERSION_ATTRIBUTES,
    AttributeDef,
    RegistryModel,
    ResourceDef,
)
from xreg.registry.rules.core import NAME_OPT_VERSION, NAME_VERSION, NON_EMPTY
from xreg.registry.rules.endpoints import USAGE_VALUES

ID_PATTERN = rf"^[A-Za-z0-9_][A-Za-z0-9\-._~:@]{{0,{MAX_ID_LENGTH - 1}}}$"
JSON = "application/json"

#: Largest integer a query flag takes (a signed 64-bit integer, as the store keeps them).
_MAX_INT = 2**63 - 1
_IGNORE_VALUE = "(?:\\*|{})".format("|".join(IGNORES))
#: Boolean flags are bare (``?doc``); ``true`` / ``false`` are accepted too.
_BOOLEAN = {"type": "string", "enum": ["", "true", "false"]}
_FLAG_SCHEMAS: dict[str, dict[str, Any]] = {
    "inline": {"type": "array", "items": {"type": "string"}},
    "filter": {"type": "array", "items": {"type": "string"}},
    "ignore": {"type": "array", "items": {"type": "string", "pattern": f"^(?:{_IGNORE_VALUE}(?:,{_IGNORE_VALUE})*)?$"}},
    "sort": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1, "maximum": _MAX_INT},
    "page": {"type": "string"},
    "doc": _BOOLEAN,
    "binary": _BOOLEAN,
    "collections": _BOOLEAN,
    "epoch": {"type": "integer", "minimum": 0, "maximum": _MAX_INT},
    "specversion": {"type": "string", "enum": list(SPEC_VERSIONS)},
    "setdefaultversionid": {"type": "string", "pattern": f"^(?:null|{ID_PATTERN[1:-1]})$"},
}
_FLAG_HELP = {
    "inline": "Nested collections / attributes to include (dot paths, `*`).",
    "filter": "Filter expressions: AND within one value (`,`), OR across repeated parameters.",
    "ignore": "Parts of the request to ignore.",
    "sort": "`<attribute>[=asc|desc]`.",
    "limit": "Largest page the client accepts.",
    "page": "Opaque page token from a `Link` header.",
    "doc": "Document view.",
    "binary": "Documents as `<RESOURCE>base64`.",
    "collections": "Only the nested collections.",
    "epoch": "Expected epoch of the entity to delete.",
    "specversion": "xRegistry specification version of the response.",
    "setdefaultversionid": "Version to make the sticky default (`null`: newest; `request`: the one created).",
}

_READ = ["inline", "doc", "binary", "specversion"]
_WRITE = ["inline", "doc", "binary", "specversion", "ignore"]


def _types(*names: str) -> list[str]:
    return [XRegistryError(name).type_uri for name in names]


#: Refusals (400) a request valid by this description may still get, per kind of operation: they
#: depend on what the registry holds — an ``epoch`` that is no longer current, a version named by
#: ``setdefaultversionid`` / ``defaultversionid`` / ``ancestorid`` that does not exist, an id that
#: differs only in case from an existing one (``bad_request``), a required attribute the entity
#: lacks after a merge or that a group / resource created on the way lacks, documents that break
#: the resource's format or compatibility rule, a model the existing entities do not fit — or on
#: rules across attributes and entities that JSON Schema here does not state (message/spec.md's
#: pairs such as ``envelope`` with ``envelopemetadata``, ancestor chains). Listed per operation
#: under ``x-xregistry-refusals`` (the problem ``type`` URIs) and in its 400 response.
REFUSALS: dict[str, list[str]] = {
    "write": _types("mismatched_epoch", "required_attribute_missing", "unknown_id", "bad_request",
                    "bad_defaultversionid", "readonly", "ancestor_circular_reference", "multiple_roots",
                    "mismatched_version_attribute", "format_violation", "compatibility_violation",
                    "too_many_versions", "defaultversionid_request", "setdefaultversionsticky_false",
                    "constraint_failure"),
    "model": _types("model_compliance_error", "model_error", "mismatched_epoch", "required_attribute_missing",
                    "unknown_id", "bad_request", "bad_defaultversionid", "ancestor_circular_reference",
                    "multiple_roots", "mismatched_version_attribute", "format_violation", "compatibility_violation",
                    "constraint_failure"),
    "delete": _types("mismatched_epoch", "bad_request", "readonly", "unknown_id"),
    "read": _types("cannot_doc_xref"),
    "capabilities": _types("capability_unknown", "capability_value", "capability_wildcard",
                           "capability_missing_value", "capability_error"),
}
#: ``invalid_attribute`` refusals a valid request may still get, by attribute (``args.name``):
#: rules across attributes or against the group (xreg/registry/rules/), listed per
#: write operation under ``x-xregistry-refused-attributes``.
REFUSED_ATTRIBUTES: dict[str, str] = {
    "deprecated.removal": "not sooner than `deprecated.effective`",
    "envelope": "a message's must be its group's envelope",
    "protocol": "a message's must be its group's protocol",
    "envelopemetadata": "only together with an envelope",
    "envelopeoptions.format": "not with `mode` `binary`",
    "dataschemauri": "not with `dataschema`; the self URL of `dataschemaxid` when both are given",
    "protocoloptions.key_base64": "not with `key`",
    "protocoloptions.status": "not with `method`",
    "basemessageuri": "a base chain that would be circular",
}
_REFUSAL_HELP = ("Refused (problem document, core/spec.md \"Error Processing\"). Besides requests this description "
                 "does not allow, a valid one may be refused with these types, which depend on what the registry "
                 "holds or on rules across attributes: ")


# -- request bodies, derived from the model ---------------------------------------------------
#: Attribute names (core/spec.md "Attributes") and map keys ("Data Types"), as the server checks.
ATTRIBUTE_NAME_PATTERN = "^[a-z_][a-z0-9_]{0,62}$"
MAP_KEY_PATTERN = "^[a-z0-9][a-z0-9:\\-_.]{0,62}$"
#: What the server accepts for ``uri``/``url`` attributes (``xreg/registry/checker.py``):
#: no control character, space or ``<>"\\^`|{}``, a ``%`` only in a percent-encoding, and a
#: valid scheme when a ``:`` comes before any ``/``, ``?`` or ``#`` (non-ASCII characters are
#: kept, as IRIs in real documents carry them).
_URI_CHAR = '(?:[^\\x00-\\x20\\x7f<>"\\\\^`|{}%]|%[0-9A-Fa-f]{2})'
_URI_CHAR_NO_DELIM = '(?:[^\\x00-\\x20\\x7f<>"\\\\^`|{}%:/?#]|%[0-9A-Fa-f]{2})'
_URI_PATTERN = (f"^(?:[A-Za-z][A-Za-z0-9+.\\-]*:{_URI_CHAR}*"
                f"|{_URI_CHAR_NO_DELIM}*(?:[/?#]{_URI_CHAR}*)?)$")
#: A URI template: a URI as above where ``{…}`` expressions of the server's grammar may stand
#: for characters (the server checks the URI with each expression read as one letter).
_TEMPLATE_EXPR = "\\{[+#./;?&=,!@|]?[A-Za-z0-9_.%]+(?::[0-9]+|\\*)?(?:,[A-Za-z0-9_.%]+(?::[0-9]+|\\*)?)*\\}"
_URI_TEMPLATE_PATTERN = (f"^(?:(?:[A-Za-z]|{_TEMPLATE_EXPR})(?:[A-Za-z0-9+.\\-]|{_TEMPLATE_EXPR})*:"
                         f"(?:{_URI_CHAR}|{_TEMPLATE_EXPR})*"
                         f"|(?:{_URI_CHAR_NO_DELIM}|{_TEMPLATE_EXPR})*(?:[/?#](?:{_URI_CHAR}|{_TEMPLATE_EXPR})*)?)$")
#: Attributes the server sets itself: readOnly in requests (any value given is checked or ignored).
_SERVER_SET = {"xid", "self", "shortself", "epoch", "createdat", "modifiedat", "isdefault", "versionid",
               "readonly", "defaultversionurl", "formatvalidated", "formatvalidatedreason",
               "compatibilityvalidated", "compatibilityvalidatedreason", "specversion", "registryid"}
_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "integer": {"type": "integer"},
    "uinteger": {"type": "integer", "minimum": 0},
    "decimal": {"type": "number"},
    "timestamp": {"type": "string", "format": "date-time"},
    "uri": {"type": "string", "pattern": _URI_PATTERN},
    "urireference": {"type": "string", "pattern": _URI_PATTERN},
    "url": {"type": "string", "pattern": _URI_PATTERN},
    "uriabsolute": {"type": "string", "pattern": _URI_PATTERN},
    "urirelative": {"type": "string", "pattern": _URI_PATTERN},
    "urlabsolute": {"type": "string", "pattern": _URI_PATTERN},
    "urlrelative": {"type": "string", "pattern": _URI_PATTERN},
    "uritemplate": {"type": "string", "pattern": _URI_TEMPLATE_PATTERN},
    "xid": {"type": "string", "pattern": "^/"},
    "xidtype": {"type": "string", "pattern": "^/"},
}


#: Any JSON value but null (null is no array item or map value).
_NOT_NULL = {"type": ["string", "number", "boolean", "object", "array"]}


def attribute_schema(defn: AttributeDef) -> dict[str, Any]:
    """The JSON Schema of one attribute's values (type, enum, nested attributes, items)."""
    if defn.type in _TYPES:
        out = dict(_TYPES[defn.type])
        if defn.enum and defn.strict:
            out["enum"] = list(defn.enum)
        return out
    if defn.type == "array":
        return {"type": "array", "items": attribute_schema(defn.item) if defn.item else _NOT_NULL}
    if defn.type == "map":
        return {"type": "object", "propertyNames": {"pattern": MAP_KEY_PATTERN},
                "additionalProperties": attribute_schema(defn.item) if defn.item else _NOT_NULL}
    if defn.type == "object":
        return object_schema(defn.attributes or {}, name_pattern=MAP_KEY_PATTERN, extensible=True)
    return {}


def object_schema(defs: dict[str, AttributeDef], *, name_pattern: str = ATTRIBUTE_NAME_PATTERN,
                  extensible: bool = True, extra: dict[str, Any] | None = None,
                  server_set: frozenset[str] | set[str] = frozenset(),
                  rules: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An object of attributes ``defs``; others (named by ``name_pattern``) when ``extensible``.
    ``rules``: the domain rules of attributes (keywords added to their schema; ``required``)."""
    props: dict[str, Any] = {}
    required = []
    rules = rules or {}
    for name, defn in defs.items():
        if name == "*":
            continue
        rule = {k: v for k, v in rules.get(name, {}).items() if k != "required"}
        # a ``$ref`` rule (a reference's schema, see ``_References``) stands for the whole type
        value = rule if "$ref" in rule else {**attribute_schema(defn), **rule}
        if name in server_set or defn.readonly:
            props[name] = {**value, "readOnly": True}
            continue
        if (defn.required and defn.default is None) or rules.get(name, {}).get("required"):
            required.append(name)
            props[name] = value
        else:  # null deletes the attribute
            props[name] = {"anyOf": [value, {"type": "null"}]}
    props.update(extra or {})
    wildcard = defs.get("*")
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if extensible or wildcard is not None:
        out["propertyNames"] = {"pattern": name_pattern}
        out["additionalProperties"] = attribute_schema(wildcard) if wildcard else {}
    else:
        out["additionalProperties"] = False
    return out


#: ``?setdefaultversionid`` where ``request`` (the version the request creates) is allowed too.
_SET_DEFAULT_OR_REQUEST = {"name": "setdefaultversionid", "in": "query", "required": False,
                           "description": _FLAG_HELP["setdefaultversionid"],
                           "schema": {"type": "string", "pattern": f"^(?:null|request|{ID_PATTERN[1:-1]})$"}}


def _param(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/parameters/{name}"}


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True,
            "schema": {"type": "string", "pattern": ID_PATTERN, "maxLength": MAX_ID_LENGTH}}


def _json(schema: str) -> dict[str, Any]:
    return {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def _refusal_help(refusals: str) -> str:
    text = _REFUSAL_HELP + ", ".join(f"`{t.rpartition('#')[2]}`" for t in REFUSALS[refusals]) + "."
    if refusals in ("write", "model"):
        text += " And `invalid_attribute` for: " + "; ".join(
            f"`{name}` ({rule})" for name, rule in sorted(REFUSED_ATTRIBUTES.items())) + "."
    return text


def _response(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/responses/{name}"}


def _problem_responses() -> dict[str, Any]:
    """The problem responses operations share (``components.responses``): one ``Refused_<kind>``
    per kind of operation (:data:`REFUSALS`), ``Problem`` and ``Busy``."""
    out = {f"Refused_{kind}": {"description": _refusal_help(kind), "content": _json("Problem")} for kind in REFUSALS}
    out["Problem"] = {"description": "Problem", "content": _json("Problem")}
    out["Busy"] = {"description": "Busy (`server_busy`, with `Retry-After`)", "content": _json("Problem")}
    return out


def _op(summary: str, flags: list[str], ok: dict[str, Any], *, body: str | None = None,
        document: bool = False, refusals: str = "read") -> dict[str, Any]:
    types = REFUSALS[refusals]
    op: dict[str, Any] = {
        "summary": summary,
        "parameters": [_param(f) for f in flags],
        "responses": {**ok, "400": _response(f"Refused_{refusals}"), "4XX": _response("Problem"),
                      "503": _response("Busy")},
        "x-xregistry-refusals": types,
    }
    if refusals in ("write", "model"):
        op["x-xregistry-refused-attributes"] = sorted(REFUSED_ATTRIBUTES)
    if body is not None:
        op["requestBody"] = {"required": True, "content": _json(body)}
    if document:
        op["description"] = _DOCUMENT_WRITE
        op["requestBody"] = {"required": False, "description": "The document: any bytes, in any media type.",
                             "content": {"*/*": {"schema": {}}}}
    return op


def _ok(status: str, schema: str, description: str = "OK") -> dict[str, Any]:
    return {status: {"description": description, "content": _json(schema)}}


_DELETED = {"204": {"description": "Deleted"}}
_DOCUMENT_WRITE = (
    "The body is the document itself, stored as its bytes with `Content-Type` as its `contenttype` (no "
    "`Content-Type`: none); an empty body is an empty document. Other attributes come from `xRegistry-<name>` "
    "headers (percent-encoded; `xRegistry-<map>.<key>` for map entries; `null` deletes), merged into what the "
    "entity holds: `xRegistry-format` is needed where a new schema is created.")
_DOCUMENT_BODY = ("The document's bytes as stored, `Content-Type` its `contenttype` — absent with the body empty "
                  "when it has none, so no media type is promised (with `?doc`: the entity as JSON). ")
_DOC_HEADERS = {
    "Content-Disposition": {"description": "The resource's id.", "schema": {"type": "string"}},
    "Content-Location": {"description": "The default version's URL (a resource).", "schema": {"type": "string"}},
}
_LOCATION = {"description": "The URL of the entity written.", "required": True, "schema": {"type": "string"}}


_DOC_STATUSES = {"200": "Document", "201": "DocumentCreated", "303": "DocumentElsewhere"}


def _doc_responses(gr: str, attribute_headers: dict[str, Any]) -> dict[str, Any]:
    """The responses of the document view of resource type ``gr`` (``components.responses``): the
    bytes, or ``303`` to a ``<RESOURCE>url``; the attributes as ``xRegistry-*`` headers
    (``attribute_headers``)."""
    headers = {**attribute_headers, **_DOC_HEADERS}
    return {f"Document_{gr}": {"description": _DOCUMENT_BODY, "headers": headers},
            f"DocumentCreated_{gr}": {"description": "Created. " + _DOCUMENT_BODY,
                                      "headers": {**headers, "Location": _LOCATION}},
            f"DocumentElsewhere_{gr}": {"description": "The document is elsewhere: `Location` is its `<RESOURCE>url`.",
                                        "headers": {**headers, "Location": {**_LOCATION,
                                                                            "description": "The document's URL."}}}}


def _doc_ok(gr: str) -> dict[str, Any]:
    """The responses of the document view of resource type ``gr`` (see :func:`_doc_responses`)."""
    return {status: _response(f"{name}_{gr}") for status, name in _DOC_STATUSES.items()}


def _entity_ops(kind: str, name: str, body: str, *, document: str | None = None, versions: str = "",
                collections: str = "") -> dict[str, Any]:
    """Operations on one entity path (group, resource, version); ``document``: the document view,
    of the resource type named so in ``components.responses`` (:func:`_doc_responses`)."""
    created = {**_ok("200", "Entity"), **_ok("201", "Entity", "Created")}
    if document is not None:
        doc_ok = _doc_ok(document)
        ops = {"get": _op(f"The {name} document", _READ, doc_ok),
               "put": _op(f"Create or replace the {name} document", _WRITE, doc_ok, document=True, refusals="write")}
        if kind == "resource":
            ops["post"] = _op(f"Add a version to the {name} (document)", _WRITE + ["setdefaultversionid"], doc_ok,
                              document=True, refusals="write")
    else:
        write = _WRITE + ["filter"] + (["setdefaultversionid"] if kind in ("resource", "version") else [])
        ops = {"get": _op(f"Get a {name}", _READ + ["filter"], _ok("200", "Entity")),
               "put": _op(f"Create or replace a {name}", write, created, body=body, refusals="write"),
               "patch": _op(f"Create or patch a {name}", write, created, body=body, refusals="write")}
        if kind == "group":
            ops["post"] = _op(f"Create or update resources of the {name}", _WRITE + ["filter"],
                              _ok("200", "Collections"), body=collections, refusals="write")
        if kind == "resource":
            ops["post"] = _op(f"Create or update one version of the {name}", write, created, body=versions,
                              refusals="write")
            ops["post"]["parameters"] = [_SET_DEFAULT_OR_REQUEST if p == _param("setdefaultversionid") else p
                                         for p in ops["post"]["parameters"]]
    ops["delete"] = _op(f"Delete a {name}", ["epoch"] + (["setdefaultversionid"] if kind == "version" else []),
                        _DELETED, refusals="delete")
    return ops


def _collection_ops(name: str, body: str, *, versions: bool = False) -> dict[str, Any]:
    extra = ["setdefaultversionid"] if versions else []
    return {
        "get": _op(f"List {name}", _READ + ["filter", "sort", "limit", "page"], _ok("200", "Map")),
        "patch": _op(f"Create or patch {name}", _WRITE + ["filter", "sort"] + extra, _ok("200", "Map"), body=body,
                     refusals="write"),
        "post": _op(f"Create or update {name}", _WRITE + ["filter", "sort"] + extra, _ok("200", "Map"), body=body,
                    refusals="write"),
        "delete": {**_op(f"Delete {name} (all, or those the body names)", extra, _DELETED, refusals="delete"),
                   "requestBody": {"required": False, "content": _json("Ids")}},
    }


def _with_params(ops: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    return {"parameters": params, **ops}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _id_map(entity: str) -> dict[str, Any]:
    """A map of entities by ID (a collection in a body)."""
    return {"type": "object", "propertyNames": {"pattern": ID_PATTERN, "maxLength": MAX_ID_LENGTH},
            "additionalProperties": _ref(entity)}


def _defs(raw: dict[str, dict[str, Any]]) -> dict[str, AttributeDef]:
    return {n: AttributeDef.from_json(n, d) for n, d in raw.items()}


#: Python's ``\s`` (what the server's patterns use) spelled out: ECMA-262's ``\s`` is another set.
_PY_SPACE = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace())


def _ecma(pattern: str) -> str:
    """A pattern of the server (Python ``re``) as JSON Schema matches it alike."""
    return pattern.replace("\\s", _PY_SPACE)


#: Domain rules of xreg/registry/rules/ that JSON Schema can state, by level.
_COMMON_RULES: dict[str, dict[str, Any]] = {name: {"minLength": 1} for name in NON_EMPTY}
_MESSAGE_FORMS: dict[str, dict[str, Any]] = {"envelope": {"pattern": _ecma(f"^{NAME_VERSION}$")},
                                            "protocol": {"pattern": _ecma(f"^{NAME_OPT_VERSION}$")}}
_GROUP_RULES: dict[str, dict[str, dict[str, Any]]] = {
    "messagegroups": _MESSAGE_FORMS,
    "endpoints": {"envelope": {"pattern": _ecma(f"^{NAME_OPT_VERSION}$")}, "protocol": {"minLength": 1},
                  "channel": {"minLength": 1},
                  # usage: required, at least one value; one value is always accepted
                  "usage": {"required": True, "minItems": 1, "maxItems": 1, "items": {"enum": list(USAGE_VALUES)}}},
}
_RESOURCE_RULES: dict[str, dict[str, dict[str, Any]]] = {
    "messages": {**_MESSAGE_FORMS, "dataschemaformat": {"pattern": _ecma(f"^{NAME_VERSION}$")}},
}
#: Rules over a whole version object. message/spec.md's pairs (``envelope`` with
#: ``envelopemetadata``, ``protocol`` with ``protocoloptions``, a data schema with its format) and
#: exclusions are not stated: ``dependentRequired`` and ``not`` below the document root make
#: schemathesis' negative generation fail (it cannot spell out their complement), so the server's
#: refusals of them are documented as refusals (:data:`REFUSALS`, :data:`REFUSED_ATTRIBUTES`).
#: The document attributes' exclusion is stated without ``not`` (:func:`_one_document`).
_RESOURCE_OBJECT_RULES: dict[str, dict[str, Any]] = {}


def xid_pattern(model: RegistryModel, target: str | None = None) -> str:
    """The XIDs the server accepts for an ``xid`` attribute: the shapes of ``model``'s types
    (core/spec.md "XIDs"), only those of ``target`` when the attribute names one (core/model.md)."""
    id_ = ID_PATTERN[1:-1]
    shapes: list[str] = []
    base, resources, versions = target, True, False
    if target is not None and target.endswith("[/versions]"):
        base, versions = target[: -len("[/versions]")], True
    elif target is not None and target.endswith("/versions"):
        base, resources, versions = target[: -len("/versions")], False, True
    segs = [seg for seg in (base or "").split("/") if seg]
    if target is None:
        shapes.append("")
    for g, gdef in model.groups.items():
        if target is None or segs == [g]:
            shapes.append(f"/{g}/{id_}")
        for r in gdef.resources:
            res = f"/{g}/{id_}/{r}/{id_}"
            if target is None:
                shapes += [res, f"{res}/meta", f"{res}/versions/{id_}"]
            elif segs == [g, r]:
                shapes += ([res] if resources else []) + ([f"{res}/versions/{id_}"] if versions else [])
    if target is not None and not segs:
        shapes.append("")
    return "^(?:" + "|".join(shape or "/" for shape in shapes) + ")$"


_URI_CHARS = "A-Za-z0-9._~/?#@!$&'()*+,;=\\-"
#: :data:`_URI_PATTERN` without a leading ``/`` (which makes a reference an XID).
_URI_NOT_XID = f"(?:[A-Za-z][A-Za-z0-9+.\\-]*:[{_URI_CHARS}]*|[{_URI_CHARS.replace('/', '')}][{_URI_CHARS}]*)?"


def _reference_pattern(model: RegistryModel, defn: AttributeDef) -> str | None:
    """The values of a reference attribute: an ``xid`` is an XID (of its ``target``); a URI with
    a ``target`` is an XID of it when it starts with ``/``, else any URI (as the server checks)."""
    if defn.type == "xid":
        return xid_pattern(model, defn.target)
    if defn.target and defn.type in ("uri", "urireference", "url"):
        return f"^(?:{_URI_NOT_XID}|{xid_pattern(model, defn.target)[4:-2]})$"
    return None


class _References:
    """The schemas of reference attributes, one component per kind and ``target``
    (``Xid``, ``Xid_<target>``, ``Uri_<target>``): an XID pattern names every group and resource
    type of the model, so each attribute refers to it instead of repeating it (the document
    stays linear in the model)."""

    def __init__(self, model: RegistryModel) -> None:
        self.model = model
        self.schemas: dict[str, dict[str, Any]] = {}
        self._names: dict[tuple[str, str | None], str] = {}

    def ref(self, defn: AttributeDef) -> dict[str, Any] | None:
        """``$ref`` to the schema of reference attribute ``defn`` (``None``: not a reference)."""
        if defn.type == "xid":
            kind = "Xid"
        elif defn.target and defn.type in ("uri", "urireference", "url"):
            kind = "Uri"
        else:
            return None
        key = (kind, defn.target)
        name = self._names.get(key)
        if name is None:
            pattern = _reference_pattern(self.model, defn)
            if pattern is None:
                return None
            name = kind if defn.target is None else f"{kind}_{re.sub(r'[^A-Za-z0-9_]+', '.', defn.target).strip('.')}"
            while name in self.schemas:  # targets that differ only in punctuation
                name += "_"
            self.schemas[name] = {"type": "string", "pattern": pattern}
            self._names[key] = name
        return _ref(name)

    def rules(self, defs: dict[str, AttributeDef]) -> dict[str, dict[str, Any]]:
        """The schemas of ``defs``' references and arrays of them (rules of :func:`object_schema`)."""
        rules: dict[str, dict[str, Any]] = {}
        for name, defn in defs.items():
            if (ref := self.ref(defn)) is not None:
                rules[name] = ref
            elif defn.type == "array" and defn.item is not None:
                item = AttributeDef.from_json("", {"type": defn.item.type,
                                                   "target": defn.item.target or defn.target})
                if (ref := self.ref(item)) is not None:
                    rules[name] = {"items": ref}
        return rules


def _one_document(rdef: ResourceDef) -> dict[str, Any]:
    """At most one of ``<RESOURCE>``, ``<RESOURCE>base64``, ``<RESOURCE>url`` (and the older
    ``<RESOURCE>uri``) with a value (``one_resource``; null is absent), as ``dependentSchemas``."""
    if not rdef.hasdocument:
        return {}
    s = rdef.singular
    names = [s, f"{s}base64", f"{s}url", f"{s}uri"]
    null = {"type": "null"}
    return {"dependentSchemas": {
        name: {"anyOf": [{"properties": {name: null}}, {"properties": {o: null for o in names if o != name}}]}
        for name in names}}


#: A resource body whose ``versions`` name at least one version: core/spec.md's resource processing
#: algorithm (step 2) then applies the default version's attributes only to a version the request
#: names outside ``versions`` (top-level ``versionid`` or ``meta.defaultversionid``) or to the
#: existing default version; the attributes the model requires are checked there (a
#: ``required_attribute_missing`` refusal), not asked of every such body.
_WITH_VERSIONS: dict[str, Any] = {"required": ["versions"], "properties": {"versions": {"minProperties": 1}}}


def body_schemas(model: RegistryModel) -> dict[str, Any]:
    """Request body schemas of every level of ``model`` (``Registry``, ``Groups``, ``Group_<g>``, ``Map_<g>``,
    ``Resource_<g>_<r>``, ``Version_<g>_<r>``, ``Meta_<g>_<r>`` and their maps), from its
    attribute definitions: types, enums, required attributes, ID patterns, name patterns."""
    open_ = not model.closed
    common = _defs(COMMON_ATTRIBUTES)
    refs = _References(model)
    out: dict[str, Any] = {
        "Registry": object_schema({**common, **model.attributes}, extensible=open_, server_set=_SERVER_SET,
                                  extra={g: _ref(f"Map_{g}") for g in model.groups}),
        "Groups": {"type": "object", "additionalProperties": False,
                   "properties": {g: _ref(f"Map_{g}") for g in model.groups}},
        # The entities a collection DELETE names: only the keys count.
        "Ids": {"type": "object", "propertyNames": {"pattern": ID_PATTERN, "maxLength": MAX_ID_LENGTH},
                "additionalProperties": {"type": "object"}},
    }
    for g, gdef in model.groups.items():
        out[f"Group_{g}"] = object_schema(
            {**common, **gdef.attributes}, extensible=open_, server_set=_SERVER_SET | {gdef.id_attribute},
            rules={**_COMMON_RULES, **refs.rules(gdef.attributes), **_GROUP_RULES.get(g, {})},
            extra={r: _ref(f"Map_{g}_{r}") for r in gdef.resources})
        out[f"Map_{g}"] = _id_map(f"Group_{g}")
        out[f"Collections_{g}"] = {"type": "object", "additionalProperties": False,
                                   "properties": {r: _ref(f"Map_{g}_{r}") for r in gdef.resources}}
        for r, rdef in gdef.resources.items():
            ids = {gdef.id_attribute, rdef.id_attribute}
            version = {**common, **_defs(VERSION_ATTRIBUTES), **rdef.attributes}
            doc: dict[str, Any] = {}
            if rdef.hasdocument:
                doc = {rdef.singular: {},
                       # base64 by the spec; the server keeps text that is not as it is
                       f"{rdef.singular}base64": {"type": "string", "contentEncoding": "base64"},
                       f"{rdef.singular}url": {"type": "string", "pattern": _URI_PATTERN}}
            rules = {**_COMMON_RULES, **refs.rules(version), **_RESOURCE_RULES.get(r, {})}
            whole = {**_one_document(rdef), **_RESOURCE_OBJECT_RULES.get(r, {})}
            out[f"Version_{g}_{r}"] = {**object_schema(version, extensible=open_, server_set=_SERVER_SET | ids,
                                                       extra=doc, rules=rules), **whole}
            out[f"Versions_{g}_{r}"] = _id_map(f"Version_{g}_{r}")
            # a write to the versions collection names at least one (missing_versions)
            out[f"VersionsRequest_{g}_{r}"] = {**_id_map(f"Version_{g}_{r}"), "minProperties": 1}
            out[f"Meta_{g}_{r}"] = object_schema(
                {**common, **_defs(META_ATTRIBUTES), **rdef.metaattributes}, extensible=open_,
                server_set=_SERVER_SET | ids | {"xref", "defaultversionid"}, rules=_COMMON_RULES)
            resource = object_schema(
                version, extensible=open_, server_set=_SERVER_SET | ids, rules=rules,
                extra={**doc, "versions": _ref(f"Versions_{g}_{r}"), "meta": _ref(f"Meta_{g}_{r}")})
            required = resource.pop("required", None)
            if required:  # a new resource's versions may stand in for its default version's attributes
                resource["anyOf"] = [{"required": required}, _WITH_VERSIONS]
            out[f"Resource_{g}_{r}"] = {**resource, **whole}
            out[f"Map_{g}_{r}"] = _id_map(f"Resource_{g}_{r}")
    out.update(refs.schemas)
    return out


def inline_values(model: RegistryModel, level: Level, depth: int = 3) -> list[str]:
    """Every ``?inline`` value the server accepts at ``level`` (dot paths up to ``depth`` parts,
    each optionally ending in ``.*``, and ``*``)."""
    values = ["", "*"]  # a bare ?inline is *

    def walk(here: Level, prefix: str, left: int) -> None:
        for name, below in inlineable(model, here).items():
            values.append(prefix + name)
            if below is not None and left > 1:
                values.append(f"{prefix}{name}.*")
                walk(below, f"{prefix}{name}.", left - 1)

    walk(level, "", depth)
    return values


def _inline_param(values: list[str]) -> dict[str, Any]:
    return {"name": "inline", "in": "query", "required": False, "description": _FLAG_HELP["inline"],
            "style": "form", "explode": True, "schema": {"type": "array", "items": {"type": "string", "enum": values}}}


def _level_params(names: list[str]) -> dict[str, dict[str, Any]]:
    """``filter`` and ``sort`` of a level. Their grammar (paths into any attribute, extension
    attributes included; operators; wildcards) is wider than a pattern over the level's own
    attribute names, and the server accepts all of it, so they are described as strings with
    the level's attributes named in the description."""
    known = ", ".join(f"`{n}`" for n in sorted(names))
    return {
        "filter": {"name": "filter", "in": "query", "required": False,
                   "description": f"{_FLAG_HELP['filter']} Attributes of this level: {known}.",
                   "style": "form", "explode": True, "schema": {"type": "array", "items": {"type": "string"}}},
        "sort": {"name": "sort", "in": "query", "required": False,
                 "description": f"{_FLAG_HELP['sort']} Attributes of this level: {known}.",
                 "schema": {"type": "string"}},
    }


def _with_inline(ops: dict[str, Any], values: list[str], names: list[str] | None = None, *,
                 shared: dict[str, Any], level: str) -> dict[str, Any]:
    """``ops`` with the generic ``inline`` (and ``filter``/``sort`` when the level's attribute
    ``names`` are given) parameters replaced by references to those of their ``level``, which
    are added to ``shared`` (``components.parameters``) once."""
    specific = {"inline": _inline_param(values), **(_level_params(names) if names else {})}
    refs = {}
    for name, param in specific.items():
        shared.setdefault(f"{name}.{level}", param)
        refs[name] = _param(f"{name}.{level}")
    for op in ops.values():
        if isinstance(op, dict) and "parameters" in op:
            op["parameters"] = [next((v for k, v in refs.items() if p == _param(k)), p)
                                for p in op["parameters"]]
    return ops


def _attribute_names(*defs: dict[str, Any]) -> list[str]:
    return sorted({n for d in defs for n in d if n != "*"})


_SCALARS = frozenset(_TYPES)


def _document_headers(rdef: ResourceDef, common: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The ``xRegistry-<name>`` headers of a document response: the version's scalar attributes
    (percent-encoded text; maps of scalars come as ``xRegistry-<map>.<key>``, not listed)."""
    names = {n: d.get("type") for n, d in common.items()}
    names.update({n: d.type for n, d in rdef.attributes.items()})
    names[rdef.id_attribute] = "string"
    skip = {"*", rdef.singular, f"{rdef.singular}base64", "contenttype"}
    # none is required: a ``?doc`` answer is the entity as JSON, without them
    return {f"xRegistry-{name}": {"description": f"`{name}`, percent-encoded (not with `?doc`).",
                                  "schema": {"type": "string"}}
            for name, kind in sorted(names.items()) if name not in skip and kind in _SCALARS}


def openapi_document(model: RegistryModel, settings: Settings) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API (paths relative to the API prefix)."""
    params: dict[str, Any] = {name: {"name": name, "in": "query", "required": False, "description": _FLAG_HELP[name],
                                     "schema": schema, **({"style": "form", "explode": True}
                                                          if schema["type"] == "array" else {})}
                              for name, schema in _FLAG_SCHEMAS.items()}
    root_ops = _with_inline({
        "get": _op("The registry", _READ + ["filter", "collections"], _ok("200", "Entity")),
        "put": _op("Update the registry (and nested groups)", _WRITE + ["filter"], _ok("200", "Entity"),
                   body="Registry", refusals="model"),
        "patch": _op("Patch the registry (and nested groups)", _WRITE + ["filter"], _ok("200", "Entity"),
                     body="Registry", refusals="model"),
        "post": _op("Create or update groups", _WRITE + ["filter"], _ok("200", "Collections"), body="Groups",
                    refusals="write"),
    }, inline_values(model, ("registry",)), _attribute_names(COMMON_ATTRIBUTES, model.attributes),
        shared=params, level="registry")
    paths: dict[str, Any] = {
        "/": root_ops,
        "/capabilities": {
            "get": _op("Capabilities", ["specversion"], _ok("200", "Entity")),
            "put": _op("Replace the capabilities (absent ones reset)", ["specversion"], _ok("200", "Entity"),
                       body="Entity", refusals="capabilities"),
            "patch": _op("Replace the capabilities named", ["specversion"], _ok("200", "Entity"), body="Entity",
                         refusals="capabilities"),
        },
        "/capabilitiesoffered": {"get": _op("The capabilities a client may choose from", ["specversion"],
                                            _ok("200", "Entity"))},
        "/model": {"get": _op("The model", ["specversion"], _ok("200", "Entity"))},
        "/modelsource": {
            "get": _op("The model last given (`{}`: the built-in model)", ["specversion"], _ok("200", "Entity")),
            "put": _op("Replace the model", ["specversion"], _ok("200", "Entity"), body="ModelSource",
                       refusals="model"),
        },
        "/export": _with_inline({"get": _op("The whole registry, document view",
                                            ["inline", "filter", "binary", "specversion"], _ok("200", "Entity"))},
                                inline_values(model, ("registry",)),
                                _attribute_names(COMMON_ATTRIBUTES, model.attributes), shared=params,
                                level="registry"),
        "/openapi.json": {"get": _op("This description", ["specversion"], _ok("200", "Entity"))},
        "/.xregistry": {"get": _op("Registry-based discovery: `{\"registries\": [URL, …]}`", ["specversion"],
                                   _ok("200", "Entity"))},
        "/events": events_path_item(),  # served at the root (its own ``servers``)
    }
    responses = _problem_responses()
    for gtype, gdef in model.groups.items():
        gid = gdef.id_attribute
        g = f"/{gtype}/{{{gid}}}"
        group_inline = inline_values(model, ("group", gtype))
        gnames = _attribute_names(COMMON_ATTRIBUTES, gdef.attributes, {gid: None})
        paths[f"/{gtype}"] = _with_inline(_collection_ops(gtype, f"Map_{gtype}"), group_inline, gnames,
                                          shared=params, level=gtype)
        paths[g] = _with_params(_with_inline(_entity_ops("group", gdef.singular, f"Group_{gtype}",
                                                         collections=f"Collections_{gtype}"), group_inline, gnames,
                                             shared=params, level=gtype),
                                [_path_param(gid)])
        for rtype, rdef in gdef.resources.items():
            rid = rdef.id_attribute
            r = f"{g}/{rtype}/{{{rid}}}"
            rparams = [_path_param(gid), _path_param(rid)]
            vparams = rparams + [_path_param("versionid")]
            gr = f"{gtype}_{rtype}"
            res_inline = inline_values(model, ("resource", gtype, rtype))
            ver_inline = inline_values(model, ("version", gtype, rtype))
            rnames = _attribute_names(COMMON_ATTRIBUTES, VERSION_ATTRIBUTES, rdef.attributes, {gid: None, rid: None})
            paths[f"{g}/{rtype}"] = _with_params(
                _with_inline(_collection_ops(rtype, f"Map_{gr}"), res_inline, rnames, shared=params, level=gr),
                [_path_param(gid)])
            doc_headers = gr if rdef.hasdocument else None
            if rdef.hasdocument:
                responses.update(_doc_responses(gr, _document_headers(rdef, {**COMMON_ATTRIBUTES,
                                                                               **VERSION_ATTRIBUTES})))
            paths[r] = _with_params(_with_inline(_entity_ops("resource", rdef.singular, f"Resource_{gr}",
                                                             document=doc_headers, versions=f"Version_{gr}"),
                                                 res_inline, rnames, shared=params, level=gr), rparams)
            paths[f"{r}/meta"] = _with_params(_with_inline({
                "get": _op(f"The {rdef.singular}'s meta", _READ + ["filter"], _ok("200", "Entity")),
                "put": _op("Replace meta (creates the resource when missing)", _WRITE + ["setdefaultversionid"],
                           {**_ok("200", "Entity"), **_ok("201", "Entity", "Created")}, body=f"Meta_{gr}",
                           refusals="write"),
                "patch": _op("Patch meta (creates the resource when missing)", _WRITE + ["setdefaultversionid"],
                             {**_ok("200", "Entity"), **_ok("201", "Entity", "Created")}, body=f"Meta_{gr}",
                             refusals="write"),
            }, inline_values(model, ("meta",)),
                _attribute_names(COMMON_ATTRIBUTES, META_ATTRIBUTES, rdef.metaattributes, {gid: None, rid: None}),
                shared=params, level=f"{gr}.meta"), rparams)
            paths[f"{r}/versions"] = _with_params(_with_inline(
                _collection_ops("versions", f"VersionsRequest_{gr}", versions=True), ver_inline, rnames,
                shared=params, level=f"{gr}.versions"), rparams)
            paths[f"{r}/versions/{{versionid}}"] = _with_params(_with_inline(
                _entity_ops("version", f"{rdef.singular} version", f"Version_{gr}", document=doc_headers),
                ver_inline, rnames, shared=params, level=f"{gr}.versions"), vparams)
            if rdef.hasdocument:
                paths[f"{r}$details"] = _with_params(_with_inline(
                    _entity_ops("resource", rdef.singular, f"Resource_{gr}", versions=f"Version_{gr}"),
                    res_inline, rnames, shared=params, level=gr), rparams)
                paths[f"{r}/versions/{{versionid}}$details"] = _with_params(_with_inline(
                    _entity_ops("version", f"{rdef.singular} version", f"Version_{gr}"), ver_inline, rnames,
                    shared=params, level=f"{gr}.versions"), vparams)
    return {
        "openapi": "3.1.0",
        "info": {"title": f"{settings.registry_name}: xRegistry 1.0-rc4 HTTP API", "version": "1.0-rc4",
                 "description": "The local registry of the gateway (core/http.md of xRegistry 1.0-rc4). "
                                "Reads need the `read` scope, writes the `write` scope."},
        "servers": [{"url": "/" + settings.registry_prefix.strip("/")}],
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "A static API key or a JWT."}},
            "parameters": params,
            "responses": responses,
            "schemas": {
                "Entity": {"type": "object", "additionalProperties": True},
                # core/model.md: a model document's own keys (what is inside them: model_error)
                "ModelSource": {"type": "object", "additionalProperties": False,
                                "properties": {key: {} for key in sorted(REGISTRY_KEYS)}},
                "Map": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": True}},
                "Collections": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Map"}},
                **body_schemas(model),
                "Problem": {
                    "description": "An error (core/spec.md \"Error Processing\"): `type` is the URI of the "
                                   "error's definition, `status` its HTTP status, `title` filled from `args`, "
                                   "`subject` the XID (or path) of the entity being processed, `instance` the "
                                   "request id.",
                    "type": "object", "required": ["type", "title", "status"],
                    "properties": {
                        "type": {"type": "string", "format": "uri"}, "title": {"type": "string", "minLength": 1},
                        "status": {"type": "integer", "minimum": 400, "maximum": 599},
                        "detail": {"type": "string"}, "subject": {"type": "string"}, "instance": {"type": "string"},
                        "source": {"type": "string"}, "args": {"type": "object",
                                                               "additionalProperties": {"type": "string"}},
                        "errors": {"type": "array", "items": {"type": "object"}},
                    },
                },
            },
        },
    }


#: Encoded documents by model (its identity: a model object never changes, and the registry makes
#: a new one only when its ``modelsource`` changes) and the settings the document names.
_BUILT: OrderedDict[tuple[int, str, str], tuple[weakref.ref[RegistryModel], bytes]] = OrderedDict()
#: Documents kept (models served at once: one per registry of the process, and the previous one).
_KEPT = 4
#: Held while a document is built: requests arriving meanwhile wait for it, not build it again.
_BUILDING = threading.Lock()


def _cached(key: tuple[int, str, str], model: RegistryModel) -> bytes | None:
    held = _BUILT.get(key)
    if held is None or held[0]() is not model:
        return None
    _BUILT.move_to_end(key)
    return held[1]


def _build(key: tuple[int, str, str], model: RegistryModel, settings: Settings) -> bytes:
    with _BUILDING:
        body = _cached(key, model)
        if body is None:
            body = dumps(openapi_document(model, settings))
            _BUILT[key] = (weakref.ref(model, lambda _ref: _BUILT.pop(key, None)), body)
            while len(_BUILT) > _KEPT:
                _BUILT.popitem(last=False)
        return body


async def openapi_body(model: RegistryModel, settings: Settings) -> bytes:
    """:func:`openapi_document` of ``model`` encoded as JSON: built once per model, in a worker
    thread (a large model's takes a fraction of a second: not on the event loop), and kept while
    the model is in use."""
    key = (id(model), settings.registry_name, settings.registry_prefix)
    body = _cached(key, model)
    return body if body is not None else await asyncio.to_thread(_build, key, model, settings)
