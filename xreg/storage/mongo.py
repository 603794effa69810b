"""MongoDB implementation of :class:`~xreg.storage.base.Store` (PyMongo's async API).

Over 600 lines: the query compiler, the Python fallbacks it needs and the commit share
the state document's layout; which attributes are indexed is :mod:`xreg.storage.indexed`.

Collections::

    states    one document per state of an entity: xkey (lower-cased XID), xid, kind, ctype,
              parent (the parent's key), doc (the attributes; null for a tombstone), lc (``doc``
              with every string lower-cased, see below), rev_from, rev_to (null: the current
              state), deleted, live (= current and not deleted), links (``Write.links``), text
              (``Write.text`` as ``{title, body}``) and words (its words, folded). The state is visible for
              revisions ``rev_from <= R < rev_to``. A write closes the current state
              (``rev_to = R, live = false``) and inserts the new one; a delete inserts a tombstone.
    counters  ``{_id: "revision", value: N}``: the last revision, bumped with ``$inc`` inside the
              commit's transaction, which also serialises concurrent committers (the loser gets
              a write conflict and the driver retries its transaction).
    revisions ``{_id: rev, at, note}``, one per commit.
    meta      ``{_id: "oldest", value}``: the history horizon; ``{_id: "instance", value}``: the
              store's instance id (a UUID, set when the store is first opened);
              ``{_id: "events_horizon", value: "<rev>.<idx>"}``: the last event position pruned.
    rematerialise  the work items of deferred re-materialisation (``xreg.storage.rematerialise``);
              their lease is ``meta`` document ``rematerialise_lease``.
    events    the registry's events (``xreg.events``): ``{rev, idx, id, type, subject, skey
              (the subject lower-cased), time, correlation, changed}``, written by the commit of
              revision ``rev`` (in its transaction) at index ``idx``; indexes ``events_position``
              (rev, idx; unique), ``events_type`` (type, rev, idx), ``events_subject`` (skey,
              rev, idx) for the filters of ``events_after``.

Indexes on ``states``: ``states_current`` unique on xkey where ``rev_to`` is null (one current
state per entity; a unique ``(xkey, rev_to)`` index where partial indexes are refused),
``states_live`` (live, ctype, xkey) for pages of current entities (a parent is a key range),
``states_asof`` (ctype, xkey, rev_from) for as-of pages, ``states_history`` (xkey, rev_from) for
point reads, ``states_rev`` (rev_from) for changes and pruning, ``states_referrers`` (links, xkey;
multikey, partial on ``live: true``) for :meth:`MongoStore.referrers` (see
:meth:`MongoStore.referrers_plan`) and ``states_search``, a text index on
``text.title`` (weight 4) and ``text.body`` (weight 1) for searches: ``$text`` with every word
quoted (all must appear), relevance its ``textScore``. A backend without ``$text`` (mongomock)
matches the folded ``words`` instead, a word matching its stem (``earthquakes``: ``earthquake``),
and ranks by weighted counts.

Typed attributes (:mod:`xreg.storage.indexed`): a live state carries ``ix``, one
``{p: path, v: folded value}`` per entry (``{p}`` alone: an object or list is present), indexed
by ``states_attrs`` on ``(ix.p, ix.v, ctype, xkey)``, partial on ``live: true`` (a superseded
state leaves it; its ``ix`` is emptied too). A current-state query whose one AND group holds an
indexed equality, wildcard or presence test adds that test's ``$elemMatch`` on ``ix`` (path and
value bound together) and hints ``states_attrs``: an equality is one index range in key order, so
a page that matches little reads little. The compiled condition stays beside it (exact on
mongomock too, which compares ``true`` equal to ``1``). ``counts`` holds the live entities per
``(ctype, parent key)``, bumped with ``$inc`` in the commit (its transaction on a replica set):
an unfiltered count sums the parents in range. ``meta.read_index`` records the layout; a database
without it gets ``ix`` and ``counts`` built when opened.

Conditions compile to query operators over ``lc``, mirroring
:func:`xreg.registry.filters.matches`: ``lc`` is folded with Python's ``str.lower`` (the
reference's folding, which MongoDB's ``$toLower`` and ``/i`` only approximate), so string
equality and ranges are plain comparisons on it, wildcards anchored regexes; a filter value that
is a number or ``true``/``false`` also compares against numbers or booleans (MongoDB's type
brackets keep each form to its type); arrays match element-wise natively; key steps are
guarded against MongoDB's implicit descent into arrays. Paths the query language cannot express
exactly (``*``, ``[N]``, ``[*]``, keys holding ``.`` or starting with ``$``) are narrowed in the
database to a superset, and the candidates are checked with ``matches`` in Python. Sorting on
``lc.<path>`` follows :func:`~xreg.registry.filters.compare_key` for scalars; when the sorted
attribute holds objects or arrays (or the path is not a plain one), the page is ordered in Python.

Commits run in a multi-document transaction when the deployment supports them (a replica set or
a sharded cluster: production, the Helm chart deploys a replica set). A standalone server or
mongomock has none: commits then run as ordered writes under an ``asyncio.Lock`` that reads
take too, which is atomic only within this process.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import json
import re
import time
import unicodedata
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from pymongo import ASCENDING, DESCENDING, AsyncMongoClient, ReturnDocument
from pymongo.errors import BulkWriteError, OperationFailure
from pymongo.read_concern import ReadConcern

from xreg.events.record import EventDraft, EventPosition, RegistryEvent, subject_filter
from xreg.storage import algorithms, errors, records
from xreg.storage import rematerialise as rework
from xreg.storage.base import THREAD_DECODE_REFERRERS, Store
from xreg.storage.indexed import PRESENT, Lookup, entry_texts, lookup, parent_key, path_text
from xreg.storage.observe import StoreStats
from xreg.storage.records import Change, EntityRecord, Page, Query, Write
from xreg.storage.rematerialise import Rematerialisation
from xreg.storage.semantics import (
    RANK,
    Condition,
    Cursor,
    Sort,
    compare_key,
    cursor_sort_value,
    matches,
    numeric_value,
    record_sort_value,
    wildcard_parts,
)

DEFAULT_DATABASE = "xregistry"
_WITH_WORDS = {"_id": 0, "lc": 0, "links": 0, "text": 0, "ix": 0}
_PROJECTION = {**_WITH_WORDS, "words": 0}
_MAX_INT = 2**63 - 1
_CHUNK = 500
_OPS = {"eq": "$eq", "lt": "$lt", "le": "$lte", "gt": "$gt", "ge": "$gte"}
#: Types a sort value can have, with their rank in ``filters.compare_key`` (containers: 3).
_RANKED = ((0, "null"), (1, "number"), (2, "string"), (4, "bool"))
INDEXES = {
    "states_live": [("live", ASCENDING), ("ctype", ASCENDING), ("xkey", ASCENDING)],
    "states_asof": [("ctype", ASCENDING), ("xkey", ASCENDING), ("rev_from", ASCENDING)],
    "states_history": [("xkey", ASCENDING), ("rev_from", ASCENDING)],
    "states_rev": [("rev_from", ASCENDING)],
}
#: The reverse index of links (:meth:`MongoStore.referrers`): a page of the live states linking to
#: some keys, in key order after a key, is an index range per key, merged by the server.
REFERRERS_INDEX = "states_referrers"
REFERRERS_KEYS = [("links", ASCENDING), ("xkey", ASCENDING)]
#: Targets per find() of an ordered page: below the server's bound on the ranges it merges for a
#: sort (``internalQueryMaxScansToExplode``, 200), beyond which it would read and sort them all.
REFERRERS_CHUNK = 64
#: The index of ``links`` alone of earlier versions (dropped when a store opens).
_OLD_LINKS_INDEX = "states_links"
#: The typed-attribute index (``xreg.storage.indexed``): the entries of live states, by path,
#: value, collection type and key, so an equality is one index range in key order.
ATTRS_INDEX = "states_attrs"
ATTRS_KEYS = [("ix.p", ASCENDING), ("ix.v", ASCENDING), ("ctype", ASCENDING), ("xkey", ASCENDING)]
ATTRS_PARTIAL = {"live": True}
#: ``meta.read_index``: the layout of ``ix`` and ``counts`` this code keeps.
READ_INDEX_VERSION = 2  # 2: ``meta.xref`` kept by its presence (``indexed.PRESENCE``)
#: Parents' counters read and written together by a commit (:meth:`MongoStore._bump_counts`).
COUNTS_BATCH = 1000

EVENT_INDEXES = {
    "events_position": [("rev", ASCENDING), ("idx", ASCENDING)],
    "events_type": [("type", ASCENDING), ("rev", ASCENDING), ("idx", ASCENDING)],
    "events_subject": [("skey", ASCENDING), ("rev", ASCENDING), ("idx", ASCENDING)],
}


def _event_document(e: RegistryEvent) -> dict[str, Any]:
    return {"rev": e.position.revision, "idx": e.position.index, "id": e.id, "type": e.type, "subject": e.subject,
            "skey": e.subject.lower(), "time": e.time, "correlation": e.correlation_id,
            "changed": None if e.changed is None else list(e.changed)}


def _event(d: dict[str, Any]) -> RegistryEvent:
    changed = d.get("changed")
    return RegistryEvent(EventPosition(int(d["rev"]), int(d["idx"])), d["id"], d["type"], d["subject"], d["time"],
                         d["correlation"], None if changed is None else tuple(changed))


def _events_filter(after: EventPosition | None, types: tuple[str, ...], subject: str | None) -> dict[str, Any]:
    clauses: list[dict[str, Any]] = []
    if after is not None:
        clauses.append({"$or": [{"rev": {"$gt": after.revision}},
                                {"rev": after.revision, "idx": {"$gt": after.index}}]})
    if types:
        clauses.append({"type": {"$in": list(types)}})
    wanted = subject_filter(subject)
    if wanted is not None:
        text, prefix = wanted
        if not prefix:
            clauses.append({"skey": text})
        elif text:
            clauses.append({"skey": {"$gte": text, "$lt": text[:-1] + chr(ord(text[-1]) + 1)}})
    return _and(clauses)


def _fold(value: Any) -> Any:
    """``value`` with every string lower-cased (the folding of ``filters.matches``)."""
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict):
        return {k: _fold(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fold(v) for v in value]
    return value


def _plain(segment: str) -> bool:
    """Whether a path segment is an object key MongoDB's dot notation can address."""
    return bool(segment) and segment[0] not in "$[*" and "." not in segment and "\x00" not in segment


