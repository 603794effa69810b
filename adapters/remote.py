"""A remote xRegistry HTTP API (core/http.md) as a read-only source.

On :meth:`RemoteSource.open` (and again while that fails) the remote's ``/capabilities``,
``/model`` and root entity are read: the model gives its group and resource types (types the
gateway has never seen included); the ``flags`` capability says whether ``filter`` and
``inline`` may be sent. Then:

* entities (:meth:`~RemoteSource.get_many`): one request per entity, in parallel — or, when the
  remote filters, one request per collection for all wanted entities of that collection
  (``?filter=<id>=a&filter=<id>=b``); resources come with their ``meta`` and document inlined
  (without ``inline``, the document is read from its document URL);
* collections (:meth:`~RemoteSource.list`): read whole, following ``Link: rel=next`` page by
  page (``limit`` asked only of a remote declaring ``pagination``; at most ``max_pages`` pages,
  a link back to a page already read fails), with the ``filter`` sent when the remote supports it
  (otherwise evaluated here, the nested collections it needs inlined) — nested collections
  walked one collection at a time where the remote does not offer ``inline`` or refuses it for
  that shape of request — then ordered and cut into keyset pages by
  :mod:`adapters.slicing` — so cursors stay valid whatever the remote's own paging;
  a collection across groups (``messages`` of every message group) is one request for the
  groups with that collection inlined;
* nested pages of many parents (:meth:`~RemoteSource.list_children`): one request for the
  parents' collection with the children inlined, when the remote filters and inlines.

Answers of a remote on an older specification version are rewritten into the current shape by
the importer's rules (:mod:`xreg.documents.normalise`).

Answers are cached (:mod:`adapters.cache`) per entity and per collection, per caller when the
caller's credentials are forwarded (``auth.forward``: a request reads through
:meth:`RemoteSource.for_caller`, a :class:`CallerBound` view that passes its caller down); a
remote offering an event log (a gateway like this one, ``GET /events``) is followed and its
entries dropped when it changes (:mod:`adapters.remote_events`), others live for ``cache_ttl``.
The remote has no revisions and no change feed; instead
:meth:`~RemoteSource.revision` mints a *snapshot* (:mod:`adapters.snapshots`): a number,
increasing per remote from 1, naming a holding area in the cache backend — shared by every
gateway process and replica when that is Redis. Reads ``as_of`` that number are answered from
what was fetched under it: the first touch of a collection fetches it whole from the remote
(every page, no ``filter`` sent — filters are evaluated here) and holds it; later reads (other
pages, other parents, other Spark partitions, other processes) cut the held copy and never ask
the remote again, so all of them see one state. Entities by XID are fetched once per snapshot
and held likewise. A snapshot lives ``snapshot_ttl`` seconds after its last use; at most
``snapshot_max`` live per remote (the least recently used goes first); reading an unknown or
expired one is a ``bad_request``. Memory: at most ``snapshot_max`` snapshots, each holding the
collections read under it (each at most :data:`MAX_COLLECTION` entities), in the backend and in
each process that reads them.

Over 600 lines: :class:`RemoteSource` is one source whose requests share the remote's capabilities,
model and cache keys (with the small view binding it to a caller); the cache, snapshots, slicing and
event following are modules of their own.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import httpx

from adapters import staleness
from adapters.base import ChangeItem, Entity, Listing, RegistrySource, SourcePage, SourceStatus, SourceUnavailable
from adapters.breaker import CLOSED
from adapters.cache import Entry, RegistryCache, caller_digest
from adapters.caller import ANONYMOUS, Caller
from adapters.clock import SYSTEM_CLOCK, Clock
from adapters.http_client import RemoteAnswer, RemoteClient, is_json, within
from adapters.remote_events import RemoteEvents, events_url
from adapters.slicing import cut, matches, nested_paths
from adapters.snapshots import SnapshotGone, SnapshotStore, SnapshotStoreError
from xreg import json_limits
from xreg.config import RegistryConfig
from xreg.documents.normalise import normalise
from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry.filters import FilterExpression, Filters
from xreg.xid import Xid

log = logging.getLogger("xreg.remote")

#: Parents whose children one request reads (``?filter`` values in one URL).
BATCH_IDS = 40
#: Most entities read for one collection.
MAX_COLLECTION = 200_000
#: The specification version whose document shape the gateway serves; remotes of others are normalised.
SPECVERSION = "1.0-rc4"
#: Statuses of a remote refusing an ``inline`` value (``bad_inline``, ``inline_noninlineable``,
#: ``bad_flag``; ``too_large``): the request is made again without it.
_REFUSALS = frozenset({400, 406})
#: Seconds between attempts to read the model of a remote that was unreachable.
DISCOVERY_INTERVAL = 5.0
_MISSING = {"$missing": True}
_T = TypeVar("_T")


class RemoteSource(RegistrySource):
    """A remote registry over its xRegistry HTTP API (see the module documentation)."""

    kind = "xregistry"
    round_trip = True

    def __init__(self, config: RegistryConfig, cache: RegistryCache, *,
                 transport: httpx.AsyncBaseTransport | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.id = config.id
        self.base_url = config.url or ""
        self.client = RemoteClient(config, transport=transport, clock=clock)
        self.cache = cache
        self.model = RegistryModel.default()
        self.capabilities: dict[str, Any] = {}
        #: Other roots the remote's own URLs may use (its ``self``, ``base_url``): rebased onto ``url``.
        self.aliases: list[str] = [config.base_url] if config.base_url else []
        self._discovered = False
        self._discovered_at = 0.0
        self._discovering: asyncio.Lock = asyncio.Lock()
        #: Whether the remote serves an older specification version's shapes (until its root says).
        self.older = True
        #: Shapes of requests (see :func:`_shape`) whose ``inline`` the remote refused.
        self._refused: set[str] = set()
        #: Snapshots (minted revisions), kept in the cache's backend.
        self.snapshots = SnapshotStore(cache.backend, cache.namespace, ttl=config.snapshot_ttl,
                                       most=config.snapshot_max, clock=clock)
        #: The remote's event log, followed to invalidate the cache (``None``: not followed).
        self.events = (RemoteEvents(self.id, self.client.http, events_url(self.base_url, config.events_url), cache,
                                    poll_interval=config.events_poll_seconds)
                       if config.follow_events and cache.enabled else None)
        #: ``(the outage's start, when it first answered stale in it)``: see :meth:`_served_stale`.
        self._stale: tuple[float | None, float] | None = None
        self._prober: asyncio.Task | None = None
        cache.on_stale = self._served_stale

    def for_caller(self, caller: Caller) -> RegistrySource:
        """Reads on behalf of ``caller``: a :class:`CallerBound` view sending its credentials (and
        keeping their answers apart) when ``auth.forward`` is set; else this source itself."""
        return CallerBound(self, caller) if self.config.auth.forward else self

    # -- life cycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        try:
            await self._discover(ANONYMOUS)
        except SourceUnavailable as exc:
            log.warning("registry %s is not reachable yet (%s); serving it when it is", self.id, exc.reason)
        if self.events is not None:
            self.events.start()
        if self.config.probe_seconds > 0 and self._prober is None:
            self._prober = asyncio.ensure_future(self._probing())

    async def close(self) -> None:
        if self._prober is not None:
            self._prober.cancel()
            await asyncio.gather(self._prober, return_exceptions=True)
            self._prober = None
        if self.events is not None:
            await self.events.close()
        self.snapshots.clear()
        await self.cache.close()
        await self.client.aclose()

    def status(self) -> SourceStatus:
        c = self.client
        state = c.breaker.state
        healthy = state == CLOSED and (c.last_error_at is None or (c.last_success or 0) > c.last_error_at)
        return SourceStatus(self.id, self.kind, self.base_url, healthy=healthy, last_success=c.last_success,
                            last_error=c.last_error, last_error_at=c.last_error_at, breaker=state,
                            requests=c.requests, cache=self.cache.stats.as_dict(), state=self._state(),
                            unreachable_since=c.failing_since,
                            stale_since=self._stale[1] if self._stale and self._stale[0] == c.failing_since
                            and self._state() == "unreachable" else None)

    def _state(self) -> str:
        """The circuit breaker first: not closed is ``unreachable``; then the last verdict."""
        c = self.client
        if c.breaker.state != CLOSED or c.failing_since is not None:
            return "unreachable"
        return "unknown" if c.last_success is None and c.last_error_at is None else "reachable"

    def _served_stale(self, fetched_at: float, failed: bool) -> None:
        """A cached answer fetched at ``fetched_at`` was served stale: because the registry just
        failed, or while revalidating it (reported only while it is unreachable)."""
        if not failed and self._state() != "unreachable":
            return
        outage = self.client.failing_since
        if self._stale is None or self._stale[0] != outage:
            self._stale = (outage, self.clock.wall())
        staleness.note(self.id, fetched_at, self.client.last_error, outage,
                       fetched_at + self.cache.ttl - self.clock.wall())

    async def probe(self) -> None:
        """Ask for the root, unless something was asked of the registry within ``probe_seconds``:
        its answer (or failure, or the circuit open) is its status from now on."""
        c = self.client
        latest = max(c.last_success or 0.0, c.last_error_at or 0.0)
        if latest and self.clock.wall() - latest < self.config.probe_seconds:
            return
        try:
            if not self._discovered:
                await self._discover(ANONYMOUS)
            else:
                await self.client.get(self.client.url("/"))
        except SourceUnavailable as exc:
            log.info("registry %s: health probe failed (%s)", self.id, exc.reason)

    async def _probing(self) -> None:
        while True:
            await self.clock.sleep(self.config.probe_seconds)
            try:
                await self.probe()
            except Exception:  # never ends the probing
                log.exception("registry %s: health probe failed", self.id)

    def supports(self, flag: str) -> bool:
        """Whether the remote declares the request flag ``flag`` (``filter``, ``inline``, …; the
        ``flags`` capability's values are case-insensitive, its absence means none)."""
        flags = self.capabilities.get("flags")
        return isinstance(flags, list) and flag in (str(f).lower() for f in flags)

    async def _discover(self, who: Caller) -> None:
        """Read ``/capabilities``, ``/model`` and the root for ``who`` (their failures leave the defaults)."""
        async with self._discovering:
            if self._discovered:
                return
            self._discovered_at = self.clock.monotonic()
            caps, model, root = await _all(self._get(who, "/capabilities"), self._get(who, "/model"),
                                           self._get(who, "/"))
            if root.status != 200:
                raise SourceUnavailable(self.id, f"{self.client.url('/')} answered 404: not an xRegistry API")
            self.capabilities = caps.body or {}
            self.older = str(root.body.get("specversion", "")).lower() != SPECVERSION
            if model.body:
                try:
                    self.model = RegistryModel.from_json(model.body)
                except Exception as exc:
                    log.warning("registry %s: unreadable /model (%s); using the gateway's model", self.id, exc)
            await self.cache.store({self.cache.key("e:/", self._caller(who)[0]): {**root.body, "xid": "/"}})
            own = root.body.get("self")
            if isinstance(own, str) and own.startswith(("http://", "https://")) and not within(own, self.base_url):
                self.aliases.append(own.rstrip("/"))
            self._discovered = True

    async def _ready(self, who: Caller) -> None:
        if not self._discovered and self.clock.monotonic() - self._discovered_at >= DISCOVERY_INTERVAL:
            try:
                await self._discover(who)
            except SourceUnavailable:
                pass  # reads fail (or are served stale) on their own

    # -- requests ---------------------------------------------------------------------------------
    def _caller(self, who: Caller) -> tuple[str, dict[str, str] | None]:
        """The cache-key part and extra headers of reads for ``who``."""
        if not self.config.auth.forward:
            return "*", None
        credentials = who.credentials
        return caller_digest(credentials), ({"Authorization": credentials} if credentials else None)

    def _rebase(self, url: str) -> str:
        """A URL of the remote's own (its ``self`` root) as a URL under the configured ``url``."""
        if within(url, self.base_url):
            return url
        for alias in self.aliases:
            if within(url, alias):
                return self.base_url + url[len(alias):]
        return url  # refused by the client

    async def _get(self, who: Caller, path: str, params: list[tuple[str, str]] | None = None, *, subject: str = "/",
                   url: str | None = None) -> RemoteAnswer:
        return await self.client.get(url or self.client.url(path), params, headers=self._caller(who)[1],
                                     subject=subject)

    async def _pages(self, who: Caller, path: str, params: list[tuple[str, str]],
                     subject: str) -> list[dict[str, Any]] | None:
        """Every entity of a collection (``None``: the collection does not exist), following
        ``Link: rel=next`` — absolute or relative, used as given — for at most ``max_pages``
        pages; a link back to a page already read, or out of the registry, fails the read.
        ``limit`` is asked only of a remote that declares ``pagination``; answers in older
        document shapes are rewritten into the current one."""
        if self.capabilities.get("pagination") is True:
            params = [*params, ("limit", str(self.config.page_size))]
        answer = await self._get(who, path, params, subject=subject)
        if answer.status == 404:
            return None
        out: list[dict[str, Any]] = []
        seen = {answer.url}
        pages = 1
        while True:
            out.extend(v for v in self._normalised(answer.body, path, subject).values() if isinstance(v, dict))
            nxt = answer.links.get("next")
            if not nxt or len(out) > MAX_COLLECTION:
                break
            nxt = self._rebase(nxt)
            if nxt in seen:
                raise SourceUnavailable(self.id, f"the pages of {path} link back to a page already read ({nxt})",
                                        subject)
            if pages >= self.config.max_pages:
                raise SourceUnavailable(self.id, f"{path} has more than {self.config.max_pages} pages "
                                        "(max_pages); not read further", subject)
            seen.add(nxt)
            pages += 1
            answer = await self._get(who, "", subject=subject, url=nxt)
            if answer.status == 404:
                raise SourceUnavailable(self.id, f"a next page vanished ({nxt})", subject)
        if len(out) > MAX_COLLECTION:
            raise SourceUnavailable(self.id, f"{path} has more than {MAX_COLLECTION} entities", subject)
        return out

    def _normalised(self, body: dict[str, Any], path: str, subject: str) -> dict[str, Any]:
        """An answer for ``path`` (an entity, or a collection: a map of entities) in the current
        document shape — a remote of an older specification version (its root's
        ``specversion`` is not :data:`SPECVERSION`: 1.0-rc1/rc2, 0.x) rewritten by the importer's
        own rules — with the ``xid`` each entity's location gives where the remote left it out."""
        segments = [s for s in path.split("/") if s]
        if not self.older:
            return _with_xids(body, path, segments)
        doc: dict[str, Any] = body
        for segment in reversed(segments):
            doc = {segment: doc}
        try:
            doc, changes = normalise(doc)
        except XRegistryError as exc:
            raise SourceUnavailable(self.id, f"answered something that is not an xRegistry entity ({exc.detail})",
                                    subject) from None
        for segment in segments:
            inner = doc.get(segment) if isinstance(doc, dict) else None
            if not isinstance(inner, dict):
                return body  # a shape the rules moved elsewhere: read as answered
            doc = inner
        if changes:
            log.debug("registry %s: %s rewritten from an older shape (%s)", self.id, path,
                      ", ".join(sorted({c.rule for c in changes})))
        return _with_xids(doc, path, segments)

    # -- entities ---------------------------------------------------------------------------------
    def _inline_for(self, kind: str, ctype: str, prefix: str = "") -> list[str]:
        """``inline`` values that bring a resource's ``meta`` and a document along."""
        if not self.supports("inline") or kind not in ("resource", "version"):
            return []
        parts = ctype.split("/")
        rdef = self.model.resource(parts[0], parts[1]) if len(parts) > 1 else None
        names = (["meta"] if kind == "resource" else []) + ([rdef.singular] if rdef and rdef.hasdocument else [])
        return [prefix + n for n in names]

    def _entity_path(self, xid: str, kind: str, ctype: str) -> str:
        parts = ctype.split("/")
        rdef = self.model.resource(parts[0], parts[1]) if len(parts) > 1 else None
        details = kind in ("resource", "version") and rdef is not None and rdef.hasdocument
        return xid + ("$details" if details else "")

    def _entity(self, view: dict[str, Any], subject: str = "/", as_of: int | None = None) -> Entity:
        xid = view.get("xid")
        if not isinstance(xid, str):
            raise SourceUnavailable(self.id, "answered an entity without an xid", subject)
        try:
            parsed = Xid.parse(xid)
        except XRegistryError:
            raise SourceUnavailable(self.id, f"answered an entity with a malformed xid {xid!r}", subject) from None
        kind, ctype = parsed.level, parsed.ctype
        meta = view.get("meta") if kind == "resource" and isinstance(view.get("meta"), dict) else None
        drop = set(self._child_names(kind, ctype)) | ({"meta"} if meta is not None else set())
        clean = {k: v for k, v in view.items() if not (k in drop and isinstance(v, dict))}
        return Entity(self.id, xid, kind, ctype, clean, as_of, meta)

    def _child_names(self, kind: str, ctype: str) -> list[str]:
        if kind == "registry":
            return list(self.model.groups)
        if kind == "group":
            gdef = self.model.group(ctype)
            return list(gdef.resources) if gdef else []
        return ["versions"] if kind == "resource" else []

    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, Entity]:
        return await self.get_many_for(ANONYMOUS, xids, as_of)

    async def get_many_for(self, who: Caller, xids: Sequence[str], as_of: int | None = None) -> dict[str, Entity]:
        """:meth:`get_many` on behalf of ``who``."""
        snap = await self._snapshot(as_of)
        await self._ready(who)
        spelled: dict[str, str] = {}  # the remote's paths are case-sensitive: ask as the reference spells it
        for x in xids:
            spelled.setdefault(x.lower(), x)
        wanted = list(spelled)
        if not wanted:
            return {}
        if snap is not None:
            return await self._held_entities(who, snap, spelled)
        caller, _ = self._caller(who)
        keys = {x: self.cache.key("e:" + x, caller) for x in wanted}
        along = _resources_of(spelled)  # read with their versions: who asks for a version asks for it next
        along_keys = {x: self.cache.key("e:" + x, caller) for x in along}
        entries = await self.cache.lookup([*keys.values(), *along_keys.values()])
        self.cache.count({k: e for k, e in entries.items() if k not in along_keys.values()}, len(keys))
        found: dict[str, Any] = {}
        stale: dict[str, Entry] = {}
        for x, k in keys.items():
            entry = entries.get(k)
            if entry is not None and (entry.fresh or entry.revalidate):
                found[x] = entry.value
                if entry.revalidate:
                    self.cache.served_stale(entry, failed=False)
            elif entry is not None:
                stale[x] = entry
        revalidate = [spelled[x] for x, k in keys.items() if k in entries and entries[k].revalidate]
        if revalidate:
            self.cache.spawn(self._refresh(who, revalidate, keys))
        missing = [x for x in wanted if x not in found]
        if missing:
            companions = {x: k for x, k in along_keys.items() if k not in entries
                          and any(m.startswith(x + "/versions/") for m in missing)}
            fetched, failure = await self._fetch_entities(who, [spelled[x] for x in missing]
                                                          + [along[x] for x in companions])
            await self.cache.store({(keys.get(x) or companions[x]): v for x, v in fetched.items()
                                    if x in keys or x in companions})
            found.update({x: v for x, v in fetched.items() if x in keys})
            unserved = [x for x in missing if x not in fetched]
            if unserved and failure is not None:
                if any(x not in stale for x in unserved):
                    raise failure
                self.cache.stats.add("stale_on_error", len(unserved))
                found.update({x: stale[x].value for x in unserved})
                for x in unserved:
                    self.cache.served_stale(stale[x], failed=True)
        return {x: self._entity(view, x) for x, view in found.items() if view != _MISSING}

    async def _held_entities(self, who: Caller, snap: int, spelled: dict[str, str]) -> dict[str, Entity]:
        """Entities as the snapshot holds them; those it does not hold yet are fetched (not from
        the cache) and held from now on."""
        caller, _ = self._caller(who)
        whats = {f"e:{caller}:{x}": x for x in spelled}

        async def fetch(missing: Sequence[str]) -> dict[str, Any]:
            fetched, failure = await self._fetch_entities(who, [spelled[whats[w]] for w in missing])
            if failure is not None:
                raise failure
            return {w: fetched[whats[w]] for w in missing}

        held = await self._held_call(self.snapshots.hold_many(snap, list(whats), fetch))
        return {whats[w]: self._entity(view, whats[w], snap) for w, view in held.items() if view != _MISSING}

    async def _refresh(self, who: Caller, xids: list[str], keys: dict[str, str]) -> None:
        """Fetch ``xids`` anew (stale entries being served meanwhile)."""
        self.cache.stats.add("revalidations")
        fetched, failure = await self._fetch_entities(who, xids)
        await self.cache.store({keys[x]: v for x, v in fetched.items()})
        if failure is not None:
            log.info("revalidating %d entities of %s failed: %s", len(xids) - len(fetched), self.id, failure.reason)

    async def _fetch_entities(self, who: Caller, xids: list[str]) -> tuple[dict[str, Any], SourceUnavailable | None]:
        """Views by lower-cased XID (``_MISSING`` for those that do not exist), and the first failure."""
        by_collection: dict[str, list[str]] = {}
        for x in xids:
            parsed = Xid.parse(x)
            by_collection.setdefault(parsed.collection_path if parsed.collection else x, []).append(x)
        jobs = []
        for collection, members in by_collection.items():
            if len(members) > 1 and self.supports("filter"):
                for i in range(0, len(members), BATCH_IDS):
                    jobs.append(self._fetch_from_collection(who, collection, members[i:i + BATCH_IDS]))
            else:
                jobs.extend(self._fetch_one(who, x) for x in members)
        results = await asyncio.gather(*jobs, return_exceptions=True)
        found: dict[str, Any] = {}
        failure: SourceUnavailable | None = None
        for result in results:
            if isinstance(result, SourceUnavailable):
                failure = failure or result
            elif isinstance(result, BaseException):
                raise result
            else:
                found.update(result)
        return found, failure

    async def _fetch_one(self, who: Caller, xid: str) -> dict[str, Any]:
        parsed = Xid.parse(xid)
        kind, ctype = parsed.level, parsed.ctype
        params = [("inline", v) for v in self._inline_for(kind, ctype)]
        path = self._entity_path(xid, kind, ctype)
        answer = await self._inlined(lambda p: self._get(who, path, p, subject=xid), path, params)
        if answer.status == 404:
            return {xid.lower(): _MISSING}
        view = self._normalised(answer.body, xid, xid)
        if not isinstance(view.get("xid"), str) or view["xid"].lower() != xid.lower():
            raise SourceUnavailable(self.id, f"asked for {xid}, answered {view.get('xid')!r}", xid)
        return {xid.lower(): await self._with_document(who, view, xid, kind, ctype)}

    async def _with_document(self, who: Caller, view: dict[str, Any], xid: str, kind: str,
                             ctype: str) -> dict[str, Any]:
        """``view`` with its document, read from the document URL (the entity's URL without
        ``$details``) when the remote did not inline it: JSON as ``<RESOURCE>``, anything else
        as ``<RESOURCE>base64``, a ``303 See Other`` as ``<RESOURCE>url`` (not followed)."""
        parts = ctype.split("/")
        rdef = self.model.resource(parts[0], parts[1]) if kind in ("resource", "version") and len(parts) > 1 else None
        if rdef is None or not rdef.hasdocument:
            return view
        name = rdef.singular
        if any(k in view for k in (name, name + "base64", name + "url")):
            return view
        answer = await self.client.get(self.client.url(xid), headers=self._caller(who)[1], subject=xid, document=True)
        if answer.status == 303 and answer.location:
            return {**view, name + "url": answer.location}
        if answer.status != 200 or not answer.raw:
            return view
        if is_json(answer.content_type):
            try:
                return {**view, name: json_limits.loads(answer.raw)}
            except ValueError:
                pass  # not the JSON it claims: kept as bytes
        return {**view, name + "base64": base64.b64encode(answer.raw).decode("ascii")}

    async def _fetch_from_collection(self, who: Caller, collection: str, xids: list[str]) -> dict[str, Any]:
        first = Xid.parse(xids[0])
        kind, ctype = first.level, first.ctype
        attr = self._id_attribute(kind, ctype)
        params = [("filter", f"{attr}={Xid.parse(x).id}") for x in xids]
        params += [("inline", v) for v in self._inline_for(kind, ctype)]
        views = await self._inlined(lambda p: self._pages(who, collection, p, collection), collection, params)
        by_xid = {str(v.get("xid", "")).lower(): v for v in views or ()}
        return {x.lower(): by_xid.get(x.lower(), _MISSING) for x in xids}

    def _id_attribute(self, kind: str, ctype: str) -> str:
        parts = ctype.split("/")
        if kind == "group":
            gdef = self.model.group(parts[0])
            return gdef.id_attribute if gdef else f"{parts[0].rstrip('s')}id"
        if kind == "resource":
            rdef = self.model.resource(parts[0], parts[1])
            return rdef.id_attribute if rdef else f"{parts[1].rstrip('s')}id"
        return "versionid"

    # -- collections ------------------------------------------------------------------------------
    async def list(self, listing: Listing, parent: str | None = None) -> SourcePage:
        return await self.list_for(ANONYMOUS, listing, parent)

    async def list_for(self, who: Caller, listing: Listing, parent: str | None = None) -> SourcePage:
        """:meth:`list` on behalf of ``who``."""
        return cut(await self._entities_of(who, listing, parent), listing)

    async def count(self, listing: Listing, parent: str | None = None) -> int:
        return await self.count_for(ANONYMOUS, listing, parent)

    async def count_for(self, who: Caller, listing: Listing, parent: str | None = None) -> int:
        """:meth:`count` on behalf of ``who``."""
        return len(await self._entities_of(who, listing, parent))

    async def _entities_of(self, who: Caller, listing: Listing, parent: str | None) -> builtins.list[Entity]:
        if listing.filters is not None and listing.filters.reachable_over is not None:
            raise XRegistryError("action_not_supported", "/" + listing.ctypes[0], registry=self.id,
                                 action="reachableOver", detail=f"registry {self.id!r} is a remote registry: "
                                 "which endpoints reach its messages is answered by the gateway's own store only")
        snap = await self._snapshot(listing.as_of)
        await self._ready(who)
        if snap is not None:
            prefix = parent.lower().rstrip("/") + "/" if parent not in (None, "/") else ""
            found = await _all(*(self._held(who, snap, ctype, listing.filters) for ctype in listing.ctypes))
            return [e for batch in found for e in batch if e.xid.lower().startswith(prefix)]
        found = await _all(*(self._collection(who, ctype, parent, listing.filters) for ctype in listing.ctypes))
        return [e for batch in found for e in batch]

    def _inline_params(
        self, ctype: str, path: str, below: builtins.list[str], filters: Filters | None,
    ) -> builtins.list[tuple[str, str]]:
        """The ``inline`` parameters that bring the entities of ``ctype`` (``below`` the fetched
        ``path``) with what their views need, plus the nested collections ``filters`` (evaluated
        in the gateway) reach into."""
        leaf_kind = ("group", "resource", "version")[len(ctype.split("/")) - 1]
        params: list[tuple[str, str]] = []
        if below:
            params.append(("inline", ".".join(below)))
            params += [("inline", v) for v in self._inline_for(leaf_kind, ctype, ".".join(below) + ".")]
        else:
            params += [("inline", v) for v in self._inline_for(leaf_kind, ctype)]
        if filters is not None and filters.nested:
            if not self.supports("inline"):
                raise XRegistryError("bad_filter", path, value=";".join(filters.params), detail=(
                    f"registry {self.id!r} neither filters nor inlines, so filters on nested collections "
                    "cannot be evaluated"))
            params += [("inline", ".".join([*below, p])) for p in nested_paths(filters)]
        return params

    async def _collection(self, who: Caller, ctype: str, parent: str | None,
                          filters: Filters | None) -> builtins.list[Entity]:
        """Every entity of ``ctype`` (under ``parent``) that satisfies ``filters``."""
        if filters is not None and filters.exclude_all:
            return []
        names = ctype.split("/")
        above = 0 if parent is None else Xid.parse(parent).depth
        top = names[above]
        path = (parent.rstrip("/") if parent not in (None, "/") else "") + "/" + top
        below = names[above + 1:]
        walk = bool(below) and not self._inlines_nested(path, below)
        remote_filter = not walk and self.supports("filter") and filters is not None and bool(filters.branches)
        params = self._inline_params(ctype, path, [] if walk else below, None if remote_filter else filters)
        if remote_filter and filters is not None:  # relative to the collection asked for: terms prefixed
            prefix = "".join(f"{name}." for name in below)
            params += [("filter", ",".join(prefix + str(term) for term in branch.terms)) for branch in filters.branches]
        caller, _ = self._caller(who)
        key = self.cache.key(("w:" if walk else "c:") + path.lower() + "?"
                             + "&".join(f"{k}={v}" for k, v in sorted(params)), caller)
        walk_params = params if walk else self._inline_params(ctype, path, [], filters)

        async def fetch() -> list[dict[str, Any]]:
            return await self._tree(who, path, below, params, walk_params, filters if remote_filter else None)

        trees = await self.cache.get(key, fetch)
        if not remote_filter:  # evaluated here, nested collections inlined for it
            trees = [t for t in trees if matches(t, filters)]
        elif below:  # the remote chose the groups; their inlined entities are checked here
            own = _own_only(filters)
            trees = [t for t in trees if matches(t, own)]
        return [self._entity(t, path) for t in trees]

    async def _held(self, who: Caller, snap: int, ctype: str, filters: Filters | None) -> builtins.list[Entity]:
        """Every entity of ``ctype`` across the registry that satisfies ``filters``, as the
        snapshot holds it: fetched whole (no filter sent) on the first touch, held from then on."""
        if filters is not None and filters.exclude_all:
            return []
        names = ctype.split("/")
        path, below = "/" + names[0], names[1:]
        walk = bool(below) and not self._inlines_nested(path, below)
        params = self._inline_params(ctype, path, [] if walk else below, filters)
        caller, _ = self._caller(who)
        key = caller + ":" + path + "?" + "&".join(f"{k}={v}" for k, v in sorted(params))
        walk_params = params if walk else self._inline_params(ctype, path, [], filters)

        async def fetch() -> list[dict[str, Any]]:
            return await self._tree(who, path, below, params, walk_params, None)

        trees = await self._held_call(self.snapshots.hold(snap, ("w:" if walk else "c:") + key, fetch))
        return [self._entity(t, path, snap) for t in trees if matches(t, filters)]

    # -- reading trees of collections ---------------------------------------------------------------
    def _inlines_nested(self, path: str, below: Sequence[str]) -> bool:
        """Whether the collections ``below`` are read inlined into the collection at ``path``:
        the remote offers ``inline`` and has not refused it for that shape of request."""
        return self.supports("inline") and _shape(path, [("inline", ".".join(below))]) not in self._refused

    async def _tree(
        self, who: Caller, path: str, below: Sequence[str], params: builtins.list[tuple[str, str]],
        walk_params: builtins.list[tuple[str, str]], filters: Filters | None,
    ) -> builtins.list[dict[str, Any]]:
        """The entities of the collections ``below`` under every entity of the collection at
        ``path`` (its own entities when ``below`` is empty): one read with them inlined
        (``params``) when the remote offers it, else — or when it refuses that ``inline`` (400,
        or 406 ``too_large``) — collection by collection (``walk_params``, with ``filters``, which
        the inlined read had the remote evaluate, evaluated here)."""
        if not below:
            return await self._pages_inlined(who, path, params) or []
        if self._inlines_nested(path, below):
            try:
                views = await self._pages(who, path, params, path)
                return [leaf for v in views or () for leaf in _leaves(v, below)]
            except SourceUnavailable as exc:
                if exc.remote_status not in _REFUSALS:
                    raise
                self._refuse(path, [("inline", ".".join(below))], exc)
        trees = await self._walk(who, path, below, walk_params)
        return [t for t in trees if matches(t, filters)] if filters is not None else trees

    async def _walk(self, who: Caller, path: str, below: Sequence[str],
                    params: builtins.list[tuple[str, str]]) -> builtins.list[dict[str, Any]]:
        """The entities of the collections ``below`` under every entity of the collection at
        ``path``, one read per collection (``params`` on the last ones), at most
        ``max_connections`` at once, at most :data:`MAX_COLLECTION` in all."""
        gate = asyncio.Semaphore(self.config.max_connections)
        count = 0

        async def read(at: str, rest: Sequence[str]) -> builtins.list[dict[str, Any]]:
            nonlocal count
            async with gate:
                views = await (self._pages(who, at, [], at) if rest else self._pages_inlined(who, at, params)) or []
            count += len(views)
            if count > MAX_COLLECTION:
                raise SourceUnavailable(self.id, f"{path} has more than {MAX_COLLECTION} entities below it", path)
            if not rest:
                return views
            inside = at.lower().rstrip("/") + "/"
            for v in views:
                xid = v.get("xid")
                if not isinstance(xid, str) or not xid.lower().startswith(inside) or "/" in xid[len(inside):] \
                        or not _well_formed(xid):
                    raise SourceUnavailable(self.id, f"answered an entity of {at} with the xid {xid!r}", at)
            found = await _all(*(read(f"{v['xid']}/{rest[0]}", rest[1:]) for v in views))
            return [leaf for batch in found for leaf in batch]

        return await read(path, below)

    async def _pages_inlined(
        self, who: Caller, path: str, params: builtins.list[tuple[str, str]],
    ) -> builtins.list[dict[str, Any]] | None:
        """:meth:`_pages`, asked again without ``inline`` when the remote refuses it (see :meth:`_refuse`)."""
        return await self._inlined(lambda p: self._pages(who, path, p, path), path, params)

    async def _inlined(self, read: Callable[[builtins.list[tuple[str, str]]], Awaitable[_T]], path: str,
                       params: builtins.list[tuple[str, str]]) -> _T:
        """``read(params)``; when the remote refuses their ``inline`` values (400, or 406
        ``too_large``), ``read`` without them — and that shape of request is not sent again."""
        if any(k == "inline" for k, _ in params) and _shape(path, params) not in self._refused:
            try:
                return await read(params)
            except SourceUnavailable as exc:
                if exc.remote_status not in _REFUSALS:
                    raise
                self._refuse(path, params, exc)
        return await read([(k, v) for k, v in params if k != "inline"])

    def _refuse(self, path: str, params: builtins.list[tuple[str, str]], exc: SourceUnavailable) -> None:
        """Remember that the remote refused the ``inline`` of this shape of request (the
        ``inline`` flag offered, but not for every path): such requests are made without it."""
        self._refused.add(_shape(path, params))
        log.info("registry %s refuses inline=%s on %s (%s); reading without it", self.id,
                 ",".join(v for k, v in params if k == "inline"), path, exc.reason)

    async def list_children(self, parents: Sequence[str], listing: Listing) -> dict[str, SourcePage]:
        return await self.list_children_for(ANONYMOUS, parents, listing)

    async def list_children_for(self, who: Caller, parents: Sequence[str],
                                listing: Listing) -> dict[str, SourcePage]:
        """:meth:`list_children` on behalf of ``who``."""
        snap = await self._snapshot(listing.as_of)
        await self._ready(who)
        (ctype,) = listing.ctypes
        child = ctype.split("/")[-1]
        spelled: dict[str, str] = {}
        for p in parents:
            spelled.setdefault(p.lower(), p)
        if snap is not None:  # one held copy of the collection across the registry, grouped by parent
            grouped: dict[str, builtins.list[Entity]] = {k: [] for k in spelled}
            for e in await self._held(who, snap, ctype, listing.filters):
                owned = grouped.get(Xid.parse(e.xid).parent.key)
                if owned is not None:
                    owned.append(e)
            return {k: cut(grouped[k], listing) for k in spelled}
        by_parent: dict[str, list[Entity]] = {}
        nested_filters = listing.filters is not None and listing.filters.nested
        if len(spelled) > 1 and self.supports("filter") and self._inlines_nested(_parents_path(ctype), [child]) \
                and not nested_filters:
            try:
                by_parent = await self._children_batched(who, list(spelled.values()), ctype, listing.filters)
            except SourceUnavailable as exc:  # parent by parent instead
                if exc.remote_status not in _REFUSALS:
                    raise
                self._refuse(_parents_path(ctype), [("inline", child)], exc)
        rest = [k for k in spelled if k not in by_parent]
        found = await _all(*(self._collection(who, ctype, spelled[k], listing.filters) for k in rest))
        by_parent.update(zip(rest, found, strict=False))
        return {k: cut(by_parent[k], listing) for k in spelled}

    async def _children_batched(
        self, who: Caller, parents: builtins.list[str], ctype: str, filters: Filters | None,
    ) -> dict[str, builtins.list[Entity]]:
        """The children of many parents, one request per parent collection (and batch of ids)."""
        child = ctype.split("/")[-1]
        leaf_kind = ("group", "resource", "version")[len(ctype.split("/")) - 1]
        by_collection: dict[str, builtins.list[str]] = {}
        for p in parents:
            parsed = Xid.parse(p)
            by_collection.setdefault(parsed.collection_path if parsed.collection else "", []).append(p)
        caller, _ = self._caller(who)
        out: dict[str, list[Entity]] = {}

        async def one(collection: str, members: list[str]) -> None:
            first = Xid.parse(members[0])
            attr = self._id_attribute(first.level, first.ctype)
            params = [("filter", f"{attr}={Xid.parse(m).id}") for m in members]
            params += [("inline", child)] + [("inline", v) for v in self._inline_for(leaf_kind, ctype, child + ".")]
            key = self.cache.key("k:" + collection.lower() + "?" + "&".join(f"{k}={v}" for k, v in sorted(params)),
                                 caller)

            async def fetch() -> dict[str, list[dict[str, Any]]]:
                views = await self._pages(who, collection or "/", params, collection)
                got = {str(v.get("xid", "")).lower(): _leaves(v, [child]) for v in views or ()}
                return {m.lower(): got.get(m.lower(), []) for m in members}

            for parent, trees in (await self.cache.get(key, fetch)).items():
                out[parent] = [self._entity(t, parent) for t in trees if matches(t, filters)]

        jobs = [one(c, ms[i:i + BATCH_IDS]) for c, ms in by_collection.items() for i in range(0, len(ms), BATCH_IDS)]
        await _all(*jobs)
        return out

    # -- snapshots instead of history ----------------------------------------------------------------
    async def revision(self) -> int:
        """Mint a snapshot: a new number (1, 2, …) whose reads are held (see the module doc)."""
        return int(await self._held_call(self.snapshots.mint()))

    async def check_revision(self, as_of: int | None) -> None:
        await self._snapshot(as_of)

    async def _snapshot(self, as_of: int | None) -> int | None:
        """The live snapshot ``as_of`` names (``None``: read the current state), marked used;
        ``bad_request`` when it is unknown or expired."""
        if as_of is None:
            return None
        await self._held_call(self.snapshots.use(as_of))
        return as_of

    async def _held_call(self, op: Any) -> Any:
        """Await a call of the snapshot store: a snapshot gone is a ``bad_request``, the store's
        backend failing is this registry's failure."""
        try:
            return await op
        except SnapshotGone as exc:
            raise XRegistryError("bad_request", "/", detail=(
                f"registry {self.id!r} is a remote xRegistry API without revisions, and {exc.args[0]} is not a "
                f"live snapshot of it (snapshots are minted by reading its revision and expire "
                f"{self.config.snapshot_ttl:g} s after their last use); read its revision again")) from None
        except SnapshotStoreError as exc:
            raise SourceUnavailable(self.id, str(exc)) from exc

    async def changes(self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
                      limit: int = 100, after: str | None = None,
                      by_revision: bool = False) -> tuple[builtins.list[ChangeItem], bool]:
        raise XRegistryError("action_not_supported", "/", action="changes",
                             detail=f"registry {self.id!r} is a remote xRegistry API; it has no change feed")


