"""Per-request DataLoaders: every entity and every nested page a query needs, batched.

All loads issued while a level of the query resolves are served together: entities by XID with
one :meth:`~adapters.base.RegistrySource.get_many` per registry and revision, nested pages with
one :meth:`~adapters.base.RegistrySource.list_children` per registry and listing, full views
(collection counts) with one :meth:`~adapters.base.RegistrySource.complete` per registry. So the number
of source (and store) calls grows with the depth of a query, not with the size of its pages.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Mapping

from strawberry.dataloader import DataLoader

from adapters.base import Entity, Listing, RegistrySource, SourcePage
from adapters.batching import EntityBatcher

#: ``(registry, as_of, XID as written)``; matched case-insensitively
EntityKey = tuple[str, "int | None", str]
#: ``(registry, parent XID as written, listing)``
ChildrenKey = tuple[str, str, Listing]


class Loaders:
    """The loaders of one request. A registry that fails (a remote that is down) fails only the
    loads addressed to it."""

    def __init__(self, sources: Mapping[str, RegistrySource]) -> None:
        self.sources = sources
        self.batcher = EntityBatcher(sources)
        self.entities: DataLoader[EntityKey, Entity | None] = self.batcher.loader
        self.children: DataLoader[ChildrenKey, SourcePage] = DataLoader(self._children)
        self.views: DataLoader[Entity, dict] = DataLoader(
            self._views, cache_key_fn=lambda e: (e.registry, e.as_of, e.xid.lower()))

    async def entity(self, registry: str, xid: str, as_of: int | None) -> Entity | None:
        """One entity by XID (``None`` when it does not exist)."""
        return await self.batcher.load(registry, xid, as_of)

    async def many(self, registry: str, xids: list[str], as_of: int | None) -> list[Entity | None]:
        """Several entities by XID, in order."""
        return await self.entities.load_many([(registry, as_of, x) for x in xids])

    def prime(self, entities: list[Entity]) -> None:
        """Remember entities read by a page, so that later look-ups of them are free."""
        self.batcher.prime(entities)

    async def _views(self, entities: list[Entity]) -> list[dict | BaseException]:
        groups: dict[str, list[Entity]] = defaultdict(list)
        for e in entities:
            groups[e.registry].append(e)
        found = await asyncio.gather(*(self.sources[r].complete(es) for r, es in groups.items()),
                                     return_exceptions=True)
        by_key: dict[tuple, dict | BaseException] = {}
        for es, vs in zip(groups.values(), found, strict=False):
            for i, e in enumerate(es):
                by_key[(e.registry, e.as_of, e.xid.lower())] = vs if isinstance(vs, BaseException) else vs[i]
        return [by_key[(e.registry, e.as_of, e.xid.lower())] for e in entities]

    async def _children(self, keys: list[ChildrenKey]) -> list[SourcePage | BaseException]:
        groups: dict[tuple[str, Listing], list[str]] = defaultdict(list)
        for registry, parent, listing in keys:
            groups[(registry, listing)].append(parent)
        found = await asyncio.gather(*(self.sources[r].list_children(parents, listing)
                                       for (r, listing), parents in groups.items()), return_exceptions=True)
        by_group = dict(zip(groups, found, strict=False))
        pages: list[SourcePage | BaseException] = []
        for r, parent, listing in keys:
            result = by_group[(r, listing)]
            pages.append(result if isinstance(result, BaseException) else result[parent.lower()])
        for page in pages:
            if isinstance(page, SourcePage):
                self.prime(page.items)
        return pages
