"""Following a remote registry's event log, so that its cached answers go when it changes.

A remote that is an xRegistry gateway like this one offers its events at ``GET /events`` (a
JSON array of CloudEvents, ``application/cloudevents-batch+json``, each with its position
``xregposition``, and the registry's instance id in ``X-Registry-Instance``), beside its API
root: ``<url>/../events`` unless ``events_url`` names another URL. :class:`RemoteEvents` probes
that URL once the source opens: an answer of that media type naming an instance means the remote
offers events; anything else (404, another media type, an object) means it does not, and its
answers keep living for ``cache_ttl``. A probe that fails (unreachable, 5xx) is tried again at the
next poll.

Then, every ``events_poll_seconds``, it reads the events after the last position it saw; when
there are any (or the instance changed, or the position is no longer retained: ``410``), the
cache of the registry moves to a new generation (:meth:`adapters.cache.RegistryCache.invalidate`)
— named after the last position, so replicas sharing a Redis cache that saw the same event share
their entries again. The whole registry's entries go, not only those of the events' subjects:
an entity is also inside the collections, inlined trees and nested pages cached around it. The
events are read with the remote's client settings (its credentials, timeouts, no proxies, no
redirects), a page of at most :data:`PAGE` events and :data:`MAX_BYTES` at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from adapters.cache import RegistryCache
from xreg import json_limits

log = logging.getLogger("xreg.remote")

#: Events read per request.
PAGE = 1000
#: Largest answer read from the event log.
MAX_BYTES = 4 * 1024 * 1024
BATCH_MEDIA_TYPE = "application/cloudevents-batch+json"
INSTANCE_HEADER = "X-Registry-Instance"


def events_url(url: str, configured: str | None = None) -> str:
    """The event log of the registry whose API root is ``url``: ``configured``, else ``events``
    beside the root (``http://h/registry`` → ``http://h/events``)."""
    return configured or str(httpx.URL(url.rstrip("/") + "/").join("../events"))


class RemoteEvents:
    """Follows one remote's event log and invalidates its cache (see the module doc)."""

    def __init__(self, registry: str, http: httpx.AsyncClient, url: str, cache: RegistryCache, *,
                 poll_interval: float, tick: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.registry = registry
        self.http = http
        self.url = url
        self.cache = cache
        self.poll_interval = poll_interval
        self.tick = tick
        #: ``None`` until a probe answered; then whether the remote offers events.
        self.offered: bool | None = None
        self.instance: str | None = None
        #: The position of the last event seen (``""``: none yet).
        self.position = ""
        #: Set once the first probe answered (either way).
        self.probed = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """Follow in the background until :meth:`close`."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the remote's failure: answers keep their TTL meanwhile
                log.info("registry %s: reading its event log %s failed: %s", self.registry, self.url, exc)
            if self.offered is False:
                return
            await self.tick(self.poll_interval)

    async def poll(self) -> int:
        """Read the events after the last position seen; invalidate the cache when there are any
        (the first read only finds where the log ends). Returns the events read."""
        first = self.instance is None
        seen = 0
        while True:
            answer = await self._page(self.position)
            if answer is None:
                return seen
            instance, events = answer
            if self.instance is not None and instance != self.instance:  # restored, or replaced
                log.info("registry %s: its event log is now of instance %s", self.registry, instance)
                self.position, first = "", False
                self.cache.invalidate(f"{instance}.")
            self.instance = instance
            if events:
                self.position = str(events[-1]["xregposition"])
                seen += len(events)
            if len(events) < PAGE:
                break
        if seen and not first:
            self.cache.invalidate(f"{self.instance}.{self.position}")
        async with self._changed:
            self._changed.notify_all()
        return seen

    async def reached(self, position: str) -> None:
        """Wait until the events up to ``position`` (``"<revision>.<index>"``) have been read."""
        def key(text: str) -> tuple[int, ...]:
            return tuple(int(p) for p in text.split(".")) if text else (-1,)

        async with self._changed:
            await self._changed.wait_for(lambda: bool(self.position) and key(self.position) >= key(position))

    async def _page(self, after: str) -> tuple[str, list[dict[str, Any]]] | None:
        """One page of events after ``after``, with the instance; ``None`` when the remote offers
        none (which ends the probe) — or, for a position no longer retained, after starting over."""
        params = {"limit": str(PAGE), **({"after": after} if after else {})}
        async with self.http.stream("GET", self.url, params=params,
                                    headers={"Accept": BATCH_MEDIA_TYPE}) as response:
            if response.status_code == 410 and after:  # pruned past our position: start over
                self.position = ""
                self.cache.invalidate(f"{self.instance}.gone")
                return None
            if response.status_code >= 500 or response.status_code == 429:
                raise httpx.HTTPStatusError(f"answered HTTP {response.status_code}", request=response.request,
                                            response=response)
            media = response.headers.get("content-type", "").split(";")[0].strip().lower()
            instance = response.headers.get(INSTANCE_HEADER)
            if response.status_code != 200 or media != BATCH_MEDIA_TYPE or not instance:
                self._offers(False)
                return None
            raw = bytearray()
            async for chunk in response.aiter_bytes():
                raw.extend(chunk)
                if len(raw) > MAX_BYTES:
                    raise ValueError(f"an event page larger than {MAX_BYTES} bytes")
        body = json_limits.loads(bytes(raw))
        if not isinstance(body, list) or not all(isinstance(e, dict) and "xregposition" in e for e in body):
            self._offers(False)
            return None
        self._offers(True)
        return instance, body

    def _offers(self, offered: bool) -> None:
        if self.offered is None:
            log.info("registry %s: %s", self.registry, f"following its event log {self.url}" if offered else
                     f"offers no event log at {self.url}; cached answers live for cache_ttl")
        self.offered = offered
        self.probed.set()
