"""PUT / PATCH / POST / DELETE handlers (core/http.md "Entity Processing Rules", core/spec.md
"Deleting Entities").

Each request is one unit of work of the registry (:meth:`LocalRegistry.write
<xreg.registry.service.LocalRegistry.write>`, the write path shared with GraphQL and
``import``): everything is checked and the whole request is written in one store revision, or
nothing is. The request body, the flags and the ``inline`` value are all checked before the
unit is built, so a rejected request never leaves a trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from starlette.responses import Response

from gateway.http_api.body import json_object, parse_json, read_body
from gateway.http_api.capabilities import capabilities, check_versionmodes, mutable, supported
from gateway.http_api.context import Call
from gateway.http_api.documents import has_attribute_headers, header_attributes
from gateway.http_api.flags import _Unset
from gateway.http_api.inline import NOTHING, Inline
from gateway.http_api.reading import content_location, document, entity_body, meta_body, registry_body, version_url
from gateway.http_api.render import DETAILS, Renderer, relativize
from gateway.http_api.responses import json_response
from xreg.errors import ValidationErrors, XRegistryError
from xreg.ids import check_id
from xreg.model.modelsource import check_model_source, model_of_source
from xreg.registry import xrefs
from xreg.registry.capabilities import update as update_capabilities
from xreg.registry.changeset import Changeset, Outcome
from xreg.registry.filters import FilterExpression, Filters
from xreg.registry.reads import Selection, position, select, store_sort
from xreg.registry.service import Build, document_xids
from xreg.registry.views import url_for
from xreg.storage.records import EntityRecord
from xreg.storage.semantics import Sort

T = TypeVar("T")

class DryRun(Exception):
    """A ``?dryrun`` write that would be accepted: what it would do (nothing was written)."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__("dry run")
        self.outcome = outcome


async def run(call: Call, build: Build[T]) -> tuple[T, Outcome]:
    """The request as one unit of work of the registry (:meth:`LocalRegistry.write
    <xreg.registry.service.LocalRegistry.write>`): built, validated and committed in one
    revision, or nothing. With ``?dryrun`` it is built and validated only: a refusal is the
    error it would get, an acceptance raises :class:`DryRun`."""
    result = await call.registry.write(
        build, subject=call.subject, note=f"{call.request.method} {call.subject}",
        ignore_epoch="epoch" in call.flags.ignore, dry_run=call.flags.dryrun)
    if call.flags.dryrun:
        raise DryRun(result[1])
    call.correlation_id = result[1].correlation_id
    return result


#: What :func:`json_body` returns for an absent optional body (JSON ``null`` is ``None``).
ABSENT = object()


async def json_body(call: Call, *, required: bool = True) -> Any:
    """The request's JSON body (:data:`ABSENT` when there is none and it is not ``required``: zero
    bytes; a body of white space is refused, never read as "no body"); ``xRegistry-*`` headers are
    refused alongside JSON metadata."""
    header = has_attribute_headers(call.request.headers.items())
    if header:
        raise XRegistryError("extra_xregistry_header", call.subject, name=header,
                             detail="the metadata is in the body; use $details or drop the header")
    raw = await read_body(call.request, call.settings.max_body_bytes, call.subject)
    if not required and not raw:
        return ABSENT
    return parse_json(raw, call.request.headers.get("content-type"), call.subject)


def entity_map(value: Any, subject: str, what: str) -> dict[str, dict[str, Any]]:
    """A map of id to entity (a collection in a request); ``null`` members are ``bad_request``."""
    value = json_object(value, subject, f"a map of {what}")
    for key, member in value.items():
        json_object(member, f"{subject}/{key}", f"each {what[:-1] if what.endswith('s') else what}")
    return value


def drop_ids(call: Call, body: dict[str, Any], *names: str) -> dict[str, Any]:
    """``ignore=id``: the ids of the targeted entity in the body are not compared."""
    if "id" not in call.flags.ignore:
        return body
    return {k: v for k, v in body.items() if k not in names}


def _meta_ignores(call: Call, meta: dict[str, Any]) -> dict[str, Any]:
    drop = call.flags.ignore & {"defaultversionid", "defaultversionsticky"}
    return {k: v for k, v in meta.items() if k not in drop}


