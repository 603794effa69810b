"""Stored values the write path refuses today: what an older gateway let through (a ``meta``
whose ``createdat`` is ``true``, a ``modifiedat`` that is an array, a value nested deeper than the
depth rule allows) stays in the store, shows in reads, breaks the export's import and makes later
writes of the entity fail.

:func:`find_invalid` checks every live entity of the registry with the validation the write
path uses (:mod:`xreg.registry.validation`) and lists each violation. :func:`repair_timestamps`
repairs the ones it can — a ``createdat`` or ``modifiedat`` that is not a timestamp — each
entity in one write through the changeset, which validates the whole entity again: an entity
with other violations is left as it is and reported.

A repaired ``createdat`` is the entity's ``modifiedat`` when that one is valid (the earliest
time the entity is known to have existed), else the time of the repair; ``modifiedat`` becomes
the time of the repair, as after any write (and ``epoch`` is raised).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from xreg import json_limits
from xreg.errors import ValidationErrors, XRegistryError
from xreg.registry.changeset import Changeset
from xreg.registry.checker import validate_attributes
from xreg.registry.service import LocalRegistry
from xreg.registry.timestamps import utc_now
from xreg.registry.validation import registry_definitions, validate_entity
from xreg.xid import Xid

#: The attributes :func:`repair_timestamps` repairs.
TIMESTAMPS = ("createdat", "modifiedat")


@dataclass(frozen=True)
class Finding:
    """One stored value the write path refuses: the entity (a resource's ``meta``: its meta XID),
    the attribute path, why, and whether :func:`repair_timestamps` repairs it (a value nested
    deeper than the depth rule allows is listed, not repaired)."""

    xid: str
    path: str
    detail: str

    @property
    def repairable(self) -> bool:
        return self.path in TIMESTAMPS


@dataclass(frozen=True)
class Repair:
    """What :func:`repair_timestamps` did to one entity: the values written, or why it could not."""

    xid: str
    values: dict[str, str]
    refused: str | None = None


def _findings(subject: str, errors: list[XRegistryError]) -> list[Finding]:
    return [Finding(subject, e.path or "", e.detail or e.title) for e in errors]


def _too_deep(subject: str, attrs: dict[str, Any]) -> list[Finding]:
    """A value beyond the depth rule (:func:`xreg.json_limits.check_attributes`)."""
    try:
        json_limits.check_attributes(attrs)
    except json_limits.JSONLimitError as exc:
        return [Finding(subject, exc.path.lstrip("/").replace("/", "."), exc.detail)]
    return []


def _attributes(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored state's attributes: without what the gateway keeps beside them under names no
    attribute can have (``@materialised``, ``@modelsource``, ``@capabilities``)."""
    return {k: v for k, v in doc.items() if not k.startswith("@")}


def _check(level: str, attrs: dict[str, Any], registry: LocalRegistry, gtype: str, rtype: str | None,
           subject: str, group_attrs: dict[str, Any] | None = None) -> list[Finding]:
    attrs = _attributes(attrs)
    found = _too_deep(subject, attrs)
    try:
        validate_entity(level, attrs, model=registry.model, group_type=gtype, resource_type=rtype, subject=subject,
                        group_attrs=group_attrs)
    except ValidationErrors as errs:
        found += _findings(subject, errs.errors)
    except XRegistryError as err:
        found += _findings(subject, [err])
    return found


async def _entities(registry: LocalRegistry) -> AsyncIterator[tuple[str, dict[str, Any], list[Finding]]]:
    """Every live entity (the registry, groups, versions, resources' ``meta``): its XID, the
    attributes as stored and the violations found in them."""
    root = await registry.store.get("/")
    if root is not None:
        attrs = _attributes(root.doc)
        yield "/", attrs, _too_deep("/", attrs) + _findings("/", validate_attributes(
            attrs, registry_definitions(registry.model), subject="/", extensible=True, model=registry.model))
    for gtype, gdef in registry.model.groups.items():
        groups: dict[str, dict[str, Any]] = {}
        async for g in registry.iter_ctype(gtype):
            groups[g.key] = g.doc
            yield g.xid, g.doc, _check("group", g.doc, registry, gtype, None, g.xid)
        for rtype in gdef.resources:
            async for v in registry.iter_ctype(f"{gtype}/{rtype}/versions"):
                group_attrs = groups.get(Xid.parse(v.xid).group.key)
                yield v.xid, v.doc, _check("version", v.doc, registry, gtype, rtype, v.xid, group_attrs)
            async for r in registry.iter_ctype(f"{gtype}/{rtype}"):
                meta = r.doc.get("meta") or {}
                mxid = str(Xid.parse(r.xid).meta_of())
                yield mxid, meta, _check("meta", meta, registry, gtype, rtype, mxid)


async def find_invalid(registry: LocalRegistry) -> list[Finding]:
    """Every stored value of the registry's live entities that the write path refuses."""
    await registry.sync_model()
    return [f async for _, _, found in _entities(registry) for f in found]


def _replacement(attrs: dict[str, Any], bad: set[str], now: str) -> dict[str, str]:
    """The timestamps to write for an entity whose ``bad`` ones are invalid (module docstring)."""
    modified = attrs.get("modifiedat") if "modifiedat" not in bad else None
    created = attrs.get("createdat") if "createdat" not in bad else None
    return {"createdat": created or modified or now, "modifiedat": now}


async def _rewrite(cs: Changeset, xid: str, values: dict[str, str], registry_id: str) -> None:
    """Write ``values`` into the entity ``xid`` (patched: nothing else changes)."""
    if xid == "/":
        await cs.put_registry(registry_id, values, patch=True)
        return
    parsed = Xid.parse(xid)
    parts = parsed.parts
    if parsed.level == "group":
        await cs.put_group(parts[0], parts[1], values, patch=True)
    elif parsed.level == "meta":
        await cs.put_meta(parts[0], parts[1], parts[2], parts[3], values, patch=True)
    else:
        await cs.put_version(parts[0], parts[1], parts[2], parts[3], parts[4], values, patch=True)


async def repair_timestamps(registry: LocalRegistry) -> list[Repair]:
    """Repair every invalid ``createdat`` / ``modifiedat`` (module docstring), one write per
    entity; what the write path still refuses is reported, not written."""
    await registry.sync_model()
    todo: list[tuple[str, dict[str, str]]] = []
    now = utc_now()
    async for xid, attrs, found in _entities(registry):
        bad = {f.path for f in found if f.repairable}
        if bad:
            todo.append((xid, _replacement(attrs, bad, now)))
    done: list[Repair] = []
    for xid, values in todo:
        async def build(cs: Changeset, xid: str = xid, values: dict[str, str] = values) -> None:
            await _rewrite(cs, xid, values, registry.registry_id)

        try:
            await registry.write(build, subject=xid, note=f"repair timestamps of {xid}")
        except XRegistryError as exc:
            done.append(Repair(xid, values, refused=f"{exc.type}: {exc.title}"))
        else:
            done.append(Repair(xid, values))
    return done
