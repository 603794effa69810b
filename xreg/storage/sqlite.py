"""SQLite implementation of :class:`~xreg.storage.base.Store` (``aiosqlite``, one file).

Over 600 lines: reads, commits and backups share the connections and the statement
builder (``_SQL``); the read indexes' schema and upkeep live in :mod:`xreg.storage.sqlite_index`.

Schema::

    revisions(rev INTEGER PRIMARY KEY AUTOINCREMENT, at REAL, note TEXT)
        one row per commit; AUTOINCREMENT keeps revisions strictly increasing even after
        rows are pruned or a commit is rolled back.
    states(seq INTEGER PRIMARY KEY, xkey, xid, kind, ctype, doc, rev_from, rev_to, deleted, live)
        one row per state of an entity. ``xkey`` is the lower-cased XID, ``doc`` the JSON text
        (NULL for a tombstone), the state is visible for revisions ``rev_from <= R < rev_to``
        (``rev_to`` NULL: the current state). ``live`` = current and not deleted.
        A write closes the current row (``rev_to = R, live = 0``) and inserts the new state;
        a delete inserts a tombstone (``deleted = 1, live = 0``).
    meta(key TEXT PRIMARY KEY, value)
        ``oldest``: the history horizon (oldest revision as-of reads can reconstruct);
        ``instance``: the store's instance id (a UUID, set when the store is first opened).
    links(target, xkey, seq)
        the links of the *current* states (``Write.links``): one row per state and linked key,
        in ``(target, xkey)`` order for :meth:`SQLiteStore.referrers` (a page is an index range;
        see :mod:`xreg.storage.sqlite_links`); a commit drops the rows of the states it closes.
    rematerialise, rematerialise_lease
        the work items of deferred re-materialisation and their lease (``rematerialise``).
    events(rev, idx, id, type, subject, skey, time, correlation, changed)
        the registry's events (``xreg.events``), written by the commit of revision ``rev``
        at index ``idx``: primary key ``(rev, idx)`` (reads in position order), ``events_type``
        on ``(type, rev, idx)`` and ``events_subject`` on ``(skey, rev, idx)`` (``skey``: the
        subject lower-cased) for the filters of ``events_after``; ``changed`` is a JSON array or
        NULL. ``meta.events_horizon`` is the last position pruned (``"<rev>.<idx>"``).
    search(title, body)
        an FTS5 table (porter stemming, accents folded) of every state's ``Write.text``, its
        rowid the state's ``seq``: a search joins it and keeps the visibility rules, so as-of
        searches work; relevance is ``bm25`` with the title weighing 4 times the body, over at
        most :data:`RANKED_HITS` of the newest hits (the older matches follow, newest first, read
        in rowid order); when the words are in many rows the same formula is computed by
        ``sqlite_rank`` from bounded statistics. Pruning drops the rows of the states it drops.
    attrs, counts
        the read indexes (below; their schema in ``sqlite_index``).

Indexes: ``states_current`` unique on ``xkey`` where ``rev_to IS NULL`` (one current row per
entity; point reads, the commit's lookups), ``states_live`` on ``(ctype, xkey)`` where
``live = 1`` (pages of current entities in key order), ``states_history`` on
``(xkey, rev_from)`` (as-of point reads), ``states_asof`` on ``(ctype, xkey)`` over all rows
(as-of pages, key lists) and ``states_rev`` on ``rev_from`` (changes). Current-state pages name
``INDEXED BY states_live``: without statistics SQLite rates it the same as ``states_asof``.

A parent restricts to a key range: the descendants of ``/a/b`` have keys between ``/a/b/`` and
``/a/b0`` (``0`` follows ``/``). In key order the range and the cursors fold into one index
range; with a sort the keyset is the row value ``(rank, number, text, xkey)``.

Conditions are compiled to SQL over SQLite's JSON functions, mirroring
:func:`xreg.registry.filters.matches`: plain keys and ``[N]`` become a JSON path
(``$."labels"."team"``), ``*`` / ``[*]`` a ``json_each`` join, and a selected array is searched
element by element. Case folding uses Python's ``str.lower`` (registered as ``xreg_lower``, since
SQLite's ``lower`` only folds ASCII); wildcards become ``GLOB`` patterns over folded text.
Keys JSON paths cannot address (holding ``"``, ``\\`` or control characters) go through the
registered ``xreg_member``. Sorting follows :func:`xreg.registry.filters.compare_key`:
rank (absent/null, number, string, container, boolean), then the number, then the folded
string (containers: their ``json.dumps(sort_keys=True)``), then the key; descending reverses
all of it. A cursor's sort value that is a string holding canonical JSON of an array/object is
taken to be that container (``cursor_for`` renders containers so).

Where ``base.py`` is silent: ``prune(keep_revisions=N)`` moves the horizon to ``current - N``,
``keep_seconds=T`` to the newest revision committed at least ``T`` seconds ago (both given: the
older; neither: ``current``), and the horizon never moves back. ``changes(since)`` raises
``RevisionGone`` for ``0 < since < oldest_revision()`` (pruned tombstones would be missing).
Deleting an entity that does not exist writes nothing (the commit still takes a revision).

Typed attribute values and live counts are kept in ``attrs`` and ``counts``
(:mod:`xreg.storage.sqlite_index`): a current-state page whose conditions include an equality,
wildcard or presence test on an indexed path (:mod:`xreg.storage.indexed`) is read from
``attrs`` (the test with the fewest entries, in key order), its states by ``seq``; counts sum
``counts`` or read ``attrs`` alone when every condition is indexed. As-of reads, searches and
other conditions read the states as before.

One writer connection, under an ``asyncio.Lock``: each commit is one ``BEGIN IMMEDIATE``
transaction on it. Reads run on :data:`READERS` reader connections of their own (WAL: a reader
never waits for the writer, nor the writer for readers), each read in one read transaction, so
all of its statements see one snapshot; a store in memory has no readers and reads on the
writer's connection under its lock. Statements run in the connection's thread (``aiosqlite``),
except quick reads — point reads of fewer than ``QUICK_KEYS`` keys by index (entities, or the
live counts of as many parents), the revision counter, a meta value — which run on the event
loop: a hop to the thread and back costs several times such a read. Holding the connection
keeps its thread idle while they run.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import re
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiosqlite

from xreg.events.record import EventDraft, EventPosition, RegistryEvent, subject_filter
from xreg.json_encoding import loads
from xreg.storage import algorithms, errors, records, sqlite_index, sqlite_links, sqlite_rank
from xreg.storage import rematerialise as rework
from xreg.storage.base import THREAD_DECODE_REFERRERS, Store
from xreg.storage.indexed import Lookup, lookup, parent_key
from xreg.storage.observe import StoreStats
from xreg.storage.records import Change, EntityRecord, Page, Query, Write
from xreg.storage.rematerialise import Rematerialisation
from xreg.storage.semantics import (
    ANY_ITEM,
    ANY_KEY,
    RANK,
    Condition,
    Cursor,
    Sort,
    cursor_sort_value,
    numeric_value,
    wildcard_parts,
)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS revisions (
    rev INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, note TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS states (
    seq INTEGER PRIMARY KEY, xkey TEXT NOT NULL, xid TEXT NOT NULL, kind TEXT NOT NULL,
    ctype TEXT NOT NULL, doc TEXT, rev_from INTEGER NOT NULL, rev_to INTEGER,
    deleted INTEGER NOT NULL, live INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS states_current ON states(xkey) WHERE rev_to IS NULL;
CREATE INDEX IF NOT EXISTS states_history ON states(xkey, rev_from);
CREATE INDEX IF NOT EXISTS states_asof ON states(ctype, xkey);
CREATE INDEX IF NOT EXISTS states_live ON states(ctype, xkey) WHERE live = 1;
CREATE INDEX IF NOT EXISTS states_rev ON states(rev_from);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
CREATE TABLE IF NOT EXISTS events (
    rev INTEGER NOT NULL, idx INTEGER NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,
    skey TEXT NOT NULL, time TEXT NOT NULL, correlation TEXT NOT NULL, changed TEXT,
    PRIMARY KEY (rev, idx)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_type ON events(type, rev, idx);
CREATE INDEX IF NOT EXISTS events_subject ON events(skey, rev, idx);
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(title, body, tokenize = {sqlite_rank.TOKENIZE});
"""

