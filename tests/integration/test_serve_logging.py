"""``xreg-gateway serve`` configures the gateway's own loggers (``xreg.*``), not only uvicorn's,
at the level of ``XREG_LOG_LEVEL``, as plain text or JSON (``XREG_LOG_FORMAT``; JSON when
standard error is not a terminal); credentials in the store URL never reach a log line."""

from __future__ import annotations

import json
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
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        httpx.get(f"http://127.0.0.1:{port}/registry/", headers={"X-Request-Id": "probe-1"}, timeout=5)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    return stderr


def test_serve_logs_the_gateways_own_messages_at_the_configured_level(tmp_path: Path) -> None:
    logged = _serve_and_stop(tmp_path, XREG_LOG_FORMAT="text")
    ours = [line for line in logged.splitlines() if " xreg.gateway: " in line]
    assert len(ours) == 2 and "INFO" in ours[0] and "registry 'xregistry' open on sqlite:///" in ours[0]
    assert "registry 'xregistry' closed" in ours[1]
    requests = [line for line in logged.splitlines() if " xreg.access: " in line]  # one line per request
    assert any("GET /registry/ 200" in line and "id=probe-1" in line for line in requests), logged
    assert not any('"GET /registry/ HTTP/1.1"' in line for line in logged.splitlines())  # not uvicorn's as well
    quiet = _serve_and_stop(tmp_path, XREG_LOG_LEVEL="warning", XREG_LOG_FORMAT="text")
    assert " xreg.gateway: " not in quiet and "GET /healthz" not in quiet


def test_serve_logs_json_lines_when_not_on_a_terminal(tmp_path: Path) -> None:
    logged = _serve_and_stop(tmp_path)  # standard error is a pipe: auto means JSON
    entries = [json.loads(line) for line in logged.splitlines() if line.strip()]
    assert any(e["logger"] == "xreg.gateway" and "open on sqlite:///" in e["message"] for e in entries)
    probe = [e for e in entries if e.get("request_id") == "probe-1"]
    assert len(probe) == 1 and probe[0]["logger"] == "xreg.access" and probe[0]["route"] == "/registry"
    assert probe[0]["status"] == 200 and probe[0]["caller"] == "anonymous" and probe[0]["duration_ms"] > 0


def test_store_urls_are_logged_without_credentials() -> None:
    url = "mongodb://gateway:s3cr3t@db-0.example:27017,db-1.example/xreg?replicaSet=rs0&authSource=admin"
    assert redact_url(url) == "mongodb://db-0.example:27017,db-1.example/xreg"
    assert redact_url("sqlite:///data/registry.db") == "sqlite:///data/registry.db"
    assert redact_url("redis://:pw@cache:6379/0") == "redis://cache:6379/0"
