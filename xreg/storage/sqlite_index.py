"""The SQLite store's read indexes: typed attribute values and live counts (schema, upkeep, SQL).

Schema (added to a database of an earlier schema when it is opened, see :func:`migrate`)::

    attr_paths(id INTEGER PRIMARY KEY, path, ctype, UNIQUE (path, ctype))
        the indexed paths (:func:`~xreg.storage.indexed.path_text`) met so far in each collection
        type, by a small id.
    attrs(path, v, akey, aseq) PRIMARY KEY (path, v, akey, aseq), WITHOUT ROWID
        one row per entry of :func:`xreg.storage.indexed.entries` of every *live* state:
        ``path`` the id of its path in its state's collection type (none in ``attr_paths``: no
        entry), ``v`` the folded value (text, integer or real; booleans as the blobs ``x'00'`` /
        ``x'01'``; the presence of an object or list as the empty blob ``x''``), so the storage
        classes keep types apart as ``matches`` does; ``akey`` and ``aseq`` are the state's
        ``xkey`` and ``seq`` (named apart from them: the two tables are joined). Every read names
        one collection type, so the type is part of the path's id, not a column of every row (a
        third less to write). An equality is one range of the primary key in key order; a further
        condition of the same state is a seek of the primary key ``(path, v, akey)``, and a commit
        drops the rows of a state it closes by their primary keys, built again from its document
        (an index on ``aseq`` would cost every insert a second b-tree entry). A commit inserts its
        rows in the primary key's order, a statement of rows at a time (:data:`RUN`).
    counts(ctype, parent, n)           PRIMARY KEY (ctype, parent), WITHOUT ROWID
        how many live entities of a collection type each parent key has (``parent_key``): an
        unfiltered count is a sum over the parents in range, never a scan of the entities.

``meta.read_index`` holds :data:`VERSION`; a database without it (made before these tables, or by
an older layout of them) gets them rebuilt from its live states in one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from xreg.json_encoding import loads
from xreg.storage.indexed import PRESENT, Lookup, entry_texts, parent_key, path_text

#: 2: ``meta.xref`` kept by its presence (:data:`~xreg.storage.indexed.PRESENCE`); no ``attrs_seq``.
#: 3: the collection type in the path's id (``attr_paths.ctype``), no ``actype`` column.
#: Bump it whenever :func:`~xreg.storage.indexed.entries` changes what it yields: a commit deletes
#: a replaced state's rows by building them again from its document, so rows built by another
#: layout would stay behind (a bump rebuilds the index when the store opens).
VERSION = 3

_TABLES = (
    "CREATE TABLE IF NOT EXISTS attr_paths (id INTEGER PRIMARY KEY, path TEXT NOT NULL, ctype TEXT NOT NULL, "
    "UNIQUE (path, ctype))",
    "CREATE TABLE IF NOT EXISTS attrs (path INTEGER NOT NULL, v, akey TEXT NOT NULL, aseq INTEGER NOT NULL, "
    "PRIMARY KEY (path, v, akey, aseq)) WITHOUT ROWID",
)
SCHEMA = ";\n".join(_TABLES) + """;
CREATE TABLE IF NOT EXISTS counts (ctype TEXT NOT NULL, parent TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (ctype, parent)) WITHOUT ROWID;
"""

_INSERT = "INSERT OR IGNORE INTO attrs(path, v, akey, aseq) VALUES (?, ?, ?, ?)"
_BUMP = ("INSERT INTO counts(ctype, parent, n) VALUES (?, ?, ?) "
         "ON CONFLICT (ctype, parent) DO UPDATE SET n = n + excluded.n")
#: Entries handled on the event loop at most (about 4 states' worth); more in a worker thread.
LOOP_ROWS = 64
_CHUNK = 500
#: Rows of one path and value per ``INSERT`` (:data:`_INSERT_RUN`): those two are bound once, each
#: row binds its key and seq (a statement per row, binding all four, costs about twice as much for
#: a large commit).
RUN = 100
_INSERT_RUN = ("INSERT OR IGNORE INTO attrs(path, v, akey, aseq) VALUES "
               + ", ".join(f"(?1, ?2, ?{3 + 2 * i}, ?{4 + 2 * i})" for i in range(RUN)))
#: The rows of :data:`_INSERT_RUN`'s parameters, deleted: the keys seek the primary key, the seqs
#: are checked on the rows found (a pair ``(akey, aseq) IN (…)`` would scan the path's value). A
#: key has one live state, whose rows carry its seq: each key finds the one row of its own state.
_DELETE_RUN = ("DELETE FROM attrs WHERE path = ?1 AND v = ?2 AND akey IN ("
               + ", ".join(f"?{3 + 2 * i}" for i in range(RUN)) + ") AND +aseq IN ("
               + ", ".join(f"?{4 + 2 * i}" for i in range(RUN)) + ")")


class Executor(Protocol):
    """What the upkeep needs of a connection (``aiosqlite.Connection`` has it)."""

    async def execute(self, sql: str, parameters: Any = ...) -> Any: ...
    async def executemany(self, sql: str, parameters: Iterable[Any]) -> Any: ...
    async def execute_fetchall(self, sql: str, parameters: Any = ...) -> Iterable[Any]: ...


class Params(Protocol):
    def p(self, value: Any) -> str: ...


def stored(value: Any) -> Any:
    """An entry's value as the ``v`` column holds it."""
    if value is PRESENT:
        return b""
    if isinstance(value, bool):
        return b"\x01" if value else b"\x00"
    return value


