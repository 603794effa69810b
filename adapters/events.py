"""The registry's events as a live feed: what GraphQL subscriptions, webhooks and streaming
readers follow.

One :class:`EventFeed` per local registry (the application builds it and hands it down). Its
reader task keeps the feed's *head* — the position after which it has published everything — and
moves it whenever the store's revision moves: at once when this process commits (the write path
calls :meth:`EventFeed.notify`), and every ``poll_interval`` seconds otherwise
(``XREG_EVENTS_POLL_SECONDS``), which finds the commits of other processes or replicas on the
same store. Each read of the store serves every follower; an event is handed to the followers
whose filters pass it (found by :class:`~adapters.event_index.StreamIndex`, without a look at the
others) :data:`PUSH_SLICE` at a time, the loop running between two slices (a commit never waits for the
fan-out of the events before it: :meth:`EventFeed.notify` only wakes the reader).

:meth:`EventFeed.follow` gives one consumer its stream: the retained events after its position,
read from the store page by page with its filters, then the live ones — in position order,
without gap or duplicate (the stream joins the live feed *before* reading the retained events and
skips what it has already yielded). A stream buffers at most ``max_buffer`` live events; a
consumer further behind gets :class:`SlowConsumer` from its iterator (it can resume from the
last position it handled). Events older than the retained history raise
:class:`~xreg.storage.errors.EventsGone` when the stream opens.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from adapters.event_index import StreamIndex
from xreg.events.record import EventPosition, RegistryEvent, subject_filter
from xreg.storage.base import Store
from xreg.storage.errors import EventsGone

log = logging.getLogger("xreg.events")

#: Events read from the store per call.
PAGE_SIZE = 500
#: Streams an event is handed to before the reader lets the loop run: the consumers it woke, and
#: the requests (writes) waiting meanwhile, take turns with the rest of a large fan-out.
PUSH_SLICE = 64


class SlowConsumer(Exception):
    """A stream's consumer fell further behind the live feed than its buffer holds."""

    def __init__(self, max_buffer: int, last: EventPosition | None) -> None:
        where = f"after {last}" if last is not None else "from the start"
        super().__init__(f"the consumer fell more than {max_buffer} events behind; resume {where}")
        self.max_buffer = max_buffer
        self.last = last


class EventStream:
    """One consumer's events: retained ones first, then live ones (``async for``)."""

    def __init__(self, feed: EventFeed, after: EventPosition | None, types: Sequence[str] | None,
                 subject: str | None, max_buffer: int) -> None:
        self._feed = feed
        self.types = tuple(types or ())
        self.subject = subject
        #: The filters as the feed's index groups streams (:class:`adapters.event_index.StreamIndex`).
        self.type_set = frozenset(self.types)
        self.subject_key = subject_filter(subject)
        self.max_buffer = max_buffer
        #: The position of the last event yielded (where a consumer resumes).
        self.last = after
        self._retained: collections.deque[RegistryEvent] = collections.deque()
        self._reading_retained = True
        self._live: collections.deque[RegistryEvent] = collections.deque()
        self._signal = asyncio.Event()
        self._slow = False
        self._closed = False
        self._listener: Callable[[], None] | None = None

    def listen(self, listener: Callable[[], None] | None) -> None:
        """Have ``listener`` called (synchronously, by the feed) whenever the stream may have
        become :meth:`ready`: a consumer that drives many streams from one task wakes only for
        those with something to give. ``None``: no longer."""
        self._listener = listener

    def ready(self) -> bool:
        """Whether the next ``__anext__`` returns (or raises) without waiting: a live event not yet
        yielded is buffered, the stream is closed or its consumer too slow. A stream still
        reading its retained events is not ready (it reads the store)."""
        if self._slow or self._closed or self._retained:
            return True
        if self._reading_retained:
            return False
        live, last = self._live, self.last
        while live and last is not None and live[0].position <= last:
            live.popleft()  # already yielded from the retained events
        return bool(live)

    @property
    def overflowed(self) -> bool:
        """Whether the consumer fell too far behind (the next ``__anext__`` raises :class:`SlowConsumer`)."""
        return self._slow

    @property
    def caught_up(self) -> bool:
        """Whether every retained event was yielded: what follows is live."""
        return not self._reading_retained and not self._retained

    def _wake(self) -> None:
        self._signal.set()
        if self._listener is not None:
            self._listener()

    # -- fed by the feed ------------------------------------------------------------------------
    def _push(self, event: RegistryEvent) -> None:
        """Buffer ``event``, which passes the stream's filters (the feed's index found it)."""
        if self._slow:
            return
        if len(self._live) >= self.max_buffer:
            self._slow = True
        else:
            self._live.append(event)
        self._wake()

    def _close(self) -> None:
        self._closed = True
        self._wake()

    def _overrun(self) -> None:
        """The live feed lost events this stream had not seen (pruned under it)."""
        self._slow = True
        self._wake()

    async def _read_retained(self) -> None:
        """The next page of retained events (none left: the stream goes live)."""
        page = await self._feed.store.events_after(self.last, limit=self._feed.page_size, types=self.types,
                                                   subject=self.subject)
        self._retained.extend(page)
        if len(page) < self._feed.page_size:
            self._reading_retained = False

    # -- consumed ---------------------------------------------------------------------------------
    def __aiter__(self) -> EventStream:
        return self

    def take(self) -> RegistryEvent | None:
        """The next event, when :meth:`__anext__` would return one without waiting; ``None`` when
        it would wait, read the store or raise (the stream's end, a slow consumer) — for a
        consumer that drives many streams from one task, without a coroutine per event."""
        if self._slow:
            return None
        while True:
            if self._retained:
                queue = self._retained
            elif self._reading_retained:
                return None
            else:
                queue = self._live
            last = self.last
            while queue:
                event = queue.popleft()
                if last is None or event.position > last:
                    self.last = event.position
                    return event
            if queue is self._live:
                return None

    async def __anext__(self) -> RegistryEvent:
        while True:
            event = self.take()
            if event is not None:
                return event
            if self._slow:
                raise SlowConsumer(self.max_buffer, self.last)
            if self._reading_retained:  # the retained events read so far are yielded: the next page
                await self._read_retained()
                continue
            if self._closed:
                raise StopAsyncIteration
            self._signal.clear()
            await self._signal.wait()