async def prefetch(call: Call, cs: Changeset, tree: dict[str, Any]) -> None:
    """Load every entity a request names in one store call (``tree``: the request in the shape
    of a registry document)."""
    await cs.prefetch(["/", *document_xids(tree, cs.model)])


async def apply_group(call: Call, cs: Changeset, gtype: str, gid: str, body: dict[str, Any], *, patch: bool) -> None:
    """Write a group and the resources nested in it."""
    subject = f"/{gtype}/{gid}"
    await cs.put_group(gtype, gid, body, patch=patch)
    for rtype in cs.model.group_def(gtype).resources:
        if body.get(rtype) is not None:
            for rid, rbody in entity_map(body[rtype], f"{subject}/{rtype}", rtype).items():
                await apply_resource(call, cs, gtype, gid, rtype, rid, rbody, patch=patch)


async def apply_resource(
    call: Call, cs: Changeset, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, patch: bool,
) -> None:
    """Write a resource (with its ``meta`` and ``versions``); its errors name it (see
    :func:`name_the_resource`)."""
    if isinstance(body.get("meta"), dict):
        body = {**body, "meta": _meta_ignores(call, body["meta"])}
    try:
        await cs.put_resource(gtype, gid, rtype, rid, body, patch=patch)
    except XRegistryError as err:
        named = body["versions"] if isinstance(body.get("versions"), dict) else {}
        raise name_the_resource(err, f"/{gtype}/{gid}/{rtype}/{rid}", named) from None


async def apply_default_version(call: Call, cs: Changeset, created: str | None = None) -> None:
    """The ``setdefaultversionid`` flag, after the rest of the request."""
    wanted = call.flags.setdefaultversionid
    if isinstance(wanted, _Unset):
        return
    t = call.target
    if wanted == "request":
        if created is None:
            raise XRegistryError("defaultversionid_request", t.resource_xid)
        wanted = created
    await cs.set_default_version(t.group_type, t.group_id, t.resource_type, t.resource_id, wanted)


async def _views(call: Call, ctype: str, xids: list[str], inline: Inline, filters: Filters | None = None,
                 sort: Sort | None = None) -> dict[str, Any]:
    """The processed entities of a collection write, by id: those ``filters`` select, in request
    order or ``sort``'s (core/http.md: the response "MUST be generated applying the semantics of
    any request flags specified in the request URL")."""
    found = await call.registry.store.get_many(xids)
    records = [found[x.lower()] for x in xids if x.lower() in found]
    renderer = Renderer(call.registry, call.flags)
    narrowed = {rec.key: await renderer.narrow(rec, filters) for rec in records}
    records = [rec for rec in records if (n := narrowed[rec.key]) is None or n.branches]
    if sort is not None:  # by the values the entities are served with (a cross-reference: its target's)
        by = store_sort(ctype, sort)
        shown = {r.key: r for r in await xrefs.resolve(call.registry.store, records)}
        records.sort(key=lambda r: position(shown[r.key], by), reverse=sort.descending)
    views = await renderer.entities(records, ctype, inline, narrowed)
    return {rec.id: view for rec, view in zip(records, views, strict=False)}


async def _narrowed(call: Call, rec: EntityRecord, filters: Filters | None) -> Filters | None:
    """The filters an entity write's response is rendered with: the branches the processed
    entity satisfies; when it satisfies none, nothing below it (the write is done: its response
    is the entity, not ``not_found``)."""
    narrowed = await call.renderer().narrow(rec, filters)
    if narrowed is not None and not narrowed.branches:
        return Filters((FilterExpression(exclude_all=True),))
    return narrowed


def name_the_resource(err: XRegistryError, rxid: str, named: Iterable[str] = ()) -> XRegistryError:
    """``err`` of a write addressed to resource ``rxid``, naming the resource where it names a
    version the request did not name itself (core/spec.md "Error Processing": the subject "MUST
    be a reference to the entity being processed"; the version that a resource's own attributes
    land on — its default or new version — is not what the request addressed). Versions of the
    body's ``versions`` map (``named``) keep their own subject."""
    prefix = rxid + "/versions/"
    keep = {prefix + vid for vid in named}
    for e in [err, *(err.errors if isinstance(err, ValidationErrors) else [])]:
        if e.subject.startswith(prefix) and e.subject not in keep:
            e.subject = rxid
    return err


