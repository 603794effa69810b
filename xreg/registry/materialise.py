"""Materialised messages: a message as it really is, its ``basemessageuri`` chain merged.

message/spec.md (``basemessage``): follow the chain of base messages to its end, take that
message's attributes, then walk back up laying each message over the one below — objects merge
key by key, any other value (a scalar over an object too) replaces. A dangling reference is not
an error (the message stays as far as it resolved); the chain must not be circular.

The write path keeps this view in the store (:func:`materialise`, called by every changeset's
commit): each message version's record carries its materialisation under :data:`DERIVED`, and a
message resource's record carries its default version's. It is not an xRegistry attribute — the
key cannot be one (attribute names are lower-case letters, digits and ``_``) and the views of the
xRegistry API and of ``export`` leave it out. Its links (:attr:`Materialised.chain`, the bases
it went through) go to the store's reverse index, so that writing a base finds every message
that inherits from it, transitively, with one index lookup, and re-materialises them in the
same commit — or, when there are more than the changeset's inline limit, leaves them to a
background worker (:mod:`xreg.registry.rematerialise`). As-of reads see the view as it was at
that revision, since it is part of the record.

A chain that leaves the registry (an absolute URL) stops here with ``unresolved`` naming it;
the GraphQL layer continues it at read time through the federation.

Many messages at once (a base's dependents) are taken up and derived :data:`SLICE` at a time,
the event loop free to serve requests between slices (:func:`slices`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.storage.base import Store
from xreg.storage.records import EntityRecord, Query
from xreg.xid import Xid

#: The record key holding the materialisation (not a valid attribute name, so never one).
DERIVED = "@materialised"
#: The attribute naming a message's base.
BASE = "basemessageuri"
#: Longest chain followed (a longer one is reported as unresolved, the rest left out).
MAX_DEPTH = 32
#: Messages taken up or derived per turn of the event loop (see :func:`slices`).
SLICE = 16

T = TypeVar("T")


async def slices(items: Iterable[T], size: int = SLICE) -> AsyncIterator[T]:
    """``items``, one at a time, handing the event loop back after every ``size`` of them: a
    write of many messages (the worker's page of dependents) lets requests and health probes run
    between slices instead of holding the loop for all of them (nothing else touches the unit of
    work meanwhile: the registry's write lock is held)."""
    for i, item in enumerate(items):
        if i and not i % size:
            await asyncio.sleep(0)
        yield item
#: Attributes that describe a message itself and are never inherited from its base.
IDENTITY = frozenset({
    "xid", "self", "shortself", "epoch", "createdat", "modifiedat", "versionid", "isdefault", "ancestorid",
    "metaurl", "versionsurl", "versionscount", "meta", "versions", BASE, DERIVED,
})


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid over ``base``: objects merged recursively, other values replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def own_attributes(doc: dict[str, Any], id_attribute: str) -> dict[str, Any]:
    """What a message contributes to those based on it: everything but its identity."""
    return {k: v for k, v in doc.items() if k not in IDENTITY and k != id_attribute}


@dataclass
class Materialised:
    """The materialisation of one message (version).

    ``attributes``: the merged attributes (the message's own included, its identity not).
    ``inherited``: for each attribute the message does not declare itself, the XID of the base
    that supplied it. ``chain``: the XIDs the chain went through, nearest first (a resource
    reference is followed by its default version). ``unresolved``: where the chain stopped short
    — ``{"reference", "reason"}`` with reason ``dangling`` (no such local message),
    ``external`` (an absolute URL: another registry) or ``too_deep``.
    """

    attributes: dict[str, Any]
    inherited: dict[str, str] = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)
    unresolved: dict[str, str] | None = None

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"attributes": self.attributes, "inherited": self.inherited, "chain": self.chain}
        if self.unresolved is not None:
            doc["unresolved"] = self.unresolved
        return doc

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Materialised:
        return cls(dict(doc.get("attributes") or {}), dict(doc.get("inherited") or {}), list(doc.get("chain") or []),
                   doc.get("unresolved"))

    @property
    def links(self) -> tuple[str, ...]:
        """The keys the store indexes: every base of the chain, and a dangling reference's XID
        (so that creating it later re-materialises this message)."""
        keys = [x.lower() for x in self.chain]
        if self.unresolved and self.unresolved.get("reason") == "dangling":
            keys.append(self.unresolved["reference"].lower())
        return tuple(dict.fromkeys(keys))


def message_ctypes(model: RegistryModel) -> dict[str, str]:
    """The collection types (resources and their versions) whose entities are messages — the
    resource types whose model defines ``basemessageuri`` — with their id attribute."""
    out = {}
    for gtype, gdef in model.groups.items():
        for rtype, rdef in gdef.resources.items():
            if BASE in rdef.attributes:
                out[f"{gtype}/{rtype}"] = out[f"{gtype}/{rtype}/versions"] = rdef.id_attribute
    return out


