"""GraphQL for the federation: each registry's health, and collections across registries.

``registries { status { … } }`` reports every source, reachable or not. The top-level
collections (``endpoints``, ``messages``, …) read every registry (or those named), merged in
sort order with cursors that stay correct across registries (:mod:`adapters.merged`); a
registry that fails is left out and reported in ``errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC
from enum import Enum
from typing import Any

import strawberry
from strawberry.types import Info

from adapters.base import Listing, RegistrySource, SourceStatus, SourceUnavailable
from adapters.merged import count_across, list_across
from resolvers.connections import Connection, Paging, connection, make_listing
from resolvers.filters import Filter, SortBy, to_filters, to_sort
from resolvers.scalars import Timestamp
from xreg.errors import UserInputError, XRegistryError
from xreg.model.registry_model import RegistryModel


@strawberry.type(description="Cache figures of a registry since the gateway started.")
class CacheStatistics:
    hits: int = strawberry.field(description="Answers served fresh from the cache.")
    stale_hits: int = strawberry.field(description="Stale answers served while fetched anew.")
    misses: int = strawberry.field(description="Answers the registry had to give.")
    stale_on_error: int = strawberry.field(description="Stale answers served because the registry failed.")
    revalidations: int = strawberry.field(description="Background refreshes started.")
    errors: int = strawberry.field(description="Failed cache reads and writes (counted as misses).")
    invalidations: int = strawberry.field(
        description="Times the registry's event log reported a change, leaving the answers cached before unread.")


def _timestamp(seconds: float | None) -> Timestamp | None:
    if seconds is None:
        return None
    from datetime import datetime

    return Timestamp(datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z"))


@strawberry.enum(description="Whether a registry answers.")
class Reachability(Enum):
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"
    UNKNOWN = "unknown"


@strawberry.type(description="The health of a registry source.")
class RegistryStatus:
    status: strawberry.Private[SourceStatus]

    @strawberry.field(description="`local`, `xregistry` (a remote HTTP API) or `file` (a document).")
    def kind(self) -> str:
        return self.status.kind

    @strawberry.field(description="The remote's API URL, or the document's path or URL.")
    def url(self) -> str | None:
        return self.status.url

    @strawberry.field(description="Whether its last request succeeded and its circuit is closed.")
    def healthy(self) -> bool:
        return self.status.healthy

    @strawberry.field(description=(
        "Whether it answers: its circuit breaker first (open or half open: `UNREACHABLE`), then its last "
        "request or health probe; `UNKNOWN` before anything was asked of it."))
    def state(self) -> Reachability:
        return Reachability(self.status.state)

    @strawberry.field(description="When its requests began to fail, with no success since (null: it answers).")
    def unreachable_since(self) -> Timestamp | None:
        return _timestamp(self.status.unreachable_since)

    @strawberry.field(description=(
        "When it first answered from a stale cache in the current outage (null: it has not); the local registry: "
        "since when messages wait for their re-materialisation after a write of a base with many dependents. Each "
        "answer served stale also names it in the response's `extensions.stale`."))
    def stale_since(self) -> Timestamp | None:
        return _timestamp(self.status.stale_since)

    @strawberry.field(description="When it last answered (a document: when it was loaded).")
    def last_success(self) -> Timestamp | None:
        return _timestamp(self.status.last_success)

    @strawberry.field(description="What went wrong last.")
    def last_error(self) -> str | None:
        return self.status.last_error

    @strawberry.field(description="When it went wrong last.")
    def last_error_at(self) -> Timestamp | None:
        return _timestamp(self.status.last_error_at)

    @strawberry.field(description="The circuit breaker: `closed`, `open` or `half_open` (null: none).")
    def breaker(self) -> str | None:
        return self.status.breaker

    @strawberry.field(description="HTTP requests sent to it (retries included).")
    def requests(self) -> int:
        return self.status.requests

    @strawberry.field(description="Its cache figures (null: not cached).")
    def cache(self) -> CacheStatistics | None:
        return CacheStatistics(**self.status.cache) if self.status.cache else None


def ctypes_of(model: RegistryModel, group_type: str | None, resource_type: str | None) -> tuple[str, ...]:
    """The collection types of a registry's model that a cross-registry collection reads."""
    if resource_type is None:
        return (group_type,) if group_type and model.group(group_type) else ()
    return tuple(f"{g}/{resource_type}" for g, gdef in model.groups.items()
                 if resource_type in gdef.resources and (group_type is None or g == group_type))


