"""``xreg-gateway serve`` as a real process: SIGTERM drains requests in flight and closes the
store cleanly (exit status 0, no SQLite WAL left), and ``--workers N`` serves from N processes
whose metrics ``/metrics`` adds up, with workers that died marked dead."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import yaml

from tests.federation.servers import GatewayServer
from tests.support.observing import parse_metrics, value

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.Popen, str]:
    """``serve`` in a process of its own, once it answers ``/healthz``; its stderr goes to a file."""
    port = _free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("XREG_", "PROMETHEUS_"))}
    environ.update({"XREG_DATA_DIR": str(tmp_path / "data"), "XREG_LOG_FORMAT": "text", **env})
    with open(tmp_path / "serve.log", "w") as log:  # the process keeps its own descriptor
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), *args],
                                env=environ, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1, trust_env=False).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("serve did not start: " + (tmp_path / "serve.log").read_text())
        time.sleep(0.1)


def _refused(url: str) -> bool:
    """No new request is served: the connection is refused, or (a connection the kernel queued
    just as the listener closed) reset or closed before any answer."""
    try:
        httpx.get(url + "/healthz", timeout=1, trust_env=False)
    except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError):
        return True
    return False


def test_sigterm_finishes_requests_in_flight_refuses_new_ones_and_closes_the_store(tmp_path: Path) -> None:
    (tmp_path / "remote").mkdir()
    remote = GatewayServer("slow", ["contoso-erp-jsons07.xreg.json"], tmp_path / "remote").start()
    try:
        settings = {"registries": [{"id": "slow", "kind": "xregistry", "url": remote.base_url, "cache_ttl": 0,
                                    "retries": 0, "timeouts": {"connect": 2, "read": 20, "total": 30}}],
                    "config_watch_seconds": 0}
        (tmp_path / "gateway.yaml").write_text(yaml.safe_dump(settings))
        proc, url = _serve(tmp_path, "--config", str(tmp_path / "gateway.yaml"), XREG_SHUTDOWN_GRACE_SECONDS="30")
        try:
            remote.wrapper.clear()
            remote.wrapper.hold()  # the request stays in flight until released
            answer: dict[str, httpx.Response] = {}
            query = '{ registry(id: "slow") { messagegroups(first: 1) { nodes { xid } } } }'
            worker = threading.Thread(target=lambda: answer.setdefault("r", httpx.post(
                url + "/graphql", json={"query": query}, timeout=60, trust_env=False)))
            worker.start()
            deadline = time.monotonic() + 60
            while not remote.wrapper.log:  # the request is in flight: the gateway waits for the remote
                assert time.monotonic() < deadline, "the request never reached the remote"
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 30
            while not _refused(url):
                assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
                time.sleep(0.1)
            assert worker.is_alive() and remote.wrapper.held == 1, "the request ended before new connections were refused"
            remote.wrapper.release()
            worker.join(60)
            response = answer["r"]
            assert response.status_code == 200, response.text
            assert response.json()["data"]["registry"]["messagegroups"]["nodes"][0]["xid"].startswith("/messagegroups/")
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    finally:
        remote.stop()
    logged = (tmp_path / "serve.log").read_text()
    assert "registry 'xregistry' closed" in logged, logged
    data = tmp_path / "data"
    assert (data / "registry.db").is_file() and not (data / "registry.db-wal").exists()  # checkpointed on close


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _metrics_dir(pid: int) -> Path | None:
    for child in _children(pid):
        try:
            environ = (Path("/proc") / str(child) / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item.startswith(b"PROMETHEUS_MULTIPROC_DIR="):
                return Path(item.split(b"=", 1)[1].decode())
    return None


def _pids_in(directory: Path, prefix: str) -> set[int]:
    return {int(p.stem.rpartition("_")[2]) for p in directory.glob(prefix + "*.db")}


def test_workers_serve_together_and_metrics_add_up_across_them(tmp_path: Path) -> None:
    proc, url = _serve(tmp_path, "--workers", "2")
    try:
        directory = _metrics_dir(proc.pid)
        assert directory is not None and directory.is_dir()
        deadline = time.monotonic() + 90
        while len(_pids_in(directory, "gauge_live")) < 2:  # both workers started (each writes its gauges)
            assert time.monotonic() < deadline, "the second worker did not start"
            time.sleep(0.2)
        workers = _pids_in(directory, "gauge_live")
        for _ in range(20):  # a connection each: the kernel spreads them over the workers
            assert httpx.get(url + "/registry/", trust_env=False, headers={"Connection": "close"}).status_code == 200
        counts = set()
        for _ in range(6):
            samples = parse_metrics(httpx.get(url + "/metrics", trust_env=False, headers={"Connection": "close"}).text)
            counts.add(value(samples, "xreg_http_requests_total", route="/registry", method="GET", status="200"))
            assert value(samples, "xreg_registry_revision") >= 1
        assert counts == {20.0}, "each scrape sees every worker's requests"
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)  # uvicorn starts another worker; the dead one's gauges must go
        deadline = time.monotonic() + 90
        while True:
            try:
                samples = parse_metrics(httpx.get(url + "/metrics", trust_env=False, timeout=5).text)
            except httpx.TransportError:
                samples = {}
            if victim not in _pids_in(directory, "gauge_live") and samples:
                break
            assert time.monotonic() < deadline, "the dead worker's gauges were never marked dead"
            time.sleep(0.3)
        assert value(samples, "xreg_http_requests_total", route="/registry", method="GET", status="200") == 20
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert not directory.exists(), "the metrics directory the CLI made is left behind"
