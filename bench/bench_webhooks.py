"""Webhook delivery throughput: events per second the gateway's dispatcher delivers to a local
receiver, against a baseline of plain ``httpx`` POSTs of the same bodies in the same run.

The receiver (uvicorn answering 204) runs in a process of its own on 127.0.0.1. The dispatcher
keeps its state in an SQLite store in a temporary directory and reads the events from an
in-memory log (what the store's event log would give it), so the figure is the cost of delivery
itself: building the CloudEvent (``cloudevents`` SDK), signing it (``standardwebhooks``), the
outbound check, the POST, and moving the cursor in the store after every acknowledgement (one
transaction per event: the price of at-least-once). The baseline POSTs the very same bodies
with one ``httpx.AsyncClient``, one request at a time per subscription, subscriptions in parallel.

``--smoke``: 2 subscriptions × 40 events.

Usage: python bench/bench_webhooks.py [--subscriptions 4] [--events 1000] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from adapters.clock import SYSTEM_CLOCK  # noqa: E402
from adapters.outbound import OutboundPolicy  # noqa: E402
from adapters.webhook_admin import Webhooks  # noqa: E402
from adapters.webhook_delivery import DeliveryConfig, WebhookDispatcher, envelope, sign  # noqa: E402
from xreg.storage.sqlite import SQLiteStore  # noqa: E402
from xreg.storage.webhooks import position_key  # noqa: E402

RECEIVER = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


class Event:
    def __init__(self, n: int) -> None:
        self.position = f"{n}.0"
        self.n = n

    def to_cloudevent(self, source: str) -> dict[str, Any]:
        return {"specversion": "1.0", "id": f"bench.{self.n}.0", "type": "io.xregistry.version.created",
                "source": source, "subject": f"/schemagroups/g/schemas/s{self.n % 50}/versions/{self.n}",
                "time": "2026-11-27T12:00:00Z", "datacontenttype": "application/json",
                "xregcorrelationid": f"c{self.n}", "data": {"changed": ["name", "description", "epoch"]}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.post(url, content=b"{}", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise SystemExit("the receiver did not start")


async def baseline(url: str, events: list[Event], subs: int, source: str) -> float:
    bodies = [envelope({**e.to_cloudevent(source), "xregposition": e.position}, "structured") for e in events]
    async with httpx.AsyncClient(trust_env=False) as client:
        async def one() -> None:
            for headers, body in bodies:
                response = await client.post(url, content=body, headers=headers)
                assert response.status_code == 204
        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(subs)))
        return time.perf_counter() - start


async def dispatcher_run(url: str, events: list[Event], subs: int, source: str, tmp: Path) -> tuple[float, int]:
    async def read(after: str | None, limit: int, types: Any, subject: Any) -> list[Event]:
        key = position_key(after)
        return [e for e in events if position_key(e.position) > key][:limit]

    policy = OutboundPolicy(allow_loopback=True)
    async with SQLiteStore(tmp / "bench.db") as store:
        hooks = Webhooks(store, policy, clock=SYSTEM_CLOCK.wall)
        await hooks.open()
        for _ in range(subs):
            await hooks.create(url=url, owner="bench", after="0.0")
        config = DeliveryConfig(batch=200, concurrency=subs)
        dispatcher = WebhookDispatcher(hooks, read, source=source, config=config, policy=policy)
        start = time.perf_counter()
        done = 0
        while done < subs * len(events):
            step = await dispatcher.run_once()
            if step == 0:
                raise SystemExit("delivery stalled")
            done += step
        elapsed = time.perf_counter() - start
        await dispatcher.aclose()
        return elapsed, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=4)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    subs, count = (2, 40) if args.smoke else (args.subscriptions, args.events)
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    try:
        wait_up(url)
        events = [Event(n) for n in range(1, count + 1)]
        source = "http://127.0.0.1:8080/registry"
        _, body = envelope({**events[0].to_cloudevent(source), "xregposition": "1.0"}, "structured")
        sign("whsec_" + "A" * 32, "x", time.time(), body)  # warm the libraries up
        with tempfile.TemporaryDirectory() as tmp:
            base = asyncio.run(baseline(url, events, subs, source))
            took, delivered = asyncio.run(dispatcher_run(url, events, subs, source, Path(tmp)))
    finally:
        receiver.terminate()
        receiver.wait(10)
    total = subs * count
    base_rate, hook_rate = total / base, delivered / took
    print(f"subscriptions: {subs}, events each: {count}, deliveries: {delivered}")
    print(f"baseline (plain httpx POSTs, same bodies): {base_rate:,.0f}/s ({base:.2f}s)")
    print(f"webhook dispatcher (signed, cursor stored per event): {hook_rate:,.0f}/s ({took:.2f}s)")
    print(f"summary: webhook deliveries {hook_rate:,.0f}/s = {hook_rate / base_rate:.2f}× plain POSTs "
          f"({base_rate:,.0f}/s)")


if __name__ == "__main__":
    main()
