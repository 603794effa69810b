"""Checks that write nothing: would a schema version be accepted (``checkSchemaVersion``, the dry
run of the write path), and does a payload fit a message definition (``validateMessage``).

``validateMessage`` evaluates through the bounded evaluator (``xreg.formats``); the JSON Schema
``$ref`` values that name a schema of the registries the gateway serves (an XID, or a URL of a
configured registry: :mod:`resolvers.references`' rules) are resolved here, through the
registries, and handed to it as documents — at most :data:`MAX_REFERENCED`, followed
transitively. Nothing else is ever fetched: any other reference is refused by the evaluator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from adapters.effective import is_message
from resolvers.references import only, resolve_strict
from resolvers.types.messages import dataschema_targets
from xreg.errors import UserInputError, ValidationErrors, XRegistryError
from xreg.formats import Refused, default
from xreg.registry.changeset import Changeset
from xreg.registry.schema_checks import document_of
from xreg.xid import Xid


@strawberry.type(description="One defect: where (a JSON pointer or path) and what.")
class Finding:
    path: str
    message: str


@strawberry.type(description="Whether a schema version would be accepted, and the outcome of its checks.")
class SchemaVersionCheck:
    accepted: bool = strawberry.field(description="Nothing refuses it: writing it would succeed.")
    versionid: str | None = strawberry.field(description="The version id it would get.")
    formatvalidated: bool | None
    formatvalidatedreason: str | None
    compatibilityvalidated: bool | None
    compatibilityvalidatedreason: str | None
    problems: list[JSON] = strawberry.field(
        description="Why it would be refused: the problem details the write would answer (type, title, detail, "
                    "errors with each defect's path).")


@strawberry.type(description="Whether a payload fits a message definition.")
class MessageValidation:
    valid: bool = strawberry.field(description="Checked, and no violation.")
    validated: bool = strawberry.field(description="Whether the payload could be checked at all (see `reason`).")
    reason: str | None
    format: str | None = strawberry.field(description="The schema format the payload was checked against.")
    schema: str | None = strawberry.field(description="The XID of the schema (version) used; null when inline.")
    violations: list[Finding]


@strawberry.type
class Checks:
    @strawberry.field(description="Would this schema version be accepted? Runs the write (format validation, the "
                                  "resource's compatibility rule along `ancestorid`, every other rule) and writes "
                                  "nothing — the way a CI job asks before publishing. `document` is the schema "
                                  "(JSON, or a string for text formats); `versionId` defaults to a new version.")
    async def check_schema_version(
        self, info: Info, group_id: str, schema_id: str, format: str, document: JSON,
        version_id: str | None = None, ancestor_id: str | None = None, group_type: str = "schemagroups",
        resource_type: str = "schemas", registry: str | None = None,
    ) -> SchemaVersionCheck:
        source = info.context.source(registry)
        own = source.own_registry()
        if own is None:
            raise UserInputError(f"registry {source.id!r} is not the gateway's own: it cannot be checked here")
        rdef = source.model.resource(group_type, resource_type)
        if rdef is None:
            raise XRegistryError("unknown_resource_type", f"/{group_type}", name=resource_type, group=group_type)
        body: dict[str, Any] = {"format": format, rdef.singular: document}
        if ancestor_id is not None:
            body["ancestorid"] = ancestor_id

        async def build(cs: Changeset) -> tuple[str, dict[str, Any]]:
            vid = await cs.post_version(group_type, group_id, resource_type, schema_id,
                                        {**body, **({"versionid": version_id} if version_id else {})})
            state = await cs.state(str(Xid(group_type, group_id, resource_type, schema_id, vid)))
            return vid, dict(state.doc or {})

        try:
            (vid, doc), _ = await own.write(build, subject=f"/{group_type}/{group_id}", note="dry run",
                                                        dry_run=True)
        except XRegistryError as exc:
            errors = exc.errors if isinstance(exc, ValidationErrors) else [exc]
            return SchemaVersionCheck(accepted=False, versionid=version_id, formatvalidated=None,
                                      formatvalidatedreason=None, compatibilityvalidated=None,
                                      compatibilityvalidatedreason=None,
                                      problems=[JSON(e.to_problem()) for e in errors])
        return SchemaVersionCheck(
            accepted=True, versionid=vid, formatvalidated=doc.get("formatvalidated"),
            formatvalidatedreason=doc.get("formatvalidatedreason"),
            compatibilityvalidated=doc.get("compatibilityvalidated"),
            compatibilityvalidatedreason=doc.get("compatibilityvalidatedreason"), problems=[])

    @strawberry.field(description="Does this payload fit the message? Checks `data` against the message's "
                                  "(materialised) `dataschema` — inline, `dataschemaxid` or `dataschemauri` — and, "
                                  "when `metadata` is given, the envelope attributes the message declares `required` "
                                  "(and the fixed values it declares, such as the CloudEvents `type`).")
    async def validate_message(
        self, info: Info, xid: str, data: JSON, metadata: JSON | None = None, registry: str | None = None,
    ) -> MessageValidation:
        source = info.context.source(registry)
        entity = await info.context.loaders.entity(source.id, xid, None)
        if entity is None or not is_message(entity):
            raise XRegistryError("not_found", xid, detail="no message with this XID")
        attrs = entity.attributes
        findings = _metadata_findings(attrs.get("envelopemetadata"), metadata) if metadata is not None else []
        fmt = attrs.get("dataschemaformat")
        schema_xid = None
        document = attrs.get("dataschema")
        if document is None:
            target = only(await dataschema_targets([info], [entity]))
            if target is None:
                return _outcome(findings, fmt, None, "not validated: the message has no schema the gateway can read")
            schema_xid = target.xid
            where = Xid.parse(target.xid)
            rdef = info.context.sources[target.registry].model.resource(str(where.group_type),
                                                                         str(where.resource_type))
            document = document_of(target.view, rdef)[1] if rdef is not None else target.view.get("schema")
            fmt = fmt or target.view.get("format")
        if not fmt:
            return _outcome(findings, None, schema_xid, "not validated: the message names no dataschemaformat")
        references = await _referenced_schemas(info, entity, document) if str(fmt).lower().startswith(
            "jsonschema") else {}
        try:
            result = await default().validate_payload(str(fmt), document, data, references)
        except Refused as e:
            if e.kind == "busy":  # not an answer about the payload: the caller retries
                raise XRegistryError("server_busy", xid, detail=e.detail, retry_after=e.retry_after) from None
            return _outcome(findings, str(fmt), schema_xid, e.reason())
        if not result.validated:
            return _outcome(findings, str(fmt), schema_xid, result.reason)
        findings += [Finding(path=v.path or "/", message=v.message) for v in result.violations]
        return MessageValidation(valid=not findings, validated=True, reason=None, format=str(fmt), schema=schema_xid,
                                 violations=findings)


#: Most registry-held schemas one validation follows ``$ref`` to.
MAX_REFERENCED = 16
# Keywords whose values are data, not subschemas.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})


def _refs(document: Any) -> Iterator[str]:
    """The ``$ref`` values of a JSON Schema that name another document (absolute, or an XID),
    without their fragment. Iterative: a deep document costs a bounded walk."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (base := ref.partition("#")[0]) and (
                    ":" in base or base.startswith("/")) and "json-schema.org/" not in base:
                yield base
            stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)


