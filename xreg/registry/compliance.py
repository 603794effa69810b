"""Whether the entities of a registry comply with a new model (core/model.md: "Servers MUST
ensure that the representation of all entities within the Registry adheres to the new model
prior to completing the model update request").

:func:`check_compliance` reads every stored group, resource and version and refuses the model
with ``model_compliance_error`` listing what would break: entities of a group or resource type
the model drops (a renamed ``plural`` drops one) or whose ``singular`` it renames, attributes the
model's definitions refuse (types, ``required``, ``enum``, …),
documents of a type that no longer has them, more versions than ``maxversions``. Nothing is
changed or deleted to make entities fit (the spec recommends refusing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from xreg.errors import ValidationErrors, XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry.materialise import DERIVED
from xreg.registry.validation import validate_entity
from xreg.storage.base import Store
from xreg.storage.records import EntityRecord, Query
from xreg.xid import Xid

SUBJECT = "/modelsource"
#: How many problems the error's ``errors`` list names at most.
LISTED = 100


async def _records(store: Store, ctype: str) -> AsyncIterator[EntityRecord]:
    after = None
    while True:
        page = await store.list(Query(ctype=ctype, limit=2000, after=after))
        for rec in page.items:
            yield rec
        if not page.has_next or not page.items:
            return
        after = page.cursor_of(page.items[-1], None)


def _validate(problems: list[str], level: str, body: dict[str, Any], model: RegistryModel, gtype: str,
              rtype: str | None, subject: str, group_attrs: dict[str, Any] | None = None) -> None:
    body = {k: v for k, v in body.items() if k != DERIVED}
    try:
        validate_entity(level, body, model=model, group_type=gtype, resource_type=rtype, subject=subject,
                        group_attrs=group_attrs)
    except ValidationErrors as errs:
        problems.extend(e.title for e in errs.errors)
    except XRegistryError as err:
        problems.append(err.title)


async def _renamed(store: Store, old: RegistryModel, new: RegistryModel) -> list[str]:
    """Group and resource types that keep their plural but rename their ``singular`` while
    entities of them are stored: those hold ``<singular>id`` (and a resource's versions their
    document as ``<singular>``, ``<singular>base64``, ``<singular>url``) under the old name, so
    the rename is refused rather than leaving them behind (a plural rename is a type dropped)."""
    problems: list[str] = []
    for gtype, gdef in old.groups.items():
        kept = new.group(gtype)
        if kept is None:
            continue
        renames = [(gtype, f"group type {gtype!r}", gdef.singular, kept.singular)]
        renames += [(f"{gtype}/{r}", f"resource type {r!r} in {gtype}", rdef.singular, kept.resources[r].singular)
                    for r, rdef in gdef.resources.items() if r in kept.resources]
        for ctype, what, before, after in renames:
            if before != after and (n := await store.count(Query(ctype=ctype))):
                problems.append(f"{what} renames its singular {before!r} to {after!r} while {n} of its entities "
                                f"exist, which hold {before + 'id'!r}: delete them first or keep the singular")
    return problems


async def check_compliance(store: Store, old: RegistryModel, new: RegistryModel) -> None:
    """Raise ``model_compliance_error`` unless every stored entity complies with ``new``."""
    problems: list[str] = await _renamed(store, old, new)
    for gtype, gdef in old.groups.items():
        kept = new.group(gtype)
        for ctype, what in ([(gtype, f"group type {gtype!r}")] if kept is None else
                            [(f"{gtype}/{r}", f"resource type {r!r} in {gtype}") for r in gdef.resources
                             if r not in kept.resources]):
            n = await store.count(Query(ctype=ctype))
            if n:
                problems.append(f"{n} entities of {what} exist, which the new model does not define")
    if not problems:
        for gtype, gdef in new.groups.items():
            groups: dict[str, dict[str, Any]] = {}
            async for g in _records(store, gtype):
                groups[g.key] = g.doc
                _validate(problems, "group", g.doc, new, gtype, None, g.xid)
            for rtype, rdef in gdef.resources.items():
                counts: dict[str, int] = {}
                documents = (rdef.singular, f"{rdef.singular}base64", f"{rdef.singular}url", f"{rdef.singular}uri")
                async for v in _records(store, f"{gtype}/{rtype}/versions"):
                    rkey = Xid.parse(v.key).resource.key
                    counts[rkey] = counts.get(rkey, 0) + 1
                    if not rdef.hasdocument and any(v.doc.get(n) is not None for n in documents):
                        # core/model.md hasdocument: "Attempts to change this value from true to false
                        # when there are existing Versions with domain-specific documents MUST generate
                        # an error (hasdocument_violation)."
                        raise XRegistryError("hasdocument_violation", v.xid, detail=(
                            f"{v.xid} has a document, but {rtype} would have none (hasdocument false)"))
                    _validate(problems, "version", v.doc, new, gtype, rtype, v.xid,
                              groups.get(Xid.parse(v.key).group.key))
                async for r in _records(store, f"{gtype}/{rtype}"):
                    meta = r.doc.get("meta") or {}
                    _validate(problems, "meta", meta, new, gtype, rtype, str(Xid.parse(r.xid).meta_of()))
                    if rdef.maxversions == 1 and meta.get("defaultversionsticky"):
                        # core/model.md maxversions: "An attempt to change maxversions to 1 when there
                        # are existing Resource instances that have their defaultversionsticky
                        # attribute set to true MUST generate an error (setdefaultversionsticky_false)."
                        raise XRegistryError("setdefaultversionsticky_false", r.xid, detail=(
                            f"{r.xid} has a sticky default version; maxversions 1 does not allow one"))
                    if rdef.maxversions and counts.get(r.key, 0) > rdef.maxversions:
                        problems.append(f"{r.xid} has {counts[r.key]} versions, more than maxversions "
                                        f"({rdef.maxversions})")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise XRegistryError("model_compliance_error", SUBJECT, detail="; ".join(problems[:3]) + more,
                             errors=[{"detail": p} for p in problems[:LISTED]])
