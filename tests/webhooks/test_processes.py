"""Webhook delivery by real gateway processes (``xreg-gateway serve``) on one SQLite store: a
``kill -9`` mid-delivery loses nothing after a restart; two processes never deliver one
subscription's events at the same time. The receiver is a real HTTP server on 127.0.0.1.

Waits are polls with generous bounds that stop on their condition (a served ``/healthz``, the
receiver holding a request, every event received), never sleeps that order anything."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from gateway.auth import hash_key
from tests.support.live import LiveServer
from tests.support.webhook_receiver import Receiver

ADMIN_KEY = "admin-key-" + "a" * 32
BOUND = 90.0
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="kill -9")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(condition: Callable[[], bool], what: str, bound: float = BOUND) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


class Gateway:
    """``xreg-gateway serve`` in a process of its own on the shared data directory."""

    def __init__(self, data: Path, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("XREG_")}
        env.update({
            "PYTHONPATH": str(REPO), "XREG_DATA_DIR": str(data), "XREG_LOG_FORMAT": "text",
            "XREG_API_KEYS": json.dumps([{"name": "admin", "sha256": hash_key(ADMIN_KEY),
                                          "scopes": ["read", "write", "webhooks"]}]),
            "XREG_OUTBOUND_ALLOW_LOOPBACK": "true", "XREG_WEBHOOK_TIMEOUT_SECONDS": "5",
            "XREG_WEBHOOK_LEASE_SECONDS": "6", "XREG_WEBHOOK_POLL_SECONDS": "0.05",
            "XREG_WEBHOOK_BACKOFF_SECONDS": "0.05", "XREG_WEBHOOK_MAX_BACKOFF_SECONDS": "0.2",
            "XREG_EVENTS_POLL_SECONDS": "0.05",
        })
        script = Path(sys.executable).parent / "xreg-gateway"
        self.log = open(log, "a")
        self.process = subprocess.Popen([str(script), "serve", "--host", "127.0.0.1", "--port", str(self.port)],
                                        cwd=data, env=env, stdout=self.log, stderr=self.log)
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)

        def served() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"the gateway exited with {self.process.returncode}: {log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                return self.client.get("/healthz").status_code == 200
            return False

        _until(served, "the gateway serves")

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self.log.close()


@contextlib.contextmanager
def gateway(data: Path, log: Path) -> Iterator[Gateway]:
    g = Gateway(data, log)
    try:
        yield g
    finally:
        g.stop()


def _positions(receiver: Receiver, sub_id: str) -> list[str]:
    return [json.loads(r.body)["xregposition"] for r in receiver.delivered() if r.subscription == sub_id]


def _subject(r) -> str:
    return json.loads(r.body)["subject"]


def test_kill_9_mid_delivery_loses_nothing(tmp_path: Path) -> None:
    receiver = Receiver()
    with LiveServer(receiver.app()) as live:
        log = tmp_path / "gateway.log"
        with gateway(tmp_path, log) as first:
            made = first.client.post("/registry/webhook-subscriptions", json={
                "url": live.url + "/hook", "types": ["io.xregistry.group.created"]})
            assert made.status_code == 201, made.text
            sub_id = made.json()["id"]
            receiver.hold()  # the receiver takes the first request and keeps it: the gateway is mid-delivery
            for n in range(1, 6):
                assert first.client.put(f"/registry/schemagroups/g{n}", json={}).status_code == 201
            _until(receiver.entered.is_set, "the first delivery reaches the receiver")
            first.kill()
        receiver.release()  # the killed gateway never sees this answer: its cursor stays before the event
        with gateway(tmp_path, log) as second:
            for n in range(6, 9):
                assert second.client.put(f"/registry/schemagroups/g{n}", json={}).status_code == 201
            _until(lambda: {_subject(r) for r in receiver.delivered() if r.subscription == sub_id}
                   >= {f"/schemagroups/g{n}" for n in range(1, 9)}, "every event after the restart")
    got = [_subject(r) for r in receiver.delivered() if r.subscription == sub_id]
    firsts = list(dict.fromkeys(got))
    assert firsts == [f"/schemagroups/g{n}" for n in range(1, 9)]  # in order, none missing
    assert got.count("/schemagroups/g1") >= 1  # at least once: the unacknowledged one may come twice


def test_two_processes_on_one_store_never_deliver_at_once(tmp_path: Path) -> None:
    receiver = Receiver(delay=0.02)  # each request stays open a moment: overlaps would show
    with LiveServer(receiver.app()) as live, gateway(tmp_path, tmp_path / "a.log") as a:
        subs = [a.client.post("/registry/webhook-subscriptions", json={"url": live.url + "/hook"}).json()["id"]
                for _ in range(3)]
        with gateway(tmp_path, tmp_path / "b.log") as b:
            for n in range(1, 21):
                writer = a if n % 2 else b
                assert writer.client.put(f"/registry/schemagroups/g{n}", json={}).status_code == 201
            expected = {f"/schemagroups/g{n}" for n in range(1, 21)}
            _until(lambda: all({_subject(r) for r in receiver.delivered() if r.subscription == s} >= expected
                               for s in subs), "every event to every subscription")
    assert receiver.max_overlap == 1
    for sub_id in subs:
        got = [_subject(r) for r in receiver.delivered() if r.subscription == sub_id]
        group_created = [s for s in got if s.startswith("/schemagroups/g")]
        assert list(dict.fromkeys(group_created)) == [f"/schemagroups/g{n}" for n in range(1, 21)]
        positions = _positions(receiver, sub_id)
        assert positions == sorted(set(positions), key=lambda p: tuple(map(int, p.split("."))))  # once, in order
