"""Webhook subscriptions and delivery state in the SQLite store's file (its connection and lock).

Tables::

    webhooks(id PRIMARY KEY, url, types, subject, mode, secret, owner, created, cursor,
             attempts, next_attempt, last_error, holder, lease_until, enabled)
    webhook_dead(sub, position, event, attempts, last_error, failed_at, replay,
                 PRIMARY KEY (sub, position))

Every change is one statement or one ``BEGIN IMMEDIATE`` transaction, so a lease's compare-and-set
(``UPDATE … WHERE holder IS NULL OR holder = ? OR lease_until < ?``) holds across processes
sharing the file.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from xreg.storage.sqlite import SQLiteStore
from xreg.storage.webhooks import DeadLetter, Subscription, WebhookStore, position_key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY, url TEXT NOT NULL, types TEXT, subject TEXT, mode TEXT NOT NULL,
    secret TEXT NOT NULL, owner TEXT NOT NULL, created REAL NOT NULL, cursor TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, next_attempt REAL NOT NULL DEFAULT 0, last_error TEXT,
    holder TEXT, lease_until REAL NOT NULL DEFAULT 0, enabled INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS webhook_dead (
    sub TEXT NOT NULL, position TEXT NOT NULL, event TEXT NOT NULL, attempts INTEGER NOT NULL,
    last_error TEXT NOT NULL, failed_at REAL NOT NULL, replay INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sub, position)) WITHOUT ROWID;
"""

_COLUMNS = ("id, url, types, subject, mode, secret, owner, created, cursor, attempts, next_attempt, last_error, "
            "holder, lease_until, enabled")
_FREE = "(holder IS NULL OR holder = ? OR lease_until < ?)"
_MUTABLE = {"url", "types", "subject", "mode", "enabled", "cursor"}


def _row(sub: Subscription) -> tuple[Any, ...]:
    return (sub.id, sub.url, None if sub.types is None else json.dumps(list(sub.types)), sub.subject, sub.mode,
            sub.secret, sub.owner, sub.created, sub.cursor, sub.attempts, sub.next_attempt, sub.last_error,
            sub.holder, sub.lease_until, int(sub.enabled))


def _sub(row: Sequence[Any]) -> Subscription:
    types = None if row[2] is None else tuple(json.loads(row[2]))
    return Subscription(id=row[0], url=row[1], types=types, subject=row[3], mode=row[4], secret=row[5], owner=row[6],
                        created=row[7], cursor=row[8], attempts=row[9], next_attempt=row[10], last_error=row[11],
                        holder=row[12], lease_until=row[13], enabled=bool(row[14]))


def _letter(row: Sequence[Any]) -> DeadLetter:
    return DeadLetter(subscription=row[0], position=row[1], event=json.loads(row[2]), attempts=row[3],
                      last_error=row[4], failed_at=row[5], replay=bool(row[6]))


