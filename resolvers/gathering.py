"""Awaiting many coroutines at once inside the awaiting task, without a task for each.

:func:`gather` is ``asyncio.gather`` for the executor and the resolvers, with graphql-core's
``gather_with_cancel`` semantics (the first exception closes the rest and is raised), cheaper
for the many small awaits of a GraphQL response and better for batching:

- **Eager.** Each coroutine runs at once, inside the ``gather`` call's own step, until it first
  waits. One that finishes without waiting (a resolver whose loads hit the request's cache)
  costs no task, no future and no turn of the event loop.
- **Driven in place.** The coroutines that wait are resumed by the gathering coroutine itself
  when what they wait for is done: no ``asyncio.Task`` per coroutine (each would cost a
  scheduled step to start, one per wake-up and a done callback).
- **One wake-up for the whole tree.** A ``gather`` driven by another ``gather`` (a list of
  objects whose fields are gathered in turn) hands the futures its coroutines wait for up to the
  outermost one, which waits for any of them with one future. When the loop resolves a loader's
  batch, every coroutine waiting on it resumes in the same step of the awaiting task, so the
  loads they issue next form one batch again. A loader's futures (:class:`BatchFuture`) wake
  the waiting gathers once per batch (:func:`batch_done`), not once each. When the tree waits
  for one future of its own (a store call's), the task waits for it directly, as ``await``
  would: no waiter, one loop turn less.

Each coroutine runs in its own copy of the context (as a task would), so context variables set
by one are not seen by the others.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import weakref
from collections.abc import Awaitable, Coroutine, Generator
from types import CoroutineType
from typing import Any, TypeVar

T = TypeVar("T")


class _Blocked:
    """What a nested :func:`gather` waits for: any of ``futures`` (handed to the one driving it)."""

    __slots__ = ("futures",)

    def __init__(self, futures: list[asyncio.Future[Any]]) -> None:
        self.futures = futures


class _State(threading.local):
    #: a gather is stepping a coroutine on this thread right now (a gather reached from it is nested)
    driving = False


_state = _State()


class _Gathering:
    """The awaitable :func:`gather` returns (see the module)."""

    __slots__ = ("awaitables", "settle")

    def __init__(self, awaitables: tuple[Awaitable[Any], ...], settle: bool) -> None:
        self.awaitables = awaitables
        self.settle = settle

    def __await__(self) -> Generator[Any, None, list[Any]]:
        return _drive(self.awaitables, self.settle)


def gather(*awaitables: Awaitable[T], settle: bool = False) -> Awaitable[list[T]]:
    """The results of ``awaitables`` (coroutines or futures), in order (see the module). With
    ``settle``, a coroutine's or future's exception is its result (``asyncio.gather``'s
    ``return_exceptions``) and the others run on."""
    return _Gathering(awaitables, settle)


def _drive(awaitables: tuple[Awaitable[Any], ...], settle: bool = False) -> Generator[Any, None, list[Any]]:
    results: list[Any] = [None] * len(awaitables)
    #: per index still running: its coroutine (``None``: a future awaited as it is), its context,
    #: and what it waits for (a future, or a nested gather's :class:`_Blocked`)
    running: dict[int, tuple[Coroutine[Any, Any, Any] | None, contextvars.Context | None, Any]] = {}
    state = _state
    started = 0  # the awaitables before this index have been started (or taken as they are)
    try:
        for index, awaitable in enumerate(awaitables):
            started = index + 1
            if awaitable.__class__ is not CoroutineType and asyncio.isfuture(awaitable):
                if awaitable.done():
                    results[index] = _outcome(awaitable) if settle else awaitable.result()
                else:
                    running[index] = (None, None, awaitable)
                continue
            coro = awaitable if awaitable.__class__ is CoroutineType else _awaiting(awaitable)
            _step(index, coro, contextvars.copy_context(), results, running, state, settle)
        while running:
            nested = state.driving
            futures = [f for _, _, b in running.values() for f in (b.futures if isinstance(b, _Blocked) else (b,))]
            try:
                if nested:
                    yield _Blocked(futures)
                else:
                    yield from _any_done(futures)
            except BaseException as exc:  # cancelled (or thrown into) while waiting: so are they
                _throw_all(running, exc, state)
                raise
            ready = []
            for index, (_, _, blocker) in running.items():
                if blocker.__class__ is _Blocked:
                    for future in blocker.futures:
                        if future.done():
                            ready.append(index)
                            break
                elif blocker.done():
                    ready.append(index)
            for index in ready:
                waiting, context, blocker = running.pop(index)
                if waiting is None:
                    results[index] = _outcome(blocker) if settle else blocker.result()
                else:
                    assert context is not None
                    _step(index, waiting, context, results, running, state, settle)
    except BaseException:
        _close_all(running)
        _close_unstarted(awaitables[started:])
        raise
    return results


class _Settling:
    """The awaitable :func:`settled` returns."""

    __slots__ = ("futures",)

    def __init__(self, futures: list[asyncio.Future[Any]]) -> None:
        self.futures = futures

    def __await__(self) -> Generator[Any, None, None]:
        futures = self.futures
        while True:
            pending = [f for f in futures if not f.done()]
            if not pending:
                return
            if _state.driving:  # inside a gather: it waits for them with the rest of the tree
                yield _Blocked(pending)
            else:
                yield from _any_done(pending)


def settled(futures: list[asyncio.Future[Any]]) -> Awaitable[None]:
    """Wait until every one of ``futures`` is done, raising nothing (each keeps its outcome):
    one wait for many loads, woken as :func:`gather` is (once per loader batch)."""
    return _Settling(futures)


def _outcome(future: asyncio.Future[Any]) -> Any:
    """A done future's result, or its exception (a cancellation is raised)."""
    exception = future.exception()
    return exception if exception is not None else future.result()


