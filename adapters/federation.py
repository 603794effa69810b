"""The registries the gateway serves, built from the settings and rebuilt without a restart.

:class:`Federation` turns ``settings.registries`` into sources: the local store (always there,
listed or not), :class:`~adapters.remote.RemoteSource` for ``kind: xregistry`` and
:class:`~adapters.file.FileSource` for ``kind: file``, ordered by ``priority`` (then as
listed). They share one cache backend (``cache_url``).

:meth:`Federation.reload` applies new settings: registries whose entry is unchanged keep their
connections, circuit breakers and cache (documents are re-read when their file changed); new or
changed ones are opened before they replace the old ones, removed ones are closed. Invalid
settings are refused and the running set stays. :meth:`Federation.watch` reloads on ``SIGHUP``
and when the settings file changes. Only ``registries`` and ``cache_url`` are reloaded; other
settings need a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx
from aiocache.base import BaseCache

from adapters.base import RegistrySource, SourceStatus
from adapters.cache import RegistryCache, create_backend, fingerprint
from adapters.clock import SYSTEM_CLOCK, Clock
from adapters.file import FileSource
from adapters.references import References, rules_over
from adapters.remote import RemoteSource
from xreg.config import RegistryConfig, Settings, load_settings
from xreg.errors import XRegistryError

log = logging.getLogger("xreg.federation")


class ConfigError(ValueError):
    """Settings that cannot be applied (the running registries stay as they are)."""


class SourcesView(Mapping[str, RegistrySource]):
    """The federation's current sources by id, in priority order (a live view)."""

    def __init__(self, federation: Federation) -> None:
        self._federation = federation

    def __getitem__(self, key: str) -> RegistrySource:
        return self._federation._sources[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._federation._sources))

    def __len__(self) -> int:
        return len(self._federation._sources)


