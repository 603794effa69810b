"""Pagination of collection reads (pagination/spec.md): ``?limit``, opaque ``?page`` tokens and
RFC 5988 ``Link`` headers with ``rel=next|prev|first|last`` and the collection's ``count``.

Pages are keyset pages: a token holds the position of the first or last entity of the page it
came from (its key and sort value), so following ``next`` / ``prev`` never skips or repeats an
entity that stays in the collection, whatever is inserted or deleted between the requests. A
token only works with the ``sort`` it was made for (``bad_request`` otherwise).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from xreg.errors import XRegistryError
from xreg.registry.reads import Selection, select, store_sort
from xreg.storage.base import Store
from xreg.storage.records import Page
from xreg.storage.semantics import Cursor

#: Cursors past either end of any collection: keys never reach U+10FFFF, and ``true`` is the
#: highest sort value (``xreg.registry.filters.compare_key``), absent the lowest.
_END_ASC = Cursor(key="\U0010ffff", value=True)
_END_DESC = Cursor(key="", value=None)


@dataclass(frozen=True)
class PageToken:
    """Where a page starts (``after`` a cursor), ends (``before`` one), or ``last``."""

    direction: str
    cursor: Cursor | None
    sort: str

    def encode(self) -> str:
        raw = json.dumps([self.direction, self.cursor.encode() if self.cursor else None, self.sort],
                         separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str, sort: str, subject: str) -> PageToken:
        """Parse a token of this API for a request sorted by ``sort``; ``bad_request`` otherwise."""
        try:
            direction, cursor, made_for = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            if direction not in ("after", "before", "last") or not isinstance(made_for, str):
                raise ValueError(direction)
            parsed = Cursor.decode(cursor) if cursor is not None else None
            if (parsed is None) != (direction == "last"):
                raise ValueError(direction)
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise XRegistryError("bad_request", subject,
                                 detail=f"?page={token!r} is not a page token of this API") from exc
        if made_for != sort:
            raise XRegistryError("bad_request", subject, detail="?page belongs to a different ?sort; "
                                 "follow the Link headers as given")
        return cls(direction, parsed, made_for)


async def read_page(store: Store, sel: Selection, token: PageToken | None) -> Page:
    """The page ``token`` names (the first page without one)."""
    if token is None:
        return await select(store, sel)
    if token.direction == "after":
        return await select(store, replace(sel, after=token.cursor))
    end = _END_DESC if sel.sort and sel.sort.descending else _END_ASC
    return await select(store, replace(sel, before=token.cursor or end))


def link_values(url: str, params: list[tuple[str, str]], page: Page, sel: Selection, sort: str, total: int,
                *, paged: bool) -> list[str]:
    """The ``Link`` header values for ``page`` (``params``: the request's query minus ``page``);
    ``first`` and ``last`` when the collection is paged at all."""
    def link(rel: str, token: PageToken | None) -> str:
        query = params + ([("page", token.encode())] if token else [])
        return f"<{url}{'?' + urlencode(query) if query else ''}>;rel={rel};count={total}"

    order = store_sort(sel.ctype, sel.sort)
    out = []
    if page.has_next and page.items:
        out.append(link("next", PageToken("after", page.cursor_of(page.items[-1], order), sort)))
    if page.has_prev and page.items:
        out.append(link("prev", PageToken("before", page.cursor_of(page.items[0], order), sort)))
    if paged or page.has_next or page.has_prev:
        out.append(link("first", None))
        out.append(link("last", PageToken("last", None, sort)))
    return out
