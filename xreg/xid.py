"""XIDs as values: parsed once, then read by their parts (core/spec.md, "``xid`` Attribute").

An XID is the registry-relative path of an entity::

    /                                   the registry
    /<GROUPS>/<GID>                     a group
    /<GROUPS>/<GID>/<RESOURCES>/<RID>   a resource
    /…/<RESOURCES>/<RID>/meta           a resource's meta entity
    /…/<RESOURCES>/<RID>/versions/<VID> a version

:meth:`Xid.parse` checks this shape only: every segment non-empty, ``meta`` and ``versions``
spelled in lower case. Whether the types exist in a model and the ids are valid ids is
``xreg.ids.parse_xid``'s business. Text that is not an XID raises
``XRegistryError("malformed_xid")``; asking an :class:`Xid` for a part it does not have (the
parent of the registry, the version of a group) is a programming error and raises ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from xreg.errors import XRegistryError

#: ``/[<GROUPS>/<GID>[/<RESOURCES>/<RID>[/meta | /versions/<VID>]]]``, for error details.
SHAPE = "an XID has the form /[<GROUPS>/<GID>[/<RESOURCES>/<RID>[/meta | /versions/<VID>]]]"

#: How many parsed XIDs are remembered (reads parse the same XIDs over and over).
PARSED_XIDS = 16384
#: Levels by depth: how many (collection, id) steps lead from the registry to the entity.
_LEVELS = ("registry", "group", "resource", "version")


@dataclass(frozen=True, slots=True)
class Xid:
    """The parts of one XID; absent parts are ``None``. ``Xid()`` is ``/``, the registry.

    Parts are taken as given (an id with a ``/`` in it does not make a valid XID, but it can
    still name the subject of a ``malformed_id`` error). Equality and hashing compare the parts
    exactly; :attr:`key` is the case-insensitive identity the store uses.
    """

    group_type: str | None = None
    group_id: str | None = None
    resource_type: str | None = None
    resource_id: str | None = None
    version_id: str | None = None
    meta: bool = False

    def __post_init__(self) -> None:
        chain = (self.group_type, self.group_id, self.resource_type, self.resource_id)
        given = [p is not None for p in chain]
        if given != sorted(given, reverse=True) or given.count(True) % 2:
            raise ValueError("XID parts come in (type, id) pairs from the top down")
        if (self.meta or self.version_id is not None) and self.resource_id is None:
            raise ValueError("only a resource has a meta entity and versions")
        if self.meta and self.version_id is not None:
            raise ValueError("an XID is either …/meta or …/versions/<VID>")

    @classmethod
    def parse(cls, text: object) -> Xid:
        """The XID ``text`` spells; ``malformed_xid`` when it has none of the XID shapes."""
        if not isinstance(text, str) or not text.startswith("/"):
            raise XRegistryError("malformed_xid", str(text), xid=text,
                                 detail="an XID must be a string starting with '/'")
        return _parse(text)

    def __str__(self) -> str:
        segs = [p for p in (self.group_type, self.group_id, self.resource_type, self.resource_id) if p is not None]
        if self.meta:
            segs.append("meta")
        elif self.version_id is not None:
            segs += ["versions", self.version_id]
        return "/" + "/".join(segs)

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts present, from the group type down: ``(gtype, gid, rtype, rid, vid)`` for a
        version, ``(gtype, gid, rtype, rid)`` for a resource and its ``meta``, ``()`` for the registry."""
        chain = (self.group_type, self.group_id, self.resource_type, self.resource_id, self.version_id)
        return tuple(p for p in chain if p is not None)

    @property
    def key(self) -> str:
        """The XID in lower case: the entity's identity in the store (ids are case-insensitive)."""
        return str(self).lower()

    @property
    def depth(self) -> int:
        """How many (collection, id) steps lead to the entity: 0 the registry, 1 a group, 2 a
        resource and its ``meta``, 3 a version."""
        if self.version_id is not None:
            return 3
        return 2 if self.resource_id is not None else 1 if self.group_id is not None else 0

    @property
    def level(self) -> str:
        """``registry``, ``group``, ``resource``, ``meta`` or ``version``."""
        return "meta" if self.meta else _LEVELS[self.depth]

    @property
    def ctype(self) -> str:
        """The store's collection type of the entity: ``""`` (the registry), ``messagegroups``,
        ``messagegroups/messages`` (a resource and its ``meta``), ``messagegroups/messages/versions``."""
        parts = [p for p in (self.group_type, self.resource_type) if p is not None]
        if self.version_id is not None:
            parts.append("versions")
        return "/".join(parts)

    @property
    def id(self) -> str | None:
        """The entity's own id: the group's, the resource's (also for its ``meta``), the
        version's; ``None`` for the registry."""
        if self.version_id is not None:
            return self.version_id
        return self.resource_id if self.resource_id is not None else self.group_id

    @property
    def collection(self) -> str | None:
        """The name of the collection the entity is a member of (``messagegroups``,
        ``messages``, ``versions``); ``None`` for the registry and a ``meta``."""
        if self.meta or self.depth == 0:
            return None
        return "versions" if self.version_id is not None else self.resource_type or self.group_type

    @property
    def collection_path(self) -> str:
        """The path of that collection (``/messagegroups/g1/messages`` for a message): an HTTP
        API path, not an XID. ``ValueError`` for the registry and a ``meta``."""
        if self.collection is None:
            raise ValueError(f"{self} is not a member of a collection")
        return str(self.parent).rstrip("/") + "/" + self.collection

    def ancestor(self, depth: int) -> Xid:
        """The entity on this XID's path at ``depth`` (see :attr:`depth`); a ``meta``'s ancestor
        at depth 2 is its resource."""
        if not 0 <= depth <= self.depth:
            raise ValueError(f"{self} has no ancestor at depth {depth}")
        if depth == 0:
            return Xid()
        if depth == 1:
            return Xid(self.group_type, self.group_id)
        if depth == 2:
            return Xid(self.group_type, self.group_id, self.resource_type, self.resource_id)
        return self

    @property
    def parent(self) -> Xid:
        """The entity this one belongs to: the registry for a group, the group for a resource,
        the resource for its ``meta`` and its versions. ``ValueError`` for the registry."""
        if self.depth == 0:
            raise ValueError("the registry has no parent")
        return self.ancestor(2 if self.meta else self.depth - 1)

    @property
    def group(self) -> Xid:
        """The group this XID is (or is below); ``ValueError`` for the registry."""
        return self.ancestor(1)

    @property
    def resource(self) -> Xid:
        """The resource this XID is (or whose ``meta`` or version it is); ``ValueError`` above one."""
        return self.ancestor(2)

    def child(self, collection: str, id: str) -> Xid:
        """Member ``id`` of this entity's collection ``collection`` (a group type of the
        registry, a resource type of a group, ``versions`` of a resource)."""
        if self.depth == 0:
            return Xid(collection, id)
        if self.depth == 1 and not self.meta:
            return Xid(self.group_type, self.group_id, collection, id)
        if self.depth == 2 and not self.meta and collection == "versions":
            return self.version(id)
        raise ValueError(f"{self} has no collection {collection!r}")

    def version(self, version_id: str) -> Xid:
        """Version ``version_id`` of this XID's resource."""
        return Xid(self.group_type, self.group_id, self.resource_type, self.resource_id, version_id)

    def meta_of(self) -> Xid:
        """The ``meta`` entity of this XID's resource."""
        return Xid(self.group_type, self.group_id, self.resource_type, self.resource_id, meta=True)


@lru_cache(maxsize=PARSED_XIDS)
def _parse(text: str) -> Xid:
    """The XID of text starting with ``/`` (an :class:`Xid` is immutable: parsed once per text)."""
    if text == "/":
        return Xid()
    segs = text[1:].split("/")
    n = len(segs)
    if n not in (2, 4, 5, 6) or "" in segs or (n == 5 and segs[4] != "meta") or (n == 6 and segs[4] != "versions"):
        raise XRegistryError("malformed_xid", text, xid=text, detail=SHAPE)
    if n == 2:
        return Xid(segs[0], segs[1])
    return Xid(segs[0], segs[1], segs[2], segs[3], segs[5] if n == 6 else None, meta=n == 5)
