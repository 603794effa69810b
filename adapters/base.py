"""Registry sources: what the GraphQL resolvers read from and write to.

A :class:`RegistrySource` is one registry behind a uniform interface: the gateway's own store
(:class:`adapters.local.LocalSource`), remote xRegistry HTTP APIs (:class:`adapters.remote.RemoteSource`)
and read-only documents (:class:`adapters.file.FileSource`); :class:`adapters.federation.Federation`
holds the configured set. Resolvers talk only to sources, so every entity they see is an :class:`Entity` — an
xRegistry JSON view plus which registry it came from and the revision it was read at.

Collections are read through a :class:`Listing` (collection types, filters, sort, one keyset
page). Cursors are opaque to callers, but every source issues them the same way — a
:class:`~xreg.storage.semantics.Cursor` (the row's key and sort value) — and accepts any such
position as ``after`` / ``before``, so that listings across registries can be merged. Writes exist
only on writable sources; the
others raise ``action_not_supported``.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adapters.caller import Caller
from xreg.errors import InstanceMismatch, UserInputError, XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry.filters import Filters
from xreg.storage.semantics import Sort
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.registry.service import LocalRegistry

#: Entity kinds: the registry, a group, a resource (its default version's view), a resource's
#: ``meta``, a version.
KINDS = ("registry", "group", "resource", "meta", "version")


class InvalidCursor(UserInputError):
    """A cursor that the source did not issue."""


class SourceUnavailable(XRegistryError):
    """A registry that could not be read: down, slower than its timeout, its circuit open, or
    answering garbage. A ``data_retrieval_error`` naming the registry (``args.registry``);
    ``remote_status``: the HTTP status the registry refused the request with (``None``: no answer)."""

    def __init__(self, registry: str, reason: str, subject: str = "/", *, remote_status: int | None = None) -> None:
        super().__init__("data_retrieval_error", subject, detail=f"registry {registry!r}: {reason}", registry=registry)
        self.registry = registry
        self.reason = reason
        self.remote_status = remote_status

    def __str__(self) -> str:
        return f"registry {self.registry!r}: {self.reason}"


@dataclass
class SourceStatus:
    """The health of a source: its last success and error (wall-clock seconds), its circuit
    breaker (``closed``, ``open``, ``half_open``; ``None`` without one) and cache figures."""

    registry: str
    kind: str
    url: str | None = None
    healthy: bool = True
    last_success: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    breaker: str | None = None
    requests: int = 0
    cache: dict[str, int] = field(default_factory=dict)
    #: ``reachable``, ``unreachable`` (its circuit is not closed, or its requests fail) or
    #: ``unknown`` (not asked yet).
    state: str = "reachable"
    #: When its requests began to fail, with no success since.
    unreachable_since: float | None = None
    #: When it first answered from a stale cache in the current outage (``None``: it has not).
    stale_since: float | None = None


@dataclass(frozen=True, slots=True)
class Materialisation:
    """A message as it really is: its ``basemessageuri`` chain merged (message/spec.md).

    ``attributes`` is the entity's view with the merged attributes laid over it — what its
    GraphQL fields show. ``inherited`` names, for each attribute the message does not declare,
    the ``(registry, XID)`` of the base that supplied it; ``chain`` the bases passed, nearest
    first. ``unresolved`` is ``(reference, reason)`` where the chain stopped short (``dangling``,
    ``external``, ``too_deep``, ``unresolved``, ``circular``), with the errors met in
    ``problems``. ``pending``: the chain goes on in another registry and has not been followed
    yet (the GraphQL loaders complete it at read time).
    """

    attributes: dict[str, Any]
    inherited: dict[str, tuple[str, str]] = field(default_factory=dict)
    chain: tuple[tuple[str, str], ...] = ()
    unresolved: tuple[str, str] | None = None
    pending: bool = False
    problems: tuple[XRegistryError, ...] = ()


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity as its xRegistry JSON view.

    ``ctype`` is its collection type (``""`` for the registry, ``messagegroups``,
    ``messagegroups/messages``, ``…/versions``; a ``meta`` has its resource's). ``meta`` is a
    resource's ``meta`` view when the source read it along. ``as_of`` is the revision it was
    read at (``None``: current), which nested reads inherit. ``partial``: the view's
    ``<COLLECTION>count`` values are placeholders, which :meth:`RegistrySource.complete` fills
    (counting costs store calls that most queries do not need). ``revision`` is the revision
    that wrote the entity's state (``None`` where the source has no revisions: remotes).
    """

    registry: str
    xid: str
    kind: str
    ctype: str
    view: dict[str, Any]
    as_of: int | None = None
    meta: dict[str, Any] | None = None
    partial: bool = False
    revision: int | None = None
    #: A message's materialised view (``None``: not a message, or not materialised yet).
    materialised: Materialisation | None = None

    @property
    def attributes(self) -> dict[str, Any]:
        """What the entity's attributes are: the materialised view of a message, else its view."""
        m = self.materialised
        return m.attributes if m is not None else self.view

    def attribute(self, name: str) -> Any:
        """One attribute as :attr:`attributes` holds it (a source may read it without building them)."""
        m = self.materialised
        return (m.attributes if m is not None else self.view).get(name)

    def declared(self, name: str) -> Any:
        """One attribute as :attr:`view` holds it (a source may read it without building the view)."""
        return self.view.get(name)

    def origin(self, name: str) -> tuple[str, str] | None:
        """``materialised.inherited`` of one attribute: the ``(registry, XID)`` of the base that
        supplies it, ``None`` when the entity declares it or is not materialised (a source may
        tell without building the materialisation)."""
        m = self.materialised
        return m.inherited.get(name) if m is not None else None

    def pending_chain(self) -> bool | None:
        """``materialised.pending``, ``None`` when not materialised (a source may tell without
        building the materialisation)."""
        m = self.materialised
        return m.pending if m is not None else None

    @property
    def id(self) -> str:
        """The entity's own id (``<singular>id``, ``versionid``; the registry's ``registryid``)."""
        if self.kind == "registry":
            return str(self.view.get("registryid", ""))
        return Xid.parse(self.xid).id or ""