#: Waits ``seconds`` between two polls of the store's revision (tests inject their own).
Tick = Callable[[float], Awaitable[object]]


class EventFeed:
    """The live events of one store (see the module). ``tick`` is the wait between polls
    (``asyncio.sleep``; tests pass one they release themselves)."""

    def __init__(self, store: Store, *, poll_interval: float = 1.0, page_size: int = PAGE_SIZE,
                 tick: Tick = asyncio.sleep) -> None:
        self.store = store
        self.poll_interval = poll_interval
        self.page_size = page_size
        self._tick = tick
        self._streams: StreamIndex[EventStream] = StreamIndex()
        self._wake = asyncio.Event()
        self._head: EventPosition | None = None
        self._seen = 0  # the store revision the head has reached
        self._task: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[None] | None = None
        #: How many times the reader has read the store (tests count turns with it).
        self.reads = 0

    def notify(self, revision: int) -> None:
        """A commit of this process reached ``revision``: publish its events now."""
        if revision > self._seen:
            self._wake.set()

    @contextlib.asynccontextmanager
    async def follow(self, after: EventPosition | None, *, types: Sequence[str] | None = None,
                     subject: str | None = None, max_buffer: int = 1000) -> AsyncIterator[EventStream]:
        """A stream of the events after ``after`` (``None``: the oldest retained) of any of
        ``types`` about ``subject`` (see :func:`xreg.events.record.subject_filter`). Raises
        :class:`~xreg.storage.errors.EventsGone` when those events were pruned."""
        stream = EventStream(self, after, types, subject, max_buffer)
        self._streams.add(stream)  # joins the live feed before reading the retained events
        try:
            await self._start()
            await stream._read_retained()
            yield stream
        finally:
            self._streams.discard(stream)
            if not self._streams:
                await self._stop()

    async def close(self) -> None:
        """End every stream and stop the reader."""
        for stream in list(self._streams):
            stream._close()
        self._streams.clear()
        await self._stop()

    # -- the reader -------------------------------------------------------------------------------
    async def _start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        if self._starting is not None:
            await asyncio.shield(self._starting)
            return
        self._starting = asyncio.get_running_loop().create_future()
        try:
            self._seen = await self.store.current_revision()
            self._head = EventPosition.end_of(self._seen)
            self._task = asyncio.create_task(self._run(), name="xreg-event-feed")
            self._starting.set_result(None)
        except BaseException as exc:
            self._starting.set_exception(exc)
            self._starting.exception()  # retrieved: the caller gets it
            raise
        finally:
            self._starting = None

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            woken = await self._wait()
            try:
                revision = await self.store.current_revision()
                if woken or revision > self._seen:
                    await self._publish_until(revision)
            except asyncio.CancelledError:
                raise
            except EventsGone:  # history pruned under the feed's head: its streams lost events
                for stream in list(self._streams):
                    stream._overrun()
                self._seen = await self.store.current_revision()
                self._head = EventPosition.end_of(self._seen)
            except Exception:  # the store's trouble: the next turn tries again
                log.exception("reading the registry's events failed")

    async def _wait(self) -> bool:
        """Until this process commits (``True``) or the next poll is due (``False``)."""
        if self._wake.is_set():
            self._wake.clear()
            return True
        wake = asyncio.ensure_future(self._wake.wait())
        tick = asyncio.ensure_future(self._tick(self.poll_interval))
        try:
            await asyncio.wait({wake, tick}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in (wake, tick):
                if not fut.done():
                    fut.cancel()
        woken = self._wake.is_set()
        self._wake.clear()
        return woken

    async def _publish_until(self, revision: int) -> None:
        """Publish every event after the head (at least up to ``revision``) to every stream."""
        while True:
            self.reads += 1
            page = await self.store.events_after(self._head, limit=self.page_size)
            for event in page:
                streams = self._streams.matching(event)
                for start in range(0, len(streams), PUSH_SLICE):
                    if start:  # the consumers woken so far, and whatever else waits (writes), run first
                        await asyncio.sleep(0)
                    for stream in streams[start:start + PUSH_SLICE]:
                        stream._push(event)
            if page:
                self._head = page[-1].position
                self._seen = max(self._seen, page[-1].position.revision)
            if len(page) < self.page_size:
                break
        self._seen = max(self._seen, revision)
