"""``xreg-gateway serve`` configures the gateway's own loggers (``xreg.*``), not only uvicorn's,
at the level of ``XREG_LOG_LEVEL``; credentials in the store URL never reach a log line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from gateway.logs import redact_url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_and_stop(tmp_path: Path, **env: str) -> str:
    """Run ``serve`` in a subprocess, make one request, stop it; return what it logged."""
    port = _free_port()
    environ = {**os.environ, "XREG_DATA_DIR": str(tmp_path), **env}
    environ.pop("XREG_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--port", str(port)],
                            env=environ, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    return stderr


def test_serve_logs_the_gateways_own_messages_at_the_configured_level(tmp_path: Path) -> None:
    logged = _serve_and_stop(tmp_path)
    ours = [line for line in logged.splitlines() if " xreg.gateway: " in line]
    assert len(ours) == 1 and "INFO" in ours[0] and "registry 'xregistry' open on sqlite:///" in ours[0]
    assert "GET /healthz" in logged  # uvicorn's access log, same format
    quiet = _serve_and_stop(tmp_path, XREG_LOG_LEVEL="warning")
    assert " xreg.gateway: " not in quiet and "GET /healthz" not in quiet


def test_store_urls_are_logged_without_credentials() -> None:
    url = "mongodb://gateway:s3cr3t@db-0.example:27017,db-1.example/xreg?replicaSet=rs0&authSource=admin"
    assert redact_url(url) == "mongodb://db-0.example:27017,db-1.example/xreg"
    assert redact_url("sqlite:///data/registry.db") == "sqlite:///data/registry.db"
    assert redact_url("redis://:pw@cache:6379/0") == "redis://cache:6379/0"
