"""A fake xRegistry server written from the specification alone (1.0-rc4: core/http.md,
core/spec.md, core/model.md, pagination/spec.md), not from the gateway: it imports nothing of
``gateway``, ``resolvers`` or ``adapters``.

:func:`spec_app` serves one registry (groups → resources → versions, any model) read-only under
``/reg``, in the :class:`Shape` a test asks for:

* ``GET /capabilities`` (or not at all) lists exactly what this server does; absent flags are unsupported
  (spec.md, "Registry Capabilities") and a request carrying one is refused (``bad_flag``), so
  are ``limit`` without the ``pagination`` capability and a next link the client altered;
* ``GET /model``; the registry, groups, resources (``$details``: metadata; without it the
  document, its attributes in ``xRegistry-`` headers — http.md, "Resource Metadata vs Resource
  Document"; a type with ``hasdocument: false`` has no document and no ``$details`` URLs),
  ``meta``, versions;
* collections whole (``paging="none"``), or in pages of ``page_size`` with a ``Link: rel=next``
  whose target is relative or absolute;
* ``?inline`` (``*``, dotted paths, ``meta``, ``<RESOURCE>`` as ``<RESOURCE>`` or
  ``<RESOURCE>base64``) when offered — or only for ``meta`` and documents (``inline="leaf"``,
  collections refused with ``bad_inline``);
* hostile variants of the top-level collections: a ``next`` link cycle, an endless chain of
  pages, a ``next`` pointing to another host.

:attr:`Shape.hits` counts the requests per path.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

STAMP = "2024-04-30T12:00:00Z"
ROOT = "/reg"


@dataclass
class Shape:
    """How the fake behaves (see the module documentation)."""

    #: The model's ``groups`` (model.md): plural → {singular, resources: plural → {singular, hasdocument}}.
    groups: dict[str, Any]
    #: Entities: group plural → gid → {"attrs": {...}, <RESOURCES>: rid → {vid: attrs}}; a
    #: version's ``$document`` (bytes) and ``contenttype`` make its document. The last version is the default.
    data: dict[str, Any]
    registryid: str = "spec"
    specversion: str = "1.0-rc4"
    #: ``none`` (no pagination capability, whole collections), ``relative`` or ``absolute`` next links.
    paging: str = "none"
    page_size: int = 2
    #: Whether ``GET /capabilities`` is served (a SHOULD of http.md; without it nothing is offered).
    capabilities: bool = True
    #: ``all`` (the inline flag), ``leaf`` (offered, but only ``meta`` and documents), ``none``.
    inline: str = "all"
    #: ``cycle``, ``endless``, ``offhost`` (top-level collections only), or ``None``.
    hostile: str | None = None
    #: Where an ``offhost`` next link points.
    elsewhere: str = "http://127.0.0.1:9/"
    hits: Counter = field(default_factory=Counter)


def problem(kind: str, status: int, subject: str, detail: str) -> JSONResponse:
    """An error as http.md's "Error Processing" shapes it (RFC 9457)."""
    return JSONResponse({"type": f"https://github.com/xregistry/spec/blob/main/core/spec.md#{kind}",
                         "title": detail, "subject": subject, "instance": subject}, status,
                        media_type="application/problem+json")


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def spec_app(shape: Shape) -> Starlette:
    """The fake registry of ``shape`` (see the module documentation)."""

    def flags() -> list[str]:
        return ["inline"] if shape.inline != "none" else []

    def offered() -> bool:
        return shape.capabilities and shape.inline != "none"

    def capabilities() -> dict[str, Any]:
        return {"flags": flags(), "pagination": shape.paging != "none", "specversions": [shape.specversion],
                "mutable": [], "shortself": False}

    def model() -> dict[str, Any]:
        groups = {}
        for plural, g in shape.groups.items():
            groups[plural] = {"plural": plural, "singular": g["singular"], "resources": {
                rp: {"plural": rp, "singular": r["singular"], "hasdocument": r.get("hasdocument", True),
                     "maxversions": 0, "setversionid": True, "setdefaultversionsticky": True}
                for rp, r in g["resources"].items()}}
        return {"attributes": {}, "groups": groups}

    # -- views ------------------------------------------------------------------------------
    def document_of(rdef: dict[str, Any], attrs: dict[str, Any], inline_doc: bool) -> dict[str, Any]:
        if not inline_doc or "$document" not in attrs:
            return {}
        raw, singular = attrs["$document"], rdef["singular"]
        if str(attrs.get("contenttype", "")).split(";")[0].endswith("json"):
            return {singular: json.loads(raw)}
        return {singular + "base64": base64.b64encode(raw).decode()}

    def version_view(base: str, g: str, gid: str, r: str, rid: str, vid: str, inl: list[list[str]]) -> dict[str, Any]:
        rdef = shape.groups[g]["resources"][r]
        versions = shape.data[g][gid][r][rid]
        attrs = versions[vid]
        xid = f"/{g}/{gid}/{r}/{rid}/versions/{vid}"
        details = "$details" if rdef.get("hasdocument", True) else ""
        view = {rdef["singular"] + "id": rid, "versionid": vid, "self": base + xid + details, "xid": xid,
                "epoch": 1, "isdefault": vid == list(versions)[-1], "createdat": STAMP, "modifiedat": STAMP,
                "ancestorid": vid}
        view.update({k: v for k, v in attrs.items() if not k.startswith("$")})
        view.update(document_of(rdef, attrs, [rdef["singular"]] in inl or ["*"] in inl))
        return view

    def meta_view(base: str, g: str, gid: str, r: str, rid: str) -> dict[str, Any]:
        rdef = shape.groups[g]["resources"][r]
        versions = shape.data[g][gid][r][rid]
        xid = f"/{g}/{gid}/{r}/{rid}"
        default = list(versions)[-1]
        details = "$details" if rdef.get("hasdocument", True) else ""
        return {rdef["singular"] + "id": rid, "self": base + xid + "/meta", "xid": xid + "/meta", "epoch": 1,
                "createdat": STAMP, "modifiedat": STAMP, "readonly": False, "compatibility": "none",
                "defaultversionid": default, "defaultversionurl": f"{base}{xid}/versions/{default}{details}",
                "defaultversionsticky": False}

    def resource_view(base: str, g: str, gid: str, r: str, rid: str, inl: list[list[str]]) -> dict[str, Any]:
        rdef = shape.groups[g]["resources"][r]
        versions = shape.data[g][gid][r][rid]
        xid = f"/{g}/{gid}/{r}/{rid}"
        details = "$details" if rdef.get("hasdocument", True) else ""
        view = version_view(base, g, gid, r, rid, list(versions)[-1], inl)
        view.update({"self": base + xid + details, "xid": xid, "metaurl": base + xid + "/meta",
                     "versionsurl": base + xid + "/versions", "versionscount": len(versions)})
        if ["meta"] in inl or ["*"] in inl:
            view["meta"] = meta_view(base, g, gid, r, rid)
        if below(inl, "versions") is not None:
            view["versions"] = {v: version_view(base, g, gid, r, rid, v, below(inl, "versions") or [])
                                for v in versions}
        return view

    def group_view(base: str, g: str, gid: str, inl: list[list[str]]) -> dict[str, Any]:
        gdef = shape.groups[g]
        entity = shape.data[g][gid]
        xid = f"/{g}/{gid}"
        view = {gdef["singular"] + "id": gid, "self": base + xid, "xid": xid, "epoch": 1, "createdat": STAMP,
                "modifiedat": STAMP, **entity.get("attrs", {})}
        for r in gdef["resources"]:
            view[r + "url"] = f"{base}{xid}/{r}"
            view[r + "count"] = len(entity.get(r, {}))
            nested = below(inl, r)
            if nested is not None:
                view[r] = {rid: resource_view(base, g, gid, r, rid, nested) for rid in entity.get(r, {})}
        return view

    def registry_view(base: str, inl: list[list[str]]) -> dict[str, Any]:
        view = {"specversion": shape.specversion, "registryid": shape.registryid, "self": base + "/", "xid": "/",
                "epoch": 1, "createdat": STAMP, "modifiedat": STAMP}
        for g in shape.groups:
            view[g + "url"] = f"{base}/{g}"
            view[g + "count"] = len(shape.data.get(g, {}))
            nested = below(inl, g)
            if nested is not None:
                view[g] = {gid: group_view(base, g, gid, nested) for gid in shape.data.get(g, {})}
        return view

    def below(inl: list[list[str]], name: str) -> list[list[str]] | None:
        """The inline paths under collection ``name`` (``None``: it is not inlined)."""
        if ["*"] in inl:
            return [["*"]]
        rest = [p[1:] for p in inl if p and p[0] == name]
        return None if not rest else [p for p in rest if p]

    # -- requests ---------------------------------------------------------------------------
    def inline_paths(request: Request, subject: str, names: set[str]) -> list[list[str]]:
        values = [v for raw in request.query_params.getlist("inline") for v in (raw or "*").split(",")]
        if values and not offered():
            raise _Refused(problem("bad_flag", 400, subject, "The specified flag (inline) is not allowed"))
        paths = [v.split(".") for v in values if v]
        for p in paths:
            if p != ["*"] and p[0] not in names:
                raise _Refused(problem("bad_inline", 400, subject, f"unknown inline value {'.'.join(p)}"))
            if shape.inline == "leaf" and (len(p) > 1 or p[0] == "*" or p[0] not in leaf_names(names)):
                raise _Refused(problem("bad_inline", 400, subject, f"inline={'.'.join(p)} is not supported here"))
        return paths

    def leaf_names(names: set[str]) -> set[str]:
        """What "leaf" inlining allows: `meta` and documents."""
        return {n for n in names if n == "meta" or any(n == r["singular"] for g in shape.groups.values()
                                                       for r in g["resources"].values())}

    def check_flags(request: Request, subject: str) -> None:
        known = {"inline"} if offered() else set()
        if shape.paging != "none" and shape.capabilities:
            known |= {"limit", "page", "link"}
        for name in request.query_params:
            if name not in known:
                raise _Refused(problem("bad_flag", 400, subject, f"The specified flag ({name}) is not allowed"))

    def collection(request: Request, base: str, subject: str, entries: dict[str, Any], top: bool) -> Response:
        """A collection: whole, or one page with its ``Link`` (the first request's flags kept in it)."""
        keys = sorted(entries)
        hostile = shape.hostile if top else None
        if shape.paging == "none" and hostile is None:
            return JSONResponse({k: entries[k] for k in keys})
        flags_kept = [(k, v) for k, v in request.query_params.multi_items() if k not in ("page", "link")]
        page = int(request.query_params.get("page", "1"))
        if "page" in request.query_params:  # a next link: used as given, nothing added (pagination/spec.md)
            if request.query_params.get("link") != _signature(flags_kept):
                raise _Refused(problem("bad_request", 400, subject, "a next link was modified by the client"))
        size = shape.page_size
        if "limit" in request.query_params:
            size = min(size, max(1, int(request.query_params["limit"])))
        chunk = keys[(page - 1) * size:page * size]
        body = {k: entries[k] for k in chunk}
        following = page + 1 if page * size < len(keys) else None
        if hostile == "cycle":
            following = 1 if page >= 2 else 2
        elif hostile == "endless":
            body, following = {f"x{page}": {**entries[keys[0]], "xid": f"{subject}/x{page}"}}, page + 1
        headers = {}
        if hostile == "offhost":
            headers["Link"] = f'<{shape.elsewhere.rstrip("/")}{ROOT}{subject}?page=2>; rel="next"'
        elif following is not None:
            query = urlencode([*flags_kept, ("page", str(following)), ("link", _signature(flags_kept))])
            last = quote(subject.rsplit("/", 1)[-1])
            target = f"{base}{subject}?{query}" if shape.paging == "absolute" else f"{last}?{query}"
            headers["Link"] = f'<{target}>;rel=next;count={len(keys)}'
        return JSONResponse(body, headers=headers)

    def document(base: str, g: str, gid: str, r: str, rid: str, vid: str | None) -> Response:
        """A document with the entity's attributes as ``xRegistry-`` headers (http.md)."""
        versions = shape.data[g][gid][r][rid]
        view = (version_view(base, g, gid, r, rid, vid, []) if vid else resource_view(base, g, gid, r, rid, []))
        attrs = versions[vid or list(versions)[-1]]
        headers = {}
        for name, value in view.items():
            if isinstance(value, (str, int, bool)):
                text = str(value).lower() if isinstance(value, bool) else str(value)
                headers[f"xRegistry-{name}"] = quote(text, safe="!#$&'()*+,/:;=?@[]^_`{|}~-.")
            elif isinstance(value, dict) and name == "labels":
                headers.update({f"xRegistry-labels.{k}": quote(str(v)) for k, v in value.items()})
        raw = attrs.get("$document", b"")
        media = str(attrs.get("contenttype") or "application/octet-stream")
        return Response(raw, media_type=media, headers={**headers, "Content-Disposition": rid})

    async def endpoint(request: Request) -> Response:
        rest = request.path_params.get("rest", "")
        shape.hits["/" + rest] += 1
        base = str(request.base_url).rstrip("/") + ROOT
        subject = "/" + rest.rstrip("/")
        try:
            check_flags(request, subject)
            return route(request, base, subject if subject != "/" else "/", [s for s in rest.split("/") if s])
        except _Refused as refused:
            return refused.response
        except KeyError:
            return problem("not_found", 404, subject, f"The specified entity cannot be found: {subject}")

    def route(request: Request, base: str, subject: str, parts: list[str]) -> Response:
        if parts == ["capabilities"] and shape.capabilities:
            return JSONResponse(capabilities())
        if parts == ["capabilities"]:
            return problem("api_not_found", 404, subject, "The specified API is not supported: /capabilities")
        if parts == ["model"]:
            return JSONResponse(model())
        details = bool(parts) and parts[-1].endswith("$details")
        if details:
            parts[-1] = parts[-1][:-len("$details")]
        if details and len(parts) not in (4, 6):
            return problem("bad_details", 400, subject, "$details is only for resources and versions")
        if not parts:
            inl = inline_paths(request, subject, set(shape.groups))
            return JSONResponse(registry_view(base, inl))
        g = parts[0]
        gdef = shape.groups[g]
        if len(parts) == 1:
            inl = inline_paths(request, subject, set(gdef["resources"]))
            entries = {gid: group_view(base, g, gid, inl) for gid in shape.data.get(g, {})}
            return collection(request, base, subject, entries, top=True)
        gid = parts[1]
        _ = shape.data[g][gid]  # not found: KeyError
        if len(parts) == 2:
            return JSONResponse(group_view(base, g, gid, inline_paths(request, subject, set(gdef["resources"]))))
        r = parts[2]
        rdef = gdef["resources"][r]
        names = {"meta", "versions", rdef["singular"]}
        if len(parts) == 3:
            inl = inline_paths(request, subject, names)
            entries = {rid: resource_view(base, g, gid, r, rid, inl) for rid in shape.data[g][gid].get(r, {})}
            return collection(request, base, subject, entries, top=False)
        rid = parts[3]
        versions = shape.data[g][gid][r][rid]
        hasdocument = rdef.get("hasdocument", True)
        if len(parts) == 4:
            inl = inline_paths(request, subject, names)
            if hasdocument and not details:
                return document(base, g, gid, r, rid, None)
            return JSONResponse(resource_view(base, g, gid, r, rid, inl))
        if parts[4] == "meta" and len(parts) == 5:
            return JSONResponse(meta_view(base, g, gid, r, rid))
        if parts[4] != "versions":
            raise KeyError(parts[4])
        if len(parts) == 5:
            inl = inline_paths(request, subject, {rdef["singular"]})
            return collection(request, base, subject, {v: version_view(base, g, gid, r, rid, v, inl) for v in versions},
                              top=False)
        vid = parts[5]
        _ = versions[vid]  # not found: KeyError
        if hasdocument and not details:
            return document(base, g, gid, r, rid, vid)
        return JSONResponse(version_view(base, g, gid, r, rid, vid, inline_paths(request, subject, {rdef["singular"]})))

    return Starlette(routes=[Route(ROOT, endpoint), Route(ROOT + "/{rest:path}", endpoint)])


def _signature(flags: list[tuple[str, str]]) -> str:
    """What a next link carries to tell whether the client changed its query."""
    return hashlib.sha256(urlencode(sorted(flags)).encode()).hexdigest()[:16]
