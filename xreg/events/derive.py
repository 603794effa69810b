"""The events of one interaction, derived from what its commit changes (core/events.md).

:func:`derive_events` is a pure function of the entity states a commit replaces and writes
(:class:`EntityChange`: the state before, ``None`` for a new entity, and after, ``None`` for a
deleted one), in time linear in the entities written (plus the sort of their XIDs). It applies
the rules of core/events.md:

* one of ``created`` / ``updated`` / ``deleted`` per subject, by precedence ``deleted``,
  ``created``, ``updated`` — an entity's event follows from whether it existed before and after
  the commit, and the ``updated`` a child implies on its parent is dropped when the parent itself
  is created or deleted;
* one event per type and subject: every reason an entity is updated is merged into one
  ``changed`` list (sorted, without duplicates);
* a Group created or deleted updates the Registry (``<GROUPS>``, ``<GROUPS>count``, ``epoch``,
  ``modifiedat``); a Resource the Group (``<RESOURCES>``, ``<RESOURCES>count``, ``epoch``,
  ``modifiedat``); a Version the Resource (``versions``, ``versionscount``, ``meta.epoch``,
  ``meta.modifiedat``);
* a Resource's ``changed`` names its default Version's attributes as they are and its ``meta``
  attributes prefixed ``meta.``; when ``meta.defaultversionid`` moves, every non-null attribute
  of the previous and of the new default Version;
* a Group's ``deprecated`` or a Resource's ``meta.deprecated`` set, removed or changed also gives
  a ``deprecation`` event naming the top-level ``deprecated`` attributes that changed;
* a Registry whose ``modelsource`` changed gives ``model.updated`` and ``modelsource.updated``
  (without ``changed``), whose capability settings changed ``capabilities.updated`` (the
  capability names), and names ``model`` / ``modelsource`` / ``capabilities`` in its own event;
* a message whose materialisation (its ``basemessageuri`` chain merged, kept under
  ``@materialised``) changed is ``updated`` with the materialised attributes that changed: a
  write of a base reports each message that inherits from it (see ``docs/events.md``).

Events come in XID order (parents before children: ``/``, ``/model``, ``/modelsource``,
``/capabilities``, then each Group, its Resources, their Versions), an entity's ``created`` /
``updated`` / ``deleted`` before its ``deprecation``. The creation of the Registry entity itself
(the first commit of a store) has no event: core/events.md defines none for it. Keys of a stored
state that start with ``@`` are the gateway's own (the model source, the capability settings, the
materialisation), never attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from xreg.events.record import EventDraft, event_type
from xreg.model.modelsource import STORED_KEY as MODEL_SOURCE_KEY
from xreg.registry.capabilities import STORED_KEY as CAPABILITIES_KEY
from xreg.registry.materialise import DERIVED


@dataclass(frozen=True)
class EntityChange:
    """One entity a commit writes: its state before (``None``: it did not exist) and after
    (``None``: deleted), as the store keeps them (a Resource: ``{"meta", "default"}``). Both
    ``None``: the interaction created the entity and deleted it again (``maxversions`` pruning a
    Version it had just created)."""

    xid: str
    kind: str
    ctype: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


_KIND_ENTITY = {"registry": "registry", "group": "group", "resource": "resource", "version": "version"}


def _attributes(doc: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (doc or {}).items() if not k.startswith("@")}


def changed_names(before: dict[str, Any] | None, after: dict[str, Any] | None) -> set[str]:
    """The top-level attribute names added, modified or removed between two states."""
    a, b = _attributes(before), _attributes(after)
    return {k for k in a.keys() | b.keys() if a.get(k, _MISSING) != b.get(k, _MISSING)}


_MISSING = object()


def _non_null(doc: dict[str, Any] | None) -> set[str]:
    return {k for k, v in _attributes(doc).items() if v is not None}


def _materialised_changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> set[str]:
    """The materialised attributes of a message that changed (its inherited ones included)."""
    old, new = (before or {}).get(DERIVED), (after or {}).get(DERIVED)
    if old == new:
        return set()
    return changed_names((old or {}).get("attributes"), (new or {}).get("attributes"))


def _deprecated_changes(before: Any, after: Any) -> tuple[str, ...] | None:
    """The top-level ``deprecated`` attribute names that changed (``None``: it did not change)."""
    if before == after:
        return None
    return tuple(sorted(changed_names(before if isinstance(before, dict) else None,
                                      after if isinstance(after, dict) else None)))


@dataclass
class _Subject:
    """The events of one subject being assembled."""

    xid: str
    entity: str
    action: str  # created / updated / deleted
    changed: set[str]
    deprecation: tuple[str, ...] | None = None
    extra: tuple[tuple[str, str, tuple[str, ...] | None], ...] = ()  # (entity, subject, changed)


def _order(xid: str) -> tuple[str, ...]:
    return tuple(xid.lower().split("/"))


def _parent(xid: str) -> str:
    """The owner of a Group (``/``), a Resource (its Group) or a Version (its Resource)."""
    return xid.rsplit("/", 2)[0] or "/"


def derive_events(changes: Iterable[EntityChange], *, time: str, correlation_id: str) -> list[EventDraft]:
    """The events of one interaction whose commit makes ``changes`` (see the module's rules)."""
    subjects: dict[str, _Subject] = {}
    implied: dict[str, tuple[str, str, set[str]]] = {}  # parent key -> (xid, kind, names)
    for ch in changes:
        entity = _KIND_ENTITY.get(ch.kind)
        if entity is None:
            continue
        key = ch.xid.lower()
        if ch.before is None and ch.after is None:  # created and deleted again: nothing changed
            # anyone could see, but the precedence of core/events.md makes its one event ``deleted``
            subjects[key] = _Subject(ch.xid, entity, "deleted", set())
            continue
        if ch.before is None or ch.after is None:
            if ch.kind == "registry":
                continue  # the registry entity's creation: no event is defined for it
            subjects[key] = _Subject(ch.xid, entity, "created" if ch.before is None else "deleted", set())
            parent = _parent(ch.xid)
            if ch.kind == "group":
                names = {ch.ctype, f"{ch.ctype}count", "epoch", "modifiedat"}
                pkind = "registry"
            elif ch.kind == "resource":
                rtype = ch.ctype.split("/")[-1]
                names = {rtype, f"{rtype}count", "epoch", "modifiedat"}
                pkind = "group"
            else:
                names = {"versions", "versionscount", "meta.epoch", "meta.modifiedat"}
                pkind = "resource"
            got = implied.setdefault(parent.lower(), (parent, pkind, set()))
            got[2].update(names)
            continue
        subjects[key] = _updated(ch, entity)
    for pkey, (pxid, pkind, names) in implied.items():
        s = subjects.get(pkey)
        if s is None:
            subjects[pkey] = _Subject(pxid, pkind, "updated", set(names))
        elif s.action == "updated":
            s.changed |= names
        # a parent created or deleted in the same interaction: that event takes precedence
    return list(_drafts(subjects, time, correlation_id))


def _updated(ch: EntityChange, entity: str) -> _Subject:
    before, after = ch.before or {}, ch.after or {}
    if ch.kind == "resource":
        mb, ma = before.get("meta") or {}, after.get("meta") or {}
        db, da = before.get("default") or {}, after.get("default") or {}
        meta_names = changed_names(mb, ma)
        if "defaultversionid" in meta_names:  # core/events.md: the default Version pointer moved
            names = _non_null(db) | _non_null(da)
        else:
            names = changed_names(db, da)
        names |= _materialised_changes(db, da)
        names |= {f"meta.{n}" for n in meta_names}
        return _Subject(ch.xid, entity, "updated", names, _deprecated_changes(mb.get("deprecated"),
                                                                              ma.get("deprecated")))
    names = changed_names(before, after) | _materialised_changes(before, after)
    subject = _Subject(ch.xid, entity, "updated", names)
    if ch.kind == "group":
        subject.deprecation = _deprecated_changes(before.get("deprecated"), after.get("deprecated"))
    elif ch.kind == "registry":
        extra: list[tuple[str, str, tuple[str, ...] | None]] = []
        if before.get(MODEL_SOURCE_KEY) != after.get(MODEL_SOURCE_KEY):
            names |= {"model", "modelsource"}
            extra += [("model", "/model", None), ("modelsource", "/modelsource", None)]
        old_caps, new_caps = before.get(CAPABILITIES_KEY) or {}, after.get(CAPABILITIES_KEY) or {}
        if old_caps != new_caps:
            names.add("capabilities")
            extra.append(("capabilities", "/capabilities", tuple(sorted(changed_names(old_caps, new_caps)))))
        subject.extra = tuple(extra)
    return subject


def _drafts(subjects: dict[str, _Subject], time: str, correlation_id: str) -> Iterator[EventDraft]:
    for key in sorted(subjects, key=_order):
        s = subjects[key]
        if s.action != "updated":
            yield EventDraft(event_type(s.entity, s.action), s.xid, time, correlation_id)
            continue
        if s.changed or s.extra:
            yield EventDraft(event_type(s.entity, "updated"), s.xid, time, correlation_id, tuple(sorted(s.changed)))
        for entity, subject, changed in s.extra:
            yield EventDraft(event_type(entity, "updated"), subject, time, correlation_id, changed)
        if s.deprecation is not None:
            yield EventDraft(event_type(s.entity, "deprecation"), s.xid, time, correlation_id, s.deprecation)
