"""Webhook delivery against a real HTTP receiver on 127.0.0.1, time driven by an injected clock:
signatures, content modes, order and completeness across an outage, back-off, dead letters and
replay, leases between two dispatchers on one SQLite file, the outbound rules, secrets kept out of
logs."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mongomock_motor import AsyncMongoMockClient
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from adapters.outbound import OutboundPolicy
from adapters.webhook_admin import Webhooks
from adapters.webhook_delivery import DeliveryConfig, WebhookDispatcher, backoff
from tests.support.clock import ManualClock
from tests.support.live import LiveServer, bound_socket
from tests.support.webhook_receiver import Receiver
from xreg.errors import XRegistryError
from xreg.storage.base import Store
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore
from xreg.storage.webhooks import position_key

LOOPBACK = OutboundPolicy(allow_loopback=True)
CONFIG = DeliveryConfig(max_attempts=4, backoff_seconds=1.0, max_backoff_seconds=8.0, timeout_seconds=5.0,
                        lease_seconds=30.0, batch=50)


@dataclass(frozen=True)
class FakeEvent:
    """Stands for ``xreg.events.RegistryEvent`` (position text, type, subject)."""

    pos: str
    type: str = "io.xregistry.group.created"
    subject: str = "/schemagroups/g1"

    @property
    def position(self) -> str:
        return self.pos

    def to_cloudevent(self, source: str) -> dict[str, Any]:
        return {"specversion": "1.0", "id": f"inst.{self.pos}", "type": self.type, "source": source,
                "subject": self.subject, "time": "2026-11-27T12:00:00Z", "datacontenttype": "application/json",
                "xregcorrelationid": "c-" + self.pos, "data": {"changed": ["name"]}}


class Log:
    """The event log the dispatcher reads (filters applied as the store would)."""

    def __init__(self) -> None:
        self.events: list[FakeEvent] = []

    def add(self, *positions: str) -> None:
        self.events.extend(FakeEvent(p) for p in positions)

    async def read(self, after: str | None, limit: int, types: Any, subject: str | None) -> list[FakeEvent]:
        return [e for e in self.events if position_key(e.pos) > position_key(after)
                and (types is None or e.type in types)
                and (subject is None or e.subject.startswith(subject.rstrip("*")))][:limit]


@pytest.fixture(params=["sqlite", "mongomock"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    """The delivery state on both stores (MongoDB: mongomock-motor)."""
    if request.param == "sqlite":
        async with SQLiteStore(tmp_path / "hooks.db") as s:
            yield s
        return
    async with MongoStore(client=AsyncMongoMockClient(), database=f"hooks_{uuid.uuid4().hex[:10]}") as m:
        yield m


def _parts(store: Store, log: Log, clock: ManualClock, *, holder: str = "p1",
           policy: OutboundPolicy = LOOPBACK) -> tuple[Webhooks, WebhookDispatcher]:
    hooks = Webhooks(store, policy, clock=clock.clock.wall)
    dispatcher = WebhookDispatcher(hooks, log.read, source="http://gw.test/registry", config=CONFIG, policy=policy,
                                   clock=clock.clock, rng=random.Random(7), holder=holder)
    return hooks, dispatcher


async def _drain(dispatcher: WebhookDispatcher, turns: int = 20) -> int:
    total = 0
    for _ in range(turns):  # counted turns, no waiting
        done = await dispatcher.run_once()
        total += done
        if not done:
            break
    return total


async def test_signatures_verify_and_both_content_modes(store: Store) -> None:
    receiver, log, clock = Receiver(), Log(), ManualClock(start=time.time())  # signatures carry a recent time
    async with LiveServer(receiver.app()) as live:
        hooks, dispatcher = _parts(store, log, clock)
        await hooks.open()
        structured, secret_s = await hooks.create(url=live.url + "/hook", owner="t", after="0.0")
        binary, secret_b = await hooks.create(url=live.url + "/hook", owner="t", mode="binary", after="0.0")
        log.add("1.0", "1.1")
        assert await _drain(dispatcher) == 4
        await dispatcher.aclose()
    got = receiver.delivered()
    assert len(got) == 4
    for r in got:
        secret = secret_s if r.subscription == structured.id else secret_b
        Webhook(secret).verify(r.body, r.headers, json_parse=False)  # raises when it does not verify
        other = secret_b if secret == secret_s else secret_s
        with pytest.raises(WebhookVerificationError):
            Webhook(other).verify(r.body, r.headers, json_parse=False)
    s = [r for r in got if r.subscription == structured.id]
    assert s[0].headers["content-type"] == "application/cloudevents+json"
    envelope = json.loads(s[0].body)
    assert (envelope["id"], envelope["xregposition"], envelope["data"]) == ("inst.1.0", "1.0", {"changed": ["name"]})
    assert envelope["source"] == "http://gw.test/registry" and envelope["specversion"] == "1.0"
    b = [r for r in got if r.subscription == binary.id]
    assert b[0].headers["ce-id"] == "inst.1.0" and b[0].headers["ce-type"] == "io.xregistry.group.created"
    assert b[0].headers["content-type"] == "application/json" and json.loads(b[0].body) == {"changed": ["name"]}
    assert b[0].headers["webhook-id"] == f"{binary.id}.inst.1.0"


async def test_receiver_down_then_back_gets_every_event_in_order(store: Store) -> None:
    receiver, log, clock = Receiver(), Log(), ManualClock()
    sock = bound_socket()  # bound, not listening: connections are refused until the server starts
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    hooks, dispatcher = _parts(store, log, clock)
    await hooks.open()
    sub, _ = await hooks.create(url=url, owner="t", after="0.0")
    log.add("1.0", "2.0", "2.1", "3.0")
    assert await dispatcher.run_once() == 0
    state = await hooks.get(sub.id)
    assert state.attempts == 1 and state.last_error and "Connect" in state.last_error
    assert state.next_attempt > clock.now  # backing off
    assert await dispatcher.run_once() == 0  # not due yet: nothing is attempted
    assert (await hooks.get(sub.id)).attempts == 1
    clock.advance(CONFIG.backoff_seconds)  # the first delay is at most backoff_seconds
    assert await dispatcher.run_once() == 0
    assert (await hooks.get(sub.id)).attempts == 2
    log.add("4.0")  # written while the receiver is down
    async with LiveServer(receiver.app(), sock=sock):
        clock.advance(CONFIG.backoff_seconds * 2)
        assert await _drain(dispatcher) == 5
        await dispatcher.aclose()
    order = [json.loads(r.body)["xregposition"] for r in receiver.delivered()]
    assert order == ["1.0", "2.0", "2.1", "3.0", "4.0"]
    state = await hooks.get(sub.id)
    assert (state.cursor, state.attempts, state.last_error, state.holder) == ("4.0", 0, None, None)


async def test_back_off_grows_with_jitter_and_a_cap() -> None:
    rng = random.Random(1)
    delays = [backoff(n, 1.0, 8.0, rng) for n in range(1, 8) for _ in range(50)]
    assert all(0 <= d <= 8.0 for d in delays)
    first = [backoff(1, 1.0, 8.0, random.Random(i)) for i in range(50)]
    later = [backoff(4, 1.0, 8.0, random.Random(i)) for i in range(50)]
    assert max(first) <= 1.0 < max(later) and len(set(first)) > 40  # jittered, growing


async def test_dead_letter_after_max_attempts_then_replay(store: Store) -> None:
    failing = {"2.0"}

    def status(r) -> int:
        return 500 if json.loads(r.body)["xregposition"] in failing else 204

    receiver, log, clock = Receiver(status=status), Log(), ManualClock()
    async with LiveServer(receiver.app()) as live:
        hooks, dispatcher = _parts(store, log, clock)
        await hooks.open()
        sub, _ = await hooks.create(url=live.url + "/hook", owner="t", after="0.0")
        log.add("1.0", "2.0", "3.0")
        for _ in range(CONFIG.max_attempts):
            await dispatcher.run_once()
            clock.advance(CONFIG.max_backoff_seconds)
        await _drain(dispatcher)
        letters = await hooks.dead_letters(sub.id)
        assert [(d.position, d.attempts, d.last_error) for d in letters] == [("2.0", 4, "HTTP 500")]
        assert letters[0].event["id"] == "inst.2.0"
        assert [json.loads(r.body)["xregposition"] for r in receiver.delivered()] == ["1.0", "3.0"]
        assert (await hooks.get(sub.id)).cursor == "3.0"
        failing.clear()
        assert await hooks.replay(sub.id) == 1
        assert await _drain(dispatcher) == 1
        await dispatcher.aclose()
    assert [json.loads(r.body)["xregposition"] for r in receiver.delivered()] == ["1.0", "3.0", "2.0"]
    assert await hooks.dead_letters(sub.id) == []
    attempts_at_2 = [r for r in receiver.received if json.loads(r.body)["xregposition"] == "2.0"]
    assert len(attempts_at_2) == CONFIG.max_attempts + 1
    assert len({r.headers["webhook-id"] for r in attempts_at_2}) == 1  # one message id across retries


async def test_two_dispatchers_on_one_store_never_overlap(tmp_path: Path) -> None:
    release = asyncio.Event()
    receiver, log, clock = Receiver(), Log(), ManualClock()
    log.add(*[f"{n}.0" for n in range(1, 31)])
    async with SQLiteStore(tmp_path / "shared.db") as one, SQLiteStore(tmp_path / "shared.db") as two, \
            LiveServer(receiver.app()) as live:
        hooks_a, a = _parts(one, log, clock, holder="A")
        _, b = _parts(two, log, clock, holder="B")
        await hooks_a.open()
        subs = [(await hooks_a.create(url=live.url + "/hook", owner="t", after="0.0"))[0] for _ in range(3)]

        async def turns(d: WebhookDispatcher) -> int:
            await release.wait()
            return sum([await d.run_once() for _ in range(40)])

        ta, tb = asyncio.create_task(turns(a)), asyncio.create_task(turns(b))
        release.set()
        done_a, done_b = await asyncio.gather(ta, tb)
        await a.aclose()
        await b.aclose()
    assert done_a + done_b == 90
    assert receiver.max_overlap == 1
    for sub in subs:
        got = [json.loads(r.body)["xregposition"] for r in receiver.delivered() if r.subscription == sub.id]
        assert got == [f"{n}.0" for n in range(1, 31)]  # each once, in order


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data", "http://[fe80::1]/x", "http://127.0.0.1:9/hook",
    "http://localhost/hook", "http://[::1]/hook", "http://0.0.0.0/hook", "http://[::ffff:127.0.0.1]/x",
    "ftp://example.com/x", "http://user:pw@example.com/x",
])
async def test_refused_targets(store: Store, url: str) -> None:
    hooks = Webhooks(store, OutboundPolicy(), clock=lambda: 0.0)
    await hooks.open()
    with pytest.raises(XRegistryError) as caught:
        await hooks.create(url=url, owner="t")
    assert caught.value.code == "bad_request"
    assert await hooks.all() == []


async def test_names_resolving_to_link_local_are_refused(store: Store) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "169.254.169.254"]

    hooks = Webhooks(store, OutboundPolicy(), clock=lambda: 0.0, resolve=resolve)
    await hooks.open()
    with pytest.raises(XRegistryError, match="link-local"):
        await hooks.create(url="https://rebind.example/hook", owner="t")


async def test_loopback_is_allowed_only_by_configuration(store: Store) -> None:
    hooks = Webhooks(store, OutboundPolicy(allow_loopback=True), clock=lambda: 0.0)
    await hooks.open()
    sub, _ = await hooks.create(url="http://127.0.0.1:9/hook", owner="t")
    assert sub.url == "http://127.0.0.1:9/hook"


async def test_a_target_refused_later_is_not_contacted(store: Store) -> None:
    receiver, log, clock = Receiver(), Log(), ManualClock()
    async with LiveServer(receiver.app()) as live:
        hooks, _ = _parts(store, log, clock)
        await hooks.open()
        await hooks.create(url=live.url + "/hook", owner="t", after="0.0")
        _, strict = _parts(store, log, clock, policy=OutboundPolicy())  # the configuration changed
        log.add("1.0")
        assert await strict.run_once() == 0
        await strict.aclose()
    assert receiver.received == []
    (sub,) = await hooks.all()
    assert sub.last_error and "loopback" in sub.last_error


async def test_secrets_stay_out_of_logs_and_reads(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    receiver, log, clock = Receiver(status=lambda r: 503), Log(), ManualClock()
    async with LiveServer(receiver.app()) as live:
        hooks, dispatcher = _parts(store, log, clock)
        await hooks.open()
        sub, secret = await hooks.create(url=live.url + "/hook?token=abc", owner="t", after="0.0")
        log.add("1.0")
        for _ in range(CONFIG.max_attempts):
            await dispatcher.run_once()
            clock.advance(CONFIG.max_backoff_seconds)
        await dispatcher.aclose()
    assert secret.startswith("whsec_") and len(secret) > 30
    assert len(receiver.received) == CONFIG.max_attempts
    assert secret not in caplog.text and secret.removeprefix("whsec_") not in caplog.text
    # the gateway's own lines name the target by its origin only (its query may hold a token)
    assert not [r for r in caplog.records if r.name.startswith("xreg") and "token=abc" in r.getMessage()]
    reads = [s.public() for s in await hooks.all()] + [(await hooks.get(sub.id)).public()]
    reads += [d.__dict__ for d in await hooks.dead_letters(sub.id)]
    assert secret not in json.dumps(reads) and "secret" not in json.dumps(reads)


async def test_a_receiver_that_never_answers_fails_the_attempt_within_the_deadline(store: Store) -> None:
    receiver, log, clock = Receiver(), Log(), ManualClock()
    receiver.hold()  # every request is kept open
    async with LiveServer(receiver.app()) as live:
        hooks = Webhooks(store, LOOPBACK, clock=clock.clock.wall)
        config = DeliveryConfig(timeout_seconds=0.2, lease_seconds=30.0, max_attempts=3)
        dispatcher = WebhookDispatcher(hooks, log.read, source="http://gw.test/registry", config=config,
                                       policy=LOOPBACK, clock=clock.clock, rng=random.Random(1), holder="p1")
        await hooks.open()
        sub, _ = await hooks.create(url=live.url + "/hook", owner="t", after="0.0")
        log.add("1.0")
        assert await dispatcher.run_once() == 0
        state = await hooks.get(sub.id)
        assert state.attempts == 1 and state.last_error == "no answer within 0.2s" and state.holder is None
        receiver.release()
        await dispatcher.aclose()
