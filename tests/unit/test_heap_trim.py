"""The periodic heap trim: it trims once per interval, never when switched off, survives a failure."""

from __future__ import annotations

import asyncio

import pytest

from gateway.heap_trim import HeapTrimmer, glibc_trim


class _Stop(Exception):
    pass


def _sleeps(turns: int, seen: list[float]):
    """A sleep that records its interval and ends the loop on its ``turns``-th call."""
    async def sleep(seconds: float) -> None:
        seen.append(seconds)
        if len(seen) == turns:
            raise _Stop

    return sleep


async def test_it_trims_once_per_interval() -> None:
    calls: list[int] = []
    seen: list[float] = []
    trimmer = HeapTrimmer(30.0, lambda: calls.append(1), sleep=_sleeps(4, seen))
    with pytest.raises(_Stop):
        await trimmer.run()
    assert seen == [30.0] * 4 and len(calls) == trimmer.trims == 3


@pytest.mark.parametrize("interval, trim", [(0.0, lambda: None), (30.0, None)])
async def test_switched_off_or_without_glibc_it_never_runs(interval, trim) -> None:
    seen: list[float] = []
    trimmer = HeapTrimmer(interval, trim, sleep=_sleeps(1, seen))
    await asyncio.wait_for(trimmer.run(), timeout=60)  # returns at once: no loop
    assert not trimmer.enabled and seen == [] and trimmer.trims == 0


async def test_a_failing_trim_does_not_end_the_loop() -> None:
    def failing() -> None:
        raise OSError("no")

    seen: list[float] = []
    trimmer = HeapTrimmer(5.0, failing, sleep=_sleeps(3, seen))
    with pytest.raises(_Stop):
        await trimmer.run()
    assert len(seen) == 3 and trimmer.trims == 0


def test_glibc_trim_is_callable_here() -> None:
    trim = glibc_trim()
    if trim is None:
        pytest.skip("the C library here is not glibc")
    trim()  # hands free pages back; must not raise