@dataclass(frozen=True)
class Listing:
    """Which page of which collection: the arguments of one GraphQL connection.

    Several ``ctypes`` are read as one collection merged in sort order (``messages`` across
    endpoints and message groups). ``limit`` rows are taken after ``after`` (or from the
    start); with ``backward``, the ``limit`` rows just before ``before`` (or the end).
    """

    ctypes: tuple[str, ...]
    filters: Filters | None = None
    sort: Sort | None = None
    limit: int = 100
    backward: bool = False
    after: str | None = None
    before: str | None = None
    as_of: int | None = None
    #: Filters and sort read the declared attributes of messages, not their materialised ones
    #: (a source that keeps no materialised view reads declared attributes anyway).
    declared: bool = False
    #: Free-text search words (every one must match); ``None``: no search. A source that cannot
    #: search refuses the listing (``searchable``).
    search: tuple[str, ...] | None = None

    def __hash__(self) -> int:  # computed once: listings are keys of the loaders' batches
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash((
                self.ctypes, self.filters, self.sort, self.limit, self.backward, self.after, self.before, self.as_of,
                self.declared, self.search))
            object.__setattr__(self, "_hash", found)
        return found


@dataclass
class SourcePage:
    """A page of entities with one opaque cursor each; ``total`` when the source knew it for free."""

    items: list[Entity]
    cursors: Sequence[str]
    has_next: bool = False
    has_prev: bool = False
    total: int | None = None


