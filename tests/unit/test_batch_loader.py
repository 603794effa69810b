"""The per-request batch loader (adapters/batch_loader.py): one call per batch, cached keys,
failures per key and per batch, no call for a batch nobody waits for."""

from __future__ import annotations

import asyncio

import pytest

from adapters.batch_loader import BatchLoader


def _recording(batches: list[list[str]]):
    async def load(keys: list[str]) -> list[str | BaseException]:
        batches.append(list(keys))
        return [KeyError(k) if k.startswith("bad") else k.upper() for k in keys]
    return load


async def test_the_loads_of_one_loop_turn_are_one_call_and_each_key_is_loaded_once():
    batches: list[list[str]] = []
    loader = BatchLoader(_recording(batches), cache_key_fn=str.lower)
    first, again, other = loader.load("a"), loader.load("A"), loader.load("b")
    assert first is again  # one load per key (the cache key folds case)
    assert await asyncio.gather(first, other) == ["A", "B"]
    assert batches == [["a", "b"]]
    assert await loader.load("a") == "A" and batches == [["a", "b"]]  # cached
    assert await loader.load("c") == "C" and batches == [["a", "b"], ["c"]]  # a later turn: a batch of its own
    loader.clear()
    assert await loader.load("a") == "A" and len(batches) == 3


async def test_a_key_fails_alone_and_a_failing_call_fails_its_batch():
    batches: list[list[str]] = []
    loader = BatchLoader(_recording(batches))
    good, bad = loader.load("x"), loader.load("bad")
    assert await good == "X"
    with pytest.raises(KeyError):
        await bad

    async def broken(keys: list[str]) -> list[str]:
        raise RuntimeError("down")

    failing = BatchLoader(broken)
    futures = [failing.load("p"), failing.load("q")]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert [str(r) for r in results] == ["down", "down"]

    async def short(keys: list[str]) -> list[str]:
        return keys[:1]

    miscounted = BatchLoader(short)
    results = await asyncio.gather(miscounted.load("p"), miscounted.load("q"), return_exceptions=True)
    assert [str(r) for r in results] == ["the batch load answered 1 values for 2 keys"] * 2


async def test_a_batch_nobody_waits_for_is_not_loaded_and_a_cancelled_key_loads_again():
    batches: list[list[str]] = []
    done: list[asyncio.AbstractEventLoop] = []
    loader = BatchLoader(_recording(batches), batch_done=done.append)
    loader.load("a").cancel()
    assert loader.batch is not None and loader.batch.task is not None
    await loader.batch.task
    assert batches == [] and len(done) == 1  # skipped; waiters are still told the batch is over
    assert await loader.load("a") == "A" and batches == [["a"]]


async def test_keys_loaded_now_go_out_one_batch_per_group_each_answered_on_its_own():
    """Keys loaded now in one loop turn go out as one batch per group (later calls of the turn
    join it); a group's loads are set as soon as its own call answers, whatever the others do."""
    gates = {"x": asyncio.Event(), "y": asyncio.Event()}
    batches: list[list[str]] = []

    async def load(keys: list[str]) -> list[str]:
        batches.append(list(keys))
        await gates[keys[0][0]].wait()
        return [k.upper() for k in keys]

    loader = BatchLoader(load)
    loader.load_now(["x1", "x2"], "x")
    loader.load_now(["y1"], "y")
    loader.load_now(["x3", "x1"], "x")  # joins x's batch (x1 is in it already)
    x3, y1 = loader.cached("x3"), loader.cached("y1")
    assert x3 is not None and y1 is not None
    gates["y"].set()
    assert await y1 == "Y1"
    assert not x3.done()  # x has not answered
    gates["x"].set()
    assert await x3 == "X3"
    assert sorted(batches) == [["x1", "x2", "x3"], ["y1"]]
    loader.load_now(["x4"], "x")  # x's batch went out: a new one
    assert await loader.cached("x4") == "X4" and batches[-1] == ["x4"]


async def test_keys_loaded_now_go_out_while_the_hold_keeps_the_batches_of_load():
    """While the hold is taken, :meth:`BatchLoader.load` batches wait for it; keys loaded with
    :meth:`BatchLoader.load_now` go out as a batch of their own at once, and later loads of them
    take the same futures."""
    from resolvers.pacing import Hold

    batches: list[list[str]] = []
    hold = Hold()
    loader = BatchLoader(_recording(batches), hold=hold)
    hold.take()
    held = loader.load("a")
    loader.load_now(["b", "c"])
    now = loader.cached("b")
    for _ in range(5):  # a few loop turns: the batch's task and its load
        await asyncio.sleep(0)
    assert now is not None and now.done() and now.result() == "B"
    assert batches == [["b", "c"]] and not held.done()  # the held batch still waits
    assert loader.load("c") is loader.cached("c") and await loader.load("c") == "C"
    loader.load_now(["a", "c"])  # both known already: nothing new is sent
    hold.give()
    assert await held == "A"
    assert batches == [["b", "c"], ["a"]]
