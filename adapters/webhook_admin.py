"""Managing webhook subscriptions: what the GraphQL mutations and the HTTP route call.

:class:`Webhooks` checks what a caller asks (target URL under the outbound rules of
:mod:`adapters.outbound`, type and subject filters, content mode), mints the per-subscription
secret (Standard Webhooks' ``whsec_`` + base64 of 24 random bytes), and returns views without it:
the secret is in the answer to :meth:`Webhooks.create` only, never in a later read, a log line or
an error. A new subscription starts after the newest committed revision (events already stored
are not sent), or after ``after`` when given (a position of the retained event log).
"""

from __future__ import annotations

import base64
import logging
import re
import secrets
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from adapters.outbound import OutboundPolicy, OutboundRefused, Resolver, system_resolver
from xreg.errors import XRegistryError
from xreg.events import EventPosition
from xreg.storage.base import Store
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore
from xreg.storage.webhooks import DeadLetter, Subscription, WebhookStore, position_key
from xreg.storage.webhooks_mongo import MongoWebhookStore
from xreg.storage.webhooks_sqlite import SQLiteWebhookStore

log = logging.getLogger("xreg.webhooks")

MODES = ("structured", "binary")
_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
MAX_URL = 2048
MAX_TYPES = 50
SUBJECT_MAX = 1024


def webhook_store(store: Store) -> WebhookStore:
    """The webhook state kept beside ``store`` (its connection or database)."""
    if isinstance(store, SQLiteStore):
        return SQLiteWebhookStore(store)
    if isinstance(store, MongoStore):
        return MongoWebhookStore(store)
    raise TypeError(f"no webhook state for {type(store).__name__}")


def new_secret() -> str:
    """A Standard Webhooks signing secret: ``whsec_`` and 24 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def _bad(subject: str, detail: str) -> XRegistryError:
    return XRegistryError("bad_request", subject, detail=detail)


def check_types(types: Any) -> tuple[str, ...] | None:
    """The type filter (``None``: every type); ``bad_request`` when malformed."""
    if types is None:
        return None
    if not isinstance(types, (list, tuple)) or len(types) > MAX_TYPES or not all(
            isinstance(t, str) and _TYPE.match(t) for t in types):
        raise _bad("/webhooks", f"types must be a list of at most {MAX_TYPES} CloudEvent type names")
    return tuple(dict.fromkeys(types))


def check_subject(subject: Any) -> str | None:
    """The subject filter: an XID, or a prefix ending in ``/`` or ``*`` (``None``: all)."""
    if subject is None or subject == "":
        return None
    if not isinstance(subject, str) or not subject.startswith("/") or len(subject) > SUBJECT_MAX:
        raise _bad("/webhooks", "subject must be an XID or an XID prefix ending in '/' or '*'")
    return subject


def check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise _bad("/webhooks", "mode must be 'structured' or 'binary'")
    return str(mode)


def check_position(text: Any) -> str:
    """An event position's text (``<revision>.<index>``); ``bad_request`` otherwise."""
    if not isinstance(text, str):
        raise _bad("/webhooks", f"{text!r} is not an event position (<revision>.<index>)")
    return str(EventPosition.parse(text))


class Webhooks:
    """Subscriptions of one store, managed under the outbound rules (see the module doc)."""

    def __init__(self, store: Store, policy: OutboundPolicy, *, state: WebhookStore | None = None,
                 clock: Callable[[], float], resolve: Resolver = system_resolver,
                 wake: Callable[[], None] | None = None) -> None:
        self.store = store
        self.state = state or webhook_store(store)
        self.policy = policy
        self._clock = clock
        self._resolve = resolve
        #: Called after a change that may make delivery due (the dispatcher sets it to its wake-up).
        self.on_change: Callable[[], None] = wake or (lambda: None)

    async def open(self) -> None:
        await self.state.open()

    async def _check_url(self, url: Any) -> str:
        if not isinstance(url, str) or len(url) > MAX_URL:
            raise _bad("/webhooks", f"url must be a string of at most {MAX_URL} characters")
        try:
            await self.policy.check(url, self._resolve)
        except OutboundRefused as exc:
            raise _bad("/webhooks", str(exc)) from None
        return url

    async def create(self, *, url: Any, types: Any = None, subject: Any = None, mode: Any = "structured",
                     owner: str, after: Any = None) -> tuple[Subscription, str]:
        """A new subscription and its secret (the only time the secret is given out)."""
        target = await self._check_url(url)
        if after is not None:
            cursor = check_position(after)
        else:
            cursor = str(EventPosition.end_of(await self.store.current_revision()))
        secret = new_secret()
        sub = Subscription(id=str(uuid.uuid4()), url=target, types=check_types(types), subject=check_subject(subject),
                           mode=check_mode(mode), secret=secret, owner=owner, created=self._clock(), cursor=cursor)  # type: ignore[arg-type]
        await self.state.create(sub)
        log.info("webhook subscription %s created by %s for %s", sub.id, owner, _host(target))
        self.on_change()
        return sub, secret

    async def get(self, sub_id: str) -> Subscription:
        sub = await self.state.get(sub_id)
        if sub is None:
            raise XRegistryError("not_found", f"/webhooks/{sub_id}", detail=f"no webhook subscription {sub_id!r}")
        return sub

    async def all(self) -> list[Subscription]:
        return await self.state.all()

    async def update(self, sub_id: str, changes: dict[str, Any]) -> Subscription:
        """Change ``url``, ``types``, ``subject``, ``mode``, ``enabled`` or restart ``after`` a position."""
        await self.get(sub_id)
        values: dict[str, Any] = {}
        for key, value in changes.items():
            if key == "url":
                values["url"] = await self._check_url(value)
            elif key == "types":
                values["types"] = check_types(value)
            elif key == "subject":
                values["subject"] = check_subject(value)
            elif key == "mode":
                values["mode"] = check_mode(value)
            elif key == "enabled":
                if not isinstance(value, bool):
                    raise _bad(f"/webhooks/{sub_id}", "enabled must be true or false")
                values["enabled"] = value
            elif key == "after":
                values["cursor"] = check_position(value)
            else:
                raise _bad(f"/webhooks/{sub_id}", f"{key!r} cannot be changed (url, types, subject, mode, enabled, "
                                                   "after)")
        updated = await self.state.update(sub_id, values)
        if updated is None:
            raise XRegistryError("not_found", f"/webhooks/{sub_id}", detail=f"no webhook subscription {sub_id!r}")
        self.on_change()
        return updated

    async def delete(self, sub_id: str) -> None:
        if not await self.state.delete(sub_id):
            raise XRegistryError("not_found", f"/webhooks/{sub_id}", detail=f"no webhook subscription {sub_id!r}")

    async def dead_letters(self, sub_id: str, limit: int = 100) -> list[DeadLetter]:
        await self.get(sub_id)
        return await self.state.dead_letters(sub_id, max(1, min(limit, 1000)))

    async def replay(self, sub_id: str, positions: Sequence[str] | None = None) -> int:
        """Deliver dead letters again (all, or those at ``positions``), oldest first."""
        await self.get(sub_id)
        wanted = None if positions is None else sorted({check_position(p) for p in positions}, key=position_key)
        count = await self.state.replay(sub_id, wanted)
        self.on_change()
        return count


def _host(url: str) -> str:
    """The part of a target URL fit for a log line (its query may carry a token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def public_view(sub: Subscription) -> dict[str, Any]:
    """A subscription as clients read it (no secret)."""
    return sub.public()