class CallerBound(RegistrySource):
    """One request's view of a :class:`RemoteSource` that receives its caller's credentials: the
    reads go to the remote on behalf of :attr:`caller`; everything else is the remote's."""

    round_trip = True

    def __init__(self, remote: RemoteSource, caller: Caller) -> None:
        self.remote = remote
        self.caller = caller
        self.id = remote.id
        self.kind = remote.kind
        self.base_url = remote.base_url

    @property  # the remote's, which discovery may replace
    def model(self) -> RegistryModel:  # type: ignore[override]
        return self.remote.model

    def __getattr__(self, name: str) -> Any:  # the remote's own attributes (config, cache, …)
        if name == "remote":  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.remote, name)

    def for_caller(self, caller: Caller) -> RegistrySource:
        return self.remote.for_caller(caller)

    def status(self) -> SourceStatus:
        return self.remote.status()

    async def revision(self) -> int:
        return await self.remote.revision()

    async def check_revision(self, as_of: int | None) -> None:
        await self.remote.check_revision(as_of)

    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, Entity]:
        return await self.remote.get_many_for(self.caller, xids, as_of)

    async def list(self, listing: Listing, parent: str | None = None) -> SourcePage:
        return await self.remote.list_for(self.caller, listing, parent)

    async def count(self, listing: Listing, parent: str | None = None) -> int:
        return await self.remote.count_for(self.caller, listing, parent)

    async def list_children(self, parents: Sequence[str], listing: Listing) -> dict[str, SourcePage]:
        return await self.remote.list_children_for(self.caller, parents, listing)

    async def changes(self, since: int, *, until: int | None = None, ctypes: Sequence[str] | None = None,
                      limit: int = 100, after: str | None = None,
                      by_revision: bool = False) -> tuple[builtins.list[ChangeItem], bool]:
        return await self.remote.changes(since, until=until, ctypes=ctypes, limit=limit, after=after,
                                         by_revision=by_revision)