class SQLiteWebhookStore(WebhookStore):
    """:class:`WebhookStore` on an opened :class:`SQLiteStore` (see the module doc)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._store._lock:
            return list(await self._store.db.execute_fetchall(sql, params))

    async def _change(self, sql: str, params: Sequence[Any]) -> int:
        async with self._store._transaction() as db, db.execute(sql, params) as cur:
            return cur.rowcount

    async def _private_change(self, sql: str, params: Sequence[Any]) -> int:
        """One statement whose parameters hold a secret or a target URL: run on the store's own
        ``sqlite3`` connection (in a worker thread, under the store's lock, so its connection thread
        is idle), not through ``aiosqlite``, whose debug log prints every statement's parameters."""
        raw = self._store._raw
        if raw is None:
            raise RuntimeError("SQLiteStore is not open")
        async with self._store._lock:
            return await asyncio.to_thread(lambda: raw.execute(sql, params).rowcount)

    async def open(self) -> None:
        async with self._store._lock:
            await self._store.db.executescript(_SCHEMA)

    async def create(self, sub: Subscription) -> None:
        await self._private_change(f"INSERT INTO webhooks({_COLUMNS}) VALUES ({','.join('?' * 15)})", _row(sub))

    async def get(self, sub_id: str) -> Subscription | None:
        rows = await self._rows(f"SELECT {_COLUMNS} FROM webhooks WHERE id = ?", (sub_id,))
        return _sub(rows[0]) if rows else None

    async def all(self) -> list[Subscription]:
        return [_sub(r) for r in await self._rows(f"SELECT {_COLUMNS} FROM webhooks ORDER BY created, id")]

    async def update(self, sub_id: str, changes: dict[str, Any]) -> Subscription | None:
        unknown = set(changes) - _MUTABLE
        if unknown:
            raise ValueError(f"not changeable: {sorted(unknown)}")
        if changes:
            values = {k: (None if v is None else json.dumps(list(v))) if k == "types" else
                      int(v) if k == "enabled" else v for k, v in changes.items()}
            sets = ", ".join(f"{k} = ?" for k in values)
            extra = ", attempts = 0, next_attempt = 0, last_error = NULL" if "cursor" in changes else ""
            await self._private_change(f"UPDATE webhooks SET {sets}{extra} WHERE id = ?", [*values.values(), sub_id])
        return await self.get(sub_id)

    async def delete(self, sub_id: str) -> bool:
        async with self._store._transaction() as db:
            await db.execute("DELETE FROM webhook_dead WHERE sub = ?", (sub_id,))
            async with db.execute("DELETE FROM webhooks WHERE id = ?", (sub_id,)) as cur:
                return cur.rowcount > 0

    async def due(self, now: float, holder: str, limit: int) -> list[Subscription]:
        rows = await self._rows(f"SELECT {_COLUMNS} FROM webhooks WHERE enabled = 1 AND next_attempt <= ? AND {_FREE} "
                                "ORDER BY next_attempt, id LIMIT ?", (now, holder, now, limit))
        return [_sub(r) for r in rows]

    async def claim(self, sub_id: str, holder: str, now: float, until: float) -> Subscription | None:
        changed = await self._change(f"UPDATE webhooks SET holder = ?, lease_until = ? WHERE id = ? AND {_FREE}",
                                     (holder, until, sub_id, holder, now))
        return await self.get(sub_id) if changed else None

    async def renew(self, sub_id: str, holder: str, until: float) -> bool:
        return await self._change("UPDATE webhooks SET lease_until = ? WHERE id = ? AND holder = ?",
                                  (until, sub_id, holder)) > 0

    async def release(self, sub_id: str, holder: str, now: float) -> None:
        await self._change("UPDATE webhooks SET holder = NULL, lease_until = 0, next_attempt = max(next_attempt, ?) "
                           "WHERE id = ? AND holder = ?", (now, sub_id, holder))

    async def advance(self, sub_id: str, holder: str, cursor: str) -> bool:
        return await self._change(
            "UPDATE webhooks SET cursor = ?, attempts = 0, next_attempt = 0, last_error = NULL "
            "WHERE id = ? AND holder = ?", (cursor, sub_id, holder)) > 0

    async def failed(self, sub_id: str, holder: str, attempts: int, next_attempt: float, error: str) -> bool:
        return await self._change(
            "UPDATE webhooks SET attempts = ?, next_attempt = ?, last_error = ? WHERE id = ? AND holder = ?",
            (attempts, next_attempt, error, sub_id, holder)) > 0

    async def dead_letter(self, letter: DeadLetter, holder: str, *, advance: bool) -> bool:
        async with self._store._transaction() as db:
            async with db.execute("SELECT 1 FROM webhooks WHERE id = ? AND holder = ?",
                                  (letter.subscription, holder)) as cur:
                if await cur.fetchone() is None:
                    return False
            await db.execute(
                "INSERT OR REPLACE INTO webhook_dead(sub, position, event, attempts, last_error, failed_at, replay) "
                "VALUES (?, ?, ?, ?, ?, ?, 0)", (letter.subscription, letter.position, json.dumps(letter.event),
                                                 letter.attempts, letter.last_error, letter.failed_at))
            if advance:
                await db.execute("UPDATE webhooks SET cursor = ?, attempts = 0, next_attempt = 0, last_error = ? "
                                 "WHERE id = ?", (letter.position, letter.last_error, letter.subscription))
            else:
                await db.execute("UPDATE webhooks SET attempts = 0, next_attempt = 0 WHERE id = ?",
                                 (letter.subscription,))
            return True

    async def dead_letters(self, sub_id: str, limit: int) -> list[DeadLetter]:
        rows = await self._rows("SELECT sub, position, event, attempts, last_error, failed_at, replay "
                                "FROM webhook_dead WHERE sub = ?", (sub_id,))
        return sorted((_letter(r) for r in rows), key=lambda d: position_key(d.position))[:limit]

    async def replay(self, sub_id: str, positions: Sequence[str] | None) -> int:
        if positions is None:
            return await self._change("UPDATE webhook_dead SET replay = 1 WHERE sub = ?", (sub_id,))
        count = 0
        for position in positions:
            count += await self._change("UPDATE webhook_dead SET replay = 1 WHERE sub = ? AND position = ?",
                                        (sub_id, position))
        return count

    async def next_replay(self, sub_id: str) -> DeadLetter | None:
        rows = await self._rows("SELECT sub, position, event, attempts, last_error, failed_at, replay "
                                "FROM webhook_dead WHERE sub = ? AND replay = 1", (sub_id,))
        letters = sorted((_letter(r) for r in rows), key=lambda d: position_key(d.position))
        return letters[0] if letters else None

    async def replayed(self, sub_id: str, holder: str, position: str) -> bool:
        async with self._store._transaction() as db:
            async with db.execute("SELECT 1 FROM webhooks WHERE id = ? AND holder = ?", (sub_id, holder)) as cur:
                if await cur.fetchone() is None:
                    return False
            await db.execute("DELETE FROM webhook_dead WHERE sub = ? AND position = ?", (sub_id, position))
            await db.execute("UPDATE webhooks SET attempts = 0, next_attempt = 0, last_error = NULL WHERE id = ?",
                             (sub_id,))
            return True
