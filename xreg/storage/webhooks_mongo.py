"""Webhook subscriptions and delivery state in the MongoDB store's database.

Collections: ``webhooks`` (one document per subscription, ``_id`` its id, fields as
:class:`~xreg.storage.webhooks.Subscription`) and ``webhook_dead`` (``_id`` =
``"<subscription> <position>"``). A lease is taken by ``update_one`` with the lease condition in
its filter (an atomic compare-and-set on one document), so replicas sharing the database never
deliver one subscription at the same time. A dead letter is written before the cursor moves
past it: a crash between the two delivers the event again (at least once) and rewrites the
same dead letter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from xreg.storage.mongo import MongoStore
from xreg.storage.webhooks import DeadLetter, Subscription, WebhookStore, position_key

_MUTABLE = {"url", "types", "subject", "mode", "enabled", "cursor"}


def _free(holder: str, now: float) -> dict[str, Any]:
    return {"$or": [{"holder": None}, {"holder": holder}, {"lease_until": {"$lt": now}}]}


def _doc(sub: Subscription) -> dict[str, Any]:
    doc = asdict(sub)
    doc["_id"] = doc.pop("id")
    doc["types"] = None if sub.types is None else list(sub.types)
    return doc


def _sub(doc: dict[str, Any]) -> Subscription:
    fields = {k: v for k, v in doc.items() if k != "_id"}
    types = fields.pop("types", None)
    return Subscription(id=doc["_id"], types=None if types is None else tuple(types), **fields)


def _letter(doc: dict[str, Any]) -> DeadLetter:
    return DeadLetter(subscription=doc["sub"], position=doc["position"], event=doc["event"],
                      attempts=doc["attempts"], last_error=doc["last_error"], failed_at=doc["failed_at"],
                      replay=bool(doc.get("replay")))


class MongoWebhookStore(WebhookStore):
    """:class:`WebhookStore` in the database of an opened :class:`MongoStore` (see the module doc)."""

    def __init__(self, store: MongoStore) -> None:
        db = store._db
        self.subs = db["webhooks"]
        self.dead = db["webhook_dead"]

    async def open(self) -> None:
        await self.subs.create_index([("enabled", 1), ("next_attempt", 1)], name="webhooks_due")
        await self.dead.create_index([("sub", 1), ("replay", 1)], name="webhook_dead_sub")

    async def create(self, sub: Subscription) -> None:
        await self.subs.insert_one(_doc(sub))

    async def get(self, sub_id: str) -> Subscription | None:
        doc = await self.subs.find_one({"_id": sub_id})
        return _sub(doc) if doc else None

    async def all(self) -> list[Subscription]:
        return [_sub(d) async for d in self.subs.find({}).sort([("created", 1), ("_id", 1)])]

    async def update(self, sub_id: str, changes: dict[str, Any]) -> Subscription | None:
        unknown = set(changes) - _MUTABLE
        if unknown:
            raise ValueError(f"not changeable: {sorted(unknown)}")
        if changes:
            values = {k: (None if v is None else list(v)) if k == "types" else v for k, v in changes.items()}
            if "cursor" in changes:
                values.update(attempts=0, next_attempt=0.0, last_error=None)
            await self.subs.update_one({"_id": sub_id}, {"$set": values})
        return await self.get(sub_id)

    async def delete(self, sub_id: str) -> bool:
        await self.dead.delete_many({"sub": sub_id})
        return (await self.subs.delete_one({"_id": sub_id})).deleted_count > 0

    async def due(self, now: float, holder: str, limit: int) -> list[Subscription]:
        flt = {"enabled": True, "next_attempt": {"$lte": now}, **_free(holder, now)}
        cursor = self.subs.find(flt).sort([("next_attempt", 1), ("_id", 1)]).limit(limit)
        return [_sub(d) async for d in cursor]

    async def claim(self, sub_id: str, holder: str, now: float, until: float) -> Subscription | None:
        result = await self.subs.update_one({"_id": sub_id, **_free(holder, now)},
                                            {"$set": {"holder": holder, "lease_until": until}})
        return await self.get(sub_id) if result.matched_count else None

    async def _ours(self, sub_id: str, holder: str, values: dict[str, Any]) -> bool:
        result = await self.subs.update_one({"_id": sub_id, "holder": holder}, {"$set": values})
        return result.matched_count > 0

    async def renew(self, sub_id: str, holder: str, until: float) -> bool:
        return await self._ours(sub_id, holder, {"lease_until": until})

    async def release(self, sub_id: str, holder: str, now: float) -> None:
        await self.subs.update_one({"_id": sub_id, "holder": holder},
                                   {"$set": {"holder": None, "lease_until": 0.0}, "$max": {"next_attempt": now}})

    async def advance(self, sub_id: str, holder: str, cursor: str) -> bool:
        return await self._ours(sub_id, holder, {"cursor": cursor, "attempts": 0, "next_attempt": 0.0,
                                                 "last_error": None})

    async def failed(self, sub_id: str, holder: str, attempts: int, next_attempt: float, error: str) -> bool:
        return await self._ours(sub_id, holder, {"attempts": attempts, "next_attempt": next_attempt,
                                                 "last_error": error})

    async def dead_letter(self, letter: DeadLetter, holder: str, *, advance: bool) -> bool:
        if await self.subs.find_one({"_id": letter.subscription, "holder": holder}, {"_id": 1}) is None:
            return False
        doc = {"sub": letter.subscription, "position": letter.position, "event": letter.event,
               "attempts": letter.attempts, "last_error": letter.last_error, "failed_at": letter.failed_at,
               "replay": False}
        await self.dead.replace_one({"_id": f"{letter.subscription} {letter.position}"}, doc, upsert=True)
        values: dict[str, Any] = {"attempts": 0, "next_attempt": 0.0}
        if advance:
            values.update(cursor=letter.position, last_error=letter.last_error)
        return await self._ours(letter.subscription, holder, values)

    async def dead_letters(self, sub_id: str, limit: int) -> list[DeadLetter]:
        letters = [_letter(d) async for d in self.dead.find({"sub": sub_id})]
        return sorted(letters, key=lambda d: position_key(d.position))[:limit]

    async def replay(self, sub_id: str, positions: Sequence[str] | None) -> int:
        flt: dict[str, Any] = {"sub": sub_id}
        if positions is not None:
            flt["position"] = {"$in": list(positions)}
        return (await self.dead.update_many(flt, {"$set": {"replay": True}})).matched_count

    async def next_replay(self, sub_id: str) -> DeadLetter | None:
        letters = [_letter(d) async for d in self.dead.find({"sub": sub_id, "replay": True})]
        return min(letters, key=lambda d: position_key(d.position)) if letters else None

    async def replayed(self, sub_id: str, holder: str, position: str) -> bool:
        if await self.subs.find_one({"_id": sub_id, "holder": holder}, {"_id": 1}) is None:
            return False
        await self.dead.delete_one({"_id": f"{sub_id} {position}"})
        return await self._ours(sub_id, holder, {"attempts": 0, "next_attempt": 0.0, "last_error": None})
