"""Webhook subscriptions in GraphQL: the queries and mutations that manage them.

Every field needs the ``write`` scope and the webhook administration scope
(``webhook_admin_scope``) or an identity listed in ``webhook_admins``. The signing secret is
returned by ``createWebhookSubscription`` only; no other field exposes it.
"""

from __future__ import annotations

from enum import Enum

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from adapters.webhook_admin import Webhooks
from xreg.errors import XRegistryError
from xreg.storage.webhooks import DeadLetter, Subscription


@strawberry.enum(description="How an event is carried (CloudEvents HTTP binding).")
class WebhookContentMode(Enum):
    STRUCTURED = "structured"
    BINARY = "binary"


@strawberry.type(description="A webhook subscription and its delivery state (never its secret).")
class WebhookSubscription:
    id: strawberry.ID
    url: str
    types: list[str] | None = strawberry.field(description="CloudEvent types sent (null: all).")
    subject: str | None = strawberry.field(description="An XID, or a prefix ending in '/' or '*' (null: all).")
    mode: WebhookContentMode
    enabled: bool
    owner: str = strawberry.field(description="Who created it.")
    created: float = strawberry.field(description="When it was created (Unix seconds).")
    cursor: str | None = strawberry.field(description="Position of the last event delivered or dead-lettered.")
    attempts: int = strawberry.field(description="Failed attempts at the next event.")
    next_attempt: float = strawberry.field(description="When the next attempt is due (Unix seconds; 0: now).")
    last_error: str | None


@strawberry.type(description="A new subscription and its signing secret, shown this once.")
class CreatedWebhookSubscription:
    subscription: WebhookSubscription
    secret: str = strawberry.field(description="The Standard Webhooks signing secret (whsec_…); keep it, it is "
                                               "never shown again.")


@strawberry.type(description="An event that failed every delivery attempt.")
class WebhookDeadLetter:
    position: str
    event: JSON = strawberry.field(description="The structured CloudEvent as sent.")
    attempts: int
    last_error: str
    failed_at: float
    replay: bool = strawberry.field(description="Marked for another delivery.")


def _sub(s: Subscription) -> WebhookSubscription:
    return WebhookSubscription(
        id=strawberry.ID(s.id), url=s.url, types=list(s.types) if s.types is not None else None, subject=s.subject,
        mode=WebhookContentMode(s.mode), enabled=s.enabled, owner=s.owner, created=s.created, cursor=s.cursor,
        attempts=s.attempts, next_attempt=s.next_attempt, last_error=s.last_error)


def _letter(d: DeadLetter) -> WebhookDeadLetter:
    return WebhookDeadLetter(position=d.position, event=d.event, attempts=d.attempts, last_error=d.last_error,  # type: ignore[arg-type]
                             failed_at=d.failed_at, replay=d.replay)


def _webhooks(info: Info) -> Webhooks:
    context = info.context
    settings = context.settings
    context.require("write")  # the anonymous caller: 401
    if context.auth is not None and context.principal is not None:
        context.auth.require_admin(context.principal, settings.webhook_admin_scope, settings.webhook_admins)
    hooks = getattr(context, "webhooks", None)
    if hooks is None:
        raise XRegistryError("api_not_found", "/webhooks", detail="webhooks are not served here")
    return hooks


@strawberry.type
class WebhookQueries:
    @strawberry.field(description="Every webhook subscription.")
    async def webhook_subscriptions(self, info: Info) -> list[WebhookSubscription]:
        return [_sub(s) for s in await _webhooks(info).all()]

    @strawberry.field(description="One webhook subscription.")
    async def webhook_subscription(self, info: Info, id: strawberry.ID) -> WebhookSubscription:
        return _sub(await _webhooks(info).get(str(id)))

    @strawberry.field(description="A subscription's dead letters, oldest first.")
    async def webhook_dead_letters(self, info: Info, id: strawberry.ID, limit: int = 100) -> list[WebhookDeadLetter]:
        return [_letter(d) for d in await _webhooks(info).dead_letters(str(id), limit)]


@strawberry.type
class WebhookMutations:
    @strawberry.mutation(description="Subscribe a URL to registry events; the answer holds the signing secret.")
    async def create_webhook_subscription(
        self, info: Info, url: str, types: list[str] | None = None, subject: str | None = None,
        mode: WebhookContentMode = WebhookContentMode.STRUCTURED, after: str | None = None,
    ) -> CreatedWebhookSubscription:
        hooks = _webhooks(info)
        principal = info.context.principal
        owner = principal.identity if principal is not None else "anonymous"
        sub, secret = await hooks.create(url=url, types=types, subject=subject, mode=mode.value, after=after,
                                         owner=owner)
        return CreatedWebhookSubscription(subscription=_sub(sub), secret=secret)

    @strawberry.mutation(description="Change a subscription; `after` restarts delivery after that position.")
    async def update_webhook_subscription(
        self, info: Info, id: strawberry.ID, url: str | None = None, types: list[str] | None = None,
        subject: str | None = None, mode: WebhookContentMode | None = None, enabled: bool | None = None,
        after: str | None = None,
    ) -> WebhookSubscription:
        given = {"url": url, "types": types, "subject": subject, "mode": mode.value if mode else None,
                 "enabled": enabled, "after": after}
        return _sub(await _webhooks(info).update(str(id), {k: v for k, v in given.items() if v is not None}))

    @strawberry.mutation(description="Remove a subscription and its dead letters.")
    async def delete_webhook_subscription(self, info: Info, id: strawberry.ID) -> bool:
        await _webhooks(info).delete(str(id))
        return True

    @strawberry.mutation(description="Deliver dead letters again (all, or those at `positions`); how many.")
    async def replay_webhook_dead_letters(
        self, info: Info, id: strawberry.ID, positions: list[str] | None = None,
    ) -> int:
        return await _webhooks(info).replay(str(id), positions)
