"""Loop-lag benchmark: how long the event loop runs without polling its sockets while heavy
GraphQL queries are at work, measured inside the gateway process as CPU time of the loop's
thread per loop turn (so that other processes on a busy machine count for little).

The gateway (the 117-feed corpus, admission control on) is served by uvicorn in this process;
a client process fires ``--clients`` heavy queries (``bench_load.py``'s) at once. Printed for
lists completed in one stretch (``XREG_GRAPHQL_PACING_SLICE_MS=0``, 4 GraphQL executions at
once, as before pacing) and for the defaults: the loop turns, the longest ones (CPU ms of the
loop's thread), how many took more than 20 / 50 ms, and which steps (tasks, with the place they
suspended next) ran longest.

``--smoke``: a sample of the corpus (3 feeds), 4 clients — every step, in seconds.

Usage: python bench/bench_loop_lag.py [--clients 200] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.base_events
import asyncio.events
import collections
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
sys.path.insert(0, str(REPO / "bench"))

import uvicorn  # noqa: E402
from bench_load import CORPUS, HEAVY  # noqa: E402

from tests.corpus import corpus_sample  # noqa: E402

CLIENT = """
import asyncio, sys, httpx
async def main(port, clients, query):
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=600,
                                 limits=httpx.Limits(max_connections=clients + 10)) as c:
        await asyncio.gather(*(c.post("/graphql", json={"query": query}) for _ in range(clients)))
asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
"""


class TurnMeter:
    """Thread CPU of every loop turn, and of the longest callbacks (named by their task's step)."""

    def __init__(self) -> None:
        self.turns: list[float] = []
        self.steps: collections.Counter[str] = collections.Counter()
        self.step_cpu: dict[str, float] = collections.defaultdict(float)
        self.on = False

    def install(self) -> None:
        run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]
        run = asyncio.events.Handle._run
        meter = self

        def timed_run_once(loop: Any) -> None:
            started = time.thread_time()
            run_once(loop)
            if meter.on:
                meter.turns.append(time.thread_time() - started)

        def timed_run(handle: Any) -> None:
            started = time.thread_time()
            run(handle)
            took = time.thread_time() - started
            if meter.on and took > 0.005:
                name = meter.name_of(handle)
                meter.steps[name] += 1
                meter.step_cpu[name] += took

        asyncio.base_events.BaseEventLoop._run_once = timed_run_once  # type: ignore[attr-defined]
        asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]

    @staticmethod
    def name_of(handle: Any) -> str:
        callback = handle._callback
        task = getattr(callback, "__self__", None)
        coro = task.get_coro() if isinstance(task, asyncio.Task) else None
        if coro is None:
            return getattr(callback, "__qualname__", repr(callback))
        where = []
        while coro is not None and getattr(coro, "cr_frame", None) is not None:
            where.append(f"{coro.cr_code.co_name}:{coro.cr_frame.f_lineno}")
            coro = coro.cr_await
        return f"{getattr(task.get_coro(), '__qualname__', '?')} until {' > '.join(where[-3:]) or 'done'}"


async def run_mode(data_dir: Path, env: dict[str, str], clients: int, meter: TurnMeter) -> dict[str, Any]:
    os.environ.update({"XREG_DATA_DIR": str(data_dir), "XREG_LOG_LEVEL": "warning", **env})
    from gateway.app import create_app
    from xreg.config import load_settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(create_app(load_settings()), host="127.0.0.1", port=port,
                                           log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # until it serves, or its failure is raised here
        if serving.done():
            await serving
            raise SystemExit("the gateway did not start")
        await asyncio.sleep(0.05)
    warm = await asyncio.create_subprocess_exec(sys.executable, "-c", CLIENT, str(port), "1", HEAVY)
    await warm.wait()
    meter.turns.clear()
    meter.steps.clear()
    meter.step_cpu.clear()
    meter.on = True
    client = await asyncio.create_subprocess_exec(sys.executable, "-c", CLIENT, str(port), str(clients), HEAVY)
    await client.wait()
    meter.on = False
    server.should_exit = True
    await serving
    turns = sorted(meter.turns, reverse=True)
    steps = sorted(meter.step_cpu.items(), key=lambda kv: -kv[1])[:6]
    return {"turns": len(turns), "longest (CPU ms)": " ".join(f"{1000 * t:.0f}" for t in turns[:8]),
            "longest turn (CPU ms)": 1000 * turns[0] if turns else float("nan"),
            "turns > 20 ms": sum(t > 0.02 for t in turns), "turns > 50 ms": sum(t > 0.05 for t in turns),
            "steps > 5 ms": [f"{1000 * cpu:6.0f} ms in {meter.steps[name]:4d}: {name}" for name, cpu in steps]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="the smallest run of every step (tests/bench)")
    args = parser.parse_args()
    if args.smoke:
        args.clients = 4
    meter = TurnMeter()
    meter.install()
    modes = {"in one stretch, 4 at once": {"XREG_GRAPHQL_PACING_SLICE_MS": "0",
                                            "XREG_ADMISSION_GRAPHQL_CONCURRENCY": "4"},
             "defaults (paced)": {"XREG_GRAPHQL_PACING_SLICE_MS": "4", "XREG_ADMISSION_GRAPHQL_CONCURRENCY": "2"}}
    with tempfile.TemporaryDirectory(prefix="xreg-bench-lag-") as tmp:
        data = Path(tmp)
        corpus = corpus_sample(data / "sample.json") if args.smoke else CORPUS
        subprocess.run([sys.executable, "-m", "gateway.cli", "import", str(corpus)], cwd=REPO, check=True,
                       env={**os.environ, "XREG_DATA_DIR": str(data)}, stdout=subprocess.DEVNULL)
        rows = {}
        for title, env in modes.items():
            row = rows[title] = asyncio.run(run_mode(data, env, args.clients, meter))
            print(f"{title}: {args.clients} heavy queries at once")
            for key, value in row.items():
                if isinstance(value, list):
                    print(f"  {key}:")
                    for line in value:
                        print(f"    {line}")
                else:
                    print(f"  {key:<18} {value:.1f}" if isinstance(value, float) else f"  {key:<18} {value}")
    stretch, paced = rows.values()
    print(f"summary: defaults (paced) against in one stretch: longest loop turn "
          f"{paced['longest turn (CPU ms)'] / stretch['longest turn (CPU ms)']:.2f}×, "
          f"turns > 20 ms {paced['turns > 20 ms']} against {stretch['turns > 20 ms']}")


if __name__ == "__main__":
    main()
