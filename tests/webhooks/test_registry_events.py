"""The registry's own events through the app to a real receiver, time driven by the injected clock:
writes over the HTTP API while the receiver is down arrive, in order and signed, once it is back;
filters by type and subject."""

from __future__ import annotations

import json
import time
from pathlib import Path

from standardwebhooks.webhooks import Webhook

from gateway.app import create_app, webhook_dispatcher
from tests.http.support import WRITE_KEY, asgi_client, make_settings
from tests.support.clock import ManualClock
from tests.support.live import LiveServer, bound_socket
from tests.support.webhook_receiver import Receiver
from xreg.registry.service import LocalRegistry


async def _drain(dispatcher, turns: int = 20) -> int:
    total = 0
    for _ in range(turns):
        done = await dispatcher.run_once()
        total += done
        if not done:
            break
    return total


async def test_writes_during_an_outage_arrive_in_order_when_the_receiver_is_back(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, webhook_enabled=False, outbound_allow_loopback=True, webhook_admins=["key:writer"],
                             webhook_backoff_seconds=1.0, webhook_max_backoff_seconds=4.0, webhook_max_attempts=50)
    clock = ManualClock(start=time.time())
    registry = LocalRegistry.from_settings(settings)
    dispatcher = webhook_dispatcher(settings, registry, clock=clock.clock)
    app = create_app(settings, registry=registry, webhooks=dispatcher)
    receiver = Receiver()
    sock = bound_socket()  # refused until the receiver starts on it
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    async with app.router.lifespan_context(app), asgi_client(app, WRITE_KEY) as client:
        hooks = app.state.webhooks
        everything, _ = await hooks.create(url=url, owner="t")
        secret_sub, secret = await hooks.create(url=url, owner="t", types=["io.xregistry.group.created"],
                                                subject="/schemagroups/*")
        for n in range(1, 4):
            assert (await client.put(f"/registry/schemagroups/g{n}", json={})).status_code == 201
        assert (await client.put("/registry/messagegroups/m1", json={})).status_code == 201
        assert await dispatcher.run_once() == 0  # the receiver is down
        for _ in range(5):  # still down: the attempts back off, time moves by the clock only
            clock.advance(4.0)
            await dispatcher.run_once()
        assert (await hooks.get(everything.id)).attempts >= 2
        assert (await client.put("/registry/schemagroups/g4", json={})).status_code == 201
        async with LiveServer(receiver.app(), sock=sock):
            clock.advance(4.0)
            await _drain(dispatcher)
        await dispatcher.aclose()
    by_sub: dict[str, list[dict]] = {}
    for r in receiver.delivered():
        by_sub.setdefault(r.subscription, []).append(json.loads(r.body))
    filtered = by_sub[secret_sub.id]
    assert [e["subject"] for e in filtered] == [f"/schemagroups/g{n}" for n in range(1, 5)]
    assert {e["type"] for e in filtered} == {"io.xregistry.group.created"}
    every = by_sub[everything.id]
    positions = [tuple(map(int, e["xregposition"].split("."))) for e in every]
    assert positions == sorted(set(positions))  # each once, in order
    assert {"/schemagroups/g1", "/schemagroups/g4", "/messagegroups/m1", "/"} <= {e["subject"] for e in every}
    assert all(e["source"] == settings.base_url and e["xregcorrelationid"] for e in every)
    for r in receiver.delivered():
        if r.subscription == secret_sub.id:
            Webhook(secret).verify(r.body, r.headers, json_parse=False)
