"""Webhook delivery state on every store (``xreg/storage/webhooks*.py``): leases are
compare-and-set, progress needs the lease, dead letters and replay, nothing but the store holds it."""

from __future__ import annotations

import pytest

from adapters.webhook_admin import webhook_store
from xreg.storage.webhooks import DeadLetter, Subscription, WebhookStore


def _sub(sub_id: str = "s1", **kw) -> Subscription:
    base = dict(id=sub_id, url="https://hooks.example/in", types=("io.xregistry.group.created",), subject="/g/",
                mode="structured", secret="whsec_c2VjcmV0c2VjcmV0c2VjcmV0", owner="key:ops", created=1.0,
                cursor="3.999999999")
    base.update(kw)
    return Subscription(**base)  # type: ignore[arg-type]


@pytest.fixture
async def state(store) -> WebhookStore:
    hooks = webhook_store(store)
    await hooks.open()
    await hooks.open()  # idempotent
    return hooks


async def test_subscriptions_round_trip(state: WebhookStore) -> None:
    await state.create(_sub("a", created=1.0))
    await state.create(_sub("b", created=2.0, types=None, subject=None, mode="binary"))
    got = await state.get("a")
    assert got == _sub("a", created=1.0)
    assert [s.id for s in await state.all()] == ["a", "b"]
    b = await state.get("b")
    assert b is not None and b.types is None and b.subject is None and b.mode == "binary"
    updated = await state.update("a", {"url": "https://other.example/x", "types": None, "enabled": False})
    assert updated is not None and (updated.url, updated.types, updated.enabled) == ("https://other.example/x", None,
                                                                                      False)
    assert await state.get("missing") is None
    assert await state.update("missing", {"enabled": True}) is None
    assert await state.delete("a") is True
    assert await state.delete("a") is False
    assert [s.id for s in await state.all()] == ["b"]


async def test_public_view_never_holds_the_secret(state: WebhookStore) -> None:
    await state.create(_sub())
    got = await state.get("s1")
    assert got is not None
    assert "secret" not in got.public() and got.secret not in repr(got) and got.secret not in str(got.public())


async def test_a_lease_is_held_by_one_holder_until_it_expires(state: WebhookStore) -> None:
    await state.create(_sub())
    assert await state.claim("s1", "A", now=100.0, until=130.0) is not None
    assert await state.claim("s1", "B", now=110.0, until=140.0) is None  # A holds it
    assert [s.id for s in await state.due(110.0, "B", 10)] == []
    assert [s.id for s in await state.due(110.0, "A", 10)] == ["s1"]
    assert await state.claim("s1", "A", now=110.0, until=140.0) is not None  # A extends its own
    assert await state.renew("s1", "B", until=200.0) is False
    assert await state.advance("s1", "B", "4.0") is False  # B cannot move A's cursor
    claimed = await state.claim("s1", "B", now=141.0, until=171.0)  # A's lease expired
    assert claimed is not None and claimed.holder == "B"
    assert await state.renew("s1", "A", until=300.0) is False
    assert await state.advance("s1", "A", "4.0") is False
    await state.release("s1", "A", now=141.0)  # not A's: nothing happens
    assert (await state.get("s1")).holder == "B"  # type: ignore[union-attr]
    await state.release("s1", "B", now=141.5)
    assert await state.claim("s1", "A", now=142.0, until=172.0) is not None


async def test_progress_failures_and_due_times(state: WebhookStore) -> None:
    await state.create(_sub())
    await state.claim("s1", "A", now=10.0, until=40.0)
    assert await state.failed("s1", "A", attempts=2, next_attempt=25.0, error="HTTP 503") is True
    await state.release("s1", "A", now=10.0)  # the failure's next attempt stays
    got = await state.get("s1")
    assert got is not None and (got.attempts, got.next_attempt, got.last_error) == (2, 25.0, "HTTP 503")
    assert await state.due(24.0, "A", 10) == []
    assert [s.id for s in await state.due(25.0, "A", 10)] == ["s1"]
    await state.claim("s1", "A", now=25.0, until=55.0)
    assert await state.advance("s1", "A", "7.1") is True
    got = await state.get("s1")
    assert got is not None and (got.cursor, got.attempts, got.next_attempt, got.last_error) == ("7.1", 0, 0.0, None)
    assert await state.update("s1", {"enabled": False}) is not None
    await state.release("s1", "A", now=26.0)
    assert await state.due(100.0, "A", 10) == []  # disabled


async def test_dead_letters_and_replay(state: WebhookStore) -> None:
    await state.create(_sub())
    await state.claim("s1", "A", now=0.0, until=30.0)
    for position in ("10.0", "9.1", "10.2"):
        letter = DeadLetter(subscription="s1", position=position, event={"id": position}, attempts=3,
                            last_error="HTTP 500", failed_at=1.0)
        assert await state.dead_letter(letter, "A", advance=True) is True
    assert (await state.get("s1")).cursor == "10.2"  # type: ignore[union-attr]
    assert [d.position for d in await state.dead_letters("s1", 10)] == ["9.1", "10.0", "10.2"]
    assert await state.dead_letter(DeadLetter("s1", "11.0", {}, 1, "x", 1.0), "B", advance=True) is False
    assert await state.next_replay("s1") is None
    assert await state.replay("s1", ["10.2", "9.1"]) == 2
    first = await state.next_replay("s1")
    assert first is not None and first.position == "9.1" and first.event == {"id": "9.1"}
    assert await state.replayed("s1", "B", "9.1") is False  # not B's lease
    assert await state.replayed("s1", "A", "9.1") is True
    assert (await state.next_replay("s1")).position == "10.2"  # type: ignore[union-attr]
    # failing again: a dead letter once more, no longer marked, the cursor untouched
    again = DeadLetter("s1", "10.2", {"id": "10.2"}, 3, "HTTP 502", 2.0)
    assert await state.dead_letter(again, "A", advance=False) is True
    assert await state.next_replay("s1") is None
    assert (await state.get("s1")).cursor == "10.2"  # type: ignore[union-attr]
    assert [(d.position, d.last_error) for d in await state.dead_letters("s1", 10)] == [
        ("10.0", "HTTP 500"), ("10.2", "HTTP 502")]
    assert await state.replay("s1", None) == 2
    assert await state.delete("s1") is True
    assert await state.dead_letters("s1", 10) == []


async def test_subscriptions_served_last_come_last(state: WebhookStore) -> None:
    for name in ("a", "b", "c"):
        await state.create(_sub(name))
    assert [s.id for s in await state.due(5.0, "A", 2)] == ["a", "b"]
    for name in ("a", "b"):
        await state.claim(name, "A", now=5.0, until=35.0)
        await state.release(name, "A", now=5.0)
    assert [s.id for s in await state.due(5.0, "A", 2)] == ["c", "a"]  # in rotation
