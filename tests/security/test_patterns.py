"""Regular expressions in stored schemas cannot stall the gateway: JSON Schema patterns match with
RE2 (linear time: the ReDoS-shaped ``^(a+)+$`` against ``aaaa…a!`` answers at once, no worker
cut off), and a pattern evaluated by a library's backtracking engine (JSON Structure) runs in a
worker that is cut off at its deadline while the event loop keeps serving ``/healthz``."""

from __future__ import annotations

import asyncio

import pytest

from tests.graphql.conftest import make_settings, open_registry, serve_asgi
from tests.security.conftest import evaluator_kills, probe_while, store_message, validate_anonymously

REDOS = "^(a+)+$"


async def test_a_redos_pattern_is_matched_in_linear_time(gateway):
    xid = await store_message(gateway, "redos", "JsonSchema/draft-07", {"type": "string", "pattern": REDOS})
    kills = evaluator_kills()
    result = await validate_anonymously(gateway, xid, "a" * 5000 + "!")
    assert result["validated"] is True and result["valid"] is False
    assert [v["path"] for v in result["violations"]] == ["/"]
    assert (await validate_anonymously(gateway, xid, "a" * 5000))["valid"] is True
    assert evaluator_kills() == kills  # matched, not cut off


async def test_redos_shaped_pattern_properties_are_matched_in_linear_time(gateway):
    schema = {"type": "object", "patternProperties": {REDOS: {"type": "integer"}}, "additionalProperties": False}
    xid = await store_message(gateway, "redos-keys", "JsonSchema/draft-07", schema)
    kills = evaluator_kills()
    result = await validate_anonymously(gateway, xid, {"a" * 5000 + "!": 1, "aaa": "x"})
    assert result["validated"] is True
    assert {v["path"] for v in result["violations"]} == {"/", "/aaa"}
    assert evaluator_kills() == kills


async def test_a_pattern_re2_cannot_evaluate_is_refused_with_its_reason(gateway):
    xid = await store_message(gateway, "lookahead", "JsonSchema/draft-07", {"type": "string", "pattern": "^(?=a)a+$"})
    result = await validate_anonymously(gateway, xid, "aaa")
    assert result["validated"] is False and "RE2" in result["reason"]


@pytest.fixture
async def short_deadline(tmp_path):
    """The app with a 2-second evaluation deadline (the CPU bound above it)."""
    settings = make_settings(tmp_path, eval_wall_seconds=2.0, eval_cpu_seconds=30)
    async with open_registry(tmp_path / "registry.db") as reg, serve_asgi(reg, settings) as gql:
        yield gql.as_writer()


async def test_healthz_answers_while_a_backtracking_pattern_runs_and_the_run_is_cut_off(short_deadline):
    gql = short_deadline
    schema = {"$schema": "https://json-structure.org/meta/extended/v0/#", "$id": "https://example.com/s",
              "name": "S", "type": "string", "pattern": REDOS}
    xid = await store_message(gql, "structure", "JsonStructure/draft-00", schema)
    kills = evaluator_kills()
    validation = asyncio.create_task(validate_anonymously(gql, xid, "a" * 40 + "!"))
    trips = await probe_while(gql.client, validation)
    result = await validation
    assert result["validated"] is False and "XREG_EVAL_WALL_SECONDS" in result["reason"]
    assert evaluator_kills() == kills + 1
    assert trips >= 20  # the event loop served /healthz throughout the evaluation
