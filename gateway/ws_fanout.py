"""One task sends the results of every live WebSocket subscription of a process
(:mod:`gateway.graphql_ws`): a thousand subscribers of one event cost a thousand sends, not a
thousand tasks woken.

A subscription whose stream is live (:class:`resolvers.streaming.ResponseStream`, caught up
with its retained events) joins the :class:`Fanout` as a :class:`Member`. Its stream calls back
when it may have something to give (the event feed pushing an event, :meth:`EventStream.listen
<adapters.events.EventStream.listen>`); the member is queued once, and the fan-out task takes
every result that is ready from it, without waiting (the first subscriber of an event runs its
shared execution; the others take the result) and sends each as its final frame text. Between
two slices of :data:`SLICE` frames the task lets the loop run, so requests (writes) do not wait
for a whole fan-out.

A send starts at once and, to a connection whose transport is not paused, completes without
waiting; one that must wait (a client not reading) finishes in a task of its own while the
fan-out goes on, and that member takes no more results until it is done — its events stay in its
stream's bounded buffer (``subscription_buffer``), whose overflow ends it as a slow consumer at
once (the close frame then waits, like any frame, for the connection to take it or drop).
What ends a member (the stream's end, :class:`~adapters.events.SlowConsumer`, the client gone,
its credentials expired) is the outcome its operation's task awaits.
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from starlette.types import Send

from resolvers.streaming import ResponseStream, StreamedResult

#: Frames sent before the fan-out lets the loop run.
SLICE = 64


class Expired(Exception):
    """The member's credentials expired."""


class Member:
    """One subscription in the fan-out: its results ``stream``, the connection's ASGI ``send``,
    the text that starts each of its frames (``head``, the payload and ``}`` follow), and
    ``expired`` (whether its credentials have run out). ``outcome`` resolves to what ended it
    (``None``: the stream ended)."""

    def __init__(self, stream: ResponseStream, send: Send, head: str, debug: bool,
                 expired: Callable[[], bool]) -> None:
        self.stream, self.send, self.head, self.debug, self.expired = stream, send, head, debug, expired
        self.outcome: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.queued = False
        self.writing: asyncio.Task[None] | None = None

    def end(self, outcome: BaseException | None) -> None:
        if not self.outcome.done():
            self.outcome.set_result(outcome)

    def post(self, frame: str) -> None:
        """Send ``frame``: at once when the connection takes it, else in a task of its own."""
        self.writing = _eager(self.send({"type": "websocket.send", "text": frame}))
        if self.writing is not None:
            self.writing.add_done_callback(self._written)

    def _written(self, task: asyncio.Task[None]) -> None:
        self.writing = None
        if not task.cancelled() and task.exception() is not None:
            self.end(task.exception())


class Fanout:
    """The fan-out task of one process's WebSocket subscriptions (see the module)."""

    def __init__(self) -> None:
        self._queue: collections.deque[Member] = collections.deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.members = 0

    async def run(self, member: Member) -> BaseException | None:
        """Deliver ``member``'s results until it ends; what ended it."""
        self.members += 1
        member.stream.listen(functools.partial(self._queue_member, member))
        self._queue_member(member)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="xreg-ws-fanout")
        try:
            return await member.outcome
        finally:
            member.stream.listen(None)
            member.end(None)
            self.members -= 1
            if not self.members and self._task is not None:
                self._task.cancel()
                self._task = None

    def _queue_member(self, member: Member) -> None:
        if not member.queued and not member.outcome.done():
            member.queued = True
            self._queue.append(member)
            self._wake.set()

    async def _run(self) -> None:
        sent = 0
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                member = self._queue.popleft()
                member.queued = False
                sent += await self._deliver(member)
                if sent >= SLICE:
                    sent = 0
                    await asyncio.sleep(0)

    async def _deliver(self, member: Member) -> int:
        """Send what ``member``'s stream has ready; how many frames. A result the stream has at
        hand (:meth:`ResponseStream.take <resolvers.streaming.ResponseStream.take>`) costs no
        coroutine; the credentials are checked once before the results sent without a wait."""
        stream, outcome, sent, checked = member.stream, member.outcome, 0, False
        head, debug = member.head, member.debug
        try:
            # a member whose last frame is still being written takes nothing more, unless its
            # stream overflowed: then the next result is the SlowConsumer that ends it
            while not outcome.done() and (member.writing is None or stream.overflowed):
                result = stream.take()
                if result is None:  # nothing at hand: what is ready (the stream's end) comes through anext
                    if not stream.ready():
                        break
                    result = await stream.__anext__()
                    checked = False
                elif not isinstance(result, StreamedResult):  # the event's execution, to run or wait for
                    result = await result
                    checked = False
                if outcome.done():  # ended meanwhile (the client gone, the operation completed)
                    break
                if not checked:
                    if member.expired():
                        member.end(Expired())
                        break
                    checked = True
                member.post(head + result.payload(debug) + "}")
                sent += 1
        except StopAsyncIteration:
            member.end(None)
        except Exception as exc:  # the stream's end (a slow consumer), or the client gone
            member.end(exc)
        if member.writing is not None:  # once the connection took the frame, go on with the rest
            member.writing.add_done_callback(lambda _: self._queue_member(member))
        return sent


def _eager(coro: Awaitable[None]) -> asyncio.Task[None] | None:
    """Run ``coro`` until it first waits: ``None`` when it finished without waiting (a send to a
    connection whose transport is not paused), else a task that runs the rest — an eager task,
    by hand (Python 3.12 has them). What it raises at once is raised here."""
    if not isinstance(coro, Coroutine):
        return asyncio.ensure_future(coro)
    try:
        waited = coro.send(None)
    except StopIteration:
        return None
    except BaseException:
        coro.close()
        raise
    return asyncio.ensure_future(_rest(coro, waited))


async def _rest(coro: Coroutine[Any, Any, None], waited: Any) -> None:
    """The rest of a coroutine :func:`_eager` started, which now waits for ``waited``."""
    try:
        while True:
            if waited is None:  # a bare yield (``asyncio.sleep(0)``)
                await asyncio.sleep(0)
            else:
                try:
                    await asyncio.wait([waited])  # the coroutine reads the outcome itself on send
                except asyncio.CancelledError:  # this task was cancelled: so is the coroutine
                    waited = coro.throw(asyncio.CancelledError())
                    continue
            waited = coro.send(None)
    except StopIteration:
        return
    finally:
        coro.close()
