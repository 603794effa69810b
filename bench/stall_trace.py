"""Runs ``xreg-gateway`` with a recorder of what can stall a ``/healthz`` probe, for
``bench_load.py --trace``: ``python bench/stall_trace.py LOG serve --port N``. A tool, not a
benchmark: ``python bench/stall_trace.py --smoke`` serves an empty registry through it on a free
port, sends a few probes and a query, and prints what the log holds.

Written to LOG, one event a line (wall-clock start, then milliseconds):

* ``gc START MS GEN COLLECTED`` — every garbage collection of 1 ms or more (``gc.callbacks``);
* ``turn START MS CPU_MS PROC_MS N SLOWEST`` — every turn of the event loop whose callbacks ran
  10 ms or more of wall time: the loop thread's CPU in them, the whole process's CPU (other
  threads included), how many callbacks ran and the longest one's name;
* ``poll START MS`` — a turn whose wait for sockets (``select``) returned 10 ms or more later than
  it asked to (the process was not scheduled);
* ``probe START MS ASGI_MS`` — a ``/healthz`` request from its bytes' arrival (``data_received``)
  to the end of its answer, and the part of it inside the ASGI application.

``STALL_TRACE_HEAP=1`` (diagnosis only: slow, and it keeps the garbage) adds before each full
collection the objects of each generation by type (``heap``), and after each collection what it
found unreachable by type (``garbage``, ``gc.DEBUG_SAVEALL``).
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import asyncio.events
import gc
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def install(out: Any) -> None:
    """Installs the hooks; events are written to the file ``out``."""
    gc_started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            if info["generation"] == 2 and os.environ.get("STALL_TRACE_HEAP"):  # diagnosis only: slow
                import collections
                objs = gc.get_objects(2)
                kinds = collections.Counter(type(o).__qualname__ for o in objs).most_common(12)
                out.write(f"heap {time.time():.4f} 0 young={len(gc.get_objects(0)) + len(gc.get_objects(1))} "
                          f"old={len(objs)} {kinds}\n")
                del objs
            gc_started[0] = time.perf_counter()
            return
        took = time.perf_counter() - gc_started[0]
        if gc.garbage and os.environ.get("STALL_TRACE_HEAP"):
            import collections
            kinds = collections.Counter(type(o).__qualname__ for o in gc.garbage).most_common(14)
            freeing = time.perf_counter()
            gc.garbage.clear()
            out.write(f"garbage {time.time():.4f} {1000 * (time.perf_counter() - freeing):.1f} {kinds}\n")
        if took >= 0.001:
            out.write(f"gc {time.time() - took:.4f} {1000 * took:.1f} {info['generation']} {info['collected']} "
                      f"frozen={gc.get_freeze_count()}\n")

    gc.callbacks.append(on_gc)
    if os.environ.get("STALL_TRACE_HEAP"):
        gc.set_debug(gc.DEBUG_SAVEALL)

    run = asyncio.events.Handle._run
    current: dict[str, Any] = {"slowest": 0.0, "name": "", "n": 0}

    def timed_run(handle: Any) -> None:
        started = time.perf_counter()
        run(handle)
        took = time.perf_counter() - started
        current["n"] += 1
        if took > current["slowest"]:
            current["slowest"], current["name"] = took, _name(handle)

    run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]

    def timed_run_once(loop: Any) -> None:
        selector = loop._selector
        if not getattr(selector, "_traced", False):
            select = selector.select

            def timed_select(timeout: float | None = None) -> Any:
                started = time.perf_counter()
                events = select(timeout)
                late = time.perf_counter() - started - (timeout or 0.0)
                if timeout is not None and late >= 0.01:
                    out.write(f"poll {time.time() - late:.4f} {1000 * late:.1f}\n")
                return events

            selector.select, selector._traced = timed_select, True
        current.update(slowest=0.0, name="", n=0)
        wall, cpu, proc = time.perf_counter(), time.thread_time(), time.process_time()
        run_once(loop)
        wall = time.perf_counter() - wall
        if wall >= 0.01:
            out.write(f"turn {time.time() - wall:.4f} {1000 * wall:.1f} {1000 * (time.thread_time() - cpu):.1f} "
                      f"{1000 * (time.process_time() - proc):.1f} {current['n']} "
                      f"{1000 * current['slowest']:.1f}ms:{current['name']}\n")

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
    asyncio.base_events.BaseEventLoop._run_once = timed_run_once  # type: ignore[attr-defined]

    from gateway import app as app_module
    from gateway import request_limits

    received = request_limits.LimitedH11Protocol.data_received
    arrived = [0.0]  # the probe's last request: one connection, one request at a time

    def traced_received(self: Any, data: bytes) -> None:
        if data.startswith(b"GET /healthz"):
            arrived[0] = time.perf_counter()
        received(self, data)

    request_limits.LimitedH11Protocol.data_received = traced_received  # type: ignore[method-assign]
    from starlette.routing import Route

    operations_routes = app_module.operations_routes

    def traced_operations(*args: Any, **kwargs: Any) -> list[Route]:
        """The app factory's operations routes, ``/healthz`` traced."""
        return [Route(r.path, traced(r.endpoint)) if r.path == "/healthz" else r
                for r in operations_routes(*args, **kwargs)]

    app_module.operations_routes = traced_operations  # type: ignore[assignment]

    def traced(health: Any) -> Any:
        async def traced_health(request: Any) -> Any:
            return await _traced_health(health, request)
        return traced_health

    async def _traced_health(health: Any, request: Any) -> Any:
        store = request.app.state.registry.store
        # no connection free for the probe's read: every reader taken (or, without readers, the lock)
        locked = store._idle.empty() if store._all_readers else store._lock.locked()
        started = time.perf_counter()
        response = await health(request)
        done = time.perf_counter()
        since = min(arrived[0] or started, started)
        out.write(f"probe {time.time() - (done - since):.4f} {1000 * (done - since):.1f} "
                  f"{1000 * (done - started):.1f} store-busy={locked}\n")
        return response


