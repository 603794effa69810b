"""Backups that keep the history: a store's every state, commit and its instance id in one file.

A backup is JSON lines (gzip-compressed when the file name ends in ``.gz``; a restore recognises
gzip by its magic bytes), read and written one line at a time, so neither side holds the
registry in memory::

    {"type": "header", "format": "xregistry-gateway-backup", "version": 3, "instanceid": "…",
     "revision": 42, "oldest": 0, "eventshorizon": "3.1" | null, "store": "sqlite", "createdat": "2026-…Z"}
    {"type": "revision", "rev": 1, "at": 1764000000.5, "note": "create registry"}      one per commit kept
    {"type": "rematerialise", "key": "/…", "rev": 40, "at": 1764000000.5, "after": "/…" | null}
                                                               one per pending re-materialisation item
    {"type": "state", "xid": "/…", "kind": "group", "ctype": "endpoints", "doc": {…} | null,
     "from": 3, "to": 7 | null, "links": ["/…"], "text": ["title", "body"] | null}  one per state kept
    {"type": "event", "rev": 4, "idx": 0, "id": "…", "eventtype": "io.xregistry.group.created",
     "subject": "/…", "time": "2026-…Z", "correlationid": "…", "changed": ["…"] | null}   one per event kept
    {"type": "end", "revisions": 42, "states": 117, "events": 230, "rematerialise": 1}

``doc`` is the state as stored (a message's ``@materialised`` view included), ``null`` for a
tombstone; ``from`` / ``to`` its visibility (``rev_from <= R < rev_to``); ``links`` and ``text``
what the reverse index and the text search hold for it. An ``event`` line is one of the registry's
events (``xreg.events``) at its position ``rev.idx``, in position order after the states;
``eventshorizon`` is the last event position pruned. A ``rematerialise`` line is a deferred
re-materialisation item pending at the backup's revision (``xreg.storage.rematerialise``: the
dependents of message ``key`` older than ``rev`` are still to be re-materialised, those up to key
``after`` are done; ``at`` is when they went stale): restored, the restored registry shows them
stale and its worker finishes the work, as the original would have. Version 1 files (before
events) are read as holding no events, versions 1 and 2 (before these items) as holding no
pending work. The end line counts the lines before it: a file cut short is recognised.

:func:`restore` reads the file twice: first to check every line (the header's format and
version, each line's shape, revisions in order and within the header's revision, the end line's
counts) without writing anything, then to load it into an empty store
(:meth:`~xreg.storage.base.Store.load`), which keeps the instance id and the revision
counter: the next commit continues the sequence, as-of reads and ``changes(since:)`` work as
before.

A backup file is untrusted: it is read within :class:`ReadLimits` (the longest line, the most
bytes decompressed, counted while streaming, so a small gzip file cannot expand without bound),
and each state is checked as a write checks an entity: its XID by
:func:`xreg.ids.parse_xid` (without a model: type names a model could give), its
kind and collection matching the XID, and each set of attributes it holds within the write
path's bounds (:func:`xreg.json_limits.check`). Pending items are few (a few per base written
while its dependents wait): at most :attr:`ReadLimits.max_rematerialise`, each of a message XID
(a resource or a version, lower case, as stored) that a state of the backup holds — but for an
item older than the history kept, whose deleted message may have been pruned —, of a revision of
the backup, once each, before the states (so the check holds only the items, never the states).
"""

from __future__ import annotations

import contextlib
import datetime
import gzip
import json
import math
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from xreg import json_limits
from xreg.errors import XRegistryError
from xreg.events.record import ACTIONS, ENTITIES, TYPE_PREFIX, EventPosition, RegistryEvent
from xreg.ids import parse_xid
from xreg.storage.base import Store
from xreg.storage.errors import StoreNotEmpty
from xreg.storage.records import RevisionEntry, StoredState
from xreg.storage.rematerialise import Rematerialisation