#: ``{ctype: {path text: {v: [key, seq, key, seq, …]}}}``: the ``attrs`` rows of some states by
#: collection type, path and value (text as itself, any other as ``(type, stored value)``), each
#: list in the order of its states' keys.
Groups = dict[str, dict[str, dict[Any, list[Any]]]]


def _groups(states: Sequence[tuple[int, str, str, dict[str, Any] | str | None]]) -> Groups:
    """The ``attrs`` rows of live states ``(seq, key, ctype, doc)`` (``doc`` ``None``: none; a
    JSON text: decoded here, one at a time), grouped."""
    out: Groups = {}
    for seq, key, ctype, doc in sorted(states, key=_STATE_ORDER):
        if not doc:
            continue
        found: dict[str, Any] = loads(doc) if isinstance(doc, str) else doc
        paths = out.get(ctype)
        if paths is None:
            paths = out[ctype] = {}
        for text, v in entry_texts(found):
            values = paths.get(text)
            if values is None:
                values = paths[text] = {}
            if type(v) is not str:  # kept by type too: 1 and 1.0 are one key of a dict
                v = stored(v)
                v = (type(v), v)
            rows = values.get(v)
            if rows is None:
                values[v] = [key, seq]
            else:
                rows += (key, seq)
    return out


_STATE_ORDER = operator.itemgetter(2, 1)


def _value_order(v: Any) -> tuple[int, Any]:
    """Where SQLite sorts a ``v`` of :data:`Groups` (numbers, then text, then blobs)."""
    return (1, v) if type(v) is str else (2, v[1]) if v[0] is bytes else (0, v[1])


def _params(groups: Groups, ids: dict[tuple[str, str], int]) -> tuple[list[list[Any]], list[tuple]]:
    """The parameters of :data:`_INSERT_RUN` (full runs) and of :data:`_INSERT` (the rest), each
    in the primary key's order: the rows fill the index's pages in order, not a row here and there."""
    runs: list[list[Any]] = []
    rest: list[tuple] = []
    width = 2 * RUN
    for path, text, ctype in sorted((ids[(text, ctype)], text, ctype) for ctype, paths in groups.items()
                                    for text in paths):
        values = groups[ctype][text]
        for v in sorted(values, key=_value_order):
            flat = values[v]
            if type(v) is not str:
                v = v[1]
            full = len(flat) - len(flat) % width
            runs += ([path, v, *flat[i:i + width]] for i in range(0, full, width))
            rest += ((path, v, flat[i], flat[i + 1]) for i in range(full, len(flat), 2))
    return runs, rest


