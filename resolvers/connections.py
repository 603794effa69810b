"""Cursor connections (Relay): keyset pages with ``first`` / ``after`` / ``last`` / ``before``.

Page sizes are bounded by ``graphql_max_page_size``; without ``first`` or ``last`` a page holds
``page_size_default`` entries (at most the bound). Cursors are opaque keyset positions issued by
the registry source; a cursor is only meaningful with the sort it was issued under.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

import strawberry
from strawberry import Private

from adapters.base import Listing, SourcePage
from gateway.errors import UserInputError
from gateway.registry.filters import Filters
from gateway.storage.semantics import Sort
from resolvers.context import Context

T = TypeVar("T")


@strawberry.type(description="Where a page sits in its collection (Relay).")
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type(description="A node and its cursor.")
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type(description="A page of a collection.")
class Connection(Generic[T]):
    nodes: list[T] = strawberry.field(description="The page's nodes.")
    cursors: Private[list[str]]
    has_next: Private[bool]
    has_prev: Private[bool]
    total: Private[int | None]
    counter: Private[Callable[[], Awaitable[int]] | None]

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[Edge[T]]:
        return [Edge(cursor=c, node=n) for c, n in zip(self.cursors, self.nodes)]

    @strawberry.field(description="Cursors of the first and last node; whether more pages exist.")
    def page_info(self) -> PageInfo:
        return PageInfo(has_next_page=self.has_next, has_previous_page=self.has_prev,
                        start_cursor=self.cursors[0] if self.cursors else None,
                        end_cursor=self.cursors[-1] if self.cursors else None)

    @strawberry.field(description="How many nodes the whole collection (with the filter) has.")
    def total_count(self) -> int:
        # synchronous when the source already knew the total (nested pages), else awaited
        return self.total if self.total is not None else self._count()

    async def _count(self) -> int:
        self.total = await self.counter() if self.counter else len(self.nodes)
        return self.total


def connection(page: SourcePage, wrap: Callable[[Any], Any], counter: Callable[[], Awaitable[int]] | None = None) -> Connection:
    """A :class:`Connection` over a source page, its items wrapped into GraphQL objects."""
    return Connection(nodes=[wrap(e) for e in page.items], cursors=page.cursors, has_next=page.has_next,
                      has_prev=page.has_prev, total=page.total, counter=counter)


def page_size(ctx: Context, first: int | None, last: int | None) -> tuple[int, bool]:
    """``(limit, backward)`` of the paging arguments; ``BAD_USER_INPUT`` when out of bounds."""
    if first is not None and last is not None:
        raise UserInputError("pass either first or last, not both")
    bound = ctx.settings.graphql_max_page_size
    for name, value in (("first", first), ("last", last)):
        if value is not None and not 0 <= value <= bound:
            raise UserInputError(f"{name} must be between 0 and {bound}, not {value}")
    if first is None and last is None:
        return min(ctx.settings.page_size_default, bound), False
    return (last, True) if last is not None else (first, False)


def make_listing(
    ctx: Context, ctypes: Sequence[str], filters: Filters | None, sort: Sort | None, *,
    first: int | None, after: str | None, last: int | None, before: str | None, as_of: int | None,
) -> Listing:
    """The :class:`Listing` of one connection field's arguments."""
    limit, backward = page_size(ctx, first, last)
    return Listing(ctypes=tuple(ctypes), filters=filters, sort=sort, limit=limit, backward=backward,
                   after=after, before=before, as_of=as_of)