def _created(outcome: Outcome, xid: str) -> bool:
    return xid in outcome.created


def _self(call: Call, xid: str, *, details: bool) -> str:
    return url_for(call.registry.base_url, xid) + (DETAILS if details else "")


# -- the registry --------------------------------------------------------------------------


def _check_registry_body(call: Call, body: dict[str, Any]) -> None:
    ignore = call.flags.ignore
    given = body.get("registryid")
    if given is not None and given != call.registry.registry_id and "id" not in ignore:
        raise XRegistryError("mismatched_id", "/", singular="registry", invalid_id=given,
                             expected_id=call.registry.registry_id)


async def write_root(call: Call) -> Response:
    body = json_object(await json_body(call), "/")
    groups = call.model.groups
    if call.request.method == "POST":
        inline = call.inline()
        filters = call.filters("")
        extra = next((k for k in body if k not in groups), None)
        if extra is not None:
            raise XRegistryError("groups_only", "/", name=extra)
        maps = {g: entity_map(v, f"/{g}", g) for g, v in body.items()}

        async def build_post(cs: Changeset) -> None:
            await prefetch(call, cs, maps)
            for gtype, members in maps.items():
                for gid, gbody in members.items():
                    await apply_group(call, cs, gtype, gid, gbody, patch=False)

        await run(call, build_post)
        out = {g: await _views(call, g, [f"/{g}/{gid}" for gid in members], inline.child(g) or NOTHING,
                               filters.descend(g) if filters else None)
               for g, members in maps.items()}
        return json_response(out)

    patch = call.request.method == "PATCH"
    _check_registry_body(call, body)
    # core/spec.md "capabilities Attribute": capabilities in the request are applied first (a
    # PATCH replaces each capability it names, a PUT's absent ones are reset), through the same
    # checks as PUT /capabilities
    settings = None
    if body.get("capabilities") is not None and "capabilities" not in call.flags.ignore:
        settings = update_capabilities(body["capabilities"], supported(), call.registry.capability_settings,
                                       patch=True)
    # modelsource, when present, is processed first: the groups of the request are the new model's
    # (and the response's flags name the new model's collections: checked before anything is written)
    source = None
    model = call.model
    if "modelsource" in body and "modelsource" not in call.flags.ignore:
        caps = capabilities(settings if settings is not None else call.registry.capability_settings)
        if not mutable(caps, "modelsource"):
            raise XRegistryError("readonly", "/modelsource", detail="modelsource is not mutable (capabilities)")
        source = check_model_source(body["modelsource"], call.registry.model_limits)
        model = model_of_source(source)
        check_versionmodes(model, caps, "/modelsource")
        groups = model.groups
    inline = call.inline(model=model)
    filters = call.filters("", model=model)
    maps = {g: entity_map(body[g], f"/{g}", g) for g in groups if body.get(g) is not None}
    attrs = drop_ids(call, {k: v for k, v in body.items() if k not in groups}, "registryid")

    async def build(cs: Changeset) -> None:
        if settings is not None:
            await cs.put_capabilities(settings)
        if source is not None:
            await cs.put_model_source(source)
        await prefetch(call, cs, maps)
        await cs.put_registry(call.registry.registry_id, attrs, patch=patch)
        for gtype, members in maps.items():
            for gid, gbody in members.items():
                await apply_group(call, cs, gtype, gid, gbody, patch=patch)

    await run(call, build)
    return json_response(await registry_body(call, call.flags, inline, filters, written=True))