async def _referenced_schemas(info: Info, message: Any, document: Any) -> dict[str, Any]:
    """URI → document for each schema of the gateway's registries that ``document`` refers to
    (transitively, at most :data:`MAX_REFERENCED`); references that resolve to nothing there are
    left out (the evaluator refuses them)."""
    found: dict[str, Any] = {}
    pending = list(dict.fromkeys(_refs(document)))
    seen: set[str] = set()
    while pending and len(seen) < MAX_REFERENCED:
        uri = pending.pop(0)
        if uri in seen:
            continue
        seen.add(uri)
        try:
            target = await resolve_strict(info, message, uri, ("schemas", "schemas/versions"))
        except XRegistryError:
            continue
        where = Xid.parse(target.xid)
        rdef = info.context.sources[target.registry].model.resource(str(where.group_type), str(where.resource_type))
        referenced = document_of(target.view, rdef)[1] if rdef is not None else target.view.get("schema")
        if referenced is not None:
            found[uri] = referenced
            if isinstance(referenced, dict):
                pending.extend(r for r in _refs(referenced) if r not in seen)
    return found


def _outcome(findings: list[Finding], fmt: Any, schema: str | None, reason: str | None) -> MessageValidation:
    return MessageValidation(valid=False, validated=False, reason=reason, format=fmt, schema=schema,
                             violations=findings)


def _metadata_findings(declared: Any, given: Any) -> list[Finding]:
    """The envelope attributes a message declares ``required`` that ``given`` lacks, and the
    fixed values (not URI templates) it does not carry."""
    if not isinstance(given, dict):
        return [Finding(path="/metadata", message="metadata must be an object of envelope attributes")]
    out = []
    for name, spec in (declared or {}).items() if isinstance(declared, dict) else ():
        if not isinstance(spec, dict):
            continue
        if spec.get("required") and given.get(name) is None:
            out.append(Finding(path=f"/metadata/{name}", message=f"required envelope attribute {name!r} is missing"))
        value = spec.get("value")
        if (value is not None and name in given and spec.get("type") != "uritemplate" and "{" not in str(value)
                and given[name] != value):
            out.append(Finding(path=f"/metadata/{name}", message=f"{name} must be {value!r}, not {given[name]!r}"))
    return out
