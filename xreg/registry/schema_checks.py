"""Format validation and compatibility enforcement on the write path (core/model.md
``validateformat``, ``validatecompatibility``, ``strictvalidation``; core/spec.md ``format``,
``compatibility``, ``formatvalidated``, ``compatibilityvalidated``).

Every changeset runs :func:`check_resource` as it settles a Resource: each Version it writes of a
Resource type whose model sets ``validateformat`` is checked against its ``format``
(``xreg.formats``), and, when the Resource's ``meta.compatibility`` is not ``none`` and the
model sets ``validatecompatibility``, against the older Versions of its ``ancestorid`` lineage.
Changing ``meta.compatibility`` checks every Version. The outcome is recorded on the Version
(``formatvalidated`` / ``formatvalidatedreason``, ``compatibilityvalidated`` /
``compatibilityvalidatedreason``); a document that breaks its format or the compatibility rule is
refused (``format_violation`` / ``compatibility_violation``, each defect with its path in
``detail`` and in the error's ``errors`` list) and nothing is written. A document that cannot be
checked (an unsupported format, a document outside the registry) is recorded as not validated,
or refused when the model sets ``strictvalidation`` (``format_unknown``,
``compatibility_unknown``). A document the bounded evaluator refuses (``xreg.formats.Refused``:
over a size, depth, CPU, memory or time bound, a reference outside the registry, unsafe XML) is
refused as ``format_violation`` / ``compatibility_violation`` whatever ``strictvalidation`` says,
the bound named in ``detail`` (``server_busy`` when every evaluator worker stayed busy).
docs/schema-validation.md maps every case.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
from collections.abc import Iterable
from typing import Any, Protocol

from xreg.errors import XRegistryError
from xreg.formats import Refused, default
from xreg.model.registry_model import ANCESTOR_ID, ResourceDef
from xreg.xid import Xid

#: The Version attributes the checks set (server-computed: a request's values are ignored).
RESULT_ATTRIBUTES = frozenset({"formatvalidated", "formatvalidatedreason", "compatibilityvalidated",
                               "compatibilityvalidatedreason"})
#: Most defects listed in one error.
MAX_LISTED = 50


class Workspace(Protocol):
    """What the checks need of a unit of work (the changeset that calls them)."""

    #: Record the results as not validated instead of checking (``import --no-validate``).
    skip_validation: bool
    #: The ``formats`` / ``compatibilities`` capabilities a client narrowed (``None``: all the
    #: supported ones): a format or rule left out is not checked, as an unsupported one.
    enabled_formats: list[str] | None
    enabled_compatibilities: dict[str, list[str]] | None

    async def state(self, xid: str) -> Any: ...


def _enabled(value: str, patterns: Iterable[str]) -> list[str]:
    """The capability patterns (``*``: any run of characters, case-insensitive) ``value`` matches."""
    return [p for p in patterns if fnmatch.fnmatchcase(value.lower(), p.lower())]


def format_enabled(cs: Workspace, fmt: str) -> bool:
    """Whether the ``formats`` capability in force names ``fmt``."""
    return cs.enabled_formats is None or bool(_enabled(fmt, cs.enabled_formats))


def compatibility_enabled(cs: Workspace, fmt: str, mode: str) -> bool:
    """Whether the ``compatibilities`` capability in force lists ``mode`` for ``fmt``."""
    rules = cs.enabled_compatibilities
    if rules is None:
        return True
    return any(mode.lower() in {m.lower() for m in rules[p]} for p in _enabled(fmt, rules))


def flags(rdef: ResourceDef) -> tuple[bool, bool, bool]:
    """``(validateformat, validatecompatibility, strictvalidation)`` of a Resource type."""
    source = rdef.source or {}
    return (bool(source.get("validateformat")), bool(source.get("validatecompatibility")),
            bool(source.get("strictvalidation")))


def document_of(doc: dict[str, Any], rdef: ResourceDef) -> tuple[bool, Any]:
    """``(inside, document)``: the Version's document as ``xreg.formats`` takes it, and
    whether the registry holds it (``False``: it lives behind ``<RESOURCE>url``/``uri``)."""
    s = rdef.singular
    if doc.get(f"{s}url") is not None or doc.get(f"{s}uri") is not None:
        return False, None
    if f"{s}base64" in doc:
        try:
            return True, base64.b64decode(str(doc[f"{s}base64"]), validate=True)
        except (binascii.Error, ValueError):
            return True, str(doc[f"{s}base64"]).encode()
    return True, doc.get(s)


async def check_resource(cs: Workspace, rdef: ResourceDef, versions: Iterable[Any], mode: Any) -> list[XRegistryError]:
    """Check Versions of one Resource being written (each one's ``doc`` gets the outcome): the
    written ones, or all of them when its ``meta.compatibility`` changed; ``mode`` is the
    Resource's new ``meta.compatibility``.
    Returns the errors (nothing is raised here)."""
    check_format, check_compat, strict = flags(rdef)
    if not check_format and not check_compat:
        return []
    errors: list[XRegistryError] = []
    for state in sorted(versions, key=lambda s: s.xid.lower()):
        if state.doc is not None:
            errors += await _check(cs, state, rdef, mode if check_compat else None, check_format, strict)
    return errors


async def _check(cs: Workspace, state: Any, rdef: ResourceDef, mode: Any, check_format: bool,
                 strict: bool) -> list[XRegistryError]:
    doc = state.doc
    for name in RESULT_ATTRIBUTES:
        doc.pop(name, None)
    fmt = doc.get("format")
    inside, document = document_of(doc, rdef)
    if cs.skip_validation:
        doc["formatvalidated"] = False
        doc["formatvalidatedreason"] = "not validated: imported with validation switched off"
        return []
    errors: list[XRegistryError] = []
    if check_format:
        if not inside:
            doc["formatvalidated"] = False
            doc["formatvalidatedreason"] = f"not validated: the document is outside the registry ({rdef.singular}url)"
        elif not isinstance(fmt, str) or not fmt:
            doc["formatvalidated"] = False
            doc["formatvalidatedreason"] = "not validated: the version has no format"
        elif document is None or document in ("", b""):
            # core/model.md leaves empty (and absent) documents to each format: none is checked,
            # so a version may be created first and given its document later
            doc["formatvalidated"] = False
            doc["formatvalidatedreason"] = "not validated: the version has no document"
        elif not format_enabled(cs, fmt):
            reason = f"not validated: format {fmt!r} is turned off in the capabilities (formats)"
            if strict:
                errors.append(XRegistryError("format_unknown", state.xid, format=fmt, detail=reason))
            doc["formatvalidated"] = False
            doc["formatvalidatedreason"] = reason
        else:
            try:
                result = await default().validate(fmt, document)
            except Refused as e:
                if e.kind == "busy":
                    return [XRegistryError("server_busy", state.xid, detail=e.detail, retry_after=e.retry_after)]
                return [XRegistryError("format_violation", state.xid, format=fmt, detail=e.reason(),
                                       errors=[{"path": "", "message": e.reason(), "refused": e.kind}])]
            if result.validated and result.violations:
                listed = result.violations[:MAX_LISTED]
                errors.append(XRegistryError(
                    "format_violation", state.xid, format=fmt, detail="; ".join(str(v) for v in listed),
                    errors=[{"path": v.path, "message": v.message, **({"line": v.line} if v.line else {}),
                             **({"column": v.column} if v.column else {})} for v in listed]))
            elif not result.validated:
                if strict:
                    errors.append(XRegistryError("format_unknown", state.xid, format=fmt, detail=result.reason))
                doc["formatvalidated"] = False
                doc["formatvalidatedreason"] = result.reason or "not validated"
            else:
                doc["formatvalidated"] = True
    if isinstance(mode, str) and mode.lower() != "none":
        errors += await _compatibility(cs, state, rdef, mode, fmt, inside, document, strict)
    return errors


async def _compatibility(cs: Workspace, state: Any, rdef: ResourceDef, mode: str, fmt: Any, inside: bool,
                         document: Any, strict: bool) -> list[XRegistryError]:
    doc = state.doc
    xid = Xid.parse(state.xid)
    lineage = await _lineage(cs, state)
    older = [document_of(version.doc, rdef) for _, version in lineage]
    if not inside or any(not ok for ok, _ in older):
        doc["compatibilityvalidated"] = False
        doc["compatibilityvalidatedreason"] = "not validated: a document of the lineage is outside the registry"
        return []
    if not compatibility_enabled(cs, str(fmt or ""), mode):
        reason = f"not validated: {mode!r} for format {fmt!r} is turned off in the capabilities (compatibilities)"
        doc["compatibilityvalidated"] = False
        doc["compatibilityvalidatedreason"] = reason
        if strict:
            return [XRegistryError("compatibility_unknown", str(xid.resource), compat=mode, format=fmt, detail=reason)]
        return []
    try:
        result = await default().check_compatibility(str(fmt or ""), mode, document, [d for _, d in older])
    except Refused as e:
        if e.kind == "busy":
            return [XRegistryError("server_busy", state.xid, detail=e.detail, retry_after=e.retry_after)]
        return [XRegistryError("compatibility_violation", str(xid.resource), compat=mode,
                               detail=f"version {xid.version_id}: {e.reason()}",
                               errors=[{"version": state.xid, "path": "", "message": e.reason(), "refused": e.kind}])]
    if not result.checked:
        doc["compatibilityvalidated"] = False
        doc["compatibilityvalidatedreason"] = result.reason or "not validated"
        if strict:
            return [XRegistryError("compatibility_unknown", str(xid.resource), compat=mode, format=fmt,
                                   detail=result.reason)]
        return []
    if result.breaking:
        listed = result.breaking[:MAX_LISTED]
        return [XRegistryError(
            "compatibility_violation", str(xid.resource), compat=mode,
            detail=f"version {xid.version_id}: " + "; ".join(
                f"{b.path or '/'}: {b.message} ({b.direction}, against version {lineage[b.against][0]})"
                for b in listed),
            errors=[{"version": state.xid, "path": b.path, "message": b.message, "direction": b.direction,
                     "against": lineage[b.against][0]} for b in listed])]
    doc["compatibilityvalidated"] = True
    return []


async def _lineage(cs: Workspace, state: Any) -> list[tuple[str, Any]]:
    """The Versions this one derives from (``ancestorid``), oldest first: ``(versionid, state)``."""
    xid = Xid.parse(state.xid)
    seen = {str(xid.version_id)}
    chain: list[tuple[str, Any]] = []
    current = state
    while True:
        ancestor = (current.doc or {}).get(ANCESTOR_ID)
        if not ancestor or ancestor in seen:
            break
        seen.add(ancestor)
        older = await cs.state(str(xid.resource.version(str(ancestor))))
        if older.doc is None:
            break
        chain.append((str(ancestor), older))
        current = older
    chain.reverse()
    return chain
