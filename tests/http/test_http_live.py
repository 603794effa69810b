"""The API over the wire: a real uvicorn server on 127.0.0.1, real TCP clients, concurrent writers."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx

from gateway.app import create_app
from tests.http.support import SEED, WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer


def client(server) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=bearer(WRITE_KEY), timeout=30)


def test_reads_and_writes_over_tcp(live):
    with client(live) as c:
        assert c.post("/registry", json=SEED).status_code == 200
        root = c.get("/registry/")
        assert root.status_code == 200 and root.json()["messagegroupscount"] == 3
        assert "rel=xregistry-root" in root.headers["link"]
        doc = c.get("/registry/schemagroups/sg1/schemas/s2")
        assert doc.content == b"\x00\x01\x02" and doc.headers["xregistry-schemaid"] == "s2"
        created = c.put("/registry/schemagroups/sg1/schemas/s9", content=b"syntax = \"proto3\";",
                        headers={"Content-Type": "text/plain", "xRegistry-format": "Protobuf/3"})
        assert created.status_code == 201 and created.content == b'syntax = "proto3";'
        assert c.get("/.well-known/xregistry").json()["registries"] == ["http://gw.test/registry"]
        spec = c.get("/registry/openapi.json").json()
        assert spec["openapi"].startswith("3.") and "/schemagroups/{schemagroupid}/schemas/{schemaid}$details" in spec["paths"]


def test_a_streamed_body_over_the_limit_is_cut_off(tmp_path):
    with LiveServer(create_app(make_settings(tmp_path, max_body_bytes=4096))) as server, client(server) as c:
        def chunks():
            yield b'{"description": "'
            for _ in range(100):
                yield b"x" * 1000
            yield b'"}'

        response = c.put("/registry/messagegroups/g", content=chunks(), headers={"Content-Type": "application/json"})
        assert response.status_code == 413 and response.json()["type"].endswith("#payload_too_large")
        assert c.get("/registry/messagegroups/g").status_code == 404


def test_concurrent_writers_all_succeed_and_each_counts(live):
    with client(live) as c:
        assert c.put("/registry/messagegroups/shared", json={"name": "start"}).status_code == 201

    def write(i: int) -> int:
        with client(live) as mine:
            return mine.patch("/registry/messagegroups/shared", json={f"x{i}": i}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(write, range(16)))
    assert statuses == [200] * 16
    with client(live) as c:
        group = c.get("/registry/messagegroups/shared").json()
    assert group["epoch"] == 17 and all(group[f"x{i}"] == i for i in range(16))


def test_paging_while_another_client_inserts_and_deletes(live):
    with client(live) as c:
        stable = [f"s{i:03d}" for i in range(40)]
        doomed = [f"t{i:03d}" for i in range(40)]
        assert c.post("/registry/messagegroups", json={g: {} for g in stable + doomed}).status_code == 200
        stop, wrote = threading.Event(), threading.Event()
        writes = []

        def churn() -> None:
            with client(live) as w:
                n = 0
                while not stop.is_set():
                    w.post("/registry/messagegroups", json={f"n{n:04d}": {}})
                    if n < len(doomed):
                        w.delete(f"/registry/messagegroups/{doomed[n]}")
                    writes.append(n)
                    wrote.set()
                    n += 1

        writer = threading.Thread(target=churn)
        writer.start()
        try:
            seen, url = [], "/registry/messagegroups?limit=9"
            while url:
                assert wrote.wait(60), "the writer stopped"  # it wrote since the last page (the bound ends a hang)
                wrote.clear()
                response = c.get(url)
                assert response.status_code == 200
                seen += list(response.json())
                nxt = re.search(r"<([^>]*)>;rel=next", ", ".join(response.headers.get_list("link")))
                url = nxt.group(1).replace("http://gw.test", "") if nxt else None
        finally:
            stop.set()
            writer.join()
    assert len(writes) > 3, "the writer ran between the pages"
    assert len(seen) == len(set(seen)) and seen == sorted(seen, key=str.lower)
    assert [g for g in seen if g.startswith("s")] == stable
