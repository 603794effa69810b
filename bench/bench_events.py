"""Subscription benchmark: registry events delivered to GraphQL subscribers over WebSocket
(``graphql-transport-ws``) while writes land through the xRegistry HTTP API.

The gateway (SQLite, a fresh data directory) runs in a process of its own under uvicorn, so that
its memory and CPU are its own; the subscribers run in another process (one asyncio loop;
``--client-processes N``: N processes), a minimal client that reads only what the latency needs
(:class:`Subscriber`), and this one writes. Figures:

- **commit-to-delivery latency** p50 / p99: from the event's ``time`` (stamped by the commit)
  to its arrival at a subscriber, over every delivery, for ``--subscribers`` subscribers while
  ``--rate`` writes per second land for ``--seconds`` (each write creates one schema group: one
  ``io.xregistry.group.created`` event under ``/schemagroups``, which every subscriber asks for);
- **server RSS per 1,000 subscribers**: the gateway process's resident memory with the
  subscribers connected, less before, scaled;
- **write throughput with vs without subscribers attached**: ``--writes`` writes as fast as
  ``--writers`` concurrent clients send them, with no subscriber, then with every subscriber
  connected, twice: creating message groups, which no subscriber watches (what attached
  subscribers cost the writers: the feed reading and matching each event), and creating schema
  groups, which every subscriber receives (each write is then ``--subscribers`` deliveries, whose
  CPU the writers share: the run waits for them all and prints how long after the burst's last
  write the last one arrived);
- **server CPU per delivery**: the gateway processes' CPU time (user + system) from the first
  paced write until every delivery arrived, less what as many writes cost without subscribers
  (the throughput run alone), over the deliveries: a figure a shared machine's load moves less
  than latencies;
- **the subscribers' CPU per delivery**: what the client side costs the machine it shares;
- **webhook deliveries per second**: ``bench_webhooks.py`` run on its own afterwards (signed
  deliveries to a local receiver against plain POSTs of the same bodies).

Deliveries that did not arrive (a subscriber disconnected as a slow consumer) are counted and
printed. Full size: 1,000 subscribers, 50 writes/s. ``--smoke``: 20 subscribers, 10 writes/s for
2 s, 40 writes each way — every step, in seconds.

``--workers N`` serves with N gateway processes accepting on the one socket (as ``serve --workers
N``, or N replicas), each following the store's event log (``--poll``, XREG_EVENTS_POLL_SECONDS).

Usage: python bench/bench_events.py [--subscribers 1000] [--rate 50] [--seconds 20] [--workers 1]
[--client-processes 1] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx

REPO = Path(__file__).resolve().parents[1]
KEY = "bench-events-writer-key"
#: Every subscriber watches the schema groups created (the paced writes', and the receiving burst's).
SUBSCRIPTION = ('subscription { registryEvents(types: ["io.xregistry.group.created"], subject: "/schemagroups/*") '
                "{ position subject time } }")
#: One gateway process on the socket passed in, with the uvicorn options ``serve`` gives it.
SERVER = """
import socket, sys, uvicorn
from gateway.app import create_app
from gateway.request_limits import server_options
from xreg.config import load_settings
settings = load_settings()
sock = socket.socket(fileno=int(sys.argv[1]))
uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning", lifespan="on", ws_max_queue=64,
                              ws="websockets-sansio", ws_per_message_deflate=False,
                              **server_options(settings))).run(sockets=[sock])
