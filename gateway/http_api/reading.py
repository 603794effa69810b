"""GET handlers: the registry, collections (paged), entities, ``meta``, documents and the root
APIs (``/capabilities``, ``/model``, ``/export``, ``/openapi.json``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.responses import Response

from gateway.http_api.capabilities import available, capabilities, supported
from gateway.http_api.context import Call
from gateway.http_api.documents import document_response
from gateway.http_api.flags import Flags
from gateway.http_api.inline import NOTHING, Inline
from gateway.http_api.openapi import openapi_body
from gateway.http_api.pagination import PageToken, link_values, read_page
from gateway.http_api.render import DETAILS, Renderer, relativize
from gateway.http_api.responses import JSON, add_links, json_response
from xreg.errors import XRegistryError
from xreg.registry import xrefs
from xreg.registry.capabilities import offered
from xreg.registry.filters import FilterExpression, Filters, parse_filters
from xreg.registry.reads import Selection, count
from xreg.registry.views import meta_view, url_for
from xreg.storage.records import EntityRecord
from xreg.storage.semantics import matches
from xreg.xid import Xid

#: What ``GET /export`` inlines unless ``?inline`` says otherwise (core/http.md: "The ``GET
#: /export`` API MUST be an alias for ``GET /?doc&inline=*,capabilities,modelsource``"). On the
#: built-in model ``modelsource`` is ``{}``: import such an export with ``?ignore=modelsource``.
EXPORT_INLINE = ["*", "capabilities", "modelsource"]


async def registry_body(call: Call, flags: Flags, inline: Inline, filters: Filters | None, *,
                        written: bool = False) -> dict[str, Any]:
    """The registry entity as ``flags`` ask (also the body of writes to ``/``: ``written``, then a
    registry the filters do not select is shown with nothing below it, not ``not_found``)."""
    rec = await call.record("/")
    renderer = Renderer(call.registry, flags)
    narrowed = await renderer.narrow(rec, filters)
    if narrowed is not None and not narrowed.branches:
        if not written:
            raise XRegistryError("not_found", "/", detail="the registry does not match the filter")
        narrowed = Filters((FilterExpression(exclude_all=True),))
    if flags.collections:
        inline = Inline(inline.names, everything=True)
    view = (await renderer.entities([rec], "", inline, {rec.key: narrowed}))[0]
    if inline.has("modelsource"):
        view["modelsource"] = call.registry.model_source or {}
    if inline.has("model"):
        view["model"] = call.model.to_json()
    if inline.has("capabilities"):
        view["capabilities"] = capabilities(call.registry.capability_settings)
    if inline.has("capabilitiesoffered"):
        view["capabilitiesoffered"] = offered(supported())
    if flags.doc:
        relativize(view, "/", collection=False)
    if flags.collections:
        view = {g: view[g] for g in call.model.groups}
    return view


async def get_modelsource(call: Call) -> Response:
    """The model definition last given through ``modelsource`` (``{}`` when it never was: the
    registry runs on the built-in model, ``/model``)."""
    return json_response(call.registry.model_source or {})


async def get_root(call: Call) -> Response:
    return json_response(await registry_body(call, call.flags, call.inline(), call.filters("")))


async def get_api(call: Call) -> Response:
    api = call.target.api
    if api == "capabilities":
        return json_response(capabilities(call.registry.capability_settings))
    if api == "capabilitiesoffered":
        return json_response(offered(supported()))
    if api == "model":
        return json_response(call.model.to_json())
    if api == "openapi.json":
        return Response(await openapi_body(call.model, call.settings), media_type=JSON)
    if api == ".xregistry":
        return json_response(discovery(call))
    flags = replace(call.flags, doc=True)
    caps = capabilities(call.registry.capability_settings)  # what a client made unavailable is left out
    default = [name for name in EXPORT_INLINE if name == "*" or available(caps, name)]
    return json_response(await registry_body(call, flags, call.inline(default), call.filters("")))


def discovery(call: Call) -> dict[str, Any]:
    """Registry-based discovery (core/http.md "xRegistry Discovery", ``GET /.xregistry``): this
    registry and the public URLs of the remote xRegistry servers the gateway federates (their
    ``base_url``; the ``url`` it calls them at may be an internal address and is not shown)."""
    urls = [call.registry.base_url]
    for entry in call.settings.registries:
        if entry.kind == "xregistry" and entry.base_url and entry.base_url not in urls:
            urls.append(entry.base_url)
    return {"registries": urls}


async def _refuse_doc_of_xref(call: Call) -> None:
    if call.flags.doc and call.target.kind in ("versions", "version"):
        rec = await call.registry.store.get(call.target.resource_xid)
        if rec is not None and (rec.doc.get("meta") or {}).get("xref"):
            raise XRegistryError("cannot_doc_xref", call.target.resource_xid)


async def get_collection(call: Call) -> Response:
    t, flags, settings = call.target, call.flags, call.settings
    inline = call.inline()
    filters = call.filters(t.ctype)
    sort = call.sort(t.ctype)
    await _refuse_doc_of_xref(call)
    parent = None if t.kind == "groups" else t.parent_xid
    if parent is not None:
        await call.record(parent)
    # the versions of a cross-reference are its target's (core/spec.md), listed under its own XIDs
    target = await xrefs.versions_owner(call.registry.store, parent) if t.kind == "versions" and parent else None
    token = PageToken.decode(flags.page, flags.sort or "", t.path) if flags.page is not None else None
    limit = min(flags.limit or settings.page_size_default, settings.page_size_max)
    sel = Selection(ctype=t.ctype, parent=target.xid if target else parent, filters=filters, sort=sort, limit=limit)
    page = await read_page(call.registry.store, sel, token)
    items = page.items  # the page's links keep the stored records' cursors
    if target is not None and parent is not None:
        items = [xrefs.rekey_version(r, parent, call.target.resource_def.id_attribute) for r in items]
    renderer = call.renderer()
    narrowed = {rec.key: await renderer.narrow(rec, filters) for rec in items}
    views = await renderer.entities(items, t.ctype, inline, narrowed)
    body = {rec.id: view for rec, view in zip(items, views, strict=False)}
    if flags.doc:
        relativize(body, t.xid, collection=True)
    # a first page holding the whole selection counts it (with its cross-references: :func:`select`)
    total = len(page.items) if token is None and not page.has_next else await count(call.registry.store, sel)
    params = [(k, v) for k, v in call.request.query_params.multi_items() if k not in ("page", "limit")]
    params.append(("limit", str(limit)))
    links = link_values(url_for(call.registry.base_url, t.xid), params, page, sel, flags.sort or "", total,
                        paged=flags.limit is not None or token is not None)
    return add_links(json_response(body), *links)


async def entity_body(call: Call, rec: EntityRecord, flags: Flags, inline: Inline,
                      narrowed: Filters | None = None) -> dict[str, Any]:
    """A group, resource or version as ``flags`` ask (also the body of writes to it)."""
    if flags.collections:
        inline = Inline(inline.names, everything=True)
    view = (await Renderer(call.registry, flags).entities([rec], rec.ctype, inline, {rec.key: narrowed}))[0]
    if flags.doc:
        relativize(view, rec.xid, collection=False)
    if flags.collections:
        view = {r: view[r] for r in call.model.group_def(rec.ctype).resources}
    return view


def version_url(call: Call, xid: str) -> str:
    """The URL of a version as this response shows it: its ``self``, so with ``$details`` when
    the response is the metadata of a type with documents (core/http.md "``self`` Attribute")."""
    t = call.target
    details = t.details and t.rdef is not None and t.rdef.hasdocument and not call.flags.doc
    return url_for(call.registry.base_url, xid) + (DETAILS if details else "")


def content_location(call: Call, rec: EntityRecord) -> dict[str, str]:
    """``Content-Location`` of a resource: its default version (the same URL as
    ``meta.defaultversionurl``)."""
    default = (rec.doc.get("meta") or {}).get("defaultversionid")
    if rec.kind != "resource" or default is None:
        return {}
    return {"Content-Location": version_url(call, str(Xid.parse(rec.xid).version(str(default))))}


async def document(
    call: Call, rec: EntityRecord, *, status: int = 200, headers: dict[str, str] | None = None,
) -> Response:
    """The document view of a resource or version."""
    rdef = call.target.resource_def
    flags = replace(call.flags, doc=False, binary=False)
    view = (await Renderer(call.registry, flags).entities([rec], rec.ctype, Inline({rdef.singular: NOTHING})))[0]
    view["self"] = view["self"].removesuffix(DETAILS)
    return document_response(view, rdef, call.target.resource_id, status=status,
                             headers={**content_location(call, rec), **(headers or {})})


async def get_entity(call: Call) -> Response:
    t = call.target
    inline = call.inline()
    filters = call.filters(t.ctype)
    await _refuse_doc_of_xref(call)
    source = await xrefs.source_version(call.registry.store, t.xid) if t.kind == "version" else None
    rec = source or await call.record()
    narrowed = await call.renderer().narrow(rec, filters)
    if narrowed is not None and not narrowed.branches:
        raise XRegistryError("not_found", t.xid, detail="the entity does not match the filter")
    if t.document_view and not call.flags.doc:
        return await document(call, rec)
    body = await entity_body(call, rec, call.flags, inline, narrowed)
    return json_response(body, headers=content_location(call, rec))


def meta_body(call: Call, rec: EntityRecord) -> dict[str, Any]:
    """The ``meta`` entity of a resource (document view: ``self`` relative; an ``xref`` meta
    reduced to its ids and ``xref``)."""
    view = meta_view(rec, call.registry.base_url)
    if call.target.resource_def.hasdocument and "defaultversionurl" in view and not call.flags.doc:
        view["defaultversionurl"] += DETAILS  # the version's metadata, not its document (core/spec.md)
    if call.flags.doc:
        if view.get("xref"):
            keep = ("self", "xid", "xref", call.target.resource_def.id_attribute)
            view = {k: v for k, v in view.items() if k in keep}
        relativize(view, view["xid"], collection=False)
    return view


async def get_meta(call: Call) -> Response:
    call.inline()
    [rec] = await xrefs.resolve(call.registry.store, [await call.record()])  # an xref shows its target's
    view = meta_view(rec, call.registry.base_url)
    if call.flags.filter:
        filters = parse_filters(call.flags.filter, subject=call.subject)
        if not filters.exclude_all and matches(view, filters.any_of):
            return json_response(meta_body(call, rec))
        raise XRegistryError("not_found", call.target.xid, detail="the entity does not match the filter")
    return json_response(meta_body(call, rec))
