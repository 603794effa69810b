"""resolvers.gathering.gather: asyncio.gather's results and failure semantics, without a task per
coroutine, and with the loads of a whole tree of gathers batched together."""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from strawberry.dataloader import DataLoader

from resolvers.gathering import gather


async def test_results_come_in_order_from_coroutines_and_futures():
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    done.set_result("ready")
    later = loop.create_future()
    loop.call_later(0.01, later.set_result, "later")

    async def value(v, pause):
        if pause:
            await asyncio.sleep(0.001)
        return v

    assert await gather(value(1, True), done, value(2, False), later, value(3, True)) == [1, "ready", 2, "later", 3]
    assert await gather() == []


async def test_coroutines_that_do_not_wait_run_at_once_without_tasks():
    ran: list[int] = []

    async def quick(n):
        ran.append(n)
        return n * 2

    tasks_before = len(asyncio.all_tasks())
    awaiting = gather(quick(1), quick(2))
    assert ran == []  # nothing runs before it is awaited
    assert await awaiting == [2, 4]
    assert ran == [1, 2]
    assert len(asyncio.all_tasks()) == tasks_before


async def test_a_bare_yield_is_resumed_in_a_later_loop_turn():
    async def yields():
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return "after two turns"

    assert await gather(yields(), yields()) == ["after two turns", "after two turns"]


async def test_the_first_exception_is_raised_and_the_others_are_closed():
    closed: list[str] = []

    async def waits(name):
        try:
            await asyncio.Event().wait()  # for ever
        finally:
            closed.append(name)

    async def fails():
        await asyncio.sleep(0)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await gather(waits("a"), fails(), waits("b"))
    assert sorted(closed) == ["a", "b"]


async def test_settling_gives_each_exception_as_its_result_and_runs_the_others_to_the_end():
    loop = asyncio.get_running_loop()
    failed = loop.create_future()
    failed.set_exception(KeyError("gone"))
    later = loop.create_future()
    loop.call_later(0.005, later.set_exception, LookupError("later"))

    async def fails(pause):
        if pause:
            await asyncio.sleep(0.001)
        raise ValueError("boom")

    async def slow():
        await asyncio.sleep(0.01)
        return "slow"

    results = await gather(fails(False), slow(), failed, fails(True), later, settle=True)
    assert [type(r).__name__ for r in results] == ["ValueError", "str", "KeyError", "ValueError", "LookupError"]
    assert results[1] == "slow"
    cancelled = loop.create_future()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):  # a cancellation is not a result
        await gather(slow(), cancelled, settle=True)


async def test_one_plain_future_is_waited_for_as_await_would_a_loop_turn_sooner():
    loop = asyncio.get_running_loop()

    async def reads(future):
        return await future

    async def turns_until_done(count: int, outcome) -> tuple[list, int]:
        """Loop turns from the futures' resolution (all in one turn) to the gather's return."""
        futures = [loop.create_future() for _ in range(count)]
        turns, done = 0, False

        def tick():
            nonlocal turns
            if not done:
                turns += 1
                loop.call_soon(tick)

        def resolve():
            for future in futures:
                outcome(future)
            loop.call_soon(tick)

        loop.call_soon(resolve)
        results = await gather(*(reads(f) for f in futures), settle=True)
        done = True
        return results, turns

    one, one_turns = await turns_until_done(1, lambda f: f.set_result("read"))
    two, two_turns = await turns_until_done(2, lambda f: f.set_result("read"))
    assert one == ["read"] and two == ["read", "read"]
    assert one_turns < two_turns  # two take a waiter, woken a turn later
    failed, _ = await turns_until_done(1, lambda f: f.set_exception(OSError("disk")))
    assert isinstance(failed[0], OSError)  # its outcome reaches its reader, not the wait

    # a task may be awaited by others: it takes the waiter and survives the wait's cancellation
    release = asyncio.Event()

    async def released():
        await release.wait()
        return "common"

    common = asyncio.ensure_future(released())
    waiting = asyncio.ensure_future(gather(reads(common)))
    for _ in range(5):
        await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    assert await common == "common"
    # a future of its own is cancelled with the wait, as with await
    own = loop.create_future()
    waiting = asyncio.ensure_future(gather(reads(own)))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert own.cancelled()


async def test_cancelling_the_awaiting_task_cancels_every_waiting_coroutine():
    seen: list[str] = []
    started = asyncio.Event()

    async def waits(name):
        started.set()
        try:
            await asyncio.Event().wait()  # for ever
        except asyncio.CancelledError:
            seen.append(name)
            raise

    async def outer():
        return await gather(waits("a"), waits("b"))

    task = asyncio.ensure_future(outer())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(seen) == ["a", "b"]


async def test_each_coroutine_has_its_own_context():
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def sets(value):
        var.set(value)
        await asyncio.sleep(0.001)
        return var.get()

    async def reads():
        await asyncio.sleep(0.002)
        return var.get()

    assert await gather(sets("a"), sets("b"), reads()) == ["a", "b", "unset"]
    assert var.get() == "unset"


async def test_nested_gathers_issue_their_next_loads_in_one_batch():
    """A tree of gathers (a list of objects, each gathering its fields) at different depths: when
    a batch of loads is answered, every coroutine waiting on it resumes in the same step, so the
    loads they issue next form one batch again (as many batches as levels, not more)."""
    batches: list[list[str]] = []

    async def load_fn(keys):
        batches.append(list(keys))
        return [k.upper() for k in keys]

    loader = DataLoader(load_fn)

    async def chain(key):  # two loads one after the other
        first = await loader.load(key)
        return await loader.load(first + "!")

    async def fields(keys):  # an object whose fields await
        return await gather(*(chain(k) for k in keys))

    async def deeper(keys):
        return await gather(fields(keys[:1]), fields(keys[1:]))

    found = await gather(fields(["a", "b"]), deeper(["c", "d"]), chain("e"))
    assert found == [["A!", "B!"], [["C!"], ["D!"]], "E!"]
    assert len(batches) == 2
    assert sorted(batches[0]) == ["a", "b", "c", "d", "e"]
    assert sorted(batches[1]) == ["A!", "B!", "C!", "D!", "E!"]


async def test_gathers_waiting_on_a_batch_are_woken_once_it_is_resolved():
    """A loader's futures (BatchFuture) wake the gathers waiting on them when the batch is
    done (batch_done), with other futures' callbacks still heard."""
    from resolvers.gathering import BatchFuture, batch_done

    loop = asyncio.get_running_loop()
    batch = [BatchFuture(loop=loop) for _ in range(3)]
    other = loop.create_future()

    async def awaits(future):
        return await future

    first = asyncio.ensure_future(_gathered(awaits(batch[0]), awaits(batch[1])))
    second = asyncio.ensure_future(_gathered(awaits(batch[2]), awaits(other)))
    await asyncio.sleep(0)
    other.set_result("other")
    for i, future in enumerate(batch):
        future.set_result(i)
    batch_done(loop)
    assert await asyncio.wait_for(first, 1) == [0, 1]
    assert await asyncio.wait_for(second, 1) == [2, "other"]


async def _gathered(*coroutines):
    return await gather(*coroutines)
