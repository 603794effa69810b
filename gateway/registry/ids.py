"""Entity IDs and XIDs (core/spec.md, "``<SINGULAR>id`` Attribute" and "``xid`` Attribute").

An ID is one path segment (``myEntity.example.com``); an XID is the registry-relative path of
an entity: ``/[<GROUPS>/<GID>[/<RESOURCES>/<RID>[/meta | /versions/<VID>]]]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.errors import XRegistryError

if TYPE_CHECKING:
    from gateway.model.registry_model import RegistryModel

# "MUST be a non-empty string consisting of RFC3986 `unreserved` characters (ALPHA / DIGIT /
# `-` / `.` / `_` / `~`), `:` or `@`, MUST start with ALPHA, DIGIT or `_` and MUST be between
# 1 and 128 characters in length. Otherwise, an error (malformed_id) MUST be generated."
MAX_ID_LENGTH = 128
_ID_CHARS = re.compile(r"[A-Za-z0-9\-._~:@]*")
_ID_FIRST = re.compile(r"[A-Za-z0-9_]")


def id_problem(value: object) -> str | None:
    """Why ``value`` is not a valid ``<SINGULAR>id``, or ``None`` when it is valid."""
    if not isinstance(value, str):
        return "an ID must be a string"
    if not 1 <= len(value) <= MAX_ID_LENGTH:
        return f"an ID must be 1 to {MAX_ID_LENGTH} characters long, not {len(value)}"
    if not _ID_FIRST.match(value):
        return "an ID must start with a letter, a digit or '_'"
    if not _ID_CHARS.fullmatch(value):
        bad = sorted({c for c in value if not _ID_CHARS.fullmatch(c)})
        return "an ID may only contain letters, digits and '-._~:@', not " + " ".join(map(repr, bad))
    return None


def check_id(value: object, *, subject: str, attribute: str) -> str:
    """Return ``value`` if it is a valid ID, else raise ``malformed_id``.

    ``subject`` is the entity (or request path) being processed, ``attribute`` the ID
    attribute's name (``messageid``, ``versionid``, …), used in the error's detail.
    """
    problem = id_problem(value)
    if problem:
        raise XRegistryError("malformed_id", subject, id=value, path=attribute,
                             detail=f'"{attribute}": {problem}')
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class XidParts:
    """The parts of a parsed XID; absent parts are ``None``."""

    group_type: str | None = None
    group_id: str | None = None
    resource_type: str | None = None
    resource_id: str | None = None
    version_id: str | None = None
    is_meta: bool = False

    @property
    def level(self) -> str:
        """``registry``, ``group``, ``resource``, ``meta`` or ``version``."""
        if self.version_id is not None:
            return "version"
        if self.is_meta:
            return "meta"
        if self.resource_id is not None:
            return "resource"
        if self.group_id is not None:
            return "group"
        return "registry"

    @property
    def is_registry(self) -> bool:
        return self.level == "registry"

    @property
    def is_group(self) -> bool:
        return self.level == "group"

    @property
    def is_resource(self) -> bool:
        return self.level == "resource"

    @property
    def is_version(self) -> bool:
        return self.level == "version"

    @property
    def xidtype(self) -> str:
        """The model type referenced (``/messagegroups/messages/versions``), see ``target``."""
        parts = [p for p in (self.group_type, self.resource_type) if p]
        if self.is_version:
            parts.append("versions")
        return "/" + "/".join(parts)

    @property
    def resource_xid(self) -> str | None:
        """The XID of the owning (or this) resource, if the XID is at or below one."""
        if self.resource_id is None:
            return None
        return build_xid(self.group_type, self.group_id, self.resource_type, self.resource_id)

    def __str__(self) -> str:
        return build_xid(self.group_type, self.group_id, self.resource_type, self.resource_id,
                         self.version_id, meta=self.is_meta)


def build_xid(
    group_type: str | None = None,
    group_id: str | None = None,
    resource_type: str | None = None,
    resource_id: str | None = None,
    version_id: str | None = None,
    *,
    meta: bool = False,
) -> str:
    """Compose an XID from its parts (``build_xid()`` is ``/``, the registry).

    Parts must be given from the top down; ``meta`` and ``version_id`` are exclusive.
    """
    chain = [group_type, group_id, resource_type, resource_id]
    given = [p is not None for p in chain]
    if given != sorted(given, reverse=True) or given.count(True) % 2:
        raise ValueError("XID parts must come in type/id pairs from the top down")
    if (meta or version_id is not None) and resource_id is None:
        raise ValueError("meta and versions need a resource")
    if meta and version_id is not None:
        raise ValueError("an XID is either /meta or /versions/<VID>")
    segments = [p for p in chain if p is not None]
    if meta:
        segments.append("meta")
    elif version_id is not None:
        segments += ["versions", version_id]
    return "/" + "/".join(segments)


def parse_xid(xid: object, model: RegistryModel, *, subject: str | None = None) -> XidParts:
    """Parse and check ``xid`` against ``model``; raise ``malformed_xid`` when it is not valid.

    Group and resource types must exist in the model and every ID must be a valid ID.
    ``subject`` (the entity being processed) defaults to the XID itself.
    """

    def bad(detail: str) -> XRegistryError:
        return XRegistryError("malformed_xid", subject or str(xid), xid=xid, detail=detail)

    if not isinstance(xid, str) or not xid.startswith("/"):
        raise bad("an XID must be a string starting with '/'")
    if xid == "/":
        return XidParts()
    segs = xid[1:].split("/")
    if len(segs) not in (2, 4, 5, 6) or (len(segs) == 5 and segs[4] != "meta") or (
        len(segs) == 6 and segs[4] != "versions"
    ):
        raise bad("an XID has the form /[<GROUPS>/<GID>[/<RESOURCES>/<RID>[/meta | /versions/<VID>]]]")
    group = model.group(segs[0])
    if group is None:
        raise bad(f'unknown group type "{segs[0]}"')
    if len(segs) > 2 and segs[2] not in group.resources:
        raise bad(f'unknown resource type "{segs[2]}" for group type "{segs[0]}"')
    ids = [segs[1]] + ([segs[3]] if len(segs) > 2 else []) + ([segs[5]] if len(segs) == 6 else [])
    for value in ids:
        problem = id_problem(value)
        if problem:
            raise bad(f'"{value}": {problem}')
    return XidParts(
        group_type=segs[0],
        group_id=segs[1],
        resource_type=segs[2] if len(segs) > 2 else None,
        resource_id=segs[3] if len(segs) > 2 else None,
        version_id=segs[5] if len(segs) == 6 else None,
        is_meta=len(segs) == 5,
    )