async def _all(*aws: Any) -> list[Any]:
    """``asyncio.gather`` that lets every request finish before raising the first failure
    (none is left running unobserved)."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return list(results)


def _resources_of(spelled: dict[str, str]) -> dict[str, str]:
    """The resources (lower-cased XID → as written) of the versions among ``spelled`` that are
    not asked for themselves."""
    out: dict[str, str] = {}
    for written in spelled.values():
        head, sep, _ = written.rpartition("/versions/")
        if sep and head.count("/") == 4 and head.lower() not in spelled:
            out.setdefault(head.lower(), head)
    return out


def _shape(path: str, params: Sequence[tuple[str, str]]) -> str:
    """The shape of a request: how deep its path is (a resource's ``$details`` or not) and its ``inline`` values."""
    depth = len([s for s in path.split("/") if s])
    inline = ",".join(sorted(v for k, v in params if k == "inline"))
    return f"{depth}{'$' if path.endswith('$details') else ''}?{inline}"


def _well_formed(xid: str) -> bool:
    try:
        Xid.parse(xid)
    except XRegistryError:
        return False
    return True


def _with_xids(body: dict[str, Any], path: str, segments: Sequence[str]) -> dict[str, Any]:
    """An answer for ``path`` with the ``xid`` each entity's location gives where it has none."""
    if len(segments) % 2 == 1:  # a collection: entities by id
        return {k: ({**v, "xid": f"{path.rstrip('/')}/{k}"} if isinstance(v, dict) and "xid" not in v else v)
                for k, v in body.items()}
    return body if "xid" in body else {**body, "xid": "/" + "/".join(segments)}


def _parents_path(ctype: str) -> str:
    """A path of the collection that holds the parents of ``ctype``'s entities (ids as ``*``)."""
    names = ctype.split("/")[:-1]
    return "".join(f"/{name}" + ("/*" if i < len(names) - 1 else "") for i, name in enumerate(names))


def _leaves(view: dict[str, Any], below: Sequence[str]) -> list[dict[str, Any]]:
    """The entities at the end of the inlined collections ``below`` of ``view`` (``[]``: itself)."""
    level = [view]
    for name in below:
        level = [c for v in level for c in ((v.get(name) or {}).values() if isinstance(v.get(name), dict) else ())
                 if isinstance(c, dict)]
    return level


def _own_only(filters: Filters | None) -> Filters | None:
    """``filters`` without the terms on nested collections (which the remote evaluated)."""
    if filters is None:
        return None
    return Filters(tuple(FilterExpression(tuple(t for t in b.terms if not t.collections), b.exclude_all)
                         for b in filters.branches))