async def write_capabilities(call: Call) -> Response:
    """``PUT`` / ``PATCH /capabilities`` (core/http.md): the capabilities checked against what the
    server supports (``xreg.registry.capabilities``) and stored with the registry entity in
    one revision; other root APIs are read-only (``action_not_supported``)."""
    if call.target.api != "capabilities":
        raise XRegistryError("action_not_supported", call.subject, action=call.request.method)
    request = json_object(await json_body(call), "/capabilities")
    settings = update_capabilities(request, supported(), call.registry.capability_settings,
                                   patch=call.request.method == "PATCH")

    async def build(cs: Changeset) -> None:
        await cs.put_capabilities(settings)

    await run(call, build)
    return json_response(capabilities(settings))


async def write_modelsource(call: Call) -> Response:
    """``PUT /modelsource``: the registry's new model (core/model.md "Creating or Updating the
    Registry Model"), checked (``model_error``) and refused when existing entities would not
    comply (``model_compliance_error``); stored with the registry entity in one revision."""
    source = check_model_source(json_object(await json_body(call), "/modelsource"), call.registry.model_limits)
    check_versionmodes(model_of_source(source), capabilities(call.registry.capability_settings), "/modelsource")

    async def build(cs: Changeset) -> None:
        await cs.put_model_source(source)

    await run(call, build)
    return json_response(call.registry.model_source or {})


# -- collections ---------------------------------------------------------------------------


async def write_collection(call: Call) -> Response:
    """PATCH / POST to ``/<GROUPS>``, ``…/<RESOURCES>`` or ``…/versions``: a map of entities."""
    t = call.target
    inline = call.inline()
    filters, sort = call.filters(t.ctype), call.sort(t.ctype)
    patch = call.request.method == "PATCH"
    what = t.resource_type if t.kind == "resources" else "versions" if t.kind == "versions" else t.group_type
    members = entity_map(await json_body(call), t.path, what)
    if t.kind == "versions":
        if not members and await call.registry.store.get(t.resource_xid) is None:
            raise XRegistryError("missing_versions", t.path)

        async def build(cs: Changeset) -> None:
            await cs.put_versions(t.group_type, t.group_id, t.resource_type, t.resource_id, members, patch=patch)
            await apply_default_version(call, cs)
    else:
        async def build(cs: Changeset) -> None:
            await prefetch(call, cs, {t.group_type: members if t.kind == "groups"
                                      else {t.group_id: {t.resource_type: members}}})
            for eid, ebody in members.items():
                if t.kind == "groups":
                    await apply_group(call, cs, t.group_type, eid, ebody, patch=patch)
                else:
                    await apply_resource(call, cs, t.group_type, t.group_id, t.resource_type, eid, ebody, patch=patch)

    await run(call, build)
    out = await _views(call, t.ctype, [f"{t.xid}/{eid}" for eid in members], inline, filters, sort)
    if call.flags.doc:
        relativize(out, t.xid, collection=True)
    return json_response(out)


def _delete_map(call: Call, value: Any) -> dict[str, Any]:
    t = call.target
    if t.kind == "versions":
        what, id_attr = "versions", "versionid"
    elif t.kind == "resources":
        what, id_attr = t.resource_type, t.resource_def.id_attribute
    else:
        what, id_attr = t.group_type, call.model.group_def(t.group_type).id_attribute
    members = entity_map(value, t.path, what)
    epochs: dict[str, Any] = {}
    for eid, member in members.items():
        check_id(eid, subject=f"{t.xid}/{eid}", attribute=id_attr)
        given = member.get(id_attr)
        if given is not None and given != eid:
            raise XRegistryError("mismatched_id", f"{t.xid}/{eid}", singular=id_attr[:-2], invalid_id=given,
                                 expected_id=eid)
        if t.kind == "resources":
            meta = member.get("meta")
            if isinstance(meta, dict) and meta.get("epoch") is not None:
                epochs[eid] = meta["epoch"]
            elif member.get("epoch") is not None:
                raise XRegistryError("misplaced_epoch", f"{t.xid}/{eid}")
        else:
            epochs[eid] = member.get("epoch")
    return epochs


