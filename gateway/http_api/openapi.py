"""An OpenAPI 3.0 description of the served API, generated from the registry model
(``GET <prefix>/openapi.json``): every path of every group and resource type, its methods, the
flags each accepts, bodies, responses and problem documents, and bearer authentication."""

from __future__ import annotations

from typing import Any

from gateway.config import Settings
from gateway.http_api.flags import IGNORES
from gateway.model.registry_model import RegistryModel
from gateway.registry.ids import MAX_ID_LENGTH

ID_PATTERN = rf"^[A-Za-z0-9_][A-Za-z0-9\-._~:@]{{0,{MAX_ID_LENGTH - 1}}}$"
JSON = "application/json"

_IGNORE_VALUE = "(?:\\*|{})".format("|".join(IGNORES))
#: Boolean flags are bare (``?doc``); ``true`` / ``false`` are accepted too.
_BOOLEAN = {"type": "string", "enum": ["", "true", "false"]}
_FLAG_SCHEMAS: dict[str, dict[str, Any]] = {
    "inline": {"type": "array", "items": {"type": "string"}},
    "filter": {"type": "array", "items": {"type": "string"}},
    "ignore": {"type": "array", "items": {"type": "string", "pattern": f"^(?:{_IGNORE_VALUE}(?:,{_IGNORE_VALUE})*)?$"}},
    "sort": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1},
    "page": {"type": "string"},
    "doc": _BOOLEAN,
    "binary": _BOOLEAN,
    "collections": _BOOLEAN,
    "epoch": {"type": "integer", "minimum": 0},
    "specversion": {"type": "string"},
    "setdefaultversionid": {"type": "string"},
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


def _param(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/parameters/{name}"}


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True,
            "schema": {"type": "string", "pattern": ID_PATTERN, "maxLength": MAX_ID_LENGTH}}


