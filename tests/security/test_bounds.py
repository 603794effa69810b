"""The evaluator's own bounds, on an evaluator of the test's own: the kernel ends a worker that
passes its CPU budget (``RLIMIT_CPU``) and a fresh one answers the next evaluation; a value
nested past the depth bound never reaches a worker; evaluations from many tasks share the
workers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from xreg.formats import Evaluator, Limits, Refused

STRUCTURE_REDOS = {"$schema": "https://json-structure.org/meta/extended/v0/#", "$id": "https://example.com/s",
                   "name": "S", "type": "string", "pattern": "^(a+)+$"}


@pytest.fixture
def evaluator() -> Iterator[Evaluator]:
    ev = Evaluator(Limits(cpu_seconds=1, wall_seconds=600.0, workers=1, queue_size=32))
    yield ev
    ev.close()


async def test_the_cpu_budget_ends_a_runaway_evaluation(evaluator):
    with pytest.raises(Refused) as refused:
        await evaluator.validate_payload("JsonStructure/draft-00", STRUCTURE_REDOS, "a" * 60 + "!")
    assert refused.value.kind == "budget" and "XREG_EVAL_CPU_SECONDS" in refused.value.detail
    assert evaluator.kills == 1
    assert (await evaluator.validate_payload("JsonStructure/draft-00", STRUCTURE_REDOS, "aaa")).valid


async def test_a_value_past_the_depth_bound_never_reaches_a_worker(evaluator):
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(Refused) as refused:
        await evaluator.validate_payload("JsonSchema/draft-07", {"type": "array"}, deep)
    assert refused.value.kind == "too_deep" and "XREG_EVAL_MAX_DEPTH" in refused.value.detail
    assert evaluator.results.misses == 0  # refused before any request was made


def test_many_threads_share_the_workers(evaluator):
    async def many() -> list:
        return await asyncio.gather(*(evaluator.validate("JsonSchema/draft-07", {"maxLength": n}) for n in range(20)))

    results = asyncio.run(many())
    assert all(r.valid for r in results)
