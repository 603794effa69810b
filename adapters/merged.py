"""One collection across several registries: pages merged in sort order, with cursors that stay
correct across sources.

Rows are ordered by their sort value (the reference order), then key, then registry (in the
federation's priority order); descending sorts reverse all three. A merged cursor is a position
in that order — ``(registry, key, sort value)``. Every source pages by such positions (the
:class:`~adapters.base.Listing` contract), so the page after a merged cursor is, per source,
its page after the same position; rows of other registries tied with the cursor's row on
``(value, key)`` are kept or skipped by the registry order. Each source reads at most one page
per merged page; a source that fails is left out and reported, the others still answer.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from adapters.base import Entity, InvalidCursor, Listing, RegistrySource, SourceUnavailable
from adapters.slicing import KEY_END, order_key
from xreg.storage.semantics import Cursor

#: The listing a source is asked for (``None``: it has no such collection).
ListingFor = Callable[[RegistrySource], "Listing | None"]


@dataclass(frozen=True)
class Position:
    """A row's place in a merged collection."""

    registry: str
    key: str
    value: object = None

    def encode(self) -> str:
        raw = json.dumps(["m", self.registry, self.key, self.value], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> Position:
        try:
            tag, registry, key, value = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            if tag != "m" or not isinstance(registry, str) or not isinstance(key, str) or not key:
                raise ValueError(token)
        except (ValueError, TypeError, UnicodeDecodeError):
            raise InvalidCursor(f"malformed cursor {token!r} (not one of a collection across registries)") from None
        return cls(registry, key, value)


@dataclass
class MergedPage:
    """A page across registries, and the registries that could not be read."""

    items: list[Entity]
    cursors: list[str]
    has_next: bool = False
    has_prev: bool = False
    errors: list[SourceUnavailable] = field(default_factory=list)
    #: Not known for free across registries (see :func:`count_across`).
    total: int | None = None


def _pred(key: str) -> str:
    """A key just before ``key`` (no XID key lies between them)."""
    return key[:-1] + chr(ord(key[-1]) - 1) + KEY_END


def _source_cursor(pos: Position, rank: int, mine: int, *, after: bool, descending: bool) -> str:
    """The cursor of one source (ranked ``mine``) for a merged ``after`` / ``before`` position
    of a row of the source ranked ``rank``."""
    key = pos.key
    if mine != rank:
        later = mine > rank if not descending else mine < rank  # this source's tied row follows pos
        if later == after:  # the tied row is in the page: move the cursor just past it
            just_before, just_after = (_pred(key), key + "\x00") if not descending else (key + "\x00", _pred(key))
            key = just_before if after else just_after
    return Cursor(key, pos.value).encode()


async def list_across(sources: Sequence[RegistrySource], listing: Listing, listing_for: ListingFor) -> MergedPage:
    """One page of a collection across ``sources`` (in priority order)."""
    ranks = {s.id: i for i, s in enumerate(sources)}
    after = Position.decode(listing.after) if listing.after else None
    before = Position.decode(listing.before) if listing.before else None
    desc = bool(listing.sort and listing.sort.descending)
    jobs, asked = [], []
    for mine, source in enumerate(sources):
        own = listing_for(source)
        if own is None:
            continue
        own = replace(
            own, limit=listing.limit, backward=listing.backward,
            after=_source_cursor(after, ranks.get(after.registry, len(ranks)), mine, after=True,
                                 descending=desc) if after else None,
            before=_source_cursor(before, ranks.get(before.registry, len(ranks)), mine, after=False,
                                  descending=desc) if before else None,
        )
        jobs.append(source.list(own))
        asked.append((mine, source))
    results = await asyncio.gather(*jobs, return_exceptions=True)
    rows, errors, more_next, more_prev = [], [], False, False
    for (mine, source), result in zip(asked, results, strict=False):
        if isinstance(result, SourceUnavailable):
            errors.append(result)
            continue
        if isinstance(result, BaseException):
            raise result
        more_next |= result.has_next
        more_prev |= result.has_prev
        for entity, token in zip(result.items, result.cursors, strict=False):
            cursor = Cursor.decode(token)
            rows.append(((order_key(cursor, listing.sort), mine), entity, Position(source.id, cursor.key,
                                                                                   cursor.value)))
    rows.sort(key=lambda r: r[0], reverse=desc)
    if listing.backward:
        more_prev |= len(rows) > listing.limit
        rows = rows[-listing.limit:] if listing.limit else []
    else:
        more_next |= len(rows) > listing.limit
        rows = rows[: listing.limit]
    return MergedPage([e for _, e, _ in rows], [p.encode() for _, _, p in rows], more_next, more_prev, errors)


async def count_across(sources: Sequence[RegistrySource], listing_for: ListingFor) -> tuple[int,
                                                                                            list[SourceUnavailable]]:
    """How many rows the collection has across ``sources``, and the registries that failed."""
    asked = [(s, own) for s in sources if (own := listing_for(s)) is not None]
    results = await asyncio.gather(*(s.count(own) for s, own in asked), return_exceptions=True)
    total, errors = 0, []
    for result in results:
        if isinstance(result, SourceUnavailable):
            errors.append(result)
        elif isinstance(result, BaseException):
            raise result
        else:
            total += result
    return total, errors