def _field(path: Sequence[str]) -> str:
    return ".".join(("lc", *path))


def _and(clauses: Sequence[dict]) -> dict:
    clauses = [c for c in clauses if c]
    return {} if not clauses else clauses[0] if len(clauses) == 1 else {"$and": list(clauses)}


def _number(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_INT else value


def _forms(op: str, value: str, wildcard: bool) -> list[dict]:
    """Operator expressions, one per type a filter value can compare with (``_scalar_match``)."""
    if wildcard:
        pattern = ".*".join(re.escape(p.lower()) for p in wildcard_parts(value))
        # (?![\s\S]) is "end of text": ``$`` would also match before a final newline.
        return [{"$regex": f"^{pattern}(?![\\s\\S])", "$options": "s"}]
    mop = _OPS[op]
    forms: list[dict[str, Any]] = [{mop: value.lower()}]
    if value in ("true", "false"):
        forms.append({mop: value == "true"})
    number = numeric_value(value)
    if number is not None:
        forms.append({mop: _number(number)})
    return forms


def _match(f: str, expr: dict, strict: bool) -> dict:
    """``{f: expr}`` (element-wise on arrays). ``strict`` pins a number or boolean operand to
    its BSON type, for backends that compare them loosely (mongomock: ``True == 1``; its
    ``$elemMatch`` also descends into nested arrays, hence the ``$not``)."""
    value = next(iter(expr.values()))
    if not strict or not isinstance(value, (bool, int, float)):
        return {f: expr}
    typed = {**expr, "$type": "bool" if isinstance(value, bool) else "number", "$not": {"$type": "array"}}
    return {"$or": [{f: typed}, {f: {"$elemMatch": typed}}]}


def compile_condition(cond: Condition, *, strict: bool = False) -> tuple[dict, bool]:
    """A query clause for one condition and whether it is exact (else a superset of it)."""
    negated = cond.op in ("ne", "null")
    n = next((i for i, s in enumerate(cond.path) if not _plain(s)), len(cond.path))
    # Key steps only enter objects: no implicit descent into an array on the way.
    guards = [{_field(cond.path[:i]): {"$not": {"$type": "array"}}} for i in range(1, n)]
    if n < len(cond.path):  # not expressible: what any selected value needs, unless negated
        if negated or n == 0:
            return {}, False
        kind = "array" if cond.path[n].startswith("[") else "object"
        return _and(guards + [{_field(cond.path[:n]): {"$type": kind}}]), False
    f = _field(cond.path)
    if cond.op in ("exists", "null"):
        hit: dict[str, Any] = {"$or": [{f: {"$ne": None}}, {f: {"$type": "array"}}]}
    else:
        forms = [_match(f, x, strict) for x in _forms("eq" if negated else cond.op, cond.value or "", cond.wildcard)]
        hit = forms[0] if len(forms) == 1 else {"$or": forms}
    positive = _and(guards + [hit])
    return ({"$nor": [positive]} if negated else positive), True


def compile_any_of(any_of: Sequence[Sequence[Condition]], *, strict: bool = False) -> tuple[dict, bool]:
    """The OR of AND groups as one clause (``{}``: everything) and whether it is exact."""
    if not any_of:
        return {}, True
    exact, groups = True, []
    for group in any_of:
        parts = []
        for cond in group:
            clause, ok = compile_condition(cond, strict=strict)
            exact &= ok
            parts.append(clause)
        groups.append(_and(parts))
    if any(g == {} for g in groups):
        return {}, exact
    return (groups[0] if len(groups) == 1 else {"$or": groups}), exact


def _cursor_key(value: Any) -> tuple:
    """``compare_key`` of a cursor's value (a container's canonical JSON text read back)."""
    return compare_key(cursor_sort_value(value))


_WORD = re.compile(r"\w+")


def _stem(word: str) -> str:
    """A crude English stem (the fallback of searches without ``$text``): ``earthquakes``,
    ``earthquake`` → ``earthquak``; ``reporting`` → ``report``."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def words(text: str) -> list[str]:
    """The folded, stemmed words of a text (accents removed)."""
    plain = unicodedata.normalize("NFKD", text.lower())
    return [_stem(w) for w in _WORD.findall("".join(c for c in plain if not unicodedata.combining(c)))]


def _state_document(
    state: algorithms.NewState | records.StoredState, rev: int, rev_to: int | None = None,
) -> dict[str, Any]:
    """The ``states`` document of a state written at revision ``rev`` (superseded at ``rev_to``)."""
    parent = EntityRecord(state.xid, state.kind, state.ctype, {}).parent_xid
    text = {"title": state.text[0], "body": state.text[1]} if state.text else None
    return {"xkey": state.key, "xid": state.xid, "kind": state.kind, "ctype": state.ctype,
            "parent": parent.lower() if parent else None, "doc": state.doc,
            "lc": None if state.deleted else _fold(state.doc), "rev_from": rev, "rev_to": rev_to,
            "deleted": state.deleted, "live": rev_to is None and not state.deleted, "links": list(state.links),
            "text": text,
            "words": {"title": words(state.text[0]), "body": words(state.text[1])} if state.text else None,
            "ix": index_entries(state.doc) if rev_to is None and not state.deleted else []}


def index_entries(doc: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ``ix`` field of a live state: ``{p: path, v: value}`` per entry (presence: no ``v``)."""
    return [{"p": path} if v is PRESENT else {"p": path, "v": v} for path, v in entry_texts(doc)]


def index_clause(lk: Lookup) -> dict[str, Any]:
    """The ``ix`` clause selecting the entries of a lookup (an ``$elemMatch``: path and value
    of one entry, so the index bounds both)."""
    match: dict[str, Any] = {"p": path_text(lk.path)}
    if lk.parts is not None:
        pattern = ".*".join(re.escape(p) for p in lk.parts)
        match["v"] = {"$regex": f"^{pattern}(?![\\s\\S])", "$options": "s"}
    elif lk.values == (PRESENT,):  # a presence entry has no ``v``: null matches it, and bounds the index
        match["v"] = None
    elif not lk.present:
        match["v"] = lk.values[0] if len(lk.values) == 1 else {"$in": list(lk.values)}
    return {"ix": {"$elemMatch": match}}


def _native_value(value: Any) -> Any:
    return _number(_fold(value))


def _count_delta(
    plan: algorithms.CommitPlan, current: dict[str, algorithms.CurrentState],
) -> dict[tuple[str, str], int]:
    """How a commit changes the live entities per ``(ctype, parent key)`` (the ``counts`` collection)."""
    delta: dict[tuple[str, str], int] = {}
    for key, state in plan.new.items():
        was = key in current and not current[key].deleted
        n = int(not state.deleted) - int(was)
        if n:
            slot = (state.ctype, parent_key(key))
            delta[slot] = delta.get(slot, 0) + n
    return {k: n for k, n in delta.items() if n}


class MongoStore(Store):
    """A :class:`Store` in one MongoDB database."""

    def __init__(self, url: str | None = None, *, database: str | None = None, client: Any = None) -> None:
        self.stats = StoreStats()
        self._own_client = client is None
        if client is None:
            client = AsyncMongoClient(url) if url else AsyncMongoClient()
            name = database or client.get_default_database(DEFAULT_DATABASE).name
        else:
            name = database or DEFAULT_DATABASE
        self._client = client
        self._db = client[name]
        self.states = self._db["states"]
        self.counters = self._db["counters"]
        self.revisions = self._db["revisions"]
        self.meta = self._db["meta"]
        self.events = self._db["events"]
        #: The work items of deferred re-materialisation (``xreg.storage.rematerialise``).
        self.rework = self._db["rematerialise"]
        #: ``{ctype, parent, n}``: live entities per collection type and parent key (unfiltered counts).
        self.counts = self._db["counts"]
        #: Whether commits run in transactions (known after :meth:`open`).
        self.transactions = False
        #: Whether ``states_current`` is a partial index (else unique on ``(xkey, rev_to)``).
        self.partial_index = False
        #: Whether the backend equates booleans and numbers (mongomock), see ``_match``.
        self.strict_types = False
        #: Whether the backend runs ``$text`` searches (else: the ``words`` fallback).
        self.text_search = False
        self._lock = asyncio.Lock()
        self._opened = False

    # -- lifecycle ----------------------------------------------------------------------------
    async def open(self) -> None:
        if self._opened:
            return
        try:
            await self.states.create_index([("xkey", ASCENDING)], name="states_current", unique=True,
                                           partialFilterExpression={"rev_to": None})
            self.partial_index = True
        except (OperationFailure, NotImplementedError, TypeError):
            await self.states.create_index([("xkey", ASCENDING), ("rev_to", ASCENDING)],
                                           name="states_current", unique=True)
        for name, keys in INDEXES.items():
            await self.states.create_index(keys, name=name)
        for name, keys in ((ATTRS_INDEX, ATTRS_KEYS), (REFERRERS_INDEX, REFERRERS_KEYS)):
            try:
                await self.states.create_index(keys, name=name, partialFilterExpression=ATTRS_PARTIAL)
            except (OperationFailure, NotImplementedError, TypeError):
                await self.states.create_index(keys, name=name)
        if _OLD_LINKS_INDEX in await self.states.index_information():
            await self.states.drop_index(_OLD_LINKS_INDEX)
        await self.counts.create_index([("ctype", ASCENDING), ("parent", ASCENDING)], name="counts_parent",
                                       unique=True)
        await self.states.create_index([("text.title", "text"), ("text.body", "text")], name="states_search",
                                       weights={"text.title": 4, "text.body": 1}, default_language="english")
        try:
            await self.states.find_one({"$text": {"$search": "probe"}}, {"_id": 1})
            self.text_search = True
        except NotImplementedError:  # mongomock
            self.text_search = False
        # Also creates the collection: servers before 4.4 cannot create one inside a transaction.
        await self.revisions.create_index([("at", ASCENDING)], name="revisions_at")
        for name, keys in EVENT_INDEXES.items():
            await self.events.create_index(keys, name=name, unique=name == "events_position")
        await self.counters.update_one({"_id": "revision"}, {"$setOnInsert": {"value": 0}}, upsert=True)
        self.transactions = await self._supports_transactions()
        # Real MongoDB never finds ``true`` when asked for 1; mongomock compares with Python's ==.
        await self.meta.update_one({"_id": "probe"}, {"$set": {"value": True}}, upsert=True)
        self.strict_types = await self.meta.find_one({"_id": "probe", "value": 1}) is not None
        await self.meta.delete_one({"_id": "probe"})
        await self.meta.update_one({"_id": "instance"}, {"$setOnInsert": {"value": str(uuid.uuid4())}}, upsert=True)
        await self.meta.update_one({"_id": rework.MONGO_LEASE}, {"$setOnInsert": {"holder": None, "until": 0.0}},
                                   upsert=True)
        self._instance = str((await self.meta.find_one({"_id": "instance"}) or {}).get("value"))
        await self._migrate()
        self._opened = True

    async def _set_counts(self, live: dict[tuple[str, str], int]) -> None:
        await self.counts.delete_many({})
        if live:
            await self.counts.insert_many([{"ctype": c, "parent": p, "n": n} for (c, p), n in live.items()])

    async def _migrate(self) -> None:
        """Give a database made before the read index its ``ix`` entries and ``counts``."""
        found = await self.meta.find_one({"_id": "read_index"})
        if found and found.get("value") == READ_INDEX_VERSION:
            return
        live: dict[tuple[str, str], int] = {}
        cursor = self.states.find({"live": True}, {"_id": 1, "xkey": 1, "ctype": 1, "doc": 1})
        async for d in cursor:
            await self.states.update_one({"_id": d["_id"]}, {"$set": {"ix": index_entries(d.get("doc"))}})
            slot = (d["ctype"], parent_key(d["xkey"]))
            live[slot] = live.get(slot, 0) + 1
        await self._set_counts(live)
        await self.meta.update_one({"_id": "read_index"}, {"$set": {"value": READ_INDEX_VERSION}}, upsert=True)

    async def _supports_transactions(self) -> bool:
        """Transactions need a replica set member or mongos; mongomock has no ``hello``."""
        try:
            hello = await self._client.admin.command("hello")
        except NotImplementedError:
            return False
        except OperationFailure:  # servers before 4.4.2
            hello = await self._client.admin.command("isMaster")
        return bool(hello.get("setName") or hello.get("msg") == "isdbgrid")

    async def close(self) -> None:
        self._opened = False
        if self._own_client:
            await self._client.close()

    async def check_ready(self) -> None:
        """The server answers ``ping`` and takes a write (a timestamp in ``meta``)."""
        await self._client.admin.command("ping")
        await self.meta.update_one({"_id": "readiness"}, {"$set": {"at": time.time()}}, upsert=True)

    def _reading(self) -> contextlib.AbstractAsyncContextManager:
        """Reads wait for a running commit when commits are not transactions."""
        return contextlib.nullcontext() if self.transactions else self._lock

    async def _write(self, fn: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run ``fn(session)`` atomically: in a transaction (retried by the driver on transient
        errors, aborted on any exception) or, without transactions, under the lock."""
        if self.transactions:
            async with self._client.start_session() as session:
                return await session.with_transaction(fn)
        async with self._lock:
            return await fn(None)

    # -- revisions ----------------------------------------------------------------------------
    async def _current(self, session: Any = None) -> int:
        doc = await self.counters.find_one({"_id": "revision"}, session=session)
        return int(doc["value"]) if doc else 0

    async def _oldest(self, session: Any = None) -> int:
        doc = await self.meta.find_one({"_id": "oldest"}, session=session)
        return int(doc["value"]) if doc else 0

    # -- reads --------------------------------------------------------------------------------
    @staticmethod
    def _visible(as_of: int | None) -> dict:
        if as_of is None:
            return {"live": True}
        return {"rev_from": {"$lte": as_of}, "deleted": False,
                "$or": [{"rev_to": None}, {"rev_to": {"$gt": as_of}}]}

    @staticmethod
    def _record(d: dict) -> EntityRecord:
        return EntityRecord(xid=d["xid"], kind=d["kind"], ctype=d["ctype"], doc=d.get("doc") or {},
                            revision=d["rev_from"], deleted=bool(d["deleted"]))

    def _find(self, flt: dict, sort: list | None = None, limit: int | None = None,
              hint: str | None = None) -> Any:
        cursor = self.states.find(flt, _PROJECTION)
        if sort:
            cursor = cursor.sort(sort)
        if hint:
            cursor = cursor.hint(hint)
        if limit is not None:
            cursor = cursor.limit(limit)
        return cursor

    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, EntityRecord]:
        self.stats.hit("get_many")
        keys = list(dict.fromkeys(x.lower() for x in xids))
        async with self._reading():
            await self._check(as_of)
            cursor = self._find({"xkey": {"$in": keys}, **self._visible(as_of)})
            return {r.key: r for r in map(self._record, await cursor.to_list(length=None))}

    def _base(self, query: Query) -> tuple[dict, list[dict]]:
        """Visibility, ctype, parent and keys of a query: (top-level fields, further clauses)."""
        flt: dict[str, Any] = {"ctype": query.ctype}
        clauses: list[dict] = []
        vis = self._visible(query.as_of)
        if "$or" in vis:
            clauses.append({"$or": vis.pop("$or")})
        flt.update(vis)
        xkey: dict[str, Any] = {}
        if query.parent not in (None, "/"):
            pk = query.parent.lower()
            xkey.update({"$gt": pk + "/", "$lt": pk + "0"})
        if query.keys is not None:
            xkey["$in"] = [k.lower() for k in query.keys]
        if xkey:
            flt["xkey"] = xkey
        if query.parents is not None:  # each parent is a key range, as ``parent`` is
            clauses.append({"$or": [{"xkey": {"$gt": k.lower() + "/", "$lt": k.lower() + "0"}}
                                    for k in query.parents]} if query.parents else {"xkey": {"$in": []}})
        return flt, clauses

    @staticmethod
    def _hint(query: Query) -> str:
        return "states_live" if query.as_of is None else "states_asof"

    @staticmethod
    def _drive(query: Query) -> Lookup | None:
        """The indexed condition a current-state query is read by (``states_attrs``): the first
        of its one group the index answers (``None``: none, or not a current-state query)."""
        if query.as_of is not None or query.search is not None or query.keys is not None or len(query.any_of) != 1:
            return None
        return next((lk for lk in map(lookup, query.any_of[0]) if lk is not None), None)

    def _plan(self, query: Query, *, reverse: bool, bound: tuple[str, Cursor] | None,
              limit: int | None) -> dict:
        """The find() of one direction of a page in database order (``sort`` is None or plain):
        rows past ``bound`` = (op, cursor) and the query's cursors, ``reverse``: opposite order.
        With an indexed condition, its ``ix`` clause too (the compiled condition stays: exact on
        every backend) and the ``states_attrs`` hint."""
        conds, exact = compile_any_of(query.any_of, strict=self.strict_types)
        flt, clauses = self._base(query)
        drive = self._drive(query)
        if drive is not None:
            clauses.insert(0, index_clause(drive))
        desc = bool(query.sort and query.sort.descending) != reverse
        direction = DESCENDING if desc else ASCENDING
        given: list[tuple[str, Cursor | None]] = [(">", query.after), ("<", query.before), *([bound] if bound else [])]
        bounds = [(op, c) for op, c in given if c is not None]
        if query.sort is None:
            # Key order: fold the parent range and the cursors into one range of the index.
            sort = [("xkey", direction)]
            xkey = flt.pop("xkey", {})
            lows = [(xkey.pop("$gt"), True)] if "$gt" in xkey else []
            highs = [(xkey.pop("$lt"), True)] if "$lt" in xkey else []
            for op, c in bounds:
                (lows if op[0] == ">" else highs).append((c.key, len(op) == 1))
            if lows:
                key, strict = max(lows)
                xkey["$gt" if strict else "$gte"] = key
            if highs:
                key, strict = min(highs, key=lambda b: (b[0], not b[1]))
                xkey["$lt" if strict else "$lte"] = key
            if xkey:
                flt["xkey"] = xkey
        else:
            f = _field(query.sort.path)
            sort = [(f, direction), ("xkey", direction)]
            for op, c in bounds:
                if query.sort.descending:
                    op = op.translate(str.maketrans("<>", "><"))
                clauses.append(self._past(f, op, c, self.strict_types))
        if conds:
            clauses.append(conds)
        if clauses:
            flt["$and"] = clauses
        return {"filter": flt, "sort": sort, "limit": limit if exact else None,
                "hint": ATTRS_INDEX if drive is not None else self._hint(query), "exact": exact}

    @staticmethod
    def _past(f: str, op: str, cursor: Cursor, strict: bool) -> dict:
        """Rows whose (sort value, key) is ``op`` the cursor's, in ascending order (scalars)."""
        value = _native_value(cursor.value)
        rank = _cursor_key(cursor.value)[0]
        up = op[0] == ">"
        out: list[dict] = []
        for r, kind in _RANKED:
            if (r > rank) if up else (r < rank):
                out.append({f: None} if kind == "null" else {f: {"$type": kind}})
        if value is not None:
            out.append(_match(f, {"$gt" if up else "$lt": value}, strict))
        same = {f: None} if value is None else _match(f, {"$eq": value}, strict)
        out.append({**same, "xkey": {{">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte"}[op]: cursor.key}})
        return {"$or": out}

    async def _native_order(self, query: Query) -> bool:
        """Whether the database can order the page exactly: key order, or a plain sort path
        whose values (among the query's entities) are all scalars."""
        if query.search is not None:
            return False
        if query.sort is None:
            return True
        path = query.sort.path
        if not all(map(_plain, path)):
            return False
        for c in (query.after, query.before):
            if c is not None and (isinstance(c.value, (dict, list)) or _cursor_key(c.value)[0] == 3):
                return False
        flt, clauses = self._base(query)
        odd = [{_field(path[:i]): {"$type": "array"}} for i in range(1, len(path) + 1)]
        odd.append({_field(path): {"$type": "object"}})
        flt["$and"] = clauses + [{"$or": odd}]
        return await self.states.find_one(flt, {"_id": 1}) is None

    async def _scan(self, query: Query, *, reverse: bool, bound: tuple[str, Cursor] | None,
                    limit: int | None) -> list[EntityRecord]:
        """Matching rows in database order, ``limit`` at most (inexact filters checked here)."""
        plan = self._plan(query, reverse=reverse, bound=bound, limit=limit)
        cursor = self._find(plan["filter"], plan["sort"], plan["limit"], plan["hint"])
        out: list[EntityRecord] = []
        try:
            async for d in cursor:
                rec = self._record(d)
                if plan["exact"] or matches(rec.doc, query.any_of):
                    out.append(rec)
                    if limit is not None and len(out) >= limit:
                        break
        finally:
            await cursor.close()
        return out

    async def _matching(self, query: Query) -> list[EntityRecord]:
        """Every entity matching ``query`` (cursors ignored), in no particular order; with a
        search, each carrying its rank."""
        conds, exact = compile_any_of(query.any_of, strict=self.strict_types)
        flt, clauses = self._base(query)
        if clauses or conds:
            flt["$and"] = clauses + ([conds] if conds else [])
        if query.search is None:
            cursor = self._find(flt)
            return [r for r in map(self._record, await cursor.to_list(length=None))
                    if exact or matches(r.doc, query.any_of)]
        out = []
        if self.text_search:
            flt["$text"] = {"$search": " ".join('"' + w.replace('"', " ") + '"' for w in query.search)}
            cursor = self.states.find(flt, {**_PROJECTION, "score": {"$meta": "textScore"}})
            for d in await cursor.to_list(length=None):
                rec = self._record(d)
                if exact or matches(rec.doc, query.any_of):
                    out.append(replace(rec, rank=-float(d["score"])))
            return out
        wanted = [w for term in query.search for w in words(term)]
        cursor = self.states.find(flt, _WITH_WORDS)
        for d in await cursor.to_list(length=None):
            found = d.get("words") or {"title": [], "body": []}
            if not all(w in found["title"] or w in found["body"] for w in wanted):
                continue
            rec = self._record(d)
            if exact or matches(rec.doc, query.any_of):
                score = sum(4 * found["title"].count(w) + found["body"].count(w) for w in wanted)
                out.append(replace(rec, rank=-float(score)))
        return out

    async def list(self, query: Query) -> Page:
        self.stats.hit("list")
        limit = query.limit
        async with self._reading():
            await self._check(query.as_of)
            top = self.top_search(query)
            if top is not None and self.text_search:  # the best by text score, limited by the server
                return await self._top_hits(top, limit or 0)
            if not await self._native_order(query):
                return self._page_in_python(query, await self._matching(query))
            backward = query.before is not None
            rows = await self._scan(query, reverse=backward, bound=None, limit=None if limit is None else limit + 1)
            more = limit is not None and len(rows) > limit
            rows = rows[:limit] if limit is not None else rows
            if query.before is not None:  # read backwards
                rows.reverse()
                has_prev = more
                has_next = bool(await self._scan(replace(query, before=None), reverse=False,
                                                 bound=(">=", query.before), limit=1))
            else:
                has_next, has_prev = more, False
                if query.after is not None:
                    has_prev = bool(await self._scan(replace(query, after=None), reverse=True,
                                                     bound=("<=", query.after), limit=1))
        return Page(items=rows, has_next=has_next, has_prev=has_prev)

    def top_search(self, query: Query) -> dict | None:
        """The find() of a first page by relevance (no cursor, exact conditions): ``$text`` sorted
        by its ``textScore`` then key, limited to the page and one more — the server keeps the
        best, none of the rest is sent. ``None`` for any other search (read whole, paged here)."""
        if (query.search is None or query.sort != Sort(RANK) or query.after is not None or query.before is not None
                or query.limit is None):
            return None
        conds, exact = compile_any_of(query.any_of, strict=self.strict_types)
        if not exact:
            return None
        flt, clauses = self._base(query)
        if clauses or conds:
            flt["$and"] = clauses + ([conds] if conds else [])
        flt["$text"] = {"$search": " ".join('"' + w.replace('"', " ") + '"' for w in query.search)}
        score = {"$meta": "textScore"}
        return {"filter": flt, "projection": {**_PROJECTION, "score": score},
                "sort": [("score", score), ("xkey", ASCENDING)], "limit": query.limit + 1}

    async def _top_hits(self, plan: dict, limit: int) -> Page:
        cursor = self.states.find(plan["filter"], plan["projection"]).sort(plan["sort"]).limit(plan["limit"])
        rows = [replace(self._record(d), rank=-float(d["score"])) for d in await cursor.to_list(length=None)]
        return Page(rows[:limit], has_next=len(rows) > limit, has_prev=False)

    @staticmethod
    def _page_in_python(query: Query, rows: builtins.list[EntityRecord]) -> Page:
        """A page ordered by ``filters.compare_key`` in Python (containers, odd sort paths)."""
        sort = query.sort or Sort(())
        desc = sort.descending

        def pos(r: EntityRecord) -> tuple:
            return (compare_key(record_sort_value(r, sort.path)), r.key)

        def cur(c: Cursor) -> tuple:
            return (_cursor_key(c.value), c.key)

        def past(r: EntityRecord, c: Cursor) -> bool:  # strictly after c in query order
            return pos(r) < cur(c) if desc else pos(r) > cur(c)

        def ahead(r: EntityRecord, c: Cursor) -> bool:  # strictly before c in query order
            return pos(r) > cur(c) if desc else pos(r) < cur(c)

        ordered = sorted(rows, key=pos, reverse=desc)
        n = len(ordered)
        i0 = next((i for i, r in enumerate(ordered) if past(r, query.after)), n) if query.after else 0
        i1 = next((i for i, r in enumerate(ordered) if not ahead(r, query.before)), n) if query.before else n
        window, limit = ordered[i0:i1], query.limit
        more = limit is not None and len(window) > limit
        if query.before is not None:
            page = window if limit is None else window[max(len(window) - limit, 0):] if limit else []
            return Page(page, has_next=max(i0, i1) < n, has_prev=more)
        return Page(window if limit is None else window[:limit], has_next=more, has_prev=min(i0, i1) > 0)

    async def count(self, query: Query) -> int:
        self.stats.hit("count")
        async with self._reading():
            await self._check(query.as_of)
            conds, exact = compile_any_of(query.any_of, strict=self.strict_types)
            if not exact or query.search is not None:
                return len(await self._matching(query))
            if (query.as_of is None and not query.any_of and query.keys is None and query.parents is None):
                return await self._count_live(query.ctype, query.parent)
            flt, clauses = self._base(query)
            drive = self._drive(query)
            if drive is not None:
                clauses.insert(0, index_clause(drive))
            if clauses or conds:
                flt["$and"] = clauses + ([conds] if conds else [])
            if drive is not None:
                return await self.states.count_documents(flt, hint=ATTRS_INDEX)
            return await self.states.count_documents(flt)

    async def _count_live(self, ctype: str, parent: str | None) -> int:
        """The live entities of ``ctype`` under ``parent`` from ``counts`` (a sum over parents)."""
        flt: dict[str, Any] = {"ctype": ctype}
        if parent not in (None, "/"):
            pk = parent.lower()
            flt["$or"] = [{"parent": pk}, {"parent": {"$gt": pk + "/", "$lt": pk + "0"}}]
        cursor = self.counts.find(flt, {"n": 1})
        return sum(int(d["n"]) for d in await cursor.to_list(length=None))

    async def count_children(self, parents: Sequence[str], ctype: str, as_of: int | None = None) -> dict[str, int]:
        self.stats.hit("count_children")
        keys = list(dict.fromkeys(p.lower() for p in parents))
        out = {k: 0 for k in keys}
        coll = "/" + ctype.rsplit("/", 1)[-1]
        async with self._reading():
            await self._check(as_of)
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i:i + _CHUNK]
                flt: dict[str, Any] = {"ctype": ctype}
                clauses = []
                vis = self._visible(as_of)
                if "$or" in vis:
                    clauses.append({"$or": vis.pop("$or")})
                flt.update(vis)
                if "/" not in chunk:
                    clauses.append({"$or": [{"xkey": {"$gt": k + "/", "$lt": k + "0"}} for k in chunk]})
                if clauses:
                    flt["$and"] = clauses
                pipeline = [{"$match": flt}, {"$group": {"_id": "$parent", "n": {"$sum": 1}}}]
                result = self.states.aggregate(pipeline)
                if inspect.isawaitable(result):  # PyMongo's is a coroutine, mongomock's a cursor
                    result = await result
                for row in await result.to_list(length=None):
                    if row["_id"] is None:  # the registry entity itself has no parent
                        continue
                    # A child lies in the key range of ``k`` when its collection's path does.
                    path = (row["_id"] if row["_id"] != "/" else "") + coll
                    for k in chunk:
                        if k == "/" or path == k or path.startswith(k + "/"):
                            out[k] += row["n"]
        return out

    async def _changes(
        self, since: int, until: int | None, ctypes: Sequence[str] | None, limit: int | None, after: str | None,
        after_revision: int | None, by_revision: bool,
    ) -> builtins.list[Change]:
        flt: dict[str, Any] = {"rev_from": {"$gt": since}}
        if until is None:
            flt["rev_to"] = None
        else:
            flt["rev_from"]["$lte"] = until
            flt["$or"] = [{"rev_to": None}, {"rev_to": {"$gt": until}}]
        if ctypes is not None:
            flt["ctype"] = {"$in": list(ctypes)}
        if after is not None and by_revision:
            flt["$and"] = [{"$or": [{"rev_from": {"$gt": after_revision}},
                                    {"rev_from": after_revision, "xkey": {"$gt": after.lower()}}]}]
        elif after is not None:
            flt["xkey"] = {"$gt": after.lower()}
        if limit == 0:  # MongoDB would read limit(0) as "no limit"
            return []
        order = [("rev_from", ASCENDING), ("xkey", ASCENDING)] if by_revision else [("xkey", ASCENDING)]
        cursor = self._find(flt, order, None if limit is None or limit < 0 else limit)
        return [Change(self._record(d)) for d in await cursor.to_list(length=None)]

    async def referrers(self, keys: Sequence[str], *, after: str | None = None, limit: int | None = None,
                        ordered: bool = True) -> builtins.list[EntityRecord]:
        self.stats.hit("referrers")
        targets = sorted({k.lower() for k in keys})
        out: dict[str, EntityRecord] = {}
        if limit is not None and limit <= 0:  # MongoDB would read limit(0) as "no limit"
            return []
        size = REFERRERS_CHUNK if ordered else _CHUNK
        async with self._reading():
            for i in range(0, len(targets), size):
                plan = self.referrers_plan(targets[i:i + size], after=after, limit=limit, ordered=ordered)
                cursor = self._find(plan["filter"], plan["sort"], plan["limit"], plan["hint"])
                docs = await cursor.to_list(length=None)
                if len(docs) > THREAD_DECODE_REFERRERS:  # a page of dependents: decoded off the event loop
                    found = await asyncio.to_thread(_records, docs)
                else:
                    found = _records(docs)
                out.update((rec.key, rec) for rec in found)
        return [out[k] for k in sorted(out)][:limit]

    @staticmethod
    def referrers_plan(targets: Sequence[str], *, after: str | None, limit: int | None,
                       ordered: bool) -> dict[str, Any]:
        """The find() of :meth:`referrers` for some lower-cased target keys: filter, sort, limit and
        hint. With the index ``(links, xkey)`` (partial on ``live``) each target is one range of
        it from ``after`` on, in key order: the server merges them (a state linking to two of
        them found once) and stops at the limit, so a page costs its size plus a seek per target
        (at most :data:`REFERRERS_CHUNK` of them), not every referrer read and sorted."""
        flt: dict[str, Any] = {"links": {"$in": list(targets)}, "live": True}
        if after is not None:
            flt["xkey"] = {"$gt": after.lower()}
        return {"filter": flt, "sort": [("xkey", ASCENDING)] if ordered else None,
                "limit": None if limit is None else max(0, limit), "hint": REFERRERS_INDEX}

    async def explain(self, query: Query) -> str:
        """The main find() of a page read: filter, sort, limit (page size + 1) and index hint;
        ``exact`` false means candidates are re-checked with ``filters.matches``."""
        self.stats.hit("explain")
        limit = None if query.limit is None else query.limit + 1
        plan = self._plan(query, reverse=query.before is not None, bound=None, limit=limit)
        plan["limit"] = limit
        return json.dumps({"collection": "states", **plan}, default=str, indent=1)

    # -- writes -------------------------------------------------------------------------------
    async def commit(self, writes: Sequence[Write], *, note: str = "", events: Sequence[EventDraft] = (),
                     rematerialise: Sequence[str] = ()) -> int:
        self.stats.hit("commit")
        writes = list(writes)
        if not writes:
            async with self._reading():
                return await self._current()
        return await self._write(lambda session: self._apply(writes, note, session, list(events), rematerialise))

    async def _bump_counts(self, delta: dict[tuple[str, str], int], session: Any) -> None:
        """Apply a commit's changes to ``counts`` in a few round trips, not one per parent: one read
        of which parents have a counter, the others inserted together, the rest moved by one
        ``update_many`` per collection type and change (a commit of 10,000 new messages in 100 new
        groups: a find and an insert). In a transaction the revision counter, taken first,
        keeps any other commit from interleaving; without one, the commit lock does."""
        slots = list(delta)
        for i in range(0, len(slots), COUNTS_BATCH):
            chunk = slots[i:i + COUNTS_BATCH]
            by_type: dict[str, builtins.list[str]] = {}
            for ctype, parent in chunk:
                by_type.setdefault(ctype, []).append(parent)
            cursor = self.counts.find({"$or": [{"ctype": c, "parent": {"$in": ps}} for c, ps in by_type.items()]},
                                      {"_id": 0, "ctype": 1, "parent": 1}, session=session)
            found = {(d["ctype"], d["parent"]) for d in await cursor.to_list(length=None)}
            missing = [{"ctype": c, "parent": p, "n": delta[(c, p)]} for c, p in chunk if (c, p) not in found]
            if missing:
                await self.counts.insert_many(missing, ordered=True, session=session)
            moves: dict[tuple[str, int], builtins.list[str]] = {}
            for c, p in chunk:
                if (c, p) in found:
                    moves.setdefault((c, delta[(c, p)]), []).append(p)
            for (c, n), parents in moves.items():
                await self.counts.update_many({"ctype": c, "parent": {"$in": parents}}, {"$inc": {"n": n}},
                                              session=session)

    async def _next_revision(self, session: Any) -> int:
        doc = await self.counters.find_one_and_update(
            {"_id": "revision"}, {"$inc": {"value": 1}}, upsert=True,
            return_document=ReturnDocument.AFTER, session=session)
        return int(doc["value"])

    async def _apply(self, writes: builtins.list[Write], note: str, session: Any,
                     events: builtins.list[EventDraft], rematerialise: Sequence[str] = ()) -> int:
        # In a transaction, take the revision first: the counter's write lock makes concurrent
        # committers conflict (and retry), and an abort on Conflict rolls it back. Without
        # one, check first and take it last, so a Conflict leaves nothing behind.
        rev = await self._next_revision(session) if session else await self._current() + 1
        keys = list(dict.fromkeys(w.key for w in writes))
        cursor = self.states.find({"xkey": {"$in": keys}, "rev_to": None},
                                  {"xkey": 1, "rev_from": 1, "deleted": 1}, session=session)
        current = {d["xkey"]: algorithms.CurrentState(rev_from=d["rev_from"], deleted=bool(d["deleted"]))
                   for d in await cursor.to_list(length=None)}
        plan = algorithms.plan_commit(writes, current, rev)
        new = [_state_document(n, rev) for n in plan.new.values()]
        delta = _count_delta(plan, current)
        if not session:
            rev2 = await self._next_revision(None)
            if rev2 != rev:  # another process committed: only possible without transactions
                raise RuntimeError(f"concurrent commit detected (revision {rev2}, expected {rev}); "
                                   "MongoStore needs a replica set for several writers")
        try:
            if events:
                await self.events.insert_many(
                    [_event_document(e.at(EventPosition(rev, i), self.instance_id)) for i, e in enumerate(events)],
                    ordered=True, session=session)
            if plan.closing:
                await self.states.update_many({"xkey": {"$in": plan.closing}, "rev_to": None},
                                              {"$set": {"rev_to": rev, "live": False, "ix": []}}, session=session)
            if new:
                await self.states.insert_many(new, ordered=True, session=session)
            await self._bump_counts(delta, session)
            await self.revisions.insert_one({"_id": rev, "at": time.time(), "note": note}, session=session)
            await self._enqueue(rematerialise, rev, session)
        except BaseException:
            if not session and events:  # no transaction to abort: a failed commit leaves no events
                await self.events.delete_many({"rev": rev})
            raise
        return rev

    # -- deferred re-materialisation ---------------------------------------------------------
    async def _enqueue(self, keys: Sequence[str], rev: int, session: Any) -> None:
        """Record a commit's work items in a few round trips whatever their number (in the
        commit's session): one read of which keys have an item, those replaced by one
        ``update_many`` (``$min`` keeps the earliest ``at``), the others inserted together.

        Without a transaction (a standalone server) the worker may finish an item between the
        read and the update: an update that matched fewer items than were read inserts them all
        again, and an insert that finds an item there already (one of those, or another
        process's) replaces it instead — no item a commit recorded is lost. In a transaction the
        read is the commit's snapshot and a conflicting write aborts it (retried as a whole)."""
        wanted = list(dict.fromkeys(k.lower() for k in keys))
        if not wanted:
            return
        now = time.time()
        update = {"$set": {"rev": rev, "after": None}, "$min": {"at": now}}
        cursor = self.rework.find({"_id": {"$in": wanted}}, {"_id": 1}, session=session)
        found = {d["_id"] for d in await cursor.to_list(length=None)}
        insert = [k for k in wanted if k not in found]
        if found:
            result = await self.rework.update_many({"_id": {"$in": [k for k in wanted if k in found]}}, update,
                                                   session=session)
            if result.matched_count < len(found):  # finished meanwhile (no transaction): recorded again
                insert = wanted
        if insert:
            await self._insert_items(insert, rev, now, update, session)

    async def _insert_items(self, keys: Sequence[str], rev: int, now: float, update: dict[str, Any],
                            session: Any) -> None:
        """Insert work items for ``keys``; outside a transaction, those already there get ``update``."""
        docs = [{"_id": k, "rev": rev, "at": now, "after": None} for k in keys]
        in_transaction = session is not None and getattr(session, "in_transaction", False)
        try:
            await self.rework.insert_many(docs, ordered=in_transaction, session=session)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors") or []
            if in_transaction or not errors or any(e.get("code") != 11000 for e in errors):
                raise
            there = [keys[e["index"]] for e in errors]
            await self.rework.update_many({"_id": {"$in": there}}, update, session=session)

    async def rematerialisations(self) -> builtins.list[Rematerialisation]:
        self.stats.hit("rematerialisations")
        docs = await self.rework.find({}).sort([("rev", ASCENDING), ("_id", ASCENDING)]).to_list(length=None)
        return [rework.from_document(d) for d in docs]

    async def rematerialised(self, key: str, revision: int, after: str | None, *, done: bool) -> bool:
        self.stats.hit("rematerialised")
        flt = {"_id": key.lower(), "rev": revision}
        if done:
            return (await self.rework.delete_one(flt)).deleted_count > 0
        return (await self.rework.update_one(flt, {"$set": {"after": after}})).matched_count > 0

    async def rematerialise_lease(self, holder: str, now: float, until: float) -> bool:
        self.stats.hit("rematerialise_lease")
        if until <= now:
            await self.meta.update_one({"_id": rework.MONGO_LEASE, "holder": holder},
                                       {"$set": {"holder": None, "until": 0.0}})
            return False
        free = {"_id": rework.MONGO_LEASE, "$or": [{"holder": None}, {"holder": holder}, {"until": {"$lt": now}}]}
        return (await self.meta.update_one(free, {"$set": {"holder": holder, "until": until}})).matched_count > 0

    # -- events -------------------------------------------------------------------------------
    async def _events_horizon(self) -> EventPosition | None:
        doc = await self.meta.find_one({"_id": "events_horizon"})
        return EventPosition.parse(str(doc["value"])) if doc and doc.get("value") else None

    async def _events_after(self, after: EventPosition | None, limit: int, types: tuple[str, ...],
                            subject: str | None) -> builtins.list[RegistryEvent]:
        cursor = self.events.find(_events_filter(after, types, subject), {"_id": 0}).sort(
            [("rev", ASCENDING), ("idx", ASCENDING)]).limit(limit)
        return [_event(d) for d in await cursor.to_list(length=None)]

    # -- backups ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def dump(self) -> AsyncIterator[records.Dump]:
        """The states as of the revision current when the dump starts (a state superseded later is
        read as current), under the commit lock where commits are not transactions."""
        self.stats.hit("dump")
        async with self._reading():
            revision, pending = await self._pending_at_revision()
            oldest = await self._oldest()
            instance = self.instance_id

            async def revisions() -> AsyncIterator[records.RevisionEntry]:
                cursor = self.revisions.find({"_id": {"$lte": revision}}).sort([("_id", ASCENDING)])
                async for d in cursor:
                    yield records.RevisionEntry(int(d["_id"]), float(d["at"]), d.get("note") or "")

            async def states() -> AsyncIterator[records.StoredState]:
                cursor = self.states.find({"rev_from": {"$lte": revision}}, {"lc": 0, "words": 0}).sort(
                    [("_id", ASCENDING)])
                async for d in cursor:
                    rev_to = d.get("rev_to")
                    text = d.get("text")
                    yield records.StoredState(
                        d["xid"], d["kind"], d["ctype"], None if d.get("deleted") else d.get("doc"), int(d["rev_from"]),
                        rev_to if rev_to is not None and rev_to <= revision else None, tuple(d.get("links") or ()),
                        (text["title"], text["body"]) if text else None)

            async def events() -> AsyncIterator[RegistryEvent]:
                cursor = self.events.find({"rev": {"$lte": revision}}, {"_id": 0}).sort(
                    [("rev", ASCENDING), ("idx", ASCENDING)])
                async for d in cursor:
                    yield _event(d)

            yield records.Dump(instance, revision, oldest, revisions, states, events, await self._events_horizon(),
                               pending)
            if await self._oldest() != oldest:
                raise errors.HistoryChanged("the history was pruned while it was read; run the dump again")

    async def _pending_at_revision(self) -> tuple[int, builtins.list[Rematerialisation]]:
        """The current revision and the re-materialisation items pending at it, read together: in
        one snapshot transaction, or (commits not transactions) under the commit lock the caller
        holds — the worker's progress, recorded after its page's commit, is then at most behind,
        which only repeats a page."""

        async def read(session: Any) -> tuple[int, builtins.list[Rematerialisation]]:
            revision = await self._current(session)
            docs = await self.rework.find({}, session=session).sort([("rev", ASCENDING), ("_id", ASCENDING)]) \
                .to_list(length=None)
            return revision, [i for i in map(rework.from_document, docs) if i.revision <= revision]

        if not self.transactions:
            return await read(None)
        async with self._client.start_session() as session:
            return await session.with_transaction(read, read_concern=ReadConcern("snapshot"))

    async def load(self, *, instance_id: str, revision: int, oldest: int, revisions: Iterable[records.RevisionEntry],
                   states: Iterable[records.StoredState], events: Iterable[RegistryEvent] = (),
                   events_horizon: EventPosition | None = None,
                   rematerialise: Iterable[Rematerialisation] = ()) -> None:
        self.stats.hit("load")
        async with self._lock:
            if (await self._current() or await self.revisions.find_one({}, {"_id": 1})
                    or await self.states.find_one({}, {"_id": 1}) or await self.events.find_one({}, {"_id": 1})):
                raise errors.StoreNotEmpty(
                    f"the database {self._db.name} already holds revision {await self._current()}")
            try:
                for batch in algorithms.batches(revisions):
                    await self.revisions.insert_many([{"_id": r.rev, "at": r.at, "note": r.note} for r in batch])
                live: dict[tuple[str, str], int] = {}
                for batch in algorithms.batches(states):
                    await self.states.insert_many([_state_document(st, st.rev_from, st.rev_to) for st in batch])
                    for st in batch:
                        if st.live:
                            slot = (st.ctype, parent_key(st.key))
                            live[slot] = live.get(slot, 0) + 1
                await self._set_counts(live)
                for batch in algorithms.batches(events):
                    await self.events.insert_many([_event_document(e) for e in batch])
                items = [rework.to_document(i) for i in rematerialise]
                if items:
                    await self.rework.insert_many(items)
                if events_horizon is not None:
                    await self.meta.update_one({"_id": "events_horizon"}, {"$set": {"value": str(events_horizon)}},
                                               upsert=True)
                await self.meta.update_one({"_id": "oldest"}, {"$set": {"value": oldest}}, upsert=True)
                await self.meta.update_one({"_id": "instance"}, {"$set": {"value": instance_id}}, upsert=True)
                await self.counters.update_one({"_id": "revision"}, {"$set": {"value": revision}}, upsert=True)
            except BaseException:  # leave the store as empty as it was
                await self.states.delete_many({})
                await self.counts.delete_many({})
                await self.revisions.delete_many({})
                await self.events.delete_many({})
                await self.rework.delete_many({})
                await self.meta.delete_one({"_id": "oldest"})
                await self.meta.delete_one({"_id": "events_horizon"})
                await self.meta.update_one({"_id": "instance"}, {"$set": {"value": self._instance}}, upsert=True)
                await self.counters.update_one({"_id": "revision"}, {"$set": {"value": 0}}, upsert=True)
                raise
        self._instance = instance_id

    async def prune(self, *, keep_revisions: int | None = None, keep_seconds: float | None = None) -> int:
        self.stats.hit("prune")

        async def run(session: Any) -> int:
            current, oldest = await self._current(session), await self._oldest(session)
            newest_before = None
            if keep_seconds is not None:
                found = await self.revisions.find_one(
                    {"at": {"$lte": time.time() - keep_seconds}}, sort=[("_id", DESCENDING)], session=session)
                newest_before = found["_id"] if found else None
            horizon = algorithms.retention_horizon(current, oldest, keep_revisions=keep_revisions,
                                                   keep_seconds=keep_seconds, newest_before_cutoff=newest_before)
            if horizon <= oldest:
                return 0
            dropped = 0
            for flt in ({"rev_to": {"$lte": horizon}}, {"deleted": True, "rev_from": {"$lte": horizon}}):
                dropped += (await self.states.delete_many(flt, session=session)).deleted_count
            await self.revisions.delete_many({"_id": {"$lt": horizon}}, session=session)
            last = await self.events.find_one({"rev": {"$lt": horizon}},
                                              sort=[("rev", DESCENDING), ("idx", DESCENDING)], session=session)
            if last is not None:
                await self.events.delete_many({"rev": {"$lt": horizon}}, session=session)
                await self.meta.update_one({"_id": "events_horizon"},
                                           {"$set": {"value": str(EventPosition(int(last["rev"]), int(last["idx"])))}},
                                           upsert=True, session=session)
            await self.meta.update_one({"_id": "oldest"}, {"$set": {"value": horizon}}, upsert=True, session=session)
            return dropped

        return await self._write(run)


def _records(docs: builtins.list[dict]) -> builtins.list[EntityRecord]:
    """The records of some ``states`` documents (:meth:`MongoStore.referrers`: a large page is
    decoded in a worker thread)."""
    return [MongoStore._record(d) for d in docs]


__all__ = ["MongoStore", "compile_any_of", "compile_condition"]