FORMAT = "xregistry-gateway-backup"
VERSION = 3
#: The versions a restore reads (1: before events were kept; 2: before pending re-materialisation items).
READABLE_VERSIONS = (1, 2, 3)
#: Nesting accepted in a backup line: a line holds the state's doc, which holds a resource's
#: default version, which holds its materialised view, which holds the attributes (each set of
#: attributes is then checked within the write path's bound, see :func:`_check_doc`).
MAX_DEPTH = json_limits.MAX_DEPTH + 3
#: Longest line read (its newline included), unless configured (``XREG_RESTORE_MAX_LINE_BYTES``):
#: four times the largest request body, as a state holds a version and copies of it.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Most bytes read from a backup, decompressed, unless configured (``XREG_RESTORE_MAX_BYTES``).
MAX_BYTES = 8 * 1024 * 1024 * 1024
#: Most pending re-materialisation items read, unless configured (``XREG_RESTORE_MAX_REMATERIALISE``).
MAX_REMATERIALISE = 10_000
#: Longest key (an XID) of a re-materialisation item or its progress.
MAX_KEY_CHARS = 1024
_KINDS = ("registry", "group", "resource", "version")
#: Keys of a resource's stored doc that hold sets of attributes: its meta entity, its default version.
_RESOURCE_PARTS = ("meta", "default")
_GZIP_MAGIC = b"\x1f\x8b"


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class BackupError(ValueError):
    """A backup that cannot be written or restored; the message says why (and where)."""


@dataclass(frozen=True)
class ReadLimits:
    """How much of a backup is read: the longest line (newline included) and the most bytes in
    all, both counted after decompression, and the most pending re-materialisation items."""

    max_line_bytes: int = MAX_LINE_BYTES
    max_bytes: int = MAX_BYTES
    max_rematerialise: int = MAX_REMATERIALISE


@dataclass(frozen=True)
class BackupInfo:
    """What a backup holds: its header and how many commits and states follow it."""

    instance_id: str
    revision: int
    oldest: int
    store: str
    created_at: str
    revisions: int
    states: int
    events: int = 0
    events_horizon: EventPosition | None = None
    #: Pending re-materialisation items.
    rematerialise: int = 0


def _store_kind(store: Store) -> str:
    return type(store).__name__.removesuffix("Store").lower()