async def delete_collection(call: Call) -> Response:
    """DELETE ``/<GROUPS>``, ``…/<RESOURCES>`` or ``…/versions``: the members a map names (their
    epochs checked), or all of them without a body. Members that do not exist are skipped."""
    t = call.target
    value = await json_body(call, required=False)
    parent = None if t.kind == "groups" else t.parent_xid
    if parent is not None:
        await call.record(parent)
    if value is ABSENT:
        page = await select(call.registry.store, Selection(ctype=t.ctype, parent=parent))
        epochs: dict[str, Any] = {rec.id: None for rec in page.items}
    else:
        epochs = _delete_map(call, value)

    async def build(cs: Changeset) -> None:
        for eid, epoch in epochs.items():
            try:
                await cs.delete(f"{t.xid}/{eid}", epoch=epoch)
            except XRegistryError as err:
                if err.type != "not_found":
                    raise
        if t.kind == "versions":
            await apply_default_version(call, cs)

    await run(call, build)
    return Response(status_code=204)


# -- single entities -----------------------------------------------------------------------


async def delete_entity(call: Call) -> Response:
    t = call.target

    async def build(cs: Changeset) -> None:
        await cs.delete(t.xid, epoch=call.flags.epoch)
        if t.kind == "version":
            await apply_default_version(call, cs)

    await run(call, build)
    return Response(status_code=204)


async def write_group(call: Call) -> Response:
    t = call.target
    inline = call.inline()
    filters = call.filters(t.ctype)
    body = json_object(await json_body(call), t.path)
    gdef = call.model.group_def(t.group_type)
    if call.request.method == "POST":
        extra = next((k for k in body if k not in gdef.resources), None)
        if extra is not None:
            raise XRegistryError("resources_only", t.path, name=extra)
        maps = {r: entity_map(v, f"{t.xid}/{r}", r) for r, v in body.items()}
        if not any(maps.values()):  # nothing to process, which would not create the group either
            await call.record()  # not_found when the group does not exist

        async def build_post(cs: Changeset) -> None:
            await prefetch(call, cs, {t.group_type: {t.group_id: maps}})
            for rtype, members in maps.items():
                for rid, rbody in members.items():
                    await apply_resource(call, cs, t.group_type, t.group_id, rtype, rid, rbody, patch=False)

        await run(call, build_post)
        out = {r: await _views(call, f"{t.gtype}/{r}", [f"{t.xid}/{r}/{rid}" for rid in members],
                               inline.child(r) or NOTHING, filters.descend(r) if filters else None)
               for r, members in maps.items()}
        return json_response(out)
    body = drop_ids(call, body, gdef.id_attribute)
    patch = call.request.method == "PATCH"
    async def build(cs: Changeset) -> None:
        await prefetch(call, cs, {t.group_type: {t.group_id: body}})
        await apply_group(call, cs, t.group_type, t.group_id, body, patch=patch)

    _, outcome = await run(call, build)
    return await _entity_response(call, t.xid, inline, outcome, filters=filters)


async def _entity_response(call: Call, xid: str, inline: Inline, outcome: Outcome,
                           headers: dict[str, str] | None = None, filters: Filters | None = None) -> Response:
    rec = await call.record(xid)
    body = await entity_body(call, rec, call.flags, inline, await _narrowed(call, rec, filters))
    headers = {**content_location(call, rec), **(headers or {})}
    if _created(outcome, xid):
        rdef = call.target.rdef
        headers["Location"] = _self(call, xid, details=rec.kind in ("resource",
                                                                    "version") and bool(rdef and rdef.hasdocument))
        return json_response(body, 201, headers)
    return json_response(body, 200, headers)


def _new_version(outcome: Outcome, rxid: str) -> str | None:
    prefix = rxid + "/versions/"
    return next((x for x in outcome.created if x.startswith(prefix)), None)


