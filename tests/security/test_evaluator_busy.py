"""Every evaluator worker busy: at most ``XREG_EVAL_QUEUE_SIZE`` evaluations wait for one; the
next is refused at once with ``busy`` — on the API ``server_busy`` (503, ``Retry-After``), in
GraphQL ``extensions.code`` ``server_busy`` — never queued without bound, never stalled.

The workers are held by an event the test sets (their real processes answer once it is set);
the tests count admissions and refusals, never time."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.graphql.conftest import make_settings, open_registry, serve_asgi
from tests.security.conftest import VALIDATE, store_message
from xreg.formats import Evaluator, Limits, Refused, configure, default
from xreg.formats import evaluator as evaluator_module

SCHEMA_URL = "/registry/schemagroups/g/schemas/s/versions/1"


@pytest.fixture
def held(monkeypatch) -> Iterator[threading.Event]:
    """Workers answer only once the returned event is set (set at the end in any case)."""
    release = threading.Event()
    call = evaluator_module._Worker.call

    def held_call(self: Any, request: bytes, wall_seconds: float) -> bytes:
        release.wait()
        return call(self, request, wall_seconds)

    monkeypatch.setattr(evaluator_module._Worker, "call", held_call)
    try:
        yield release
    finally:
        release.set()


@pytest.fixture
def small() -> Iterator[Evaluator]:
    ev = Evaluator(Limits(workers=1, queue_size=2, queue_seconds=600.0, wall_seconds=7.0))
    yield ev
    ev.close()


async def test_a_full_line_refuses_at_once_and_admits_again_once_work_ends(small, held):
    work = [asyncio.create_task(small.validate("JsonSchema/draft-07", {"maxLength": n})) for n in range(3)]
    await asyncio.sleep(0)  # one loop turn: each task is admitted, then waits on its thread
    assert small.admitted == 3  # one at work (held), two waiting: the line is full
    fourth = asyncio.create_task(small.validate("JsonSchema/draft-07", {"maxLength": 99}))
    await asyncio.sleep(0)
    assert fourth.done(), "the fourth evaluation waits: the line is not bounded"  # refused at once
    refused = fourth.exception()
    assert isinstance(refused, Refused)
    assert refused.kind == "busy" and "XREG_EVAL_QUEUE_SIZE" in refused.detail
    assert refused.retry_after == 7  # within one evaluation's wall bound a worker is free
    assert small.refused == 1 and small.admitted == 3
    held.set()
    assert all(r.valid for r in await asyncio.gather(*work))
    assert small.admitted == 0
    assert (await small.validate("JsonSchema/draft-07", {"maxLength": 99})).valid
    assert small.refused == 1


async def test_a_caller_that_stops_waiting_keeps_its_place_counted_until_the_work_ends(small, held):
    work = [asyncio.create_task(small.validate("JsonSchema/draft-07", {"maxLength": n})) for n in range(3)]
    await asyncio.sleep(0)
    for task in work:
        task.cancel()
    await asyncio.gather(*work, return_exceptions=True)
    assert small.admitted == 3  # the threads still hold the worker and its line
    fourth = asyncio.create_task(small.validate("JsonSchema/draft-07", {"maxLength": 99}))
    await asyncio.sleep(0)
    assert fourth.done() and isinstance(fourth.exception(), Refused)
    held.set()
    small._threads.shutdown(wait=True)  # the abandoned evaluations end on their threads
    assert small.admitted == 0


@pytest.fixture
def restore_default() -> Iterator[None]:
    before = default().limits
    yield
    configure(before)


async def test_the_service_answers_server_busy(tmp_path: Path, held, restore_default):
    settings = make_settings(tmp_path, eval_workers=1, eval_queue_size=0, eval_wall_seconds=3.0,
                             eval_queue_seconds=5.0)  # an unbounded line would fail here, not stall
    async with open_registry(tmp_path / "r.db") as reg, serve_asgi(reg, settings) as gql:
        gql.as_writer()
        xid = await store_message(gql, "m", "JsonSchema/draft-07", {"type": "string"})  # no evaluation
        evaluator = default()
        holder = asyncio.create_task(evaluator.validate("JsonSchema/draft-07", {"maxLength": 1}))
        await asyncio.sleep(0)
        assert evaluator.admitted == 1  # the only worker is held; no one may wait

        put = await gql.client.put(SCHEMA_URL, content=json.dumps({"type": "object"}), headers={
            **gql.headers, "xRegistry-format": "JsonSchema/draft-07", "Content-Type": "application/json"})
        assert put.status_code == 503, put.text
        assert put.headers["retry-after"] == "3"
        problem = put.json()
        assert problem["type"].endswith("#server_busy") and problem["status"] == 503
        assert "XREG_EVAL_QUEUE_SIZE" in problem["detail"]
        assert evaluator.refused == 1

        response = await gql.post(VALIDATE, {"xid": xid, "data": "x"})
        error = response.json()["errors"][0]
        assert error["extensions"]["code"] == "server_busy" and error["extensions"]["retryAfter"] == 3
        # a failing non-null root field runs again, one field at a time (resolvers/execution.py)
        assert evaluator.refused in (2, 3) and evaluator.admitted == 1

        held.set()
        assert (await holder).valid
        put = await gql.client.put(SCHEMA_URL, content=json.dumps({"type": "object"}), headers={
            **gql.headers, "xRegistry-format": "JsonSchema/draft-07", "Content-Type": "application/json"})
        assert put.status_code in (200, 201), put.text
        assert (await gql.data(VALIDATE, xid=xid, data="x"))["validateMessage"]["valid"] is True