class LazyCursors(Sequence[str]):
    """The cursors of a page, each encoded when it is first read (most pages are read without
    them, or only their first and last)."""

    __slots__ = ("_done", "_encode", "_keys")

    def __init__(self, keys: Sequence[Any], encode: Callable[[Any], str]) -> None:
        self._keys, self._encode = keys, encode
        self._done: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._keys)))]
        if index < 0:
            index += len(self._keys)
        cursor = self._done.get(index)
        if cursor is None:
            cursor = self._done[index] = self._encode(self._keys[index])
        return cursor

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self._keys)))


@dataclass(frozen=True)
class ChangeItem:
    """An entity written after some revision: its latest state, or its deletion."""

    xid: str
    kind: str
    ctype: str
    revision: int
    deleted: bool
    entity: Entity | None
    cursor: str


@dataclass
class WriteOutcome:
    """What a write did: XIDs per outcome, the new revision (``None``: nothing written), and for
    imports the rewrites of older document shapes (``(path, rule, detail)``)."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    revision: int | None = None
    normalisations: list[tuple[str, str, str]] = field(default_factory=list)
    #: Messages re-materialised because a base of theirs was written.
    rematerialised: list[str] = field(default_factory=list)
    #: ``(message XID, reference)`` of messages whose base is not in the registry.
    dangling: list[tuple[str, str]] = field(default_factory=list)
    #: The write's ``xregcorrelationid`` (core/events.md): its events name it (``None``: no commit).
    correlation_id: str | None = None


class RegistrySource(abc.ABC):
    """One registry the gateway serves."""

    #: The registry's id within the gateway (its ``registryid``).
    id: str
    #: The registry's model: its group and resource types.
    model: RegistryModel
    #: Whether :meth:`put_group` and the other writes are supported.
    writable: bool = False
    #: Whether listings with a free-text ``search`` are supported (a store with a text index).
    searchable: bool = False
    #: ``local``, ``xregistry`` or ``file``.
    kind: str = "local"
    #: Whether each read is a network round trip (a remote registry): a request reads its
    #: references ahead and never holds its batches for such a read (``adapters/batching.py``).
    round_trip: bool = False
    #: The root URL of the registry's xRegistry HTTP API (``""``: none); absolute references
    #: starting with it point into this registry.
    base_url: str = ""

    # -- life cycle ---------------------------------------------------------------------------
    async def open(self) -> None:  # noqa: B027 - an optional hook: most sources need no preparation
        """Get ready to serve (connect, read the remote model, load the document)."""

    async def close(self) -> None:  # noqa: B027 - an optional hook
        """Release connections and files."""

    def status(self) -> SourceStatus:
        """The source's health."""
        return SourceStatus(self.id, self.kind, self.base_url or None)

    async def refresh(self) -> bool:
        """Load what the source serves again when it changed (a document registry's file);
        ``True`` when a new copy now serves. Sources that read live answer ``False``."""
        return False

    def for_caller(self, caller: Caller) -> RegistrySource:
        """This source as read on behalf of ``caller`` (one request's view): itself, unless its
        answers depend on who asks (a remote registry receiving the caller's credentials)."""
        return self

    # -- capabilities -----------------------------------------------------------------------------
    def own_registry(self) -> LocalRegistry | None:
        """The gateway's own registry when this source serves it (``None`` for remote and document
        registries), for what only it can do: dry-run writes, model synchronisation."""
        return None

    @property
    def instance_id(self) -> str | None:
        """The id of the registry instance whose revisions this source serves (``None``: a source
        without revisions of its own, such as a remote registry)."""
        return None

    def check_instance(self, expected: str | None) -> None:
        """Raise ``instance_mismatch`` when a change-feed checkpoint taken against instance
        ``expected`` does not belong to this registry instance (``None``: nothing to check)."""
        if expected is not None and expected != self.instance_id:
            actual = self.instance_id
            raise InstanceMismatch(self.id, actual, f"instance {expected}", (
                f"registry {self.id!r} has no instance id, so a checkpoint cannot be checked against it"
                if actual is None else
                "the checkpoint was taken against another registry instance (or before a restore that did not "
                "keep the history); read the changes again from 0"))

    # -- reads --------------------------------------------------------------------------------
    @abc.abstractmethod
    async def revision(self) -> int:
        """The registry's current revision."""

    @abc.abstractmethod
    async def check_revision(self, as_of: int | None) -> None:
        """Raise ``bad_request`` unless the registry can be read as of ``as_of``."""

    @abc.abstractmethod
    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, Entity]:
        """Entities by XID (``…/meta`` included), keyed by lower-cased XID; missing ones absent."""

    @abc.abstractmethod
    async def list(self, listing: Listing, parent: str | None = None) -> SourcePage:
        """One page of a collection, across the registry or under ``parent``."""

    @abc.abstractmethod
    async def count(self, listing: Listing, parent: str | None = None) -> int:
        """How many entities the listing matches (all pages)."""

    async def list_children(self, parents: Sequence[str], listing: Listing) -> dict[str, SourcePage]:
        """The same page of one collection under each of many parents (by lower-cased XID).

        Sources override this to read all parents at once; this fallback reads them one by one.
        """
        out = {}
        for parent in parents:
            page = await self.list(listing, parent)
            page.total = await self.count(listing, parent)
            out[parent.lower()] = page
        return out

    async def complete(self, entities: Sequence[Entity]) -> builtins.list[dict[str, Any]]:
        """The full views of entities (``partial`` ones with their collection counts), in order."""
        return [e.view for e in entities]

    @abc.abstractmethod
    async def changes(
        self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
        limit: int = 100, after: str | None = None, by_revision: bool = False,
    ) -> tuple[builtins.list[ChangeItem], bool]:
        """Entities written after revision ``since`` (as of ``until``), in XID order (``by_revision``:
        in the order of the revisions that wrote them, then XID), one page; and whether more follow.
        ``after`` is a cursor of a page read in the same order."""

    async def count_changes(self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None) -> int:
        """How many entities :meth:`changes` lists in all its pages."""
        total, after = 0, None
        while True:
            items, more = await self.changes(since, until=until, ctypes=ctypes, limit=1000, after=after)
            total += len(items)
            if not more or not items:
                return total
            after = items[-1].cursor

    # -- writes (writable sources only) ---------------------------------------------------------
    async def put_group(
        self, gtype: str, gid: str, attributes: dict[str, Any], *, mode: str, patch: bool, epoch: int | None,
    ) -> WriteOutcome:
        """Create (``mode="create"``) or update (``"update"``) a group."""
        raise self._read_only(str(Xid(gtype, gid)))

    async def put_resource(
        self, gtype: str, gid: str, rtype: str, rid: str, body: dict[str, Any], *, mode: str, patch: bool,
        epoch: int | None,
    ) -> WriteOutcome:
        """Create or update a resource from its serialization (default version, ``meta``, ``versions``)."""
        raise self._read_only(str(Xid(gtype, gid, rtype, rid)))

    async def put_version(
        self, gtype: str, gid: str, rtype: str, rid: str, vid: str, body: dict[str, Any], *, mode: str,
        patch: bool, epoch: int | None,
    ) -> WriteOutcome:
        """Create or update one version of a resource."""
        raise self._read_only(str(Xid(gtype, gid, rtype, rid, vid)))

    async def delete(self, xid: str, *, epoch: int | None) -> WriteOutcome:
        """Delete an entity and everything below it."""
        raise self._read_only(xid)

    async def import_document(self, document: dict[str, Any], *, strict: bool) -> WriteOutcome:
        """Create or update every entity of an xRegistry document, atomically."""
        raise self._read_only("/")

    def _read_only(self, subject: str) -> XRegistryError:
        return XRegistryError("action_not_supported", subject, action="write",
                              detail=f"registry {self.id!r} is read-only")
