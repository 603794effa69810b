"""Cursor connections (Relay): keyset pages with ``first`` / ``after`` / ``last`` / ``before``.

The four paging arguments are declared once: a connection field is :func:`paged_field`, whose
:class:`Paged` extension appends them to the field's own arguments and hands the resolver one
:class:`Paging` value (its ``paging`` parameter, which is not a GraphQL argument).

Page sizes are bounded by ``graphql_max_page_size``; without ``first`` or ``last`` a page holds
``page_size_default`` entries (at most the bound). Cursors are opaque keyset positions issued by
the registry source; a cursor is only meaningful with the sort it was issued under.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

import strawberry
from strawberry import Private
from strawberry.extensions import FieldExtension
from strawberry.types import Info

from adapters.base import Listing, SourcePage
from resolvers.context import Context
from xreg.errors import UserInputError
from xreg.registry.filters import Filters
from xreg.registry.search import search_words
from xreg.storage.semantics import RANK, Sort

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
    cursors: Private[Sequence[str]]
    has_next: Private[bool]
    has_prev: Private[bool]
    total: Private[int | None]
    counter: Private[Callable[[], Awaitable[int]] | None]

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[Edge[T]]:
        return [Edge(cursor=c, node=n) for c, n in zip(self.cursors, self.nodes, strict=False)]

    @strawberry.field(description="Cursors of the first and last node; whether more pages exist.")
    def page_info(self) -> PageInfo:
        return self.info_of_page()

    @strawberry.field(description="How many nodes the whole collection (with the filter) has.")
    def total_count(self) -> int:
        # synchronous when the source already knew the total (nested pages), else awaited
        # (strawberry awaits a returned coroutine; the annotation is the schema's type)
        return self.count()  # type: ignore[return-value]

    def info_of_page(self) -> PageInfo:
        """The page's :class:`PageInfo`."""
        return PageInfo(has_next_page=self.has_next, has_previous_page=self.has_prev,
                        start_cursor=self.cursors[0] if self.cursors else None,
                        end_cursor=self.cursors[-1] if self.cursors else None)

    def count(self) -> int | Awaitable[int]:
        """The collection's size: known, or an awaitable that counts it once."""
        return self.total if self.total is not None else self._count()

    async def _count(self) -> int:
        self.total = await self.counter() if self.counter else len(self.nodes)
        return self.total


def connection(
    page: SourcePage, wrap: Callable[[Any], Any], counter: Callable[[], Awaitable[int]] | None = None,
) -> Connection:
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
    if last is not None:
        return last, True
    if first is not None:
        return first, False
    return min(ctx.settings.page_size_default, bound), False


@dataclass(frozen=True)
class Paging:
    """The paging arguments of one connection field."""

    first: int | None = None
    after: str | None = None
    last: int | None = None
    before: str | None = None
    search: str | None = None


#: The free-text search every collection takes.
SEARCH = ("Free text: entities whose ids, names, descriptions, labels or message types hold every word (a "
          "message's inherited values too), most relevant first unless `sort` is given.")


def _paging_arguments(first: int | None = None, after: str | None = None, last: int | None = None,
                      before: str | None = None,
                      search: Annotated[str | None, strawberry.argument(description=SEARCH)] = None) -> None:
    """The paging arguments, in the order the schema lists them (after the field's own)."""


#: A field declaring only the paging arguments: :class:`Paged` gives every connection field copies.
_PAGING_FIELD: Any = strawberry.field(resolver=_paging_arguments)
_PAGING_NAMES = ("first", "after", "last", "before", "search")


class Paged(FieldExtension):
    """Adds ``first`` / ``after`` / ``last`` / ``before`` to a connection field and passes the
    resolver their values as ``paging=``:class:`Paging`."""

    def apply(self, field: Any) -> None:  # a strawberry field: its arguments are declared by a resolver's
        own = [a for a in field.arguments if a.python_name != "paging"]
        field.arguments = [*own, *(copy.copy(a) for a in _PAGING_FIELD.arguments)]

    def resolve(self, next_: Callable[..., Any], source: Any, info: Info, **kwargs: Any) -> Any:
        return next_(source, info, paging=paging_of(kwargs), **kwargs)

    async def resolve_async(self, next_: Callable[..., Awaitable[Any]], source: Any, info: Info,
                            **kwargs: Any) -> Any:
        return await next_(source, info, paging=paging_of(kwargs), **kwargs)


def paging_of(kwargs: dict[str, Any]) -> Paging:
    """The :class:`Paging` of a connection field's converted arguments, which it takes out of ``kwargs``."""
    return Paging(**{name: kwargs.pop(name, None) for name in _PAGING_NAMES})


def paged_field(description: str) -> Any:
    """A connection field: ``strawberry.field`` with the :class:`Paged` arguments."""
    return strawberry.field(description=description, extensions=[Paged()])


def make_listing(
    ctx: Context, ctypes: Sequence[str], filters: Filters | None, sort: Sort | None, paging: Paging, *,
    as_of: int | None, declared: bool = False,
) -> Listing:
    """The :class:`Listing` of one connection field's arguments."""
    limit, backward = page_size(ctx, paging.first, paging.last)
    search = search_words(paging.search) if paging.search is not None else None
    if search is not None and sort is None:
        sort = Sort(RANK)
    return Listing(ctypes=tuple(ctypes), filters=filters, sort=sort, limit=limit, backward=backward,
                   after=paging.after, before=paging.before, as_of=as_of, declared=declared, search=search)