def _json(schema: str) -> dict[str, Any]:
    return {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def _op(summary: str, flags: list[str], ok: dict[str, Any], *, body: str | None = None,
        document: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "parameters": [_param(f) for f in flags],
        "responses": {**ok, "4XX": {"description": "Problem", "content": _json("Problem")},
                      "503": {"description": "Busy", "content": _json("Problem")}},
    }
    if body is not None:
        op["requestBody"] = {"required": True, "content": _json(body)}
    if document:
        op["requestBody"] = {"required": False, "content": {
            JSON: {"schema": {}}, "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}
    return op


def _ok(status: str, schema: str, description: str = "OK") -> dict[str, Any]:
    return {status: {"description": description, "content": _json(schema)}}


_DELETED = {"204": {"description": "Deleted"}}
_DOC_OK = {"200": {"description": "The document", "content": {"*/*": {"schema": {}}}},
           "201": {"description": "Created", "content": {"*/*": {"schema": {}}}},
           "303": {"description": "The document is elsewhere (Location)"}}


def _entity_ops(kind: str, name: str, *, document: bool = False) -> dict[str, Any]:
    """Operations on one entity path (group, resource, version); ``document``: the document view."""
    created = {**_ok("200", "Entity"), **_ok("201", "Entity", "Created")}
    if document:
        ops = {"get": _op(f"The {name} document", _READ, _DOC_OK),
               "put": _op(f"Create or replace the {name} document", _WRITE, _DOC_OK, document=True)}
        if kind == "resource":
            ops["post"] = _op(f"Add a version to the {name} (document)", _WRITE + ["setdefaultversionid"], _DOC_OK,
                              document=True)
    else:
        write = _WRITE + (["setdefaultversionid"] if kind in ("resource", "version") else [])
        ops = {"get": _op(f"Get a {name}", _READ + ["filter"], _ok("200", "Entity")),
               "put": _op(f"Create or replace a {name}", write, created, body="Entity"),
               "patch": _op(f"Create or patch a {name}", write, created, body="Entity")}
        if kind == "group":
            ops["post"] = _op(f"Create or update resources of the {name}", _WRITE, _ok("200", "Collections"),
                              body="Collections")
        if kind == "resource":
            ops["post"] = _op(f"Create or update one version of the {name}", write, created, body="Entity")
    ops["delete"] = _op(f"Delete a {name}", ["epoch"] + (["setdefaultversionid"] if kind == "version" else []),
                        _DELETED)
    return ops


def _collection_ops(name: str, *, versions: bool = False) -> dict[str, Any]:
    extra = ["setdefaultversionid"] if versions else []
    return {
        "get": _op(f"List {name}", _READ + ["filter", "sort", "limit", "page"], _ok("200", "Map")),
        "patch": _op(f"Create or patch {name}", _WRITE + extra, _ok("200", "Map"), body="Map"),
        "post": _op(f"Create or update {name}", _WRITE + extra, _ok("200", "Map"), body="Map"),
        "delete": {**_op(f"Delete {name} (all, or those the body names)", extra, _DELETED),
                   "requestBody": {"required": False, "content": _json("Map")}},
    }


def _with_params(ops: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    return {"parameters": params, **ops}


def openapi_document(model: RegistryModel, settings: Settings) -> dict[str, Any]:
    """The OpenAPI 3.0 document of the API (paths relative to the API prefix)."""
    root_ops = {
        "get": _op("The registry", _READ + ["filter", "collections"], _ok("200", "Entity")),
        "put": _op("Update the registry (and nested groups)", _WRITE, _ok("200", "Entity"), body="Entity"),
        "patch": _op("Patch the registry (and nested groups)", _WRITE, _ok("200", "Entity"), body="Entity"),
        "post": _op("Create or update groups", _WRITE, _ok("200", "Collections"), body="Collections"),
    }
    paths: dict[str, Any] = {
        "/": root_ops,
        "/capabilities": {"get": _op("Capabilities", ["specversion"], _ok("200", "Entity"))},
        "/model": {"get": _op("The model", ["specversion"], _ok("200", "Entity"))},
        "/modelsource": {
            "get": _op("The model last given (`{}`: the built-in model)", ["specversion"], _ok("200", "Entity")),
            "put": _op("Replace the model", ["specversion"], _ok("200", "Entity"), body="Entity"),
        },
        "/export": {"get": _op("The whole registry, document view", ["inline", "filter", "binary", "specversion"],
                               _ok("200", "Entity"))},
        "/openapi.json": {"get": _op("This description", ["specversion"], _ok("200", "Entity"))},
    }
    for gtype, gdef in model.groups.items():
        gid = gdef.id_attribute
        g = f"/{gtype}/{{{gid}}}"
        paths[f"/{gtype}"] = _collection_ops(gtype)
        paths[g] = _with_params(_entity_ops("group", gdef.singular), [_path_param(gid)])
        for rtype, rdef in gdef.resources.items():
            rid = rdef.id_attribute
            r = f"{g}/{rtype}/{{{rid}}}"
            rparams = [_path_param(gid), _path_param(rid)]
            vparams = rparams + [_path_param("versionid")]
            paths[f"{g}/{rtype}"] = _with_params(_collection_ops(rtype), [_path_param(gid)])
            paths[r] = _with_params(_entity_ops("resource", rdef.singular, document=rdef.hasdocument), rparams)
            paths[f"{r}/meta"] = _with_params({
                "get": _op(f"The {rdef.singular}'s meta", _READ + ["filter"], _ok("200", "Entity")),
                "put": _op("Replace meta (creates the resource when missing)", _WRITE + ["setdefaultversionid"],
                           {**_ok("200", "Entity"), **_ok("201", "Entity", "Created")}, body="Entity"),
                "patch": _op("Patch meta (creates the resource when missing)", _WRITE + ["setdefaultversionid"],
                             {**_ok("200", "Entity"), **_ok("201", "Entity", "Created")}, body="Entity"),
            }, rparams)
            paths[f"{r}/versions"] = _with_params(_collection_ops("versions", versions=True), rparams)
            paths[f"{r}/versions/{{versionid}}"] = _with_params(
                _entity_ops("version", f"{rdef.singular} version", document=rdef.hasdocument), vparams)
            if rdef.hasdocument:
                paths[f"{r}$details"] = _with_params(_entity_ops("resource", rdef.singular), rparams)
                paths[f"{r}/versions/{{versionid}}$details"] = _with_params(
                    _entity_ops("version", f"{rdef.singular} version"), vparams)
    return {
        "openapi": "3.0.3",
        "info": {"title": f"{settings.registry_name}: xRegistry 1.0-rc4 HTTP API", "version": "1.0-rc4",
                 "description": "The local registry of the gateway (core/http.md of xRegistry 1.0-rc4). "
                                "Reads need the `read` scope, writes the `write` scope."},
        "servers": [{"url": "/" + settings.registry_prefix.strip("/")}],
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "A static API key or a JWT."}},
            "parameters": {name: {"name": name, "in": "query", "required": False, "description": _FLAG_HELP[name],
                                  "schema": schema, **({"style": "form", "explode": True}
                                                       if schema["type"] == "array" else {})}
                           for name, schema in _FLAG_SCHEMAS.items()},
            "schemas": {
                "Entity": {"type": "object", "additionalProperties": True},
                "Map": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": True}},
                "Collections": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Map"}},
                "Problem": {
                    "type": "object", "required": ["type", "title"],
                    "properties": {
                        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                        "detail": {"type": "string"}, "subject": {"type": "string"}, "instance": {"type": "string"},
                        "source": {"type": "string"}, "args": {"type": "object",
                                                               "additionalProperties": {"type": "string"}},
                        "errors": {"type": "array", "items": {"type": "object"}},
                    },
                },
            },
        },
    }
