"""Real servers for the federation tests, all on 127.0.0.1 (free ports): gateways of our own
serving real documents over the xRegistry HTTP API (each in a process of its own), a
deliberately faulty registry, a socket that resets connections, a canary that must never be
called (threads of the test process), and Redis."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.live import LiveServer, bound_socket


class Served(LiveServer):
    """A test server of the federation tests: :class:`LiveServer` with the ``origin`` naming."""

    def __init__(self, app: Any, sock: socket.socket | None = None) -> None:
        super().__init__(app, log_level="error", sock=sock)
        self.origin = self.url





class Instrumented:
    """ASGI wrapper of a remote: counts requests by path, can hold every request until released
    (``held`` counts those waiting; ``release_held`` lets those waiting through and keeps
    holding the later ones), can hide capabilities, can be down (every request answered
    503), can add a delay to every request (for the benchmarks only: the network's round trip),
    keeps the ``traceparent`` headers it receives; controlled over HTTP at ``/_test/state`` (GET)
    and ``/_test/configure`` (POST); ``/_test/held?at_least=n`` answers once ``n`` requests are
    held (woken by each new one)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.hits: Counter[str] = Counter()
        self.log: list[str] = []
        self.traceparents: list[str] = []
        self.hide_flags: set[str] = set()
        self.down = False
        self.delay = 0.0
        self.held = 0
        #: set: requests go through; cleared: each waits for it (created in the server's loop)
        self._released: asyncio.Event | None = None
        #: notified each time a request starts to wait (created in the server's loop)
        self._holding: asyncio.Condition | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path.startswith("/_test/"):
            response = await self._control(Request(scope, receive))
            await response(scope, receive, send)
            return
        self.hits[path] += 1
        query = scope.get("query_string", b"").decode()
        self.log.append(path + ("?" + query if query else ""))
        self.traceparents += [v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"traceparent"]
        released = self._gate()
        if not released.is_set():
            async with self._held_condition():
                self.held += 1
                self._held_condition().notify_all()
            try:
                await released.wait()
            finally:
                if released is self._released:  # (``release_held`` counted it out already)
                    self.held -= 1
        await self._serve(scope, receive, send, path, query)

    def _held_condition(self) -> asyncio.Condition:
        if self._holding is None:
            self._holding = asyncio.Condition()
        return self._holding

    def _gate(self) -> asyncio.Event:
        if self._released is None:
            self._released = asyncio.Event()
            self._released.set()
        return self._released

    async def _serve(self, scope: Any, receive: Any, send: Any, path: str, query: str) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.down:
            await JSONResponse({"title": "down for the test"}, 503)(scope, receive, send)
            return
        if self.hide_flags and any(f"{flag}=" in query for flag in self.hide_flags):
            await JSONResponse({"title": "unsupported flag"}, 400)(scope, receive, send)
            return
        if self.hide_flags and path.endswith("/capabilities"):
            from gateway.http_api.capabilities import capabilities

            caps = capabilities()
            caps["flags"] = [f for f in caps["flags"] if f not in self.hide_flags]
            await JSONResponse(caps)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _control(self, request: Request) -> Response:
        if request.url.path == "/_test/held":
            wanted = int(request.query_params.get("at_least", "1"))
            async with self._held_condition():
                await self._held_condition().wait_for(lambda: self.held >= wanted)
            return JSONResponse({"held": self.held})
        if request.url.path == "/_test/configure":
            body = await request.json()
            if body.get("reset"):
                self.hits.clear()
                self.log.clear()
                self.traceparents.clear()
                self.hide_flags = set()
                self.down = False
                self.delay = 0.0
                self._gate().set()
            if "hold" in body:
                (self._gate().clear if body["hold"] else self._gate().set)()
            if body.get("release_held"):
                held, self._released = self._gate(), asyncio.Event()  # the later requests wait on a new gate
                self.held = 0
                held.set()
            if "delay" in body:
                self.delay = float(body["delay"])
            if "down" in body:
                self.down = bool(body["down"])
            if "hide_flags" in body:
                self.hide_flags = set(body["hide_flags"])
            if body.get("clear"):
                self.hits.clear()
                self.log.clear()
                self.traceparents.clear()
        return JSONResponse({"hits": dict(self.hits), "log": self.log, "held": self.held,
                             "traceparents": self.traceparents})


class RemoteControl:
    """The test's handle on a remote's :class:`Instrumented` wrapper (in another process)."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def _call(self, **body: Any) -> dict[str, Any]:
        import httpx

        if body:
            return httpx.post(self.origin + "/_test/configure", json=body, timeout=10, trust_env=False).json()
        return httpx.get(self.origin + "/_test/state", timeout=10, trust_env=False).json()

    def reset(self) -> None:
        """Zero the counters, nothing held, every capability."""
        self._call(reset=True)

    def clear(self) -> None:
        """Zero the counters only."""
        self._call(clear=True)

    def hold(self) -> None:
        """Hold every request from now on until :meth:`release`."""
        self._call(hold=True)

    def release(self) -> None:
        """Let the held requests, and all later ones, through."""
        self._call(hold=False)

    def release_held(self) -> None:
        """Let the requests held now through; hold the later ones."""
        self._call(release_held=True)

    def add_delay(self, seconds: float) -> None:
        """Add ``seconds`` to every request from now on (benchmarks: the network's round trip)."""
        self._call(delay=seconds)

    def down(self, down: bool = True) -> None:
        """Answer every request with 503 from now on (``False``: serve again)."""
        self._call(down=down)

    @property
    def held(self) -> int:
        """How many requests wait to be released."""
        return self._call()["held"]

    async def holding(self, at_least: int = 1, seconds: float = 60.0) -> None:
        """Return once the remote holds ``at_least`` requests (it answers when the last one
        arrives; ``seconds`` only ends a wait that would otherwise never end)."""
        import httpx

        async with httpx.AsyncClient(timeout=seconds, trust_env=False) as client:
            response = await client.get(self.origin + "/_test/held", params={"at_least": at_least})
        response.raise_for_status()

    @property
    def hide_flags(self) -> set[str]:
        raise AttributeError("write-only")

    @hide_flags.setter
    def hide_flags(self, flags: set[str]) -> None:
        self._call(hide_flags=sorted(flags))

    @property
    def hits(self) -> Counter[str]:
        return Counter(self._call()["hits"])

    @property
    def log(self) -> list[str]:
        return self._call()["log"]

    @property
    def traceparents(self) -> list[str]:
        """The ``traceparent`` headers received since the last reset."""
        return self._call()["traceparents"]

    @property
    def requests(self) -> int:
        return sum(self.hits.values())


async def all_held(controls: list[RemoteControl], seconds: float = 60.0) -> None:
    """Wait until each remote holds a request at once (what asking them one after another could
    never give: held requests stay held until released); the test's event loop sends the
    requests meanwhile. The bound only ends a wait that would otherwise never end."""
    try:
        await asyncio.gather(*(c.holding(1, seconds) for c in controls))
    except Exception as exc:
        raise AssertionError(f"never all held at once: {[c.held for c in controls]} ({exc!r})") from exc


class GatewayServer:
    """A gateway of our own in a process of its own, serving ``documents`` (file names under the
    shared data directory) on a free port of 127.0.0.1 (see ``remote_main.py``)."""

    def __init__(self, registry_id: str, documents: list[str], tmp: Path, **settings: Any) -> None:
        import json
        import sys

        repo = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": str(repo)}
        env.pop("XREG_CONFIG", None)
        self.errors = tmp / "remote.log"
        with open(self.errors, "w") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.federation.remote_main", registry_id, str(tmp), json.dumps(documents),
                 json.dumps(settings, default=_jsonable)],
                cwd=repo, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
        self.registry_id = registry_id

    def start(self) -> GatewayServer:
        """Wait until it serves (several remotes start in parallel: spawn them all first)."""
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the remote {self.registry_id} did not start: {line}{self.errors.read_text()}")
        self.origin = f"http://127.0.0.1:{int(line.split()[1])}"
        self.base_url = self.origin + "/registry"
        self.wrapper = RemoteControl(self.origin)
        return self

    def stop(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(type(value).__name__)


# -- the faulty registry -----------------------------------------------------------------------

_CAPS = {"flags": ["filter", "inline"], "pagination": True, "specversions": ["1.0-rc4"]}
_MODEL = {"groups": {"messagegroups": {"plural": "messagegroups", "singular": "messagegroup",
                                       "resources": {"messages": {"plural": "messages", "singular": "message",
                                                                  "hasdocument": False}}}}}


def faulty_app(canary_url: str) -> tuple[Starlette, Counter]:
    """A registry misbehaving per path prefix (``/<mode>/registry/...``):

    ``slow`` (answers after 3 s), ``500`` (always), ``malformed`` (invalid JSON), ``deep`` (JSON nested
    5,000 levels), ``html`` (wrong
    content type), ``huge`` (4 MiB), ``flaky`` (503 twice with ``Retry-After: 0``, then fine),
    ``ratelimit`` (429 with ``Retry-After: 1`` once per entity or collection path, then fine), ``badlink`` (its next
    page points at the canary), ``ok`` (a tiny healthy registry), ``exotic`` (a healthy registry
    whose model has group types the gateway has never seen: ``devices`` with ``firmwares``).
    """
    hits: Counter = Counter()
    seen: Counter = Counter()

    def registry_body(request: Request, mode: str) -> dict[str, Any]:
        base = f"{request.base_url}{mode}/registry"
        return {"specversion": "1.0-rc4", "registryid": f"faulty-{mode}", "xid": "/", "self": base + "/",
                "epoch": 1, "messagegroupsurl": base + "/messagegroups", "messagegroupscount": 1}

    async def endpoint(request: Request) -> Response:
        mode, rest = request.path_params["mode"], "/" + request.path_params.get("rest", "")
        hits[mode] += 1
        seen[(mode, rest)] += 1
        if mode == "slow":
            await asyncio.sleep(3)
        elif mode == "500":
            return PlainTextResponse("boom", 500)
        elif mode == "malformed" and rest not in ("/capabilities", "/model"):
            return Response(b'{"xid": "/", "unterminated', media_type="application/json")
        elif mode == "deep" and rest not in ("/capabilities", "/model"):
            return Response(b'{"a":' * 5000 + b"1" + b"}" * 5000, media_type="application/json")
        elif mode == "html":
            return Response(b"<html><body>maintenance</body></html>", media_type="text/html")
        elif mode == "huge" and rest not in ("/capabilities", "/model"):
            chunk = b" " * 65536

            async def body():
                yield b'{"pad": "'
                for _ in range(64):
                    yield chunk
                yield b'"}'

            return StreamingResponse(body(), media_type="application/json")
        elif mode == "flaky" and seen[(mode, rest)] <= 2:
            return PlainTextResponse("try again", 503, headers={"Retry-After": "0"})
        elif mode == "ratelimit" and rest not in ("/capabilities", "/model", "/") and seen[(mode, rest)] <= 1:
            return PlainTextResponse("slow down", 429, headers={"Retry-After": "1"})
        if mode == "exotic":
            return exotic(request, rest)
        if rest == "/capabilities":
            return JSONResponse(_CAPS)
        if rest == "/model":
            return JSONResponse(_MODEL)
        if rest in ("/", ""):
            return JSONResponse(registry_body(request, mode))
        base = registry_body(request, mode)["self"].rstrip("/")
        if rest == "/messagegroups":
            headers = {}
            if mode == "badlink":
                headers["Link"] = f'<{canary_url}/registry/messagegroups?page=2>;rel=next'
            return JSONResponse({"g1": {"messagegroupid": "g1", "xid": "/messagegroups/g1", "self": base + "/messagegroups/g1",
                                        "epoch": 1, "messagesurl": base + "/messagegroups/g1/messages", "messagescount": 0}},
                                headers=headers)
        if rest == "/messagegroups/g1":
            return JSONResponse({"messagegroupid": "g1", "xid": "/messagegroups/g1", "self": base + "/messagegroups/g1",
                                 "epoch": 1, "name": f"group of {mode}"})
        return JSONResponse({"title": "not found"}, 404)

    def exotic(request: Request, rest: str) -> Response:
        base = f"{request.base_url}exotic/registry"
        device = {"deviceid": "d1", "xid": "/devices/d1", "self": base + "/devices/d1", "epoch": 1, "name": "Thermostat",
                  "vendor": "Acme", "firmwaresurl": base + "/devices/d1/firmwares", "firmwarescount": 1}
        firmware = {"firmwareid": "f1", "versionid": "2.1", "xid": "/devices/d1/firmwares/f1", "epoch": 3,
                    "self": base + "/devices/d1/firmwares/f1", "channel": "stable", "isdefault": True}
        answers = {
            "/capabilities": {"flags": ["filter", "inline"], "pagination": True},
            "/model": {"groups": {"devices": {"plural": "devices", "singular": "device", "resources": {
                "firmwares": {"plural": "firmwares", "singular": "firmware", "hasdocument": False}}}}},
            "/": {"specversion": "1.0-rc4", "registryid": "exotic", "xid": "/", "self": base + "/", "epoch": 7,
                  "devicesurl": base + "/devices", "devicescount": 1},
            "/devices": {"d1": device},
            "/devices/d1": device,
            "/devices/d1/firmwares": {"f1": firmware},
            "/devices/d1/firmwares/f1": firmware,
        }
        if rest == "/devices" and "inline" in request.query_params:
            return JSONResponse({"d1": {**device, "firmwares": {"f1": firmware}}})
        if rest in answers:
            return JSONResponse(answers[rest])
        return JSONResponse({"title": "not found"}, 404)

    app = Starlette(routes=[Route("/{mode}/registry/{rest:path}", endpoint), Route("/{mode}/registry", endpoint)])
    return app, hits


def canary_app() -> tuple[Starlette, Counter]:
    """A server no test may ever reach: it counts every request."""
    hits: Counter = Counter()

    async def endpoint(request: Request) -> Response:
        hits[request.url.path] += 1
        return JSONResponse({"xid": "/messagegroups/stolen", "messagegroupid": "stolen"})

    return Starlette(routes=[Route("/{rest:path}", endpoint)]), hits


class ResettingServer:
    """Accepts connections, reads the request and resets the connection (TCP RST)."""

    def __init__(self) -> None:
        self.sock = bound_socket()
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.accepted = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import struct

        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            try:
                conn.settimeout(1)
                conn.recv(65536)
            except OSError:
                pass
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def start(self) -> ResettingServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.sock.close()


# -- Redis ---------------------------------------------------------------------------------------


class RedisServer:
    """Debian's redis-server on a free port, with a temporary directory, no persistence."""

    def __init__(self) -> None:
        self.binary = shutil.which("redis-server")
        self.dir = tempfile.mkdtemp(prefix="xreg-redis-")
        with bound_socket() as sock:
            self.port = sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        """Start it and wait until it answers (a port another process took meanwhile ends this
        one at once: then on another free port)."""
        assert self.binary
        for _ in range(3):
            os.makedirs(self.dir, exist_ok=True)
            self.process = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
                 "--appendonly", "no", "--protected-mode", "yes"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1) as c:
                        c.sendall(b"PING\r\n")
                        if c.recv(16).startswith(b"+PONG") and self.process.poll() is None:
                            return self
                except OSError:
                    time.sleep(0.05)
            self.stop()
            with bound_socket() as sock:
                self.port = sock.getsockname()[1]
            self.url = f"redis://127.0.0.1:{self.port}/0"
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)


def redis_or_skip() -> RedisServer:
    """A started Redis; skipped with the reason when the binary is missing, except in CI."""
    server = RedisServer()
    if server.binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing (CI needs the Debian package redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    return server.start()