"""


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Gateway:
    """The gateway on a socket bound here: ``workers`` processes accepting on it, each with its
    event feed on the one SQLite store (a write's events reach the other processes' subscribers
    by polling, every ``poll`` seconds), their metrics gathered as ``serve --workers`` does."""

    def __init__(self, data_dir: Path, workers: int = 1, poll: float = 0.05) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4096)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        keys = [{"name": "writer", "sha256": hashlib.sha256(KEY.encode()).hexdigest(), "scopes": ["read", "write"]}]
        env = {**os.environ, "XREG_DATA_DIR": str(data_dir), "XREG_STORE_URL": "", "XREG_API_KEYS": json.dumps(keys),
               "XREG_ADMISSION_QUEUE_SIZE": "100000", "XREG_ADMISSION_QUEUE_TIMEOUT_SECONDS": "120",
               "PYTHONPATH": str(REPO), "XREG_EVENTS_POLL_SECONDS": str(poll)}
        if workers > 1:
            env["PROMETHEUS_MULTIPROC_DIR"] = str(data_dir / "metrics")
            (data_dir / "metrics").mkdir()
        self.processes = [subprocess.Popen([sys.executable, "-c", SERVER, str(self.sock.fileno())], env=env,
                                           pass_fds=[self.sock.fileno()]) for _ in range(workers)]

    def rss(self) -> int:
        return sum(rss_bytes(p.pid) for p in self.processes)

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.processes)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the gateway did not start")

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(30)
        self.sock.close()


#: The WebSocket handshake's GUID (RFC 6455 §1.3).
_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_NEXT = b'"type":"next"'
_TIME = b'"time":"'


def _client_frame(opcode: int, payload: bytes) -> bytes:
    """A masked, final frame (a client's frames are masked: RFC 6455 §5.3)."""
    n, mask = len(payload), os.urandom(4)
    head = bytes([0x80 | opcode, 0x80 | n]) if n < 126 else bytes([0x80 | opcode, 0xFE]) + n.to_bytes(2, "big")
    key = (mask * (n // 4 + 1))[:n]
    return head + mask + (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


class Subscriber(asyncio.Protocol):
    """One WebSocket subscription, counting what it receives and how late: a minimal
    ``graphql-transport-ws`` client (RFC 6455 on an asyncio protocol) that reads of each ``next``
    frame only the event's ``time`` (what the latency needs), so that the subscribers' process
    costs the machine little beside the gateway it measures. Any other message is parsed as
    JSON; a close, an ``error`` or ``complete`` ends the subscriber, with its reason."""

    #: The commit times seen, as timestamps (every subscriber of a process receives the same ones).
    times: ClassVar[dict[bytes, float]] = {}

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.received = 0
        self.closed: str | None = None
        self.task: asyncio.Task[None] | None = None
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._upgraded = False
        self._accepted: asyncio.Future[None] | None = None
        self._acknowledged: asyncio.Future[None] | None = None
        self._lost: asyncio.Future[None] | None = None
        self._transport: asyncio.Transport | None = None
        self._key = base64.b64encode(os.urandom(16))

    async def run(self, url: str, ready: asyncio.Event, opened: list[int]) -> None:
        loop, counted = asyncio.get_running_loop(), False
        self._accepted, self._acknowledged, self._lost = (loop.create_future(), loop.create_future(),
                                                          loop.create_future())
        parts = urlsplit(url)
        self._request = (f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                         f"Connection: Upgrade\r\nSec-WebSocket-Key: {self._key.decode()}\r\n"
                         "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n")
        try:
            await asyncio.wait_for(loop.create_connection(lambda: self, parts.hostname, parts.port), 120)
            await asyncio.wait_for(asyncio.shield(self._accepted), 120)  # frames follow the handshake's answer
            self._send_text({"type": "connection_init", "payload": {}})
            await asyncio.wait_for(asyncio.shield(self._acknowledged), 120)
            self._send_text({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
            counted = self._count(ready, opened)
            await self._lost
        except Exception as exc:  # a refused connection or handshake
            self.closed = self.closed or f"{type(exc).__name__}: {exc}"[:120]
        finally:
            if not counted:  # a subscriber that could not subscribe does not hold the others up
                self._count(ready, opened)
            if self._transport is not None:
                self._transport.close()

    @staticmethod
    def _count(ready: asyncio.Event, opened: list[int]) -> bool:
        opened[0] += 1
        if opened[0] == opened[1]:
            ready.set()
        return True

    def _send_text(self, message: dict[str, Any]) -> None:
        assert self._transport is not None
        self._transport.write(_client_frame(0x1, json.dumps(message).encode()))

    def _end(self, reason: str) -> None:
        self.closed = self.closed or reason[:120]
        for future in (self._accepted, self._acknowledged, self._lost):
            if future is not None and not future.done():
                future.set_exception(ConnectionError(self.closed))
                future.exception()  # retrieved: a subscriber may end before it awaits one

    # -- asyncio.Protocol -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.write(self._request.encode())

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(f"ConnectionClosed: {exc or 'the connection was closed'}")

    def data_received(self, data: bytes) -> None:
        now = time.time()  # every frame of this read arrived now
        buffer = self._buffer
        buffer += data
        if not self._upgraded:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buffer[:end]).decode("latin-1")
            del buffer[:end + 4]
            accept = base64.b64encode(hashlib.sha1(self._key + _WS_GUID).digest()).decode()
            if not head.startswith("HTTP/1.1 101") or f"sec-websocket-accept: {accept}".lower() not in head.lower():
                self._end(f"InvalidHandshake: {head.splitlines()[0] if head else ''}")
                return
            self._upgraded = True
            if self._accepted is not None and not self._accepted.done():
                self._accepted.set_result(None)
        at, size = 0, len(buffer)
        while size - at >= 2:
            first, length, start = buffer[at], buffer[at + 1] & 0x7F, at + 2
            if length == 126:
                if size - at < 4:
                    break
                length, start = int.from_bytes(buffer[at + 2:at + 4], "big"), at + 4
            elif length == 127:
                if size - at < 10:
                    break
                length, start = int.from_bytes(buffer[at + 2:at + 10], "big"), at + 10
            if size - start < length:
                break
            at = start + length
            self._frame(first, bytes(buffer[start:at]), now)
        del buffer[:at]

    def _frame(self, first: int, payload: bytes, now: float) -> None:
        opcode = first & 0x0F
        if opcode == 0x1 and first & 0x80:  # a whole text message: the common case
            self._message(payload, now)
        elif opcode in (0x0, 0x1):  # a fragment
            self._fragments.append(payload)
            if first & 0x80:
                self._message(b"".join(self._fragments), now)
                self._fragments.clear()
        elif opcode == 0x9 and self._transport is not None:  # ping
            self._transport.write(_client_frame(0xA, payload))
        elif opcode == 0x8:  # close
            code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            if self._transport is not None:
                self._transport.write(_client_frame(0x8, payload[:2]))
                self._transport.close()
            self._end(f"ConnectionClosed: {code} {payload[2:].decode('utf-8', 'replace')}")

    def _message(self, payload: bytes, now: float) -> None:
        if payload.find(_NEXT, 0, 80) >= 0 and (at := payload.find(_TIME)) >= 0:
            stamp = payload[at + 8:payload.index(b'"', at + 8)]
            committed = self.times.get(stamp)
            if committed is None:
                committed = self.times[stamp] = datetime.fromisoformat(stamp.decode()).timestamp()
            self.received += 1
            self.latencies.append(now - committed)
            return
        message = json.loads(payload)
        kind = message.get("type")
        if kind == "connection_ack" and self._acknowledged is not None and not self._acknowledged.done():
            self._acknowledged.set_result(None)
        elif kind == "next":  # a frame not shaped as the gateway's: read in full
            self.received += 1
            event_time = message["payload"]["data"]["registryEvents"]["time"]
            self.latencies.append(now - datetime.fromisoformat(event_time).timestamp())
        elif kind in ("error", "complete"):
            self._end(f"{kind}: {json.dumps(message.get('payload'))}")
            if self._transport is not None:
                self._transport.close()


async def open_count(client: httpx.AsyncClient) -> float:
    text = (await client.get("/metrics")).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("xreg_graphql_subscriptions_open{"))


async def subscriber_process(url: str, count: int) -> None:
    """The subscribers' process: ``ready`` once all have subscribed, then one JSON line per
    command read from stdin (``count``, ``take``: the figures so far, then reset; ``stop``)."""
    ready, opened = asyncio.Event(), [0, count]
    subscribers = [Subscriber() for _ in range(count)]
    for s in subscribers:
        s.task = asyncio.create_task(s.run(url, ready, opened))
    await asyncio.wait_for(ready.wait(), 600)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        command = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if command in ("", "stop"):
            break
        closed = [s.closed for s in subscribers if s.closed]
        reply: dict[str, Any] = {"received": sum(s.received for s in subscribers), "closed": closed[:1],
                                 "closed_count": len(closed)}
        if command == "take":
            reply["latencies"] = [x for s in subscribers for x in s.latencies]
            for s in subscribers:
                s.received, s.latencies = 0, []
        print(json.dumps(reply), flush=True)
    for s in subscribers:
        if s.task is not None:
            s.task.cancel()
    await asyncio.gather(*(s.task for s in subscribers if s.task is not None), return_exceptions=True)


class Subscribers:
    """The subscribers' processes (``processes`` of them, the subscribers split evenly), driven
    by lines; their answers summed."""

    def __init__(self, url: str, count: int, processes: int = 1) -> None:
        shares = [count // processes + (1 if n < count % processes else 0) for n in range(processes)]
        self.processes = [subprocess.Popen([sys.executable, __file__, "--subscriber-process", url, str(share)],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                           env={**os.environ, "PYTHONPATH": str(REPO)})
                          for share in shares if share]

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.processes)

    async def ready(self) -> None:
        for process in self.processes:
            line = await asyncio.to_thread(process.stdout.readline)  # type: ignore[union-attr]
            if line.strip() != "ready":
                raise RuntimeError(f"the subscribers did not start: {line!r}")

    async def ask(self, command: str) -> dict[str, Any]:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write(command + "\n")
            process.stdin.flush()
        replies = [json.loads(await asyncio.to_thread(p.stdout.readline))  # type: ignore[union-attr]
                   for p in self.processes]
        total: dict[str, Any] = {"received": sum(r["received"] for r in replies),
                                 "closed": [c for r in replies for c in r["closed"]][:1],
                                 "closed_count": sum(r["closed_count"] for r in replies)}
        if command == "take":
            total["latencies"] = [x for r in replies for x in r["latencies"]]
        return total

    def stop(self) -> None:
        for process in self.processes:
            if process.stdin is not None:
                process.stdin.write("stop\n")
                process.stdin.close()
        for process in self.processes:
            process.wait(60)


#: Writes sent again (a PUT is idempotent): refused with 503 (several processes on one SQLite file
#: wait for its write lock at most ``busy_timeout``; sent again after ``Retry-After``), or on a
#: kept-alive connection the server had closed.
RETRIED = [0]


async def write(client: httpx.AsyncClient, name: str, groups: str = "schemagroups") -> None:
    """Create the group ``name`` of ``groups`` (one ``io.xregistry.group.created`` event)."""
    for _ in range(10):
        try:
            response = await client.put(f"/registry/{groups}/{name}", json={})
        except (httpx.ReadError, httpx.RemoteProtocolError):  # a kept-alive connection the server closed
            RETRIED[0] += 1
            continue
        if response.status_code != 503:
            break
        RETRIED[0] += 1
        await asyncio.sleep(min(float(response.headers.get("retry-after", "1")), 1.0))
    response.raise_for_status()


async def throughput(client: httpx.AsyncClient, prefix: str, writes: int, writers: int,
                     groups: str = "schemagroups") -> float:
    """Writes per second of ``writes`` group creations in ``groups`` sent by ``writers``
    concurrent clients."""
    names = iter(range(writes))

    async def writer() -> None:
        for n in names:
            await write(client, f"{prefix}{n}", groups)

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    return writes / (time.perf_counter() - started)


async def unwatched(client: httpx.AsyncClient, gateway: Gateway, tag: str,
                    args: argparse.Namespace) -> tuple[float, float]:
    """The best writes per second of ``--repeats`` throughput runs creating message groups (which
    no subscriber watches), and the gateway's CPU seconds per write over them all."""
    rates, cpu = [], gateway.cpu()
    for run in range(args.repeats):
        rates.append(await throughput(client, f"{tag}{run}-", args.writes, args.writers, "messagegroups"))
    return max(rates), (gateway.cpu() - cpu) / (args.writes * args.repeats)


async def paced(client: httpx.AsyncClient, rate: float, seconds: float) -> int:
    """Writes at ``rate`` per second for ``seconds`` (each on its own schedule); how many."""
    count = int(rate * seconds)
    start = time.perf_counter()
    pending = []
    for n in range(count):
        delay = start + n / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.create_task(write(client, f"paced{n}")))
    await asyncio.gather(*pending)
    return count


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gateway = Gateway(Path(tmp), args.workers, args.poll)
        try:
            gateway.wait_ready()
            await measure(args, gateway)
        finally:
            gateway.stop()


async def measure(args: argparse.Namespace, gateway: Gateway) -> None:
    limits = httpx.Limits(max_connections=args.writers + 10)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=120, limits=limits,
                                 headers={"Authorization": f"Bearer {KEY}"}) as client:
        await write(client, "warmup")
        cpu_start = gateway.cpu()
        alone = await throughput(client, "alone", args.writes, args.writers)
        cpu_per_write = (gateway.cpu() - cpu_start) / args.writes
        alone_unwatched, alone_cpu = await unwatched(client, gateway, "alone", args)
        rss_before = gateway.rss()

        connecting = time.perf_counter()
        subscribers = Subscribers(gateway.url.replace("http://", "ws://") + "/graphql", args.subscribers,
                                  args.client_processes)
        try:
            await subscribers.ready()
            while await open_count(client) < args.subscribers:  # every subscription open on the server
                await asyncio.sleep(0.05)
            connected_s = time.perf_counter() - connecting
            rss_after = gateway.rss()

            cpu_before, client_before = gateway.cpu(), subscribers.cpu()
            written = await paced(client, args.rate, args.seconds)
            expected = written * args.subscribers
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state = await subscribers.ask("count")
                if state["received"] + state["closed_count"] * written >= expected:
                    break
                await asyncio.sleep(0.1)
            cpu_used = gateway.cpu() - cpu_before  # the paced writes and their deliveries
            client_used = subscribers.cpu() - client_before
            taken = await subscribers.ask("take")
            attached_rate, attached_cpu = await unwatched(client, gateway, "loaded", args)
            loaded = await throughput(client, "loaded", args.writes, args.writers)
            ended = time.perf_counter()
            burst = args.writes * args.subscribers
            while time.perf_counter() - ended < 120:  # the receiving burst's deliveries, however late
                state = await subscribers.ask("count")
                if state["received"] + state["closed_count"] * args.writes >= burst:
                    break
                await asyncio.sleep(0.1)
            burst_lag = time.perf_counter() - ended
            final = await subscribers.ask("count")
        finally:
            subscribers.stop()
    latencies, delivered = taken["latencies"], taken["received"]
    closed = final["closed"]

    per_thousand = (rss_after - rss_before) / args.subscribers * 1000 / 2**20
    p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
    ratio = loaded / alone if alone else float("nan")
    attached = attached_rate / alone_unwatched if alone_unwatched else float("nan")
    mean = statistics.fmean(latencies) * 1000 if latencies else float("nan")
    print(f"gateway processes               {args.workers} (event log polled every {args.poll:g} s)")
    print(f"subscribers                     {args.subscribers} (connected in {connected_s:.1f} s)")
    print(f"writes                          {written} at {args.rate:g}/s for {args.seconds:g} s")
    print(f"deliveries                      {delivered} of {expected} ({final['closed_count']} subscribers "
          "closed early)")
    print(f"commit-to-delivery p50 / p99    {p50:.1f} / {p99:.1f} ms (mean {mean:.1f} ms)")
    fanout_cpu = cpu_used - written * cpu_per_write  # less what the writes cost without subscribers
    per_delivery = fanout_cpu / delivered * 1e6 if delivered else float("nan")
    print(f"server CPU                      {cpu_used:.1f} s for the paced writes and their deliveries; "
          f"{cpu_per_write * 1000:.1f} ms per write alone: {per_delivery:.0f} µs per delivery")
    client_per = client_used / delivered * 1e6 if delivered else float("nan")
    print(f"subscribers' CPU                {client_used:.1f} s in {len(subscribers.processes)} process(es): "
          f"{client_per:.0f} µs per delivery")
    print(f"server RSS                      {rss_before / 2**20:.0f} MB -> {rss_after / 2**20:.0f} MB "
          f"({per_thousand:.1f} MB per 1,000 subscribers)")
    print(f"write throughput, unwatched     {alone_unwatched:.0f}/s without subscribers, {attached_rate:.0f}/s with "
          f"them attached ({attached:.2f}×; best of {args.repeats}): writes no subscriber asked for; server CPU "
          f"{alone_cpu * 1000:.2f} / {attached_cpu * 1000:.2f} ms per write")
    print(f"write throughput, all receive   {alone:.0f}/s without subscribers, {loaded:.0f}/s with them "
          f"({ratio:.2f}×): each write {args.subscribers} deliveries; {final['received']} of {burst} arrived, the "
          f"last {burst_lag:.1f} s after the burst's last write")
    if closed:
        print(f"first close                     {closed[0]}")
    if RETRIED[0]:
        print(f"writes sent again               {RETRIED[0]} (503, or a connection closed)")
    hooks = webhook_deliveries(args.smoke) if args.webhooks else "webhooks not measured"
    print(f"webhooks                        {hooks} (bench/bench_webhooks.py)")
    print(f"summary: {args.subscribers} subscribers, {args.workers} process(es), at {args.rate:g} writes/s: "
          f"delivery p50 {p50:.1f} ms, "
          f"p99 {p99:.1f} ms; {per_thousand:.1f} MB RSS per 1,000 subscribers; write throughput with/without "
          f"subscribers attached {attached:.2f}× (writes they do not watch), {ratio:.2f}× (every write delivered to "
          f"all of them); {per_delivery:.0f} µs server CPU per delivery; {delivered}/{expected} delivered; "
          f"{hooks}")


def webhook_deliveries(smoke: bool) -> str:
    """Webhook deliveries per second (and their ratio to plain POSTs of the same bodies), as
    ``bench_webhooks.py`` measures them in a run of its own."""
    script = Path(__file__).with_name("bench_webhooks.py")
    out = subprocess.run([sys.executable, str(script), *(["--smoke"] if smoke else [])], check=True,
                         capture_output=True, text=True, timeout=600).stdout
    line = next(line for line in reversed(out.splitlines()) if line.startswith("summary: "))
    return line.removeprefix("summary: ")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=50.0, help="writes per second while measuring latency")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--writes", type=int, default=500, help="writes of each throughput run")
    parser.add_argument("--repeats", type=int, default=3,
                        help="throughput runs of the writes no subscriber watches, each way (the best counts)")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers of the throughput runs")
    parser.add_argument("--workers", type=int, default=1, help="gateway processes on the one store")
    parser.add_argument("--client-processes", type=int, default=1,
                        help="processes the subscribers are spread over")
    parser.add_argument("--poll", type=float, default=0.05,
                        help="XREG_EVENTS_POLL_SECONDS: how soon a process finds the others' commits")
    parser.add_argument("--no-webhooks", dest="webhooks", action="store_false",
                        help="skip the webhook figure (bench_webhooks.py)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    if args.smoke:
        args.subscribers, args.rate, args.seconds, args.writes, args.writers = 20, 10.0, 2.0, 40, 4
        args.repeats = 1
    return args


if __name__ == "__main__":
    if sys.argv[1:2] == ["--subscriber-process"]:
        asyncio.run(subscriber_process(sys.argv[2], int(sys.argv[3])))
    else:
        asyncio.run(main(parse()))
