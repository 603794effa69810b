"""Random and hostile documents and payloads, every format, thrown at the evaluator: it answers
with a result or refuses with a known kind, never another exception; a cut-off worker is
replaced and the next evaluation is answered. (The large run: bench/fuzz_formats.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from tests.security.hostile import Case, cases, evaluate_case
from xreg.formats import Evaluator, Limits


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    ev = Evaluator(Limits(wall_seconds=2.0, max_document_bytes=64 * 1024, max_payload_bytes=64 * 1024))
    yield ev
    ev.close()


@settings(max_examples=250, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_the_evaluator_answers_or_refuses_clearly(evaluator: Evaluator, case: Case) -> None:
    asyncio.run(evaluate_case(evaluator, case))


def test_a_cut_off_worker_is_replaced(evaluator: Evaluator) -> None:
    schema = {"$schema": "https://json-structure.org/meta/extended/v0/#", "$id": "https://example.com/s",
              "name": "S", "type": "string", "pattern": "^(a+)+$"}
    kills = evaluator.kills
    refused = asyncio.run(evaluate_case(evaluator, Case("JsonStructure/draft-00", "none", schema, schema,
                                                        "a" * 60 + "!")))
    assert refused == ["budget"] and evaluator.kills == kills + 1
    assert asyncio.run(evaluator.validate("JsonSchema/draft-07", {"type": "string"})).valid