async def _path_ids(db: Executor, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The ids of ``(path text, ctype)`` pairs in ``attr_paths`` (those it has)."""
    found = await db.execute_fetchall(
        "SELECT a.path, a.ctype, a.id FROM json_each(?) AS j JOIN attr_paths AS a "
        "ON a.path = json_extract(j.value, '$[0]') AND a.ctype = json_extract(j.value, '$[1]')", (json.dumps(pairs),))
    return {(path, ctype): i for path, ctype, i in found}


async def _store_rows(db: Executor, groups: Groups, size: int) -> None:
    """Insert the ``attrs`` rows of ``groups`` (``size`` of them): the paths get their ids in
    ``attr_paths`` (new ones added), the rows go in in index order."""
    pairs = sorted((text, ctype) for ctype, paths in groups.items() for text in paths)
    if not pairs:
        return
    await db.executemany("INSERT OR IGNORE INTO attr_paths(path, ctype) VALUES (?, ?)", pairs)
    ids = await _path_ids(db, pairs)
    runs, rest = _params(groups, ids) if size <= LOOP_ROWS else await asyncio.to_thread(_params, groups, ids)
    if runs:
        await db.executemany(_INSERT_RUN, runs)
    if rest:
        await db.executemany(_INSERT, rest)


def _size(states: Sequence[tuple[int, str, str, Any]]) -> int:
    """About how many entries ``states`` have (what decides the thread)."""
    return 16 * len(states)


async def on_commit(db: Executor, closed: Sequence[tuple[int, str, str, bool]],
                    opened: Sequence[tuple[int, str, str, dict[str, Any] | None]]) -> None:
    """Keep the indexes of a commit: ``closed`` are the current states it supersedes
    ``(seq, key, ctype, was_live)``, ``opened`` the states it writes ``(seq, key, ctype, doc)``
    (``doc`` ``None``: a tombstone). The entries of many states are built in a worker thread."""
    live = [(seq, key, ctype) for seq, key, ctype, was_live in closed if was_live]
    await _drop_rows(db, live)
    delta: Counter[tuple[str, str]] = Counter()
    for _, key, ctype in live:
        delta[(ctype, parent_key(key))] -= 1
    for _, key, ctype, doc in opened:
        if doc is not None:
            delta[(ctype, parent_key(key))] += 1
    size = _size(opened)
    await _store_rows(db, _groups(opened) if size <= LOOP_ROWS else await asyncio.to_thread(_groups, opened), size)
    await db.executemany(_BUMP, [(c, p, n) for (c, p), n in delta.items() if n])


async def _drop_rows(db: Executor, closed: Sequence[tuple[int, str, str]]) -> None:
    """Delete the ``attrs`` rows of live states a commit closes ``(seq, key, ctype)``: their
    entries again, from their documents, deleted by their primary keys (no second index on
    ``aseq`` to keep up on every insert), the keys of a hundred rows of one path and value per
    statement (:data:`_DELETE_RUN`)."""
    docs: list[tuple[int, str, str, Any]] = []
    for i in range(0, len(closed), _CHUNK):
        chunk = closed[i:i + _CHUNK]
        found = dict(await db.execute_fetchall(
            "SELECT seq, doc FROM states WHERE seq IN (SELECT value FROM json_each(?))",
            (json.dumps([seq for seq, _, _ in chunk]),)))
        docs += [(seq, key, ctype, found.get(seq)) for seq, key, ctype in chunk]

    size = _size(docs)
    groups = _groups(docs) if size <= LOOP_ROWS else await asyncio.to_thread(_groups, docs)
    pairs = sorted((text, ctype) for ctype, paths in groups.items() for text in paths)
    if not pairs:
        return
    ids = await _path_ids(db, pairs)
    known = {ctype: {text: values for text, values in paths.items() if (text, ctype) in ids}
             for ctype, paths in groups.items()}
    runs, rest = _params(known, ids) if size <= LOOP_ROWS else await asyncio.to_thread(_params, known, ids)
    if runs:
        await db.executemany(_DELETE_RUN, runs)
    if rest:
        await db.executemany("DELETE FROM attrs WHERE path = ? AND v = ? AND akey = ? AND aseq = ?", rest)


async def rebuild(db: Executor, *, chunk: int = 2000) -> None:
    """Fill both tables from the live states (inside the caller's transaction)."""
    await db.execute("DELETE FROM attrs")
    await db.execute("DELETE FROM attr_paths")
    await db.execute("DELETE FROM counts")
    await db.execute("INSERT INTO counts(ctype, parent, n) SELECT ctype, xreg_parent(xkey), count(*) "
                     "FROM states WHERE live = 1 GROUP BY ctype, xreg_parent(xkey)")
    after = -1
    while True:
        found = list(await db.execute_fetchall(
            "SELECT seq, xkey, ctype, doc FROM states WHERE live = 1 AND seq > ? ORDER BY seq LIMIT ?", (after, chunk)))
        if not found:
            break
        await _store_rows(db, await asyncio.to_thread(_groups, found), _size(found))
        after = found[-1][0]
    await db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('read_index', ?)", (VERSION,))


async def begin_immediate(db: Executor) -> None:
    """``BEGIN IMMEDIATE``, never leaving a transaction behind: when the await is interrupted
    (cancelled), the statement still runs in the connection's thread, so a ``ROLLBACK`` is queued
    behind it (it fails harmlessly when the ``BEGIN`` itself failed)."""
    try:
        await db.execute("BEGIN IMMEDIATE")
    except BaseException:
        with contextlib.suppress(sqlite3.OperationalError):
            await db.execute("ROLLBACK")
        raise


async def migrate(db: Executor) -> bool:
    """Build the indexes of a database that lacks them (or has an older layout); ``True`` if it did."""
    found = list(await db.execute_fetchall("SELECT value FROM meta WHERE key = 'read_index'"))
    if found and found[0][0] == VERSION:
        return False
    await begin_immediate(db)
    try:
        await db.execute("DROP TABLE IF EXISTS attrs")  # an older layout's (layout 1 had a second index)
        await db.execute("DROP TABLE IF EXISTS attr_paths")
        for create in _TABLES:
            await db.execute(create)
        await rebuild(db)
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
    return True


def _after(prefix: str) -> str | None:
    """The least text greater than every text starting with ``prefix`` (``None``: none)."""
    while prefix:
        code = ord(prefix[-1]) + 1
        if code == 0xD800:
            code = 0xE000
        if code <= 0x10FFFF:
            return prefix[:-1] + chr(code)
        prefix = prefix[:-1]
    return None


def glob(part: str) -> str:
    """A literal piece of a ``GLOB`` pattern."""
    out = []
    for ch in part:
        out.append(f"[{ch}]" if ch in "*?[" else ch)
    return "".join(out)


def match(sql: Params, alias: str, lk: Lookup, ctype: str) -> str:
    """The constraints on ``attrs`` row ``alias`` that select exactly the entries of ``lk`` in
    collection type ``ctype``."""
    path = (f"{alias}.path = (SELECT id FROM attr_paths WHERE path = {sql.p(path_text(lk.path))} "
            f"AND ctype = {sql.p(ctype)})")
    v = f"{alias}.v"
    if lk.present:
        return path
    if lk.parts is not None:  # text only: after every number, before every blob
        high = _after(lk.prefix)
        upper = f"{v} < {sql.p(high)}" if high is not None else f"{v} < x''"
        pattern = "*".join(glob(p) for p in lk.parts)
        return f"{path} AND {v} >= {sql.p(lk.prefix)} AND {upper} AND {v} GLOB {sql.p(pattern)}"
    values = [sql.p(stored(x)) for x in lk.values]
    if len(values) == 1:
        return f"{path} AND {v} = {values[0]}"
    return f"{path} AND {v} IN ({', '.join(values)})"