def materialised_path(path: tuple[str, ...], id_attribute: str) -> tuple[str, ...]:
    """Where an attribute path of a message's view lives in its materialisation (identity
    attributes are not materialised: they stay where they are)."""
    if path and path[0] not in IDENTITY and path[0] != id_attribute:
        return (DERIVED, "attributes", *path)
    return path


def derived_of(kind: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The stored materialisation of a record (a resource's: its default version's)."""
    holder = doc.get("default") if kind == "resource" else doc
    return holder.get(DERIVED) if isinstance(holder, dict) else None


def materialised_view(kind: str, doc: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    """An xRegistry view with the materialised attributes of its stored record laid over it
    (unchanged for anything that is not a materialised message)."""
    derived = derived_of(kind, doc)
    return {**view, **derived["attributes"]} if derived else view


# -- maintained by the write path ---------------------------------------------------------------


class State(Protocol):
    """An entity's state in a unit of work (``doc`` ``None``: it does not exist)."""

    xid: str
    kind: str
    ctype: str
    doc: dict[str, Any] | None
    stored: dict[str, Any] | None

    @property
    def body(self) -> dict[str, Any]: ...


class Workspace(Protocol):
    """What materialisation needs of a unit of work (the changeset that calls it)."""

    store: Store
    model: RegistryModel

    def loaded(self, xid: str) -> State: ...

    async def state(self, xid: str) -> State: ...

    def remember(self, rec: EntityRecord) -> State: ...

    async def prefetch(self, xids: Iterable[str]) -> None: ...

    def set_derived(self, state: Any, derived: Materialised | None) -> None: ...

    def rewrite(self, state: Any) -> None: ...


class _Run:
    """One commit's materialisation: derives message versions from the changeset's states."""

    def __init__(self, cs: Workspace, ctypes: dict[str, str]) -> None:
        self.cs = cs
        self.ctypes = ctypes
        self.memo: dict[str, Materialised] = {}
        self.depth: dict[str, int] = {}  # how many bases each derived message's chain has

    def id_attribute(self, state: State) -> str:
        return self.ctypes[state.ctype]

    async def locate(self, reference: str) -> tuple[str, State | None, list[str]]:
        """``("local", version state, XIDs passed)``, ``("dangling", None, [])`` or
        ``("external", None, [])`` for a reference made in this registry."""
        ref = reference.strip()
        ref = ref[1:] if ref.startswith("#/") else ref  # a JSON pointer into the document: an XID
        if not ref.startswith("/"):
            return "external", None, []
        try:
            xid = Xid.parse(ref.rstrip("/"))
        except XRegistryError:
            return "dangling", None, []
        if xid.level not in ("resource", "version") or xid.ctype not in self.ctypes:
            return "dangling", None, []
        state = await self.cs.state(str(xid))
        if state.doc is None:
            return "dangling", None, []
        if xid.level == "version":
            return "local", state, [state.xid]
        default = (state.doc.get("meta") or {}).get("defaultversionid")
        if default is None:  # a cross-reference resource: no versions of its own
            return "dangling", None, []
        version = await self.cs.state(str(xid.version(str(default))))
        if version.doc is None:
            return "dangling", None, []
        return "local", version, [state.xid, version.xid]

    async def derive(self, state: State) -> Materialised:
        """The materialisation of a message version: walk its chain down (iteratively) to its
        end, a message already derived in this run, or a reference that does not resolve here;
        then merge back up, memoising every message passed."""
        if state.xid.lower() in self.memo:
            return self.memo[state.xid.lower()]
        path: list[State] = [state]
        passed: list[list[str]] = []  # the XIDs passed from path[i] to path[i + 1]
        on_path = {state.xid.lower()}
        end: Materialised | None = None
        current = state
        while True:
            reference = current.body.get(BASE)
            if not isinstance(reference, str) or not reference.strip():
                break
            where, base_state, via = await self.locate(reference)
            if where != "local" or base_state is None:
                ref = reference.strip().removeprefix("#").rstrip("/") if where == "dangling" else reference
                end = Materialised({}, unresolved={"reference": ref, "reason": where})
                break
            key = base_state.xid.lower()
            if key in on_path:
                names = [s.xid for s in path[[s.xid.lower() for s in path].index(key):]] + [base_state.xid]
                raise XRegistryError("invalid_attribute", path[0].xid, path=BASE, name=BASE,
                                     detail="the basemessageuri chain is circular: " + " -> ".join(names))
            path.append(base_state)
            passed.append(via)
            on_path.add(key)
            if key in self.memo:
                break
            current = base_state
        # merge back up: path[-1] is the end of the walk (derived already, or the chain's end)
        last = path[-1].xid.lower()
        if len(path) > 1 and last in self.memo:
            result, depth_below = self.memo[last], self.depth[last]
            path = path[:-1]
        else:
            own = own_attributes(path[-1].body, self.id_attribute(path[-1]))
            result = Materialised(own, unresolved=end.unresolved if end is not None else None)
            depth_below = 0
            self._remember(path[-1], result, 0)
            path = path[:-1]
        for i in range(len(path) - 1, -1, -1):
            message, via = path[i], passed[i]
            own = own_attributes(message.body, self.id_attribute(message))
            depth = depth_below + 1
            chain = [*via, *result.chain]
            if depth > MAX_DEPTH:  # bounded: beyond it, the message stays as declared
                result = Materialised(own, chain=chain[: 2 * (MAX_DEPTH + 1)],
                                      unresolved={"reference": str(message.body[BASE]), "reason": "too_deep"})
            else:
                result = Materialised(merge(result.attributes, own),
                                      {a: result.inherited.get(a, via[0]) for a in result.attributes if a not in own},
                                      chain, result.unresolved)
            self._remember(message, result, depth)
            depth_below = depth
        return self.memo[state.xid.lower()]

    def _remember(self, state: State, result: Materialised, depth: int) -> None:
        self.memo[state.xid.lower()] = result
        self.depth[state.xid.lower()] = depth


async def materialise(cs: Workspace, written: Iterable[str], *, inline: int | None = None) -> list[str]:
    """Re-materialise, in ``cs``, every message ``written`` touches: the written message
    versions and resources themselves, and every message whose chain passes through one of
    them (found in the store's reverse index). Raises ``invalid_attribute`` for a circular
    chain.

    ``inline``: at most that many dependents are re-materialised here; when there are more, none
    is, and the keys of the written messages are returned, their dependents left to
    :mod:`xreg.registry.rematerialise` (``None``: all of them here, nothing returned)."""
    ctypes = message_ctypes(cs.model)
    if not ctypes:
        return []
    changed = [cs.loaded(k) for k in written if cs.loaded(k).ctype in ctypes]
    if not changed:
        return []
    referrers = await cs.store.referrers([s.xid for s in changed], limit=None if inline is None else inline + 1,
                                         ordered=False)
    deferred: list[str] = []
    if inline is not None and len(referrers) > inline:
        deferred, referrers = [s.xid.lower() for s in changed if s.doc is not None or s.stored is not None], []
    await _derive_all(cs, ctypes, changed, referrers)
    return deferred


async def rematerialise(cs: Workspace, records: Iterable[EntityRecord]) -> None:
    """Re-materialise, in ``cs``, the stored messages ``records`` (dependents a write left to
    :mod:`xreg.registry.rematerialise`) from the current states of their chains."""
    ctypes = message_ctypes(cs.model)
    if ctypes:
        await _derive_all(cs, ctypes, [], [r for r in records if r.ctype in ctypes])


async def _derive_all(cs: Workspace, ctypes: dict[str, str], changed: list[State],
                      referrers: list[EntityRecord]) -> None:
    async for rec in slices(referrers):
        cs.remember(rec)
    # the chains of the referrers, and the default versions of the resources, in one read
    wanted = [x for rec in referrers for x in (derived_of(rec.kind, rec.doc) or {}).get("chain", ())]
    states = [*changed, *(cs.loaded(r.key) for r in referrers)]
    resources = [s for s in states if s.doc is not None and s.kind == "resource"]
    defaults = {s.xid.lower(): _default_version(s) for s in resources}
    await cs.prefetch([*wanted, *(x for x in defaults.values() if x)])
    run = _Run(cs, ctypes)
    versions = [s for s in states if s.doc is not None and s.kind == "version"]
    async for state in slices([*versions, *resources]):  # the versions first: the resources show theirs
        if state.kind == "version":
            cs.set_derived(state, await run.derive(state))
            continue
        vxid = defaults[state.xid.lower()]
        version = await cs.state(vxid) if vxid else None
        cs.set_derived(state, await run.derive(version) if version is not None and version.doc is not None
                        else None)


async def materialise_all(cs: Workspace) -> None:
    """Write every live entity again in ``cs``, every message re-materialised: brings a store
    written by an older gateway (no materialisation, no search text) up to date."""
    keys: list[str] = []
    ctypes = [*cs.model.groups, *(f"{g}/{r}" for g, gdef in cs.model.groups.items() for r in gdef.resources),
              *(f"{g}/{r}/versions" for g, gdef in cs.model.groups.items() for r in gdef.resources)]
    root = await cs.state("/")
    cs.rewrite(root)
    for ctype in ctypes:
        for rec in (await cs.store.list(Query(ctype))).items:
            state = cs.remember(rec)
            cs.rewrite(state)
            keys.append(state.xid.lower())
    await materialise(cs, keys)


async def needs_materialising(store: Store, model: RegistryModel) -> bool:
    """Whether ``store`` was written by a gateway that kept no materialisation. One message
    version tells: every write since materialises every message it touches, and the upgrade
    (:func:`materialise_all`) rewrites them all in one commit."""
    for ctype in message_ctypes(model):
        if ctype.endswith("/versions"):
            first = (await store.list(Query(ctype, limit=1))).items
            if first and DERIVED not in first[0].doc:
                return True
    return False


def _default_version(state: State) -> str | None:
    default = (state.body.get("meta") or {}).get("defaultversionid")
    return str(Xid.parse(state.xid).version(str(default))) if default is not None else None