def _step(
    index: int, coro: Coroutine[Any, Any, Any], context: contextvars.Context, results: list[Any],
    running: dict[int, Any], state: _State, settle: bool = False,
) -> None:
    """Run ``coro`` until it waits (recorded in ``running``) or ends (its result in ``results``;
    with ``settle``, an exception it raised too)."""
    outer = state.driving
    state.driving = True
    try:
        yielded = context.run(coro.send, None)
    except StopIteration as stop:
        results[index] = stop.value
        return
    except Exception as exc:
        if not settle:
            raise
        results[index] = exc
        return
    finally:
        state.driving = outer
    if yielded is None:  # a bare yield (``asyncio.sleep(0)``): resume it in the next loop turn
        blocker: Any = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(_resolve, blocker)
    elif isinstance(yielded, _Blocked):
        blocker = yielded
    elif getattr(yielded, "_asyncio_future_blocking", False):
        yielded._asyncio_future_blocking = False
        blocker = yielded
    else:
        coro.close()
        raise RuntimeError(f"gather: a coroutine yielded {yielded!r}, which is not a future")
    running[index] = (coro, context, blocker)


def _resolve(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)


class BatchFuture(asyncio.Future):
    """A future resolved together with the others of its batch (a loader's loads), whose
    resolver calls :func:`batch_done` once it has set them all: a gather waiting on such futures
    is woken once per batch instead of by a callback per future."""


#: per event loop: the gathers waiting on batch futures (woken by :func:`batch_done`)
_BATCH_WAITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = (
    weakref.WeakKeyDictionary())


def batch_done(loop: asyncio.AbstractEventLoop) -> None:
    """A batch of :class:`BatchFuture` s of ``loop`` is resolved: wake the gathers waiting on them."""
    waiters = _BATCH_WAITERS.pop(loop, None)
    for waiter in waiters or ():
        if not waiter.done():
            waiter.set_result(None)


def _any_done(futures: list[asyncio.Future[Any]]) -> Generator[Any, None, None]:
    """Wait (in the awaiting task) until one of ``futures`` is done."""
    for future in futures:
        if future.done():
            return
    if len(futures) == 1 and futures[0].__class__ is not BatchFuture and not isinstance(futures[0], asyncio.Task):
        # one future of its own (a store call's): waited for as ``await`` would, without a waiter
        # (a loop turn less), and its outcome left to whoever reads it. A task may be awaited by
        # others: cancelling this wait must not cancel it, so it takes the waiter.
        only = futures[0]
        only._asyncio_future_blocking = True
        try:
            yield only
        except Exception as exc:  # the task hands a failed future's exception in: not this wait's
            if only.cancelled() or exc is not only.exception():
                raise
        return
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()

    def wake(_: Any) -> None:
        if not waiter.done():
            waiter.set_result(None)

    called = [f for f in futures if f.__class__ is not BatchFuture]
    for f in called:
        f.add_done_callback(wake)
    if len(called) < len(futures):
        waiters = _BATCH_WAITERS.get(loop)
        if waiters is None:
            waiters = _BATCH_WAITERS[loop] = []
        waiters.append(waiter)
    try:
        yield from waiter
    finally:
        for f in called:
            f.remove_done_callback(wake)


def _throw_all(running: dict[int, Any], exc: BaseException, state: _State) -> None:
    """Throw ``exc`` into every waiting coroutine (a cancellation reaches each of them); cancel
    the futures awaited as they are."""
    for coro, context, blocker in list(running.values()):
        if coro is None:
            blocker.cancel()
            continue
        outer = state.driving
        state.driving = True
        try:
            context.run(coro.throw, exc)
        except BaseException:
            pass
        finally:
            state.driving = outer
        coro.close()
    running.clear()


def _close_all(running: dict[int, Any]) -> None:
    """Close every waiting coroutine and cancel the futures awaited as they are."""
    for coro, _, blocker in running.values():
        if coro is None:
            blocker.cancel()
        else:
            coro.close()
    running.clear()


def _close_unstarted(awaitables: tuple[Awaitable[Any], ...]) -> None:
    """Close the coroutines an exception kept from starting, and the unstarted coroutines they
    were given to await (a field's completion holds its resolver's coroutine): a coroutine
    dropped without being awaited or closed is reported ("coroutine … was never awaited") and
    keeps its frame until collected. Futures are left alone (others may wait for them)."""
    stack = [a for a in awaitables if a.__class__ is CoroutineType]
    while stack:
        coro: Any = stack.pop()
        if inspect.getcoroutinestate(coro) != inspect.CORO_CREATED:
            continue
        stack.extend(v for v in coro.cr_frame.f_locals.values() if v.__class__ is CoroutineType)
        coro.close()


async def _awaiting(awaitable: Awaitable[T]) -> T:
    return await awaitable
