"""CPU-heavy GraphQL work kept from starving the event loop, so one large answer does not hold up
every other request (health probes included) while it is built or encoded.

**Paced list completion.** graphql-core completes a list — a page of 500 messages with all
their fields — in one synchronous stretch, during which the event loop answers nothing. The
executor (``resolvers/execution.py``, ``GatewayExecutor.between_chunks``) watches the clock
after every item of a list when the request has a :class:`Pacer`: once the running *slice* (a
few milliseconds, ``XREG_GRAPHQL_PACING_SLICE_MS``) is spent, the rest of the list is completed
in a task that waits for its next turn. Turns are given out by the loop's :class:`Slicer`, one per
turn of the event loop and in arrival order, so however many requests are at work the loop polls
its sockets at least every slice or so, and no list waits behind the others for long.

**Batches stay whole.** The per-request loaders (``resolvers/loaders.py``) gather every load
issued while the executor works synchronously into one batch, sent when the loop gets back to
them. A paced list hands the loop back in the middle of that work, which would send a partial
batch (and its nested loads would cost one store call per slice instead of one per level of the
query). So a request's paced completions take its :class:`Hold` while they wait for their turns,
and its loaders send no batch while the hold is taken; it is given back when the last of them has
completed its items, and the held batches go out together with the loads the completed items
issue next, as if the list had been completed in one stretch.

**Paced encoding.** :func:`json_response` encodes the answer of a costly operation (at least
:data:`LARGE_COST`, ``resolvers/cost.py``) in slices too (:func:`encode_paced`: long lists item
by item); cheap answers are encoded at once. The store decodes large pages and the registry
builds many views in worker threads instead (``xreg/storage/sqlite.py``,
``xreg/registry/reads.py``, ``adapters/local.py``). ``bench/bench_loop_lag.py`` measures the
event loop's longest turns under heavy queries, ``bench/bench_load.py`` the ``/healthz``
latency.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Iterator
from typing import Any

from starlette.responses import Response

from xreg.json_encoding import dumps

#: Answers of operations costing at least this much are encoded in slices (:func:`json_response`).
LARGE_COST = 2000


class Slicer:
    """The turns of one event loop's paced work: at most about one slice of it per loop turn.

    A slice starts at the first paced check after the loop has polled its sockets (or when a
    waiter gets its turn) and is spent after ``budget`` seconds. Work that finds it spent waits
    in line (:meth:`turn`); the line gets one turn per loop turn, first come first served.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: When the running slice began (``time.perf_counter``).
        self.started = 0.0
        #: Set while a slice runs in this loop turn (cleared by a callback of the next turn).
        self.marked = False
        self._line: deque[asyncio.Future[None]] = deque()
        self._granting = False
        #: Turns given so far (what tests count instead of timing).
        self.turns = 0

    def spent(self, budget: float) -> bool:
        """Whether the running slice has used ``budget`` seconds (starts one when none runs)."""
        now = time.perf_counter()
        if not self.marked:
            self._begin(now)
            return False
        return now - self.started >= budget

    def _begin(self, now: float) -> None:
        self.started = now
        if not self.marked:
            self.marked = True
            self.loop.call_soon(self._unmark)  # runs in the next loop turn, after the sockets are polled

    def _unmark(self) -> None:
        self.marked = False

    async def turn(self) -> None:
        """Wait in line for a slice of its own; returns in a later loop turn."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        self._line.append(waiter)
        if not self._granting:
            self._granting = True
            self.loop.call_soon(self._grant)
        await waiter
        self.turns += 1
        self._begin(time.perf_counter())

    def _grant(self) -> None:
        while self._line:
            waiter = self._line.popleft()
            if not waiter.done():  # a cancelled waiter gives its turn away
                waiter.set_result(None)
                break
        if self._line:
            self.loop.call_soon(self._grant)
        else:
            self._granting = False


_SLICERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Slicer] = weakref.WeakKeyDictionary()


def slicer() -> Slicer:
    """The running event loop's :class:`Slicer`."""
    loop = asyncio.get_running_loop()
    found = _SLICERS.get(loop)
    if found is None:
        found = _SLICERS[loop] = Slicer(loop)
    return found


class Hold:
    """A request's hold on its loaders' batches: taken while a paced completion waits for turns."""

    def __init__(self) -> None:
        self.taken = 0
        self._waiters: list[asyncio.Future[None]] = []

    def take(self) -> None:
        self.taken += 1

    def give(self) -> None:
        self.taken -= 1
        if not self.taken and self._waiters:
            # one loop turn later: the completed items' awaitables are started first, so the
            # loads they issue join the held batches (as they would after one long stretch)
            asyncio.get_running_loop().call_soon(self._release)

    def _release(self) -> None:
        if self.taken:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def released(self) -> None:
        """Return once the hold is not taken (at once when it is not)."""
        while self.taken:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


class Pacer:
    """The pacing of one request: its :class:`Hold` and the length of a slice (0: not paced)."""

    def __init__(self, slice_seconds: float) -> None:
        self.slice_seconds = slice_seconds
        self.hold = Hold()


#: Lists longer than this are encoded item by item (:func:`encode_paced`).
SPLIT_LIST = 16
#: How deep :func:`encode_paced` looks for long lists (an answer's pages are a few levels down).
SPLIT_DEPTH = 8


def _pieces(value: Any, depth: int = 0) -> Iterator[bytes]:
    """``value`` as JSON text in pieces: the objects and lists of its first levels piece by piece,
    the items of a long list each in one call of the encoder, everything else at once."""
    if depth < SPLIT_DEPTH and isinstance(value, dict) and value:
        for i, (key, item) in enumerate(value.items()):
            yield (b"," if i else b"{") + dumps(key) + b":"
            yield from _pieces(item, depth + 1)
        yield b"}"
    elif depth < SPLIT_DEPTH and isinstance(value, list) and value:
        long = len(value) > SPLIT_LIST
        for i, item in enumerate(value):
            yield b"," if i else b"["
            if long:
                yield dumps(item)
            else:
                yield from _pieces(item, depth + 1)
        yield b"]"
    else:
        yield dumps(value)


async def encode_paced(body: Any, slice_seconds: float) -> bytes:
    """``body`` as JSON (:func:`xreg.json_encoding.dumps` piece by piece: the same JSON as
    encoding it at once), encoded on the event loop in slices with turns in between
    (:class:`Slicer`), so a large answer holds up nothing for long.

    A worker thread would not do: the encoder holds the interpreter lock for the whole call, during
    which no other thread (the event loop's) runs."""
    turns = slicer()
    out: list[bytes] = []
    for piece in _pieces(body):
        out.append(piece)
        if turns.spent(slice_seconds):
            await turns.turn()
    return b"".join(out)


async def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None,
                        *, media_type: str = "application/json", large: bool = False,
                        slice_seconds: float = 0.0) -> Response:
    """A JSON response; a ``large`` body is encoded in slices of ``slice_seconds`` on the event
    loop (:func:`encode_paced`), or in a worker thread when slices are off (0)."""
    if not large:
        content = dumps(body)
    elif slice_seconds > 0:
        content = await encode_paced(body, slice_seconds)
    else:
        content = await asyncio.to_thread(dumps, body)
    return Response(content, status, headers, media_type=media_type)