class Federation:
    """The configured registries (see the module documentation)."""

    def __init__(self, settings: Settings, local: RegistrySource, *,
                 transports: Mapping[str, httpx.AsyncBaseTransport] | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        """``transports``: an httpx transport per registry id, for tests that route requests;
        ``clock``: the time the remote sources read (tests move it by hand)."""
        self.clock = clock
        self.settings = settings
        self.local = local
        self.transports = dict(transports or {})
        self.backend = create_backend(settings.cache_url, settings.cache_memory_entries)
        self._sources: dict[str, RegistrySource] = {}
        self._configs: dict[str, RegistryConfig] = {}
        self._lock = asyncio.Lock()
        self._watcher: asyncio.Task | None = None
        self._signal_installed = False
        #: How many reloads were applied (tests and logs).
        self.reloads = 0
        #: Waiting for the next reload the watcher or ``SIGHUP`` attempts (:meth:`next_reload`).
        self._reload_waiters: list[asyncio.Future[str | None]] = []
        #: Why the last reload was refused (``None`` once one succeeds): reported by ``/readyz``.
        self.last_reload_error: str | None = None
        self.sources: Mapping[str, RegistrySource] = SourcesView(self)

    # -- building -----------------------------------------------------------------------------
    def _build(self, config: RegistryConfig) -> RegistrySource:
        if config.kind == "local":
            return self.local
        if config.kind == "file":
            return FileSource(config)
        cache = RegistryCache(
            self.backend, f"xreg:{config.id}:{fingerprint(config.url or '', str(config.auth.forward))}",
            ttl=config.cache_ttl, stale_while_revalidate=config.stale_while_revalidate,
            stale_if_error=config.stale_if_error, clock=self.clock, registry=config.id)
        return RemoteSource(config, cache, transport=self.transports.get(config.id), clock=self.clock)

    @staticmethod
    def _ordered(configs: Sequence[RegistryConfig]) -> list[RegistryConfig]:
        return [c for _, c in sorted(enumerate(configs), key=lambda ic: (ic[1].priority, ic[0]))]

    async def open(self) -> None:
        """Build and open every configured registry (a document that cannot be loaded fails)."""
        configs = self._ordered(self.settings.federated_registries)
        built: dict[str, RegistrySource] = {}
        try:
            for config in configs:
                built[config.id] = self._build(config)
            await asyncio.gather(*(s.open() for s in built.values() if s is not self.local))
        except (ValueError, XRegistryError) as exc:
            await asyncio.gather(*(s.close() for s in built.values() if s is not self.local), return_exceptions=True)
            raise ConfigError(f"registries: {exc}") from exc
        self._sources, self._configs = built, {c.id: c for c in configs}

    async def close(self) -> None:
        """Stop watching, close every registry but the local one (the application owns it), and the cache."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        if self._signal_installed:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        await asyncio.gather(*(s.close() for s in self._sources.values() if s is not self.local),
                             return_exceptions=True)
        self._sources = {}
        with contextlib.suppress(Exception):
            await self.backend.close()

    # -- reloading ----------------------------------------------------------------------------
    async def reload(self, settings: Settings | None = None) -> list[str]:
        """Apply new settings (default: read the settings file and environment again); returns
        what changed. Raises :class:`ConfigError` and changes nothing when they are invalid."""
        async with self._lock:
            if settings is None:
                try:
                    settings = load_settings(config=self.settings.config)
                except Exception as exc:
                    raise ConfigError(f"settings not reloaded: {exc}") from exc
            if settings.registry_id != self.settings.registry_id:
                raise ConfigError("settings not reloaded: registry_id changed (that needs a restart)")
            configs = self._ordered(settings.federated_registries)
            rebuild_all = settings.cache_url != self.settings.cache_url
            old_backend = self.backend
            if rebuild_all:
                self.backend = create_backend(settings.cache_url, self.settings.cache_memory_entries)
            changes, fresh, kept = [], {}, {}
            try:
                for config in configs:
                    current = self._sources.get(config.id)
                    if current is not None and not rebuild_all and _same(current, self._configs.get(config.id), config):
                        kept[config.id] = current
                    else:
                        fresh[config.id] = self._build(config)
                        changes.append(f"{'changed' if current is not None else 'added'} {config.id}")
                await asyncio.gather(*(s.open() for s in fresh.values() if s is not self.local))
            except Exception as exc:
                await asyncio.gather(*(s.close() for s in fresh.values() if s is not self.local),
                                     return_exceptions=True)
                if rebuild_all:
                    self.backend = old_backend
                raise ConfigError(f"settings not reloaded: {exc}") from exc
            for source in kept.values():
                if await source.refresh():
                    changes.append(f"reloaded {source.id}")
            retired = [s for i, s in self._sources.items() if s is not self.local and (i in fresh or i not in kept)]
            changes += [f"removed {i}" for i in self._sources if i not in kept and i not in fresh]
            self._sources = {c.id: kept.get(c.id) or fresh[c.id] for c in configs}
            self._configs = {c.id: c for c in configs}
            self.settings = self.settings.model_copy(update={"registries": settings.registries,
                                                             "cache_url": settings.cache_url})
            await asyncio.gather(*(s.close() for s in retired), return_exceptions=True)
            if rebuild_all:
                with contextlib.suppress(Exception):
                    await old_backend.close()
            self.reloads += 1
            log.info("registries reloaded: %s", ", ".join(changes) or "nothing changed")
            return changes

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except ConfigError as exc:
            self.last_reload_error = str(exc)
            log.error("%s", exc)
        else:
            self.last_reload_error = None
        finally:
            waiters, self._reload_waiters = self._reload_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(self.last_reload_error)

    async def next_reload(self) -> str | None:
        """Wait for the next reload the settings watcher or ``SIGHUP`` attempts; returns why it was
        refused, ``None`` when it was applied."""
        waiter: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._reload_waiters.append(waiter)
        return await waiter

    def watch(self) -> None:
        """Reload on ``SIGHUP`` (where signals can be handled) and when the settings file changes
        (checked every ``config_watch_seconds``)."""
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(self._reload_logged()))
            self._signal_installed = True
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            log.info("SIGHUP cannot be handled here; settings reload on file changes only")
        path, every = self.settings.config, self.settings.config_watch_seconds
        if path is not None and every > 0 and self._watcher is None:
            # the file as it is now: a change made before the task first runs is still seen
            self._watcher = loop.create_task(self._poll(Path(path), every, _stamp(Path(path))))

    async def _poll(self, path: Path, every: float, last: tuple[int, int] | None) -> None:
        while True:
            await asyncio.sleep(every)
            now = _stamp(path)
            if now is not None and now != last:
                last = now
                await self._reload_logged()

    # -- queries ------------------------------------------------------------------------------
    def ordered(self, ids: Sequence[str] | None = None) -> list[RegistrySource]:
        """Sources in priority order (only ``ids``, when given; unknown ids are ignored)."""
        wanted = None if ids is None else set(ids)
        return [s for i, s in self._sources.items() if wanted is None or i in wanted]

    def status(self) -> list[SourceStatus]:
        """The health of every source, in priority order."""
        return [s.status() for s in self._sources.values()]

    def roots(self) -> dict[str, list[str]]:
        """Each registry's root URLs (what absolute references to it start with)."""
        out: dict[str, list[str]] = {}
        for rid, source in self._sources.items():
            config = self._configs.get(rid)
            urls = [getattr(source, "base_url", ""), *(config.match_urls if config else []),
                    *getattr(source, "aliases", [])]
            out[rid] = list(dict.fromkeys(u.rstrip("/") for u in urls if u))
        return out

    def shared_cache(self) -> BaseCache | None:
        """The cache replicas share (``cache_url`` Redis), or ``None`` with ``memory://``."""
        return None if self.settings.cache_url == "memory://" else self.backend

    def references(self, sources: Sequence[RegistrySource] | None = None) -> References:
        """The reference rules over the current registries."""
        return rules_over(sources if sources is not None else self.ordered(), self.roots())


def _stamp(path: Path) -> tuple[int, int] | None:
    """The settings file's modification time and size (``None`` while it cannot be read)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _same(source: RegistrySource, old: RegistryConfig | None, new: RegistryConfig) -> bool:
    """Whether a registry's entry is unchanged, its secrets included (a secret file or variable
    is read again and compared with what the running client sends)."""
    if old is None or old != new:
        return False
    client = getattr(source, "client", None)
    if client is None:
        return True
    try:
        return client.auth_headers == new.auth.resolved_headers()
    except ValueError:
        return False
