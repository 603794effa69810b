"""Over-long request targets and header sections are answered by the gateway, over a real
socket, as JSON problems (414 ``uri_too_long``, 431 ``header_fields_too_large``; 400
``bad_request`` for a request that is not HTTP) — both just over the configured limits (the
middleware, with the request id) and far over them (the connection's own bound) — and change
nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from gateway.request_limits import head_limit, server_options
from tests.corpus import REPO
from tests.http.support import WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer, bound_socket

LIMITS = {"max_url_bytes": 1024, "max_header_bytes": 2048, "max_header_count": 20}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("oversize"), **LIMITS)
    with LiveServer(create_app(settings), **server_options(settings)) as server:
        server.settings = settings
        yield server


@pytest.fixture
def http(live):
    with httpx.Client(base_url=live.url, headers=bearer(WRITE_KEY), timeout=30) as client:
        yield client


def assert_problem(response: httpx.Response, status: int, kind: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["type"].endswith("#" + kind) and body["status"] == status and body["title"], body
    return body


def revision(http: httpx.Client) -> int:
    return http.get("/healthz").json()["revision"]


def raw_exchange(port: int, request: bytes, *, half_close: bool = True) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` on a connection of its own (then end the sending side when
    ``half_close``); the status, headers and body answered, read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and stopped reading before all was sent
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return int(status_line.split(" ")[1]), headers, body


def test_a_target_over_the_limit_is_414_with_the_request_id(http):
    before = revision(http)
    for path in ("/registry?filter=" + "name=x," * 200, "/registry/messagegroups/" + "g" * 1100,
                 "/not/an/api/" + "x" * 1100):
        body = assert_problem(http.get(path, headers={"X-Request-Id": "long-1"}), 414, "uri_too_long")
        assert body["instance"] == "long-1" and len(body["subject"]) <= 131 and body["args"]["limit"] == "1024"
    refused = http.put("/registry/messagegroups/" + "g" * 1100, json={"name": "never"})
    assert_problem(refused, 414, "uri_too_long")
    assert revision(http) == before
    # just within the limit: served
    assert http.get("/registry/messagegroups?filter=" + "x" * 900).status_code == 200


def test_too_many_or_too_large_header_fields_are_431(http):
    before = revision(http)
    many = {f"x-extra-{i}": "1" for i in range(25)}
    assert_problem(http.get("/registry", headers=many), 431, "header_fields_too_large")
    assert_problem(http.post("/graphql", json={"query": "{ registries { id } }"}, headers={"x-big": "v" * 2100}),
                   431, "header_fields_too_large")
    refused = http.put("/registry/messagegroups/g", json={"name": "never"}, headers={"x-big": "v" * 2100})
    assert_problem(refused, 431, "header_fields_too_large")
    assert revision(http) == before
    assert http.get("/registry", headers={f"x-extra-{i}": "1" for i in range(10)}).status_code == 200


def test_a_head_beyond_the_connection_bound_is_refused_as_json(live, http):
    before = revision(http)
    bound = head_limit(live.settings)
    status, headers, body = raw_exchange(live.port, b"GET /registry?q=" + b"a" * (3 * bound) + b" HTTP/1.1\r\n\r\n")
    assert status == 414 and headers["content-type"].startswith("application/json")
    assert httpx.Response(status, content=body).json()["type"].endswith("#uri_too_long")
    fields = b"".join(b"x-field-%d: %s\r\n" % (i, b"v" * 60) for i in range(bound // 50))
    status, headers, body = raw_exchange(live.port, b"PUT /registry/messagegroups/g HTTP/1.1\r\nhost: x\r\n" + fields
                                         + b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
    assert status == 431 and httpx.Response(status, content=body).json()["type"].endswith("#header_fields_too_large")
    assert revision(http) == before
    assert http.get("/registry").status_code == 200  # the server carries on


def test_a_request_that_is_not_http_is_a_json_400(live):
    status, headers, body = raw_exchange(live.port, b"NOT HTTP AT ALL\r\n\r\n")
    assert status == 400 and headers["content-type"].startswith("application/json")
    assert httpx.Response(status, content=body).json()["type"].endswith("#bad_request")


def test_a_large_body_sent_with_its_head_is_not_mistaken_for_a_long_head(live, http):
    document = {"name": "big", "description": "d" * (4 * head_limit(live.settings))}
    body = httpx.Request("PUT", "/", json=document).content
    request = (b"PUT /registry/messagegroups/big HTTP/1.1\r\nhost: x\r\nauthorization: Bearer %s\r\n"
               b"content-type: application/json\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
               % (WRITE_KEY.encode(), len(body), body))
    status, _, _ = raw_exchange(live.port, request, half_close=False)
    assert status == 201
    assert http.get("/registry/messagegroups/big").json()["description"] == document["description"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_leaves_the_head_limits_to_the_gateway(tmp_path: Path, workers: str):
    """``xreg-gateway serve`` runs uvicorn with the gateway's bound on request heads (one
    process, or worker processes that build the app themselves)."""
    with bound_socket() as sock:
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("XREG_")}
    env.update({"XREG_DATA_DIR": str(tmp_path), "XREG_MAX_URL_BYTES": "1024", "XREG_MAX_HEADER_BYTES": "2048",
                "XREG_MAX_HEADER_COUNT": "20", "XREG_LOG_FORMAT": "text"})
    with open(tmp_path / "serve.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--port", str(port),
                                 "--workers", workers], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
        assert_problem(httpx.get(url + "/registry?q=" + "a" * 1100, trust_env=False), 414, "uri_too_long")
        status, headers, body = raw_exchange(port, b"GET /registry?q=" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n")
        assert status == 414 and headers["content-type"].startswith("application/json")
        assert httpx.Response(status, content=body).json()["type"].endswith("#uri_too_long")
    finally:
        proc.terminate()
        proc.wait(60)