def _line(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def write_backup(store: Store, out: _Sink) -> BackupInfo:
    """Write a backup of the (open) ``store`` to ``out``, line by line; returns what it holds."""
    async with store.dump() as dump:
        created = _now()
        horizon = dump.events_horizon
        out.write(_line({"type": "header", "format": FORMAT, "version": VERSION, "instanceid": dump.instance_id,
                         "revision": dump.revision, "oldest": dump.oldest,
                         "eventshorizon": None if horizon is None else str(horizon), "store": _store_kind(store),
                         "createdat": created}))
        revisions = states = events = 0
        async for r in dump.revisions():
            out.write(_line({"type": "revision", "rev": r.rev, "at": r.at, "note": r.note}))
            revisions += 1
        for item in dump.rematerialisations:
            out.write(_line({"type": "rematerialise", "key": item.key, "rev": item.revision, "at": item.at,
                             "after": item.after}))
        async for s in dump.states():
            out.write(_line({"type": "state", "xid": s.xid, "kind": s.kind, "ctype": s.ctype, "doc": s.doc,
                             "from": s.rev_from, "to": s.rev_to, "links": list(s.links),
                             "text": list(s.text) if s.text is not None else None}))
            states += 1
        async for e in dump.events():
            out.write(_line({"type": "event", "rev": e.position.revision, "idx": e.position.index, "id": e.id,
                             "eventtype": e.type, "subject": e.subject, "time": e.time,
                             "correlationid": e.correlation_id,
                             "changed": None if e.changed is None else list(e.changed)}))
            events += 1
        pending = len(dump.rematerialisations)
        out.write(_line({"type": "end", "revisions": revisions, "states": states, "events": events,
                         "rematerialise": pending}))
    return BackupInfo(dump.instance_id, dump.revision, dump.oldest, _store_kind(store), created, revisions, states,
                      events, horizon, pending)


async def backup(store: Store, path: Path) -> BackupInfo:
    """Write a backup of ``store`` to ``path`` (gzip when it ends in ``.gz``). The file appears
    only when complete: it is written next to ``path`` and renamed. Writing blocks the event
    loop between reads (a command's own loop: nothing else waits on it)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        with open(tmp, "wb") as raw:  # noqa: ASYNC230 - see the docstring
            if path.suffix == ".gz":
                with gzip.GzipFile(fileobj=raw, mode="wb", filename="") as gz:
                    info = await write_backup(store, gz)
            else:
                info = await write_backup(store, raw)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return info


# -- reading ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _open(path: Path) -> Iterator[IO[bytes] | gzip.GzipFile]:
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        if gzipped:
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield gz
        else:
            yield raw


def _lines(path: Path, limits: ReadLimits) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of every line of a backup, each read and parsed within the bounds."""
    try:
        with _open(path) as f:
            number = total = 0
            while raw := f.readline(limits.max_line_bytes + 1):
                number += 1
                total += len(raw)
                if len(raw) > limits.max_line_bytes:
                    raise BackupError(f"{path}: line {number} is longer than {limits.max_line_bytes} bytes "
                                      "(XREG_RESTORE_MAX_LINE_BYTES)")
                if total > limits.max_bytes:
                    raise BackupError(f"{path}: line {number} goes past {limits.max_bytes} bytes read (decompressed; "
                                      "XREG_RESTORE_MAX_BYTES)")
                try:
                    value = json_limits.loads(raw, max_depth=MAX_DEPTH)
                except ValueError as exc:  # JSONDecodeError, JSONLimitError, UnicodeDecodeError
                    cut = "" if raw.endswith(b"\n") else " (the file is cut short)"
                    raise BackupError(f"{path}: line {number} is not valid JSON{cut}: {exc}") from None
                if not isinstance(value, dict) or not isinstance(value.get("type"), str):
                    raise BackupError(f"{path}: line {number} is not a backup record (an object with a 'type')")
                yield number, value
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise BackupError(f"{path}: cannot be read: {exc}") from exc


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _header(path: Path, number: int, line: dict[str, Any]) -> BackupInfo:
    if line.get("type") != "header" or line.get("format") != FORMAT:
        raise BackupError(f"{path}: not a backup of this gateway (line {number} is not a {FORMAT!r} header); "
                          "an `export` document is loaded with `import`")
    if line.get("version") not in READABLE_VERSIONS:
        raise BackupError(f"{path}: backup format version {line.get('version')!r} is not supported "
                          f"(this gateway reads versions {', '.join(map(str, READABLE_VERSIONS))})")
    instance: Any = line.get("instanceid")
    revision: Any = line.get("revision")
    oldest: Any = line.get("oldest")
    try:
        uuid.UUID(str(instance))
    except ValueError:
        raise BackupError(f"{path}: the header's instanceid {instance!r} is not a UUID") from None
    if not _int(revision) or not _int(oldest) or oldest > revision:
        raise BackupError(f"{path}: the header's revision ({revision!r}) and oldest ({oldest!r}) must be "
                          "revisions, oldest not after revision")
    horizon: Any = line.get("eventshorizon")
    try:
        events_horizon = None if horizon is None else EventPosition.parse(horizon)
    except XRegistryError:
        raise BackupError(f"{path}: the header's eventshorizon {horizon!r} is not an event position") from None
    return BackupInfo(str(instance), revision, oldest, str(line.get("store") or ""), str(line.get("createdat") or ""),
                      0, 0, 0, events_horizon)


def _event(line: dict[str, Any]) -> RegistryEvent:
    rev: Any = line.get("rev")
    idx: Any = line.get("idx")
    given = [line.get(k) for k in ("id", "eventtype", "subject", "time", "correlationid")]
    changed: Any = line.get("changed")
    fields = [f for f in given if isinstance(f, str) and f]
    if not _int(rev) or rev == 0 or not _int(idx) or len(fields) != len(given):
        raise ValueError("an event needs rev (a revision), idx (an index), id, eventtype, subject, time and "
                         "correlationid (strings)")
    id_, etype, subject, at, correlation = fields
    parts = etype.removeprefix(TYPE_PREFIX).split(".")
    if not etype.startswith(TYPE_PREFIX) or len(parts) != 2 or parts[0] not in ENTITIES or parts[1] not in ACTIONS:
        raise ValueError(f"the event type {etype!r} is not io.xregistry.<entity>.<action>")
    if not subject.startswith("/") or len(subject) > 4096:
        raise ValueError(f"the event subject {subject[:100]!r} is not an XID")
    if changed is not None and (not isinstance(changed, list) or not all(isinstance(c, str) for c in changed)):
        raise ValueError("an event's changed is a list of attribute names (or null)")
    return RegistryEvent(EventPosition(rev, idx), id_, etype, subject, at, correlation,
                         None if changed is None else tuple(changed))


def _revision(line: dict[str, Any]) -> RevisionEntry:
    rev: Any = line.get("rev")
    at: Any = line.get("at")
    note: Any = line.get("note", "")
    if not _int(rev) or rev == 0 or not isinstance(at, (int, float)) or isinstance(at, bool) \
            or not isinstance(note, str):
        raise ValueError("a revision needs rev (a revision), at (a time) and note (a string)")
    return RevisionEntry(rev, float(at), note)


def _message_key(value: Any, name: str) -> str:
    """A key of a re-materialisation item: a message's (resource or version) XID in lower case."""
    if not isinstance(value, str) or not value.startswith("/") or len(value) > MAX_KEY_CHARS or value != value.lower():
        raise ValueError(f"the item's {name} {str(value)[:100]!r} is not an XID in lower case (of at most "
                         f"{MAX_KEY_CHARS} characters)")
    try:
        parsed = parse_xid(value, None)
    except XRegistryError as err:
        raise ValueError(f"the item's {name} {value!r} is not an XID: {err.detail}") from None
    if parsed.level not in ("resource", "version"):
        raise ValueError(f"the item's {name} {value!r} names a {parsed.level}, not a message")
    return value


def _rematerialisation(line: dict[str, Any]) -> Rematerialisation:
    rev: Any = line.get("rev")
    at: Any = line.get("at")
    after: Any = line.get("after")
    try:
        when = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else math.nan
    except OverflowError:
        when = math.nan
    if not _int(rev) or rev == 0 or not math.isfinite(when) or when < 0:
        raise ValueError("a rematerialise record needs key (a message XID), rev (a revision), at (a time) and "
                         "after (a message XID or null)")
    key = _message_key(line.get("key"), "key")
    return Rematerialisation(key, rev, when, None if after is None else _message_key(after, "after"))


def _check_xid(xid: Any, kind: Any, ctype: Any) -> None:
    """The XID as a write parses it; the kind and collection type it implies."""
    try:
        parsed = parse_xid(xid, None)
    except XRegistryError as err:
        raise ValueError(f"the xid {xid!r} is not an XID: {err.detail}") from None
    if parsed.level != kind:
        raise ValueError(f"the xid {xid!r} names a {parsed.level}, not a {kind}")
    if ctype != parsed.ctype:
        raise ValueError(f"the ctype of {xid!r} is {parsed.ctype!r}, not {ctype!r}")


def _attribute_sets(kind: str, doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, attributes)`` of every set of attributes a stored doc holds: the entity's own (a
    resource's meta and default version), and under keys starting with ``@`` (never an attribute
    name) what is stored beside them: a materialised view, the model source."""
    sets = [("", doc)]
    while sets:
        where, attrs = sets.pop()
        own = {}
        for key, value in attrs.items():
            nested = key.startswith("@") or (kind == "resource" and not where and key in _RESOURCE_PARTS)
            if nested and isinstance(value, dict):
                sets.append((f"{where}/{key}", value))
            else:
                own[key] = value
        yield where, own


def _check_doc(kind: str, doc: dict[str, Any]) -> None:
    """Each set of attributes within the bounds a write checks them in (``json_limits.check``)."""
    for where, attrs in _attribute_sets(kind, doc):
        try:
            json_limits.check(attrs)
        except json_limits.JSONLimitError as exc:
            raise ValueError(f"the doc's attributes: {exc.detail} (at {where}{exc.path})") from None


def _state(line: dict[str, Any]) -> StoredState:
    xid: Any = line.get("xid")
    kind: Any = line.get("kind")
    ctype: Any = line.get("ctype")
    doc: Any = line.get("doc")
    rev_from: Any = line.get("from")
    rev_to: Any = line.get("to")
    links: Any = line.get("links", [])
    text: Any = line.get("text")
    if not isinstance(xid, str) or not xid.startswith("/") or kind not in _KINDS or not isinstance(ctype, str):
        raise ValueError("a state needs xid (an XID), kind (registry, group, resource or version) and ctype")
    _check_xid(xid, kind, ctype)
    if doc is not None and not isinstance(doc, dict):
        raise ValueError("a state's doc is an object (or null for a deletion)")
    if doc is not None:
        _check_doc(kind, doc)
    if not _int(rev_from) or rev_from == 0 or (rev_to is not None and (not _int(rev_to) or rev_to <= rev_from)):
        raise ValueError("a state needs from (a revision) and to (a later revision, or null)")
    if not isinstance(links, list) or not all(isinstance(k, str) for k in links):
        raise ValueError("a state's links are a list of XIDs")
    if text is not None and (not isinstance(text, list) or len(text) != 2 or not all(isinstance(t, str) for t in text)):
        raise ValueError("a state's text is [title, body] (or null)")
    return StoredState(xid, kind, ctype, doc, rev_from, rev_to, tuple(links), (text[0], text[1]) if text else None)


Record = BackupInfo | RevisionEntry | Rematerialisation | StoredState | RegistryEvent


def _records(path: Path, limits: ReadLimits) -> Iterator[Record]:
    """The header, then every commit, pending item, state and event of a backup, each checked;
    raises :class:`BackupError` at the first defect (the end line, and that each item names a
    state, are checked when the end is reached)."""
    lines = _lines(path, limits)
    first = next(lines, None)
    if first is None:
        raise BackupError(f"{path}: the file is empty")
    info = _header(path, *first)
    version = first[1]["version"]
    yield info
    counts = {"revision": 0, "rematerialise": 0, "state": 0, "event": 0}
    last_rev = 0  # revisions come in order, all before the items, the items before the states
    last_event: EventPosition | None = None  # events in position order, after the states
    items: set[str] = set()
    unnamed: dict[str, tuple[int, int]] = {}  # the items no state has named yet: (line, revision)
    for number, line in lines:
        kind = line["type"]
        if kind == "end":
            if (line.get("revisions"), line.get("states"), line.get("events", 0), line.get("rematerialise", 0)) != (
                    counts["revision"], counts["state"], counts["event"], counts["rematerialise"]):
                raise BackupError(f"{path}: the end line counts {line.get('revisions')!r} revisions, "
                                  f"{line.get('states')!r} states, {line.get('events', 0)!r} events and "
                                  f"{line.get('rematerialise', 0)!r} pending items, the file holds "
                                  f"{counts['revision']}, {counts['state']}, {counts['event']} and "
                                  f"{counts['rematerialise']}")
            if next(lines, None) is not None:
                raise BackupError(f"{path}: there are lines after the end line {number}")
            # an item's message may be gone only with the history pruned (a deletion older than it)
            missing = sorted((n, key) for key, (n, rev) in unnamed.items() if rev > info.oldest)
            if missing:
                n, key = missing[0]
                raise BackupError(f"{path}: line {n}: the re-materialisation item names {key!r}, which is no "
                                  "entity of the backup")
            return
        try:
            if kind == "revision":
                entry = _revision(line)
                if counts["rematerialise"] or counts["state"]:
                    raise ValueError("a revision follows the pending items or the states")
                if entry.rev <= last_rev or entry.rev > info.revision:
                    raise ValueError(f"revision {entry.rev} is out of order or after the header's {info.revision}")
                last_rev = entry.rev
                yield entry
            elif kind == "rematerialise":
                if version < 3:
                    raise ValueError(f"a rematerialise record in a version {version} backup (they came with 3)")
                if counts["state"] or counts["event"]:
                    raise ValueError("a rematerialise record follows the states")
                if counts["rematerialise"] >= limits.max_rematerialise:
                    raise ValueError(f"more than {limits.max_rematerialise} pending re-materialisation items "
                                     "(XREG_RESTORE_MAX_REMATERIALISE)")
                item = _rematerialisation(line)
                if item.revision > info.revision:
                    raise ValueError(f"the item is of a revision after the header's {info.revision}")
                if item.key in items:
                    raise ValueError(f"a second item for {item.key!r}")
                items.add(item.key)
                unnamed[item.key] = (number, item.revision)
                yield item
            elif kind == "state":
                state = _state(line)
                if counts["event"]:
                    raise ValueError("a state follows the events")
                if state.rev_from > info.revision or (state.rev_to or 0) > info.revision:
                    raise ValueError(f"the state is of a revision after the header's {info.revision}")
                unnamed.pop(state.key, None)
                yield state
            elif kind == "event":
                event = _event(line)
                if event.position.revision > info.revision:
                    raise ValueError(f"the event is of a revision after the header's {info.revision}")
                if last_event is not None and event.position <= last_event:
                    raise ValueError(f"event {event.position} is out of order")
                last_event = event.position
                yield event
            else:
                raise ValueError(f"unknown record type {kind!r}")
        except ValueError as exc:
            raise BackupError(f"{path}: line {number}: {exc}") from None
        counts[kind] += 1
    raise BackupError(f"{path}: the backup is cut short: no end line after {counts['revision']} revisions and "
                      f"{counts['state']} states")


def _check(path: Path, limits: ReadLimits) -> tuple[BackupInfo, list[Rematerialisation]]:
    """What :func:`check_backup` returns, and the pending items (a bounded few)."""
    records = _records(path, limits)
    info = next(records)
    assert isinstance(info, BackupInfo)
    revisions = states = events = 0
    items: list[Rematerialisation] = []
    for record in records:
        revisions += isinstance(record, RevisionEntry)
        states += isinstance(record, StoredState)
        events += isinstance(record, RegistryEvent)
        if isinstance(record, Rematerialisation):
            items.append(record)
    return BackupInfo(info.instance_id, info.revision, info.oldest, info.store, info.created_at, revisions, states,
                      events, info.events_horizon, len(items)), items


def check_backup(path: Path, limits: ReadLimits = ReadLimits()) -> BackupInfo:
    """Read a whole backup and check it (see :func:`restore`); returns what it holds."""
    return _check(path, limits)[0]


async def restore(store: Store, path: Path, limits: ReadLimits = ReadLimits()) -> BackupInfo:
    """Load the backup at ``path`` into the (open, empty) ``store``, keeping its instance id and
    revisions. The whole file is checked first (within ``limits``): a defective backup raises
    :class:`BackupError` and writes nothing, as does a store that is not empty."""
    info, items = _check(path, limits)
    records = _records(path, limits)
    next(records)  # the header, checked above
    pending: list[StoredState | RegistryEvent] = []

    def revisions() -> Iterator[RevisionEntry]:  # the lines up to the first state (the items read above)
        for record in records:
            if isinstance(record, RevisionEntry):
                yield record
            elif isinstance(record, Rematerialisation):
                continue
            elif isinstance(record, (StoredState, RegistryEvent)):
                pending.append(record)
                return

    def states() -> Iterator[StoredState]:  # then up to the first event
        first = pending[0] if pending else None
        if isinstance(first, StoredState):
            pending.clear()
            yield first
        elif first is not None:
            return
        for record in records:
            if isinstance(record, StoredState):
                yield record
            elif isinstance(record, RegistryEvent):
                pending.append(record)
                return

    def events() -> Iterator[RegistryEvent]:  # the rest (read after the states)
        for held in pending:
            if isinstance(held, RegistryEvent):
                yield held
        pending.clear()
        for record in records:
            if isinstance(record, RegistryEvent):
                yield record

    try:
        await store.load(instance_id=info.instance_id, revision=info.revision, oldest=info.oldest,
                         revisions=revisions(), states=states(), events=events(),
                         events_horizon=info.events_horizon, rematerialise=items)
    except StoreNotEmpty as exc:
        raise BackupError(f"the target store is not empty ({exc}); restore into a fresh data directory or "
                          "database") from exc
    except BackupError:
        raise
    except Exception as exc:  # the store removed what it had loaded
        raise BackupError(f"{path}: the backup could not be loaded, nothing was kept: {type(exc).__name__}: {exc}") \
            from exc
    return info