async def write_resource(call: Call) -> Response:
    """PUT / PATCH / POST to a resource: the resource with its default version, or (POST) one
    version; without ``$details`` on a type with documents, the document itself."""
    t = call.target
    if t.document_view:
        return await write_document(call)
    inline = call.inline()
    post = call.request.method == "POST"
    filters = call.filters(f"{t.ctype}/versions" if post else t.ctype)  # POST answers the new Version
    body = json_object(await json_body(call), t.path)
    if post:
        body = drop_ids(call, body, t.resource_def.id_attribute)

        async def build_post(cs: Changeset) -> str:
            vid = await cs.post_version(t.group_type, t.group_id, t.resource_type, t.resource_id, body)
            await apply_default_version(call, cs, vid)
            return vid

        try:
            vid, outcome = await run(call, build_post)
        except XRegistryError as err:
            raise name_the_resource(err, t.xid) from None
        return await _entity_response(call, f"{t.xid}/versions/{vid}", inline, outcome, filters=filters)
    body = drop_ids(call, body, t.resource_def.id_attribute)
    patch = call.request.method == "PATCH"

    async def build(cs: Changeset) -> None:
        await apply_resource(call, cs, t.group_type, t.group_id, t.resource_type, t.resource_id, body, patch=patch)
        await apply_default_version(call, cs)

    named = body["versions"] if isinstance(body.get("versions"), dict) else {}
    try:
        _, outcome = await run(call, build)
    except XRegistryError as err:
        raise name_the_resource(err, t.xid, named) from None
    created = _new_version(outcome, t.xid)
    headers = {"Content-Location": version_url(call, created)} if created else {}
    return await _entity_response(call, t.xid, inline, outcome, headers, filters)


async def write_meta(call: Call) -> Response:
    t = call.target
    call.inline()
    body = _meta_ignores(call, drop_ids(call, json_object(await json_body(call), t.path), t.resource_def.id_attribute))
    patch = call.request.method == "PATCH"

    async def build(cs: Changeset) -> None:
        await cs.put_meta(t.group_type, t.group_id, t.resource_type, t.resource_id, body, patch=patch)
        await apply_default_version(call, cs)

    _, outcome = await run(call, build)
    view = meta_body(call, await call.record())
    if _created(outcome, t.resource_xid):  # the resource was created through its meta
        return json_response(view, 201, {"Location": url_for(call.registry.base_url, t.xid)})
    return json_response(view)


async def write_version(call: Call) -> Response:
    t = call.target
    if t.document_view:
        return await write_document(call)
    inline = call.inline()
    filters = call.filters(t.ctype)
    body = drop_ids(call, json_object(await json_body(call), t.path), t.resource_def.id_attribute, "versionid")
    patch = call.request.method == "PATCH"

    async def build(cs: Changeset) -> None:
        await cs.put_version(t.group_type, t.group_id, t.resource_type, t.resource_id, t.version_id, body,
                             patch=patch)
        await apply_default_version(call, cs)

    _, outcome = await run(call, build)
    return await _entity_response(call, t.xid, inline, outcome, filters=filters)


async def write_document(call: Call) -> Response:
    """PUT (resource or version) / POST (resource: a new version) of a document: the body is
    the document, ``xRegistry-*`` headers patch the metadata (PATCH needs ``$details``)."""
    t = call.target
    method = call.request.method
    raw = await read_body(call.request, call.settings.max_body_bytes, t.path)
    attrs = header_attributes(call.request.headers.items(), call.model, t.group_type, t.resource_type, t.path)
    if "id" in call.flags.ignore:
        attrs.pop(t.resource_def.id_attribute, None)
        if t.kind == "version":
            attrs.pop("versionid", None)
    content_type = call.request.headers.get("content-type") or None  # absent (or empty): erased
    new_version = method == "POST"

    async def build(cs: Changeset) -> str | None:
        vid = await cs.put_document(t.group_type, t.group_id, t.resource_type, t.resource_id, t.vid, attrs, raw,
                                    content_type, new_version=new_version)
        await apply_default_version(call, cs, vid)
        return vid

    try:
        vid, outcome = await run(call, build)
    except XRegistryError as err:
        if t.kind == "resource":
            raise name_the_resource(err, t.xid) from None
        raise
    xid = f"{t.resource_xid}/versions/{vid}" if new_version else t.xid
    rec = await call.record(xid)
    headers: dict[str, str] = {}
    created = _new_version(outcome, t.resource_xid)
    if created:
        headers["Content-Location"] = url_for(call.registry.base_url, created)
    if _created(outcome, xid):
        headers["Location"] = url_for(call.registry.base_url, xid)
        return await document(call, rec, status=201, headers=headers)
    return await document(call, rec, headers=headers)