def chosen(info: Info, registries: list[str] | None) -> list[RegistrySource]:
    """The sources a cross-registry collection reads, in priority order."""
    sources = info.context.sources
    unknown = [r for r in registries or () if r not in sources]
    if unknown:
        raise UserInputError(f"unknown registr{'y' if len(unknown) == 1 else 'ies'}: {', '.join(unknown)} "
                             f"(known: {', '.join(sources)})")
    wanted = set(registries) if registries is not None else None
    return [s for rid, s in sources.items() if wanted is None or rid in wanted]


#: The kind of source that is a remote xRegistry API (no store of the gateway's holds it).
REMOTE = "xregistry"


def unsearchable(registry: str, subject: str) -> XRegistryError:
    """The error reported for a registry left out of a search."""
    return XRegistryError("action_not_supported", subject, registry=registry, action="search",
                          detail=f"registry {registry!r} cannot be searched (free text needs the gateway's own "
                                 "store); use filter instead")


async def across(
    info: Info, *, group_type: str | None, resource_type: str | None, registries: list[str] | None,
    filter: Filter | None, sort: SortBy | None, paging: Paging, wrap: Callable[[Any], Any],
    read_ahead: Callable[[Sequence[Any]], None] | None = None,
) -> Connection:
    """A connection over one kind of entity across registries (``read_ahead``: what the page's
    entities are handed to as they come in, ``resolvers/types/ahead.py``)."""
    ctx = info.context
    subject = "/" + (resource_type or group_type or "")
    sources = chosen(info, registries)
    own: dict[str, Listing] = {}
    if paging.search is not None:  # the registries that cannot search are left out, and said so
        for source in [s for s in sources if not s.searchable]:
            info.context.report(unsearchable(source.id, subject), info)
        sources = [s for s in sources if s.searchable]
    if getattr(filter, "reachable_over", None) is not None:  # answered by the engine's store only
        for source in [s for s in sources if s.kind == REMOTE]:
            info.context.report(XRegistryError(
                "action_not_supported", subject, registry=source.id, action="reachableOver",
                detail=f"registry {source.id!r} is a remote registry: which endpoints reach its messages is "
                       "answered by the gateway's own store only"), info)
        sources = [s for s in sources if s.kind != REMOTE]
    for source in sources:
        ctypes = ctypes_of(source.model, group_type, resource_type)
        if ctypes:
            own[source.id] = make_listing(
                ctx, ctypes, to_filters(filter, source.model, ctypes[0], subject),
                to_sort(sort, source.model, ctypes[0], subject),
                Paging(first=paging.first, last=paging.last, search=paging.search),
                as_of=None, declared=bool(getattr(filter, "declared", False)))
    if not own:
        if resource_type is not None:
            raise XRegistryError("unknown_resource_type", subject, name=resource_type, group=group_type or "any")
        raise XRegistryError("unknown_group_type", subject, name=group_type)
    merged = make_listing(ctx, ("*",), None, next((lst.sort for lst in own.values()), None), paging, as_of=None)
    page = await list_across(sources, merged, lambda s: own.get(s.id))
    _report(info, page.errors)
    ctx.loaders.prime(page.items)
    page.items = await ctx.loaders.settle(page.items, read_ahead)

    async def total() -> int:
        count, errors = await count_across(sources, lambda s: own.get(s.id))
        _report(info, [e for e in errors if all(e.registry != p.registry for p in page.errors)])
        return count

    return connection(page, wrap, total)  # type: ignore[arg-type]


def _report(info: Info, errors: Sequence[SourceUnavailable]) -> None:
    for error in errors:
        info.context.report(error, info)