_COLUMNS = "xid, kind, ctype, doc, rev_from, deleted"
_RANK_OF_HIT = "hits.rank"
_CHUNK = 500
_CMP = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_PATH_KEY = re.compile(r'[^"\\\x00-\x1f]*')  # keys a quoted JSON path label can hold
_RANK = ("CASE {t} WHEN 'integer' THEN 1 WHEN 'real' THEN 1 WHEN 'text' THEN 2 WHEN 'object' THEN 3 "
         "WHEN 'array' THEN 3 WHEN 'false' THEN 4 WHEN 'true' THEN 4 ELSE 0 END")
_MAX_INT = 2**63 - 1


_EVENT_COLUMNS = "rev, idx, id, type, subject, time, correlation, changed"
_INSERT_EVENT = ("INSERT INTO events(rev, idx, id, type, subject, skey, time, correlation, changed) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _event_row(e: RegistryEvent) -> tuple[Any, ...]:
    return (e.position.revision, e.position.index, e.id, e.type, e.subject, e.subject.lower(), e.time,
            e.correlation_id, None if e.changed is None else json.dumps(list(e.changed)))


def _event(row: Any) -> RegistryEvent:
    rev, idx, id_, type_, subject, at, correlation, changed = row
    return RegistryEvent(EventPosition(rev, idx), id_, type_, subject, at, correlation,
                         None if changed is None else tuple(json.loads(changed)))


def _events_where(after: EventPosition | None, types: tuple[str, ...], subject: str | None) -> tuple[str, list[Any]]:
    """The WHERE clause of an event read: after a position, of some types, about a subject (an
    exact key, or a key range for a prefix)."""
    clauses: list[str] = []
    params: list[Any] = []
    if after is not None:
        clauses.append("(rev, idx) > (?, ?)")
        params += [after.revision, after.index]
    if types:
        clauses.append(f"type IN ({','.join('?' * len(types))})")
        params += list(types)
    wanted = subject_filter(subject)
    if wanted is not None:
        text, prefix = wanted
        if not prefix:
            clauses.append("skey = ?")
            params.append(text)
        elif text:
            clauses.append("skey >= ? AND skey < ?")
            params += [text, text[:-1] + chr(ord(text[-1]) + 1)]
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def _dumps(doc: Any) -> str:
    # Raw (not \\u-escaped) non-ASCII, so JSON path labels match keys byte for byte.
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _canonical(text: str | None) -> str | None:
    """``json.dumps(value, sort_keys=True)`` of a JSON text: how containers sort (and their cursors)."""
    return None if text is None else json.dumps(json.loads(text), sort_keys=True)


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _member(text: str | None, key: str) -> str | None:
    if text is None:
        return None
    node = json.loads(text)
    return _dumps(node[key]) if isinstance(node, dict) and key in node else None


def _match(words: Sequence[str]) -> str:
    """An FTS5 query holding every word (each quoted: no operators)."""
    return " ".join('"' + w.replace('"', '""') + '"' for w in words) or '""'


def _glob(part: str) -> str:
    return re.sub(r"[*?\[]", lambda m: f"[{m.group()}]", part)


def _parent_key(query: Query) -> str | None:
    """The key prefix a query's parent restricts to (``None``: no restriction)."""
    return None if query.parent in (None, "/") else query.parent.lower()


def _normal(query: Query) -> Query:
    """``query`` with its cursors' keys lower-cased (keys are compared as stored)."""
    low = lambda c: c if c is None or c.key == c.key.lower() else Cursor(c.key.lower(), c.value)  # noqa: E731
    return replace(query, after=low(query.after), before=low(query.before))


def _sort_tuple(value: Any) -> tuple[int, Any, str]:
    """The ``(rank, number, text)`` of a cursor's sort value (the order of ``compare_key``; a
    container's canonical JSON text read back as the container)."""
    value = cursor_sort_value(value)
    if value is None:
        return (0, 0, "")
    if isinstance(value, bool):
        return (4, int(value), "")
    if isinstance(value, (int, float)):
        return (1, float(value) if abs(value) > _MAX_INT else value, "")
    if isinstance(value, (dict, list)):
        return (3, 0, json.dumps(value, sort_keys=True))
    return (2, 0, str(value).lower())


class _SQL:
    """Builds one statement: named parameters and unique ``json_each`` aliases."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}
        self.text = ""
        self._aliases = 0

    def p(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return ":" + name

    def alias(self) -> str:
        self._aliases += 1
        return f"j{self._aliases}"

    # -- attribute paths -------------------------------------------------------------------
    def select(self, path: Sequence[str]) -> tuple[list[str], list[str], tuple]:
        """Compile a filter path: (json_each tables, their constraints, the selection), the
        selection being ``("path", json_expr, json_path)`` or ``("row", json_each_alias)``."""
        tables: list[str] = []
        where: list[str] = []
        node, jpath = "doc", "$"
        row = None
        for seg in path:
            if row is not None:
                node, jpath, row = f"(CASE WHEN {row}.type IN ('object','array') THEN {row}.value END)", "$", None
            if seg in (ANY_KEY, ANY_ITEM):
                row = self.alias()
                tables.append(f"json_each({node}, {self.p(jpath)}) AS {row}")
                kind = "object" if seg == ANY_KEY else "array"
                where.append(f"json_type({node}, {self.p(jpath)}) = '{kind}'")
            elif seg.startswith("["):
                jpath += seg
            elif _PATH_KEY.fullmatch(seg):
                jpath += f'."{seg}"'
            else:
                obj = (f"(CASE WHEN json_type({node}, {self.p(jpath)}) = 'object' "
                       f"THEN json_extract({node}, {self.p(jpath)}) END)")
                node, jpath = f"xreg_member({obj}, {self.p(seg)})", "$"
        sel = ("row", row) if row is not None else ("path", node, jpath)
        return tables, where, sel

    def value(self, sel: tuple) -> tuple[str, str, str, str]:
        """(type, atom, array json, array path) expressions of a selection."""
        if sel[0] == "row":
            a = sel[1]
            return f"{a}.type", f"{a}.atom", f"{a}.value", "$"
        _, node, jpath = sel
        return f"json_type({node}, {self.p(jpath)})", f"json_extract({node}, {self.p(jpath)})", node, jpath

    # -- conditions ------------------------------------------------------------------------
    def scalar(self, t: str, atom: str, op: str, value: str, wildcard: bool) -> str:
        """SQL for ``filters._scalar_match(<t, atom>, op, value, wildcard)``."""
        if wildcard:
            pattern = "*".join(_glob(part.lower()) for part in wildcard_parts(value))
            return f"({t} = 'text' AND xreg_lower({atom}) GLOB {self.p(pattern)})"
        cmp = _CMP[op]
        clauses = [f"({t} = 'text' AND xreg_lower({atom}) {cmp} {self.p(value.lower())})"]
        if value in ("true", "false"):
            clauses.append(f"({t} IN ('true','false') AND ({t} = 'true') {cmp} {int(value == 'true')})")
        number = numeric_value(value)
        if number is not None:
            if isinstance(number, int) and abs(number) > _MAX_INT:
                number = float(number)
            clauses.append(f"({t} IN ('integer','real') AND {atom} {cmp} {self.p(number)})")
        return "(" + " OR ".join(clauses) + ")"

    def condition(self, cond: Condition) -> str:
        tables, where, sel = self.select(cond.path)
        t, atom, arr, arr_path = self.value(sel)
        if cond.op in ("exists", "null"):
            pred = f"coalesce({t}, 'null') != 'null'"
        else:
            op = "eq" if cond.op == "ne" else cond.op
            if op not in _CMP:
                raise ValueError(f"unknown condition op {cond.op!r}")
            e = self.alias()
            each = (f"EXISTS (SELECT 1 FROM json_each({arr}, {self.p(arr_path)}) AS {e} "
                    f"WHERE {self.scalar(f'{e}.type', f'{e}.atom', op, cond.value or '', cond.wildcard)})")
            scalar = self.scalar(t, atom, op, cond.value or "", cond.wildcard)
            pred = f"(CASE {t} WHEN 'array' THEN {each} ELSE coalesce({scalar}, 0) END)"
        if tables:
            hit = f"EXISTS (SELECT 1 FROM {', '.join(tables)} WHERE {' AND '.join(where + [pred])})"
        else:
            hit = f"coalesce({pred}, 0)"
        return f"NOT {hit}" if cond.op in ("ne", "null") else hit

    def any_of(self, groups: Sequence[Sequence[Condition]]) -> str | None:
        if not groups:
            return None
        ors = ["(" + " AND ".join(self.condition(c) for c in g) + ")" if g else "1" for g in groups]
        return "(" + " OR ".join(ors) + ")"

    # -- sort keys -------------------------------------------------------------------------
    def sort_columns(self, sort: Sort) -> tuple[str, str, str]:
        """(rank, number, text) expressions: the order of ``filters.compare_key``."""
        if sort.path == RANK:  # relevance: a number, lower is better ("abs(1)": ORDER BY 1 names a column)
            return "abs(1)", _RANK_OF_HIT, "''"
        tables, _, sel = self.select(sort.path)
        if tables:
            raise ValueError(f"cannot sort on a wildcard path {sort.path!r}")
        t, v, _, _ = self.value(sel)
        rank = _RANK.format(t=t)
        num = f"(CASE WHEN {t} IN ('integer','real') THEN {v} WHEN {t} = 'true' THEN 1 ELSE 0 END)"
        text = (f"(CASE WHEN {t} = 'text' THEN xreg_lower({v}) "
                f"WHEN {t} IN ('object','array') THEN xreg_canonical({v}) ELSE '' END)")
        return rank, num, text


#: Reader connections of a store in a file: reads run on them, in parallel with the writer (WAL).
READERS = 2
_Conn = tuple[aiosqlite.Connection, sqlite3.Connection]

#: How many ``attrs`` entries of each indexed condition :meth:`SQLiteStore._drive` counts at most
#: to pick the one to read a page from.
ESTIMATE_ROWS = 256


@dataclass(frozen=True)
class _Drive:
    """The condition (by position in the query's one group) a page is read from, its index
    lookup, and whether the index alone answers the group (every other condition a seek)."""

    index: int
    lk: Lookup
    covered: bool


#: A search whose words are in more stored states than this (current or past, any collection) ranks
#: only its matches among the most recently written of those (by ``bm25``, or by :mod:`sqlite_rank`
#: when its words are in many rows): the other matches follow them, newest first. A page of any
#: search then costs at most this many ranked hits, and the older matches it reads (docs/scale.md).
RANKED_HITS = 1000
#: The rank of an unranked match is this less its ``seq``: after every ranked one (at most 0).
UNRANKED = 2**53


#: The ``seq`` of the :data:`RANKED_HITS`-th newest state holding a search's words (FTS5 reads
#: rowids newest first).
_NEWEST = "SELECT rowid FROM search WHERE search MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"


@dataclass(frozen=True)
class _Ranked:
    """The ranked matches of a search (:meth:`SQLiteStore._tier`): those from ``seq`` ``tier``
    up, with their scores (JSON ``[[seq, score], …]``, :func:`sqlite_rank.scores`; ``None``:
    ranked by ``bm25``)."""

    tier: int
    scores: str | None


def _unranked_seq(cursor: Cursor | None) -> int | None:
    """The ``seq`` of the unranked match a cursor points at (``None``: a ranked one, or none)."""
    value = None if cursor is None else cursor.value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return int(UNRANKED - value)
    return None


def _seekable(lk: Lookup) -> bool:
    """Whether a further condition is looked up by seeks of ``attrs``' primary key (one value, or
    a few): a wildcard or a presence test is checked on the state's document instead."""
    return lk.parts is None and not lk.present


#: Pages of at least this many rows are decoded in a worker thread (the event loop stays free).
THREAD_DECODE_ROWS = 64
#: Point reads of fewer keys than this run on the event loop (:meth:`SQLiteStore._quick`);
#: larger ones in the connection's thread.
QUICK_KEYS = THREAD_DECODE_ROWS


def _state_rows(plan: algorithms.CommitPlan, rev: int, first: int) -> list[tuple]:
    """The ``states`` rows of a commit's new states, from seq ``first`` on (their documents encoded)."""
    return [(first + i, n.key, n.xid, n.kind, n.ctype, None if n.doc is None else _dumps(n.doc), rev,
             int(n.deleted), int(not n.deleted)) for i, n in enumerate(plan.new.values())]


def _records(rows: list[tuple]) -> list[EntityRecord]:
    return [SQLiteStore._record(r) for r in rows]


async def _off_loop(fn: Any, plan: algorithms.CommitPlan, *args: Any) -> Any:
    """``fn(plan, *args)``: in a worker thread for a large commit (encoding thousands of
    documents would hold up the event loop's readers), at once for a small one."""
    if len(plan.new) <= THREAD_DECODE_ROWS:
        return fn(plan, *args)
    return await asyncio.to_thread(fn, plan, *args)


class SQLiteStore(Store):
    """A :class:`Store` in one SQLite file (WAL mode)."""

    def __init__(self, path: str | Path, *, readers: int = READERS) -> None:
        self.path = path if str(path) == ":memory:" else Path(path)
        self.stats = StoreStats()
        self._db: aiosqlite.Connection | None = None
        self._raw: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        #: ``(device, inode)`` of the file when it was opened: the file the connection writes.
        self._identity: tuple[int, int] | None = None
        self._readers = readers if isinstance(self.path, Path) else 0
        #: The idle reader connections (a read takes one; none: reads share the writer's, under its lock).
        self._idle: asyncio.Queue[_Conn] = asyncio.Queue()
        self._all_readers: list[_Conn] = []
        #: The connection the current task uses (set by :meth:`_reading` and :meth:`_writing`).
        self._conn: ContextVar[_Conn | None] = ContextVar(f"xreg_sqlite_conn_{id(self)}", default=None)
        #: Set while the current task's read reads a few states (:meth:`_small_read`).
        self._small: ContextVar[bool] = ContextVar(f"xreg_sqlite_small_{id(self)}", default=False)
        #: FTS5's terms of tokens, for scoring broad searches (made by the first one).
        self._terms: sqlite_rank.Terms | None = None

    async def _connect(self, *, reader: bool) -> _Conn:
        """A connection with the store's functions: the writer, or a reader (``query_only``)."""
        opened: list[sqlite3.Connection] = []

        def connect() -> sqlite3.Connection:  # as aiosqlite.connect's, keeping the connection for quick reads
            opened.append(sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False))
            return opened[0]

        db = await aiosqlite.Connection(connect, iter_chunk_size=64)
        try:
            if not reader:
                await db.execute("PRAGMA journal_mode=WAL")
                await db.execute("PRAGMA synchronous=NORMAL")
            else:
                await db.execute("PRAGMA query_only=1")
            await db.execute("PRAGMA busy_timeout=5000")
            await db.create_function("xreg_lower", 1, _lower, deterministic=True)
            await db.create_function("xreg_canonical", 1, _canonical, deterministic=True)
            await db.create_function("xreg_member", 2, _member, deterministic=True)
            await db.create_function("xreg_parent", 1, parent_key, deterministic=True)
        except BaseException:
            await db.close()
            raise
        return db, opened[0]

    # -- lifecycle ----------------------------------------------------------------------------
    async def open(self) -> None:
        if self._db is not None:
            return
        if isinstance(self.path, Path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db, raw = await self._connect(reader=False)
        try:
            await db.executescript(_SCHEMA)
            await db.executescript(sqlite_links.SCHEMA)
            await sqlite_links.migrate(db)
            await db.executescript(rework.SQLITE_SCHEMA)
            await db.executescript(sqlite_index.SCHEMA)
            await sqlite_index.migrate(db)
            await db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('instance', ?)", (str(uuid.uuid4()),))
            async with db.execute("SELECT value FROM meta WHERE key = 'instance'") as cur:
                row = await cur.fetchone()
            for _ in range(self._readers):
                conn = await self._connect(reader=True)
                self._all_readers.append(conn)
                self._idle.put_nowait(conn)
        except BaseException:
            await self._close_readers()
            await db.close()
            raise
        self._db, self._raw = db, raw
        self._instance = str(row[0]) if row else None
        if isinstance(self.path, Path):
            st = os.stat(self.path)
            self._identity = (st.st_dev, st.st_ino)

    async def _close_readers(self) -> None:
        readers, self._all_readers, self._idle = self._all_readers, [], asyncio.Queue()
        for db, _ in readers:
            await db.close()

    async def close(self) -> None:
        if self._db is not None:
            db, self._db, self._raw = self._db, None, None
            await self._close_readers()
            await db.close()
        if self._terms is not None:
            terms, self._terms = self._terms, None
            terms.close()

    async def check_ready(self) -> None:
        """The file is still the one opened (not removed or replaced), it and its directory are
        writable, and a write succeeds (in a transaction rolled back; waits at most the
        connection's busy timeout for another writer)."""
        if isinstance(self.path, Path):
            try:
                st = os.stat(self.path)
            except OSError as exc:
                raise OSError(f"the database file {self.path} is gone ({exc.strerror or exc})") from None
            if (st.st_dev, st.st_ino) != self._identity:
                raise OSError(f"the database file {self.path} was replaced since it was opened")
            for where in (self.path, self.path.parent):
                if not os.access(where, os.W_OK):
                    raise PermissionError(f"{where} is not writable")
        async with self._writing() as db:
            await sqlite_index.begin_immediate(db)
            try:
                await db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('readiness', ?)", (time.time(),))
            finally:
                await db.execute("ROLLBACK")

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("SQLiteStore is not open")
        return self._db

    def _active(self) -> _Conn:
        """The connection of the current read or write (the writer's outside of both)."""
        conn = self._conn.get()
        if conn is not None:
            return conn
        if self._db is None or self._raw is None:
            raise RuntimeError("SQLiteStore is not open")
        return self._db, self._raw

    async def _all(self, sql: str, params: Any = ()) -> list[Any]:
        """The rows of a statement run by the connection's thread (the event loop stays free); in
        a read of a few states (:meth:`_small_read`), at once on the event loop."""
        if self._small.get():
            return self._quick(sql, params)
        self.stats.statement(thread=True)
        return list(await self._active()[0].execute_fetchall(sql, params))

    def _quick(self, sql: str, params: Any = ()) -> list[Any]:
        """The rows of a quick read — a few keys by index, the revision counter, a meta value —
        run at once on the event loop: handing it to the connection's thread and back costs
        several times the read (``bench/bench_store.py``, point reads). Like every use of the
        connection it runs under the store's lock, so the connection's thread is idle meanwhile:
        the connection is never used by two threads at once (``check_same_thread=False`` lets
        either thread use it)."""
        self.stats.statement(thread=False)
        return self._active()[1].execute(sql, params).fetchall()

    async def _one(self, sql: str, params: Any = ()) -> Any:
        rows = await self._all(sql, params)
        return rows[0][0] if rows else None

    def _few(self, query: Query) -> bool:
        """Whether ``query`` reads fewer than :data:`QUICK_KEYS` states: a current-state query of
        the direct children of one parent (the registry for groups) that has fewer live ones
        (its ``counts`` entry, one primary-key lookup), none of whose indexed conditions is a
        wildcard or a presence test (those seek no value of ``attrs``: driven by one, a read
        would walk the attribute's entries across the collection type). Its statements then read
        at most those states by index, as a quick point read does."""
        if query.as_of is not None or query.search is not None or query.keys is not None or query.parents is not None:
            return False
        if len(query.any_of) == 1 and any(lk is not None and not _seekable(lk) for lk in map(lookup, query.any_of[0])):
            return False  # a wildcard or presence test may drive the read from ``attrs`` across the collection type
        parent = _parent_key(query) or ""
        if query.ctype.count("/") != parent.count("/") // 2:  # not the parent's own children
            return False
        rows = self._quick("SELECT n FROM counts WHERE ctype = ? AND parent = ?", (query.ctype, parent))
        return not rows or rows[0][0] < QUICK_KEYS

    @contextlib.asynccontextmanager
    async def _small_read(self, query: Query) -> AsyncIterator[None]:
        """Within a read: its statements run on the event loop when ``query`` reads a few states
        (:meth:`_few`): handing each to the connection's thread and back would cost more."""
        token = self._small.set(self._few(query))
        try:
            yield
        finally:
            self._small.reset(token)

    # -- revisions ----------------------------------------------------------------------------
    async def _current(self) -> int:
        return self._quick("SELECT coalesce(max(rev), 0) FROM revisions")[0][0]

    async def _oldest(self) -> int:
        rows = self._quick("SELECT value FROM meta WHERE key = 'oldest'")
        return int(rows[0][0] or 0) if rows else 0

    @contextlib.asynccontextmanager
    async def _reading(self) -> AsyncIterator[None]:
        """A read: on an idle reader connection, in one read transaction (its statements see one
        snapshot, whatever commits meanwhile), never waiting for the writer. A store without
        readers (``:memory:``) reads on the writer's connection under its lock."""
        if not self._all_readers:
            async with self._writing():
                yield
            return
        conn = await self._idle.get()
        token = self._conn.set(conn)
        try:
            conn[1].execute("BEGIN")  # deferred: the snapshot is taken by the first read
            try:
                yield
            finally:
                conn[1].execute("COMMIT")
        finally:
            self._conn.reset(token)
            self._idle.put_nowait(conn)

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writer's connection, under the store's lock (one writer at a time)."""
        async with self._lock:
            db = self.db
            token = self._conn.set((db, self._raw))  # type: ignore[arg-type]
            try:
                yield db
            finally:
                self._conn.reset(token)

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction on the writer's connection: committed when the
        block ends, rolled back when it raises."""
        async with self._writing() as db:
            await sqlite_index.begin_immediate(db)
            try:
                yield db
            except BaseException:
                await db.execute("ROLLBACK")
                raise
            await db.execute("COMMIT")

    # -- reads --------------------------------------------------------------------------------
    @staticmethod
    def _visible(sql: _SQL, as_of: int | None) -> str:
        if as_of is None:
            return "live = 1"
        r = sql.p(as_of)
        return f"rev_from <= {r} AND (rev_to IS NULL OR rev_to > {r}) AND deleted = 0"

    @staticmethod
    def _record(row: tuple) -> EntityRecord:
        xid, kind, ctype, doc, rev, deleted = row[:6]
        return EntityRecord(xid=xid, kind=kind, ctype=ctype, doc=loads(doc) if doc else {},
                            revision=rev, deleted=bool(deleted), rank=row[6] if len(row) > 6 else None)

    async def get_many(self, xids: Sequence[str], as_of: int | None = None) -> dict[str, EntityRecord]:
        self.stats.hit("get_many")
        keys = list(dict.fromkeys(x.lower() for x in xids))
        out: dict[str, EntityRecord] = {}
        async with self._reading():
            await self._check(as_of)
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i:i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                if as_of is None:
                    sql = f"SELECT {_COLUMNS} FROM states WHERE xkey IN ({marks}) AND rev_to IS NULL AND deleted = 0"
                    params: list[Any] = chunk
                else:
                    sql = (f"SELECT {_COLUMNS} FROM states WHERE xkey IN ({marks}) AND rev_from <= ? "
                           "AND (rev_to IS NULL OR rev_to > ?) AND deleted = 0")
                    params = [*chunk, as_of, as_of]
                rows = self._quick(sql, params) if len(chunk) < QUICK_KEYS else await self._all(sql, params)
                for row in rows:
                    rec = self._record(row)
                    out[rec.key] = rec
        return out

    def _source(self, query: Query, drive: _Drive | None = None, sql: _SQL | None = None) -> str:
        """The table of a query. Current-state pages go through ``states_live`` (without
        statistics SQLite cannot tell it from ``states_asof``); a ``keys`` query is left to the
        planner, which looks the keys up by index; a page driven by an indexed condition reads
        ``attrs`` first, then its states by ``seq``."""
        if query.search is not None:  # the matches first (one FTS scan), then their states by seq
            return "hits CROSS JOIN states ON states.seq = hits.seq"
        if drive is not None and drive.lk.single:  # at most one entry per state
            return "attrs AS d CROSS JOIN states ON states.seq = d.aseq"
        if drive is not None:  # several values, or a wildcard: a state once however many entries match
            assert sql is not None
            return (f"(SELECT DISTINCT aseq FROM attrs AS d WHERE {self._drive_where(sql, query, drive)}) AS d "
                    "CROSS JOIN states ON states.seq = d.aseq")
        return "states INDEXED BY states_live" if query.as_of is None and query.keys is None else "states"

    def _where(self, sql: _SQL, query: Query, *, parent_range: bool = True, drive: _Drive | None = None,
               key: str = "states.xkey") -> list[str]:
        """The filter of a query (visibility, ctype, parent, keys, conditions), no cursors.
        With ``drive``, the driving condition is the ``attrs`` rows ``d`` (their ctype and parent
        range too) and the group's other indexed conditions are lookups of ``seq``'s rows."""
        if query.as_of is None and query.keys is not None:
            visible = "rev_to IS NULL AND deleted = 0"
        else:
            visible = self._visible(sql, query.as_of)
        where = [visible, f"ctype = {sql.p(query.ctype)}"] if key == "states.xkey" else []
        pk = _parent_key(query)
        if pk is not None and parent_range:
            where.append(f"xkey > {sql.p(pk + '/')} AND xkey < {sql.p(pk + '0')}")
        if query.keys is not None:
            keys = json.dumps([k.lower() for k in query.keys])
            where.append(f"xkey IN (SELECT value FROM json_each({sql.p(keys)}))")
        if query.parents is not None:  # each parent is a key range, as ``parent`` is
            parents = json.dumps([k.lower() for k in query.parents])
            where.append(f"EXISTS (SELECT 1 FROM json_each({sql.p(parents)}) AS p "
                         "WHERE xkey > p.value || '/' AND xkey < p.value || '0')")
        if drive is None:
            conds = sql.any_of(query.any_of)
            if conds:
                where.append(conds)
            return where
        if drive.lk.single or key != "states.xkey":
            where.append(self._drive_where(sql, query, drive))
        for i, cond in enumerate(query.any_of[0]):
            lk = lookup(cond)
            if i == drive.index:
                continue
            if lk is None or not _seekable(lk):
                where.append(sql.condition(cond))
            else:  # a seek of the primary key: (path in the collection type, value, key)
                where.append(f"EXISTS (SELECT 1 FROM attrs e{i} WHERE "
                             f"{sqlite_index.match(sql, f'e{i}', lk, query.ctype)} AND e{i}.akey = {key})")
        return where

    @staticmethod
    def _drive_where(sql: _SQL, query: Query, drive: _Drive) -> str:
        """The ``attrs`` rows ``d`` of the driving condition (its collection type and parent range)."""
        where = sqlite_index.match(sql, 'd', drive.lk, query.ctype)
        pk = _parent_key(query)
        if pk is not None:
            where += f" AND d.akey > {sql.p(pk + '/')} AND d.akey < {sql.p(pk + '0')}"
        return where

    async def _drive(self, query: Query) -> _Drive | None:
        """The indexed condition to read a current-state query from (``None``: read the states).
        Of several, the one with the fewest entries, counted up to :data:`ESTIMATE_ROWS` each."""
        if query.as_of is not None or query.search is not None or query.keys is not None or len(query.any_of) != 1:
            return None
        group = query.any_of[0]
        found = [(i, lk) for i, lk in enumerate(map(lookup, group)) if lk is not None]
        if not found:
            return None
        if len(found) == 1:
            return _Drive(*found[0], len(group) == 1)
        sizes = []
        for i, lk in found:
            sql = _SQL()
            text = (f"SELECT count(*) FROM (SELECT 1 FROM attrs AS d WHERE "
                    f"{sqlite_index.match(sql, 'd', lk, query.ctype)} LIMIT {ESTIMATE_ROWS})")
            sizes.append((await self._one(text, sql.params), i, lk))
        _, i, lk = min(sizes, key=lambda t: t[0])
        covered = len(found) == len(group) and all(_seekable(other) for j, other in found if j != i)
        return _Drive(i, lk, covered)

    @staticmethod
    def _hits(sql: _SQL, query: Query, *, ranked: bool = True, tier: _Ranked | None = None,
              tier_only: bool = False) -> str:
        """The ``WITH`` clause of a search: its matches (``seq``) with their rank, ``bm25`` with the
        title weighing 4 times the body (not ``ranked``: a count, no rank computed). With ``tier``
        (see :meth:`_tier`) the matches from it up have its scores and the older ones
        :data:`UNRANKED` less their ``seq`` (after every ranked one, newest first); ``tier_only``
        keeps the ranked ones alone."""
        if query.search is None:
            return ""
        rank, where = "bm25(search, 4.0, 1.0)" if ranked else "0", f"search MATCH {sql.p(_match(query.search))}"
        if not ranked or tier is None:
            return f"WITH hits(seq, rank) AS (SELECT rowid, {rank} FROM search WHERE {where}) "
        if tier.scores is None:
            t = sql.p(tier.tier)
            if tier_only:
                where += f" AND rowid >= {t}"
            else:
                rank = f"CASE WHEN rowid >= {t} THEN {rank} ELSE {UNRANKED} - rowid END"
            return f"WITH hits(seq, rank) AS (SELECT rowid, {rank} FROM search WHERE {where}) "
        hits = f"SELECT value ->> 0, value ->> 1 FROM json_each({sql.p(tier.scores)})"
        if not tier_only:
            hits += (f" UNION ALL SELECT rowid, {UNRANKED} - rowid FROM search "
                     f"WHERE {where} AND rowid < {sql.p(tier.tier)}")
        return f"WITH hits(seq, rank) AS ({hits}) "

    async def _tier(self, query: Query, *, scored: bool = True) -> _Ranked | None:
        """The ranked matches of a search held by more than :data:`RANKED_HITS` stored states: the
        newest that many (FTS5 reads rowids newest first); ``None`` when fewer hold it (all are
        ranked). Their rank is ``bm25`` while the rows holding the words (each word's counted up to
        ``DF_SAMPLE``, else estimated) total at most ``BM25_ROWS`` — ``bm25`` reads them all —,
        else :func:`sqlite_rank.scores` from the candidates' text, the span of the table's rowids
        and those counts (a narrower search too: all its matches). Not ``scored``: a broad
        search's tier alone (no scores), for a page among its older matches."""
        if query.search is None:
            return None
        words = list(query.search)
        if not scored:
            tier = await self._one(_NEWEST, (_match(words), RANKED_HITS - 1))
            if tier is not None:
                return _Ranked(tier, None)
        if self._terms is None:
            self._terms = sqlite_rank.Terms(sqlite_rank.TOKENIZE)
        # One hop: the statements and the scoring in a worker thread, on the read's connection
        # (its own thread idle meanwhile, as for :meth:`_quick`). Cancelled, the read waits for
        # the thread: the connection is handed back only once nothing uses it.
        work = asyncio.ensure_future(asyncio.to_thread(self._rank, self._active()[1], self._terms, words))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            while not work.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([work])
            if not work.cancelled():
                work.exception()  # retrieved: the read is cancelled either way
            raise

    @staticmethod
    def _rank(raw: sqlite3.Connection, terms: sqlite_rank.Terms, words: builtins.list[str]) -> _Ranked | None:
        """:meth:`_tier`'s statistics, candidates and scores (blocking)."""
        match = _match(words)
        sample = "".join(
            f" UNION ALL SELECT {i}, count(*), min(rowid) FROM (SELECT rowid FROM search WHERE search MATCH ? "
            f"ORDER BY rowid DESC LIMIT {sqlite_rank.DF_SAMPLE})" for i in range(len(words)))
        stats = {i: (n, low) for i, n, low in raw.execute(
            f"SELECT -2, ({_NEWEST}), NULL UNION ALL SELECT -1, (SELECT rowid FROM search ORDER BY rowid LIMIT 1), "
            f"(SELECT rowid FROM search ORDER BY rowid DESC LIMIT 1){sample}",
            [match, RANKED_HITS - 1, *(_match((w,)) for w in words)])}
        tier, (first, top) = stats[-2][0], stats[-1]
        if first is None:  # no text at all
            return None
        rows = top - first + 1
        held = [sqlite_rank.holding(*stats[i], top, rows) for i in range(len(words))]
        if sum(held) <= sqlite_rank.BM25_ROWS:
            return None if tier is None else _Ranked(tier, None)
        candidates = raw.execute("SELECT rowid, title, body FROM search WHERE search MATCH ? AND rowid >= ?",
                                 (match, tier or 0)).fetchall()
        return _Ranked(tier or 0, json.dumps(sqlite_rank.scores(terms, words, candidates, rows, held)))

    def _page_sql(self, query: Query, *, reverse: bool, bound: tuple[str, Cursor] | None,
                  limit: int | None, exists: bool = False, drive: _Drive | None = None,
                  tier: _Ranked | None = None, tier_only: bool = False) -> _SQL:
        """The statement for one direction of a page: rows past ``bound`` = (op, cursor), in
        query order (``reverse``: the opposite order). ``exists`` selects just ``1``."""
        sql = _SQL()
        where = self._where(sql, query, parent_range=query.sort is not None, drive=drive)
        desc = bool(query.sort and query.sort.descending) != reverse
        if query.sort is None:
            # Key order: fold the parent range and the cursors into one range of the index (of
            # ``attrs`` when one value of it drives the page).
            kcol = "d.akey" if drive is not None and drive.lk.single else "xkey"
            cols: list[str] = [kcol]
            pk = _parent_key(query)
            lows = [(pk + "/", True)] if pk is not None else []
            highs = [(pk + "0", True)] if pk is not None else []
            if query.after:
                lows.append((query.after.key, True))
            if query.before:
                highs.append((query.before.key, True))
            if bound is not None:
                (lows if bound[0][0] == ">" else highs).append((bound[1].key, bound[0] in "<>"))
            if lows:
                key, strict = max(lows)
                where.append(f"{kcol} {'>' if strict else '>='} {sql.p(key)}")
            if highs:
                key, strict = min(highs, key=lambda b: (b[0], not b[1]))
                where.append(f"{kcol} {'<' if strict else '<='} {sql.p(key)}")
        else:
            sort = query.sort
            rank, num, text = sql.sort_columns(sort)
            cols = [rank, num, text, "xkey"]
            row = f"({', '.join(cols)})"

            def past(op: str, cursor: Cursor) -> str:
                if sort.descending:
                    op = op.translate(str.maketrans("<>", "><"))
                r, n, s = _sort_tuple(cursor.value)
                return f"{row} {op} ({sql.p(r)}, {sql.p(n)}, {sql.p(s)}, {sql.p(cursor.key)})"

            if query.after:
                where.append(past(">", query.after))
            if query.before:
                where.append(past("<", query.before))
            if bound is not None:
                where.append(past(*bound))
        order = ", ".join(f"{c} DESC" if desc else c for c in cols)
        what = "1" if exists else _COLUMNS + (f", {_RANK_OF_HIT}" if query.search is not None else "")
        hits = self._hits(sql, query, tier=tier, tier_only=tier_only)
        sql.text = (f"{hits}SELECT {what} FROM {self._source(query, drive, sql)} "
                    f"WHERE {' AND '.join(where)} ORDER BY {order}")
        if limit is not None:
            sql.text += f" LIMIT {int(limit)}"
        return sql

    def _main_sql(self, query: Query, limit: int | None, drive: _Drive | None = None,
                  tier: _Ranked | None = None) -> tuple[_SQL, bool]:
        """The page statement of ``query`` and whether it reads backwards (``before`` given:
        the page is the ``limit`` rows just before it, read in reverse and turned around)."""
        backward = query.before is not None
        return self._page_sql(query, reverse=backward, bound=None, limit=limit, drive=drive, tier=tier), backward

    async def _page_rows(self, query: Query, drive: _Drive | None,
                         tier: _Ranked | None) -> tuple[builtins.list[Any], bool, bool]:
        """The rows of a page in query order, and whether there are more after and before it."""
        limit = query.limit
        sql, _ = self._main_sql(query, None if limit is None else limit + 1, drive, tier)
        rows = await self._all(sql.text, sql.params)
        more = limit is not None and len(rows) > limit
        rows = rows[:limit] if limit is not None else rows
        if query.before is not None:  # read backwards
            rows.reverse()
            # Anything at or after the ``before`` cursor (within the other constraints)?
            probe = self._page_sql(replace(query, before=None), reverse=False, bound=(">=", query.before), limit=1,
                                   exists=True, drive=drive, tier=tier)
            return rows, bool(await self._all(probe.text, probe.params)), more
        has_prev = False
        if query.after is not None:
            probe = self._page_sql(replace(query, after=None), reverse=True, bound=("<=", query.after), limit=1,
                                   exists=True, drive=drive, tier=tier)
            has_prev = bool(await self._all(probe.text, probe.params))
        return rows, more, has_prev

    async def _tiered_page(self, query: Query, tier: _Ranked, limit: int) -> tuple[builtins.list[Any], bool, bool]:
        """A forward page by relevance of a search with more hits than :data:`RANKED_HITS`: the
        ranked matches (``seq >= tier``, at most that many ranked), then the older matches read
        newest first from FTS5's rowid order, as far as the page needs."""
        rows: builtins.list[Any] = []
        below = _unranked_seq(query.after)
        if below is None:  # the page starts among the ranked matches
            sql = self._page_sql(query, reverse=False, bound=None, limit=limit + 1, tier=tier, tier_only=True)
            rows = await self._all(sql.text, sql.params)
        if len(rows) <= limit:
            rows += await self._all(*self._older_hits(query, tier.tier if below is None else below, "<",
                                                      limit + 1 - len(rows)))
        has_prev = False
        if query.after is not None:
            if below is None:
                probe = self._page_sql(replace(query, after=None), reverse=True, bound=("<=", query.after), limit=1,
                                       exists=True, tier=tier, tier_only=True)
                has_prev = bool(await self._all(probe.text, probe.params))
            else:  # before an unranked match: every ranked one, and the newer unranked ones
                has_prev = bool(await self._all(*self._older_hits(query, below, ">=", 1)))
        return rows[:limit], len(rows) > limit, has_prev

    def _older_hits(self, query: Query, seq: int, op: str, limit: int) -> tuple[str, Any]:
        """The statement of the matches of a search older than ``seq`` (``op`` ``<``: newest first)
        or at least as new (``>=``: oldest first): FTS5 yields them in rowid order, so the page
        reads the hits it returns and those the other conditions drop."""
        sql = _SQL()
        where = self._where(sql, query)
        where.append(f"search MATCH {sql.p(_match(query.search or ()))}")
        where.append(f"search.rowid {op} {sql.p(seq)}")
        order = "DESC" if op == "<" else "ASC"
        return (f"SELECT {_COLUMNS}, {UNRANKED} - search.rowid FROM search CROSS JOIN states "
                f"ON states.seq = search.rowid WHERE {' AND '.join(where)} ORDER BY search.rowid {order} "
                f"LIMIT {int(limit)}"), sql.params

    async def list(self, query: Query) -> Page:
        self.stats.hit("list")
        query = _normal(query)
        limit = query.limit
        async with self._reading(), self._small_read(query):
            await self._check(query.as_of)
            drive = await self._drive(query)
            tiered = query.sort == Sort(RANK) and query.before is None and limit is not None
            tier = await self._tier(query, scored=not tiered or _unranked_seq(query.after) is None)
            if tier is not None and tiered and limit is not None:
                rows, has_next, has_prev = await self._tiered_page(query, tier, limit)
            else:
                rows, has_next, has_prev = await self._page_rows(query, drive, tier)
        if len(rows) >= THREAD_DECODE_ROWS:  # decoding a large page would hold up the event loop
            items = await asyncio.to_thread(lambda: [self._record(r) for r in rows])
        else:
            items = [self._record(r) for r in rows]
        return Page(items=items, has_next=has_next, has_prev=has_prev)

    async def count(self, query: Query) -> int:
        """Exact. Unfiltered: a sum of ``counts`` over the parents in range. Driven by an indexed
        condition: its ``attrs`` entries, without reading a state when every condition is indexed,
        else with the rest checked on each of their states. Otherwise every live state of the
        collection (in range) is checked."""
        self.stats.hit("count")
        async with self._reading(), self._small_read(query):
            await self._check(query.as_of)
            sql = _SQL()
            if (query.as_of is None and not query.any_of and query.search is None and query.keys is None
                    and query.parents is None):
                text = f"SELECT coalesce(sum(n), 0) FROM counts WHERE ctype = {sql.p(query.ctype)}"
                pk = _parent_key(query)
                if pk is not None:
                    text += (f" AND (parent = {sql.p(pk)} OR (parent > {sql.p(pk + '/')} "
                             f"AND parent < {sql.p(pk + '0')}))")
                return await self._one(text, sql.params)
            drive = await self._drive(query)
            if drive is not None and drive.covered and query.parents is None:  # the index alone answers
                where = self._where(sql, query, parent_range=False, drive=drive, key="d.akey")
                what = "count(*)" if drive.lk.single else "count(DISTINCT d.aseq)"
                return await self._one(f"SELECT {what} FROM attrs AS d WHERE {' AND '.join(where)}", sql.params)
            where = self._where(sql, query, drive=drive)
            return await self._one(f"{self._hits(sql, query, ranked=False)}SELECT count(*) "
                                   f"FROM {self._source(query, drive, sql)} "
                                   f"WHERE {' AND '.join(where)}", sql.params)

    async def count_children(self, parents: Sequence[str], ctype: str, as_of: int | None = None) -> dict[str, int]:
        """Direct children counted at the current revision (``as_of`` none or the current one)
        are read from ``counts``, one lookup per parent (on the event loop for fewer than
        :data:`QUICK_KEYS` parents, as point reads); others by a range of states per parent."""
        self.stats.hit("count_children")
        keys = list(dict.fromkeys(p.lower() for p in parents))
        out = {k: 0 for k in keys}
        async with self._reading():
            await self._check(as_of)
            direct = all(ctype.count("/") == k.count("/") // 2 for k in keys)
            if direct and (as_of is None or as_of >= await self._current()):  # the live counts hold
                text = ("SELECT parent, n FROM counts WHERE ctype = ? "
                        "AND parent IN (SELECT value FROM json_each(?))")
                parents_of = {("" if k == "/" else k): k for k in keys}
                params = (ctype, json.dumps(list(parents_of)))  # a primary-key lookup per parent: quick when few
                rows = self._quick(text, params) if len(keys) < QUICK_KEYS else await self._all(text, params)
                for parent, n in rows:
                    out[parents_of[parent]] = n
                return out
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i:i + _CHUNK]
                sql = _SQL()
                values = ", ".join(f"({sql.p(k)}, {sql.p('' if k == '/' else k)})" for k in chunk)
                vis = self._visible(sql, as_of)
                text = (f"WITH p(k, prefix) AS (VALUES {values}) "
                        f"SELECT p.k, count(*) FROM p JOIN {self._source(Query(ctype, as_of=as_of))} "
                        f"ON ctype = {sql.p(ctype)} AND {vis} "
                        "AND xkey > p.prefix || '/' AND xkey < p.prefix || '0' GROUP BY p.k")
                for k, n in await self._all(text, sql.params):
                    out[k] = n
        return out

    async def _changes(
        self, since: int, until: int | None, ctypes: Sequence[str] | None, limit: int | None, after: str | None,
        after_revision: int | None, by_revision: bool,
    ) -> builtins.list[Change]:
        sql = _SQL()
        where = [f"rev_from > {sql.p(since)}"]
        if until is None:
            where.append("rev_to IS NULL")
        else:
            u = sql.p(until)
            where.append(f"rev_from <= {u} AND (rev_to IS NULL OR rev_to > {u})")
        if ctypes is not None:
            where.append(f"ctype IN (SELECT value FROM json_each({sql.p(json.dumps(list(ctypes)))}))")
        if after is not None and by_revision:
            r = sql.p(after_revision)
            where.append(f"(rev_from > {r} OR (rev_from = {r} AND xkey > {sql.p(after.lower())}))")
        elif after is not None:
            where.append(f"xkey > {sql.p(after.lower())}")
        order = "rev_from, xkey" if by_revision else "xkey"
        text = f"SELECT {_COLUMNS} FROM states WHERE {' AND '.join(where)} ORDER BY {order}"
        if limit is not None:
            text += f" LIMIT {int(limit)}"
        rows = await self._all(text, sql.params)
        return [Change(self._record(r)) for r in rows]

    async def referrers(self, keys: Sequence[str], *, after: str | None = None, limit: int | None = None,
                        ordered: bool = True) -> builtins.list[EntityRecord]:
        self.stats.hit("referrers")
        targets = sorted({k.lower() for k in keys})
        out: dict[str, EntityRecord] = {}
        # ordered: each chunk's page is an index range per target, merged (``sqlite_links``);
        # unordered: the first link rows found will do (links hold current live states only)
        size, statement = (sqlite_links.ARMS, sqlite_links.ordered_page) if ordered else (_CHUNK, sqlite_links.any_page)
        async with self._reading():
            for i in range(0, len(targets), size):
                chunk = targets[i:i + size]
                rows = await self._all(statement(len(chunk), after is not None, limit),
                                       [*chunk, *(() if after is None else (after.lower(),))])
                if len(rows) > THREAD_DECODE_REFERRERS:  # a page of dependents: decoded off the event loop
                    found = await asyncio.to_thread(_records, rows)
                else:
                    found = [self._record(r) for r in rows]
                out.update((rec.key, rec) for rec in found)
        return [out[k] for k in sorted(out)][:limit]

    async def explain(self, query: Query) -> str:
        self.stats.hit("explain")
        query = _normal(query)
        limit = query.limit
        async with self._reading():
            sql, _ = self._main_sql(query, None if limit is None else limit + 1, await self._drive(query),
                                    await self._tier(query))
            rows = await self._all("EXPLAIN QUERY PLAN " + sql.text, sql.params)
        return "\n".join(r[3] for r in rows)

    # -- writes -------------------------------------------------------------------------------
    async def commit(self, writes: Sequence[Write], *, note: str = "", events: Sequence[EventDraft] = (),
                     rematerialise: Sequence[str] = ()) -> int:
        self.stats.hit("commit")
        writes = list(writes)
        if not writes:
            async with self._reading():
                return await self._current()
        async with self._transaction() as db:
            async with db.execute("INSERT INTO revisions(at, note) VALUES (?, ?)", (time.time(), note)) as cur:
                rev = cur.lastrowid
            assert rev is not None
            keys = list(dict.fromkeys(w.key for w in writes))
            current: dict[str, algorithms.CurrentState] = {}
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i:i + _CHUNK]
                rows = await self._all(
                    f"SELECT xkey, seq, rev_from, deleted FROM states WHERE rev_to IS NULL "
                    f"AND xkey IN ({','.join('?' * len(chunk))})", chunk)
                current.update((k, algorithms.CurrentState(rev_from=r, deleted=bool(d), handle=seq))
                               for k, seq, r, d in rows)
            plan = algorithms.plan_commit(writes, current, rev)
            closing: list[tuple[int]] = [(current[k].handle,) for k in plan.closing]
            await db.executemany("UPDATE states SET rev_to = ?, live = 0 WHERE seq = ?",
                                 [(rev, seq) for (seq,) in closing])
            await db.executemany("DELETE FROM links WHERE seq = ?", closing)
            # The new states take the next seqs in order (the writer holds the database): no
            # statement reads them back.
            first = self._quick("SELECT coalesce(max(seq), 0) + 1 FROM states")[0][0]
            seqs = {key: first + i for i, key in enumerate(plan.new)}
            await db.executemany(
                "INSERT INTO states(seq, xkey, xid, kind, ctype, doc, rev_from, rev_to, deleted, live) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)", await _off_loop(_state_rows, plan, rev, first))
            await self._index_commit(db, plan, current, seqs)
            linked = [(t, n.key, seqs[n.key]) for n in plan.new.values() for t in n.links]
            if linked:
                await db.executemany(sqlite_links.INSERT, linked)
            texts = [(seqs[n.key], *n.text) for n in plan.new.values() if n.text]
            if texts:
                await db.executemany("INSERT INTO search(rowid, title, body) VALUES (?, ?, ?)", texts)
            if events:
                await db.executemany(_INSERT_EVENT, [_event_row(e.at(EventPosition(rev, i), self.instance_id))
                                                     for i, e in enumerate(events)])
            if rematerialise:
                await db.executemany(rework.SQLITE_ENQUEUE, rework.enqueue_rows(rematerialise, rev, time.time()))
        return rev

    # -- deferred re-materialisation ---------------------------------------------------------
    async def rematerialisations(self) -> builtins.list[Rematerialisation]:
        self.stats.hit("rematerialisations")
        return [rework.from_row(r) for r in await self._all(rework.SQLITE_PENDING)]

    async def rematerialised(self, key: str, revision: int, after: str | None, *, done: bool) -> bool:
        self.stats.hit("rematerialised")
        sql, params = ((rework.SQLITE_DONE, (key.lower(), revision)) if done
                       else (rework.SQLITE_PROGRESS, (after, key.lower(), revision)))
        async with self._transaction() as db, db.execute(sql, params) as cur:
            return cur.rowcount > 0

    async def rematerialise_lease(self, holder: str, now: float, until: float) -> bool:
        self.stats.hit("rematerialise_lease")
        async with self._transaction() as db:
            if until <= now:
                await db.execute(rework.SQLITE_RELEASE, (holder,))
                return False
            async with db.execute(rework.SQLITE_LEASE, (holder, until, holder, now)) as cur:
                return cur.rowcount > 0

    # -- events -------------------------------------------------------------------------------
    async def _events_horizon(self) -> EventPosition | None:
        rows = self._quick("SELECT value FROM meta WHERE key = 'events_horizon'")
        return EventPosition.parse(str(rows[0][0])) if rows and rows[0][0] else None

    async def _events_after(self, after: EventPosition | None, limit: int, types: tuple[str, ...],
                            subject: str | None) -> builtins.list[RegistryEvent]:
        where, params = _events_where(after, types, subject)
        rows = await self._all(f"SELECT {_EVENT_COLUMNS} FROM events {where} ORDER BY rev, idx LIMIT ?",
                               [*params, limit])
        return [_event(row) for row in rows]

    async def _index_commit(self, db: aiosqlite.Connection, plan: algorithms.CommitPlan,
                            current: dict[str, algorithms.CurrentState], seqs: dict[str, int]) -> None:
        """Keep the read indexes (``sqlite_index``) of the states a commit closes and writes."""
        closed = [(current[k].handle, k, plan.new[k].ctype, not current[k].deleted) for k in plan.closing]
        await sqlite_index.on_commit(db, closed, [(seqs[n.key], n.key, n.ctype, n.doc) for n in plan.new.values()])

    # -- backups ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def dump(self) -> AsyncIterator[records.Dump]:
        """One read transaction (:meth:`_reading`): a snapshot, whatever is committed meanwhile
        (WAL); the links of the current states come from ``links``."""
        self.stats.hit("dump")
        async with self._reading():
            db = self._active()[0]
            revision, oldest = await self._current(), await self._oldest()
            instance = str(await self._one("SELECT value FROM meta WHERE key = 'instance'"))

            async def revisions() -> AsyncIterator[records.RevisionEntry]:
                async with db.execute("SELECT rev, at, note FROM revisions ORDER BY rev") as cur:
                    async for rev, at, note in cur:
                        yield records.RevisionEntry(rev, at, note)

            async def states() -> AsyncIterator[records.StoredState]:
                async with db.execute(
                        "SELECT xid, kind, ctype, doc, rev_from, rev_to, search.title, search.body, "
                        "(SELECT json_group_array(target) FROM links WHERE links.seq = states.seq) "
                        "FROM states LEFT JOIN search ON search.rowid = states.seq ORDER BY states.seq") as cur:
                    async for xid, kind, ctype, doc, rev_from, rev_to, title, body, links in cur:
                        yield records.StoredState(
                            xid, kind, ctype, None if doc is None else json.loads(doc), rev_from, rev_to,
                            tuple(sorted(json.loads(links))) if links else (),
                            None if title is None else (title, body))

            async def events() -> AsyncIterator[RegistryEvent]:
                async with db.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE rev <= ? ORDER BY rev, idx",
                                      (revision,)) as cur:
                    async for row in cur:
                        yield _event(row)

            pending = [rework.from_row(r) for r in await self._all(rework.SQLITE_PENDING)]
            yield records.Dump(instance, revision, oldest, revisions, states, events, await self._events_horizon(),
                               pending)

    async def load(self, *, instance_id: str, revision: int, oldest: int, revisions: Iterable[records.RevisionEntry],
                   states: Iterable[records.StoredState], events: Iterable[RegistryEvent] = (),
                   events_horizon: EventPosition | None = None,
                   rematerialise: Iterable[Rematerialisation] = ()) -> None:
        self.stats.hit("load")
        async with self._transaction() as db:
            if await self._one("SELECT 1 FROM revisions LIMIT 1") or await self._one("SELECT 1 FROM states LIMIT 1"):
                raise errors.StoreNotEmpty(f"the store {self.path} already holds revision {await self._current()}")
            for batch in algorithms.batches(revisions):
                await db.executemany("INSERT INTO revisions(rev, at, note) VALUES (?, ?, ?)",
                                     [(r.rev, r.at, r.note) for r in batch])
            if revision and not await self._one("SELECT 1 FROM revisions WHERE rev = ?", (revision,)):
                # the counter is the newest commit's row: keep it even when no commit was recorded for it
                await db.execute("INSERT INTO revisions(rev, at, note) VALUES (?, ?, 'restored revision counter')",
                                 (revision, time.time()))
            seq = 0
            for batch in algorithms.batches(states):
                rows, links, texts = [], [], []
                for st in batch:
                    seq += 1
                    rows.append((seq, st.key, st.xid, st.kind, st.ctype, None if st.doc is None else _dumps(st.doc),
                                 st.rev_from, st.rev_to, int(st.deleted), int(st.live)))
                    if st.live:
                        links += [(t.lower(), st.key, seq) for t in st.links]
                    if st.text is not None:
                        texts.append((seq, *st.text))
                await db.executemany("INSERT INTO states(seq, xkey, xid, kind, ctype, doc, rev_from, rev_to, deleted, "
                                     "live) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
                await db.executemany(sqlite_links.INSERT, links)
                await db.executemany("INSERT INTO search(rowid, title, body) VALUES (?, ?, ?)", texts)
            for batch in algorithms.batches(events):
                await db.executemany(_INSERT_EVENT, [_event_row(e) for e in batch])
            await db.executemany(rework.SQLITE_LOAD, [rework.to_row(i) for i in rematerialise])
            if events_horizon is not None:
                await db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('events_horizon', ?)",
                                 (str(events_horizon),))
            await db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('oldest', ?)", (oldest,))
            await db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('instance', ?)", (instance_id,))
            await sqlite_index.rebuild(db)
        self._instance = instance_id

    async def prune(self, *, keep_revisions: int | None = None, keep_seconds: float | None = None) -> int:
        self.stats.hit("prune")
        async with self._transaction() as db:
            current, oldest = await self._current(), await self._oldest()
            newest_before = None
            if keep_seconds is not None:
                newest_before = await self._one("SELECT max(rev) FROM revisions WHERE at <= ?",
                                                (time.time() - keep_seconds,))
            horizon = algorithms.retention_horizon(current, oldest, keep_revisions=keep_revisions,
                                                   keep_seconds=keep_seconds, newest_before_cutoff=newest_before)
            dropped = 0
            if horizon > oldest:
                for text in ("DELETE FROM states WHERE rev_to IS NOT NULL AND rev_to <= ?",
                             "DELETE FROM states WHERE deleted = 1 AND rev_from <= ?"):
                    async with db.execute(text, (horizon,)) as cur:
                        dropped += cur.rowcount
                await db.execute("DELETE FROM search WHERE rowid NOT IN (SELECT seq FROM states)")
                await db.execute("DELETE FROM revisions WHERE rev < ?", (horizon,))
                last = await self._all("SELECT rev, idx FROM events WHERE rev < ? ORDER BY rev DESC, idx DESC LIMIT 1",
                                       (horizon,))
                if last:
                    await db.execute("DELETE FROM events WHERE rev < ?", (horizon,))
                    await db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('events_horizon', ?)",
                                     (str(EventPosition(*last[0])),))
                await db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('oldest', ?)", (horizon,))
        return dropped