def _name(handle: Any) -> str:
    callback = handle._callback
    task = getattr(callback, "__self__", None)
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    if coro is None:
        return str(getattr(callback, "__qualname__", type(callback).__name__)).replace(" ", "_")
    where = []
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        where.append(f"{coro.cr_code.co_name}:{coro.cr_frame.f_lineno}")
        coro = coro.cr_await
    return ">".join(where[-3:]) or "done"


def smoke() -> None:
    """This recorder around ``serve`` over an empty data directory: a few ``/healthz`` probes and
    one GraphQL query, then the events of the log by kind and the probes' share inside ASGI."""
    import httpx

    with tempfile.TemporaryDirectory(prefix="xreg-stall-trace-") as tmp, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        log = Path(tmp) / "trace.txt"
        server = subprocess.Popen([sys.executable, __file__, str(log), "serve", "--port", str(port)], cwd=REPO,
                                  env={**os.environ, "XREG_DATA_DIR": tmp, "XREG_LOG_LEVEL": "warning"},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                while True:  # until it serves (a busy machine starts it slowly) or exits
                    try:
                        client.get("/healthz")
                        break
                    except httpx.TransportError:
                        if server.poll() is not None:
                            raise SystemExit("the gateway did not start") from None
                        time.sleep(0.05)
                for _ in range(5):
                    assert client.get("/healthz").status_code == 200
                answer = client.post("/graphql", json={"query": "{ registry { messagegroups { totalCount } } }"})
                assert answer.status_code == 200, answer.text[:300]
        finally:
            server.terminate()
            server.wait(30)
        events = [line.split() for line in log.read_text().splitlines()]
    probes = [(float(e[2]), float(e[3])) for e in events if e[0] == "probe"]
    kinds = {kind: sum(e[0] == kind for e in events) for kind in ("probe", "gc", "turn", "poll")}
    print("events in the log: " + ", ".join(f"{kind} {n}" for kind, n in kinds.items()))
    if not probes:
        raise SystemExit("no probe was traced")
    print(f"summary: {len(probes)} probes traced; their time inside the ASGI application "
          f"{sum(a for _, a in probes) / sum(t for t, _ in probes):.2f}× their whole time")


def main() -> None:
    if sys.argv[1:] == ["--smoke"]:
        smoke()
        return
    out = open(sys.argv[1], "a", buffering=1)
    install(out)
    sys.argv = ["xreg-gateway", *sys.argv[2:]]
    from gateway.cli import main as cli_main
    cli_main()


if __name__ == "__main__":
    main()
