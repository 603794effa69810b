"""Entity IDs and XIDs checked against a model (core/spec.md, "``<SINGULAR>id`` Attribute" and
"``xid`` Attribute"): the engine's ID rules, beside :mod:`xreg.xid`, used by the registry and
by the store's restore alike.

An ID is one path segment (``myEntity.example.com``); an XID is the registry-relative path of
an entity: ``/[<GROUPS>/<GID>[/<RESOURCES>/<RID>[/meta | /versions/<VID>]]]``, parsed into a
:class:`xreg.xid.Xid`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xreg.errors import XRegistryError
from xreg.model.modelsource import is_type_name
from xreg.xid import Xid

if TYPE_CHECKING:
    from xreg.model.registry_model import RegistryModel

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


def parse_xid(xid: object, model: RegistryModel | None, *, subject: str | None = None) -> Xid:
    """Parse ``xid`` and check it against ``model``; raise ``malformed_xid`` when it is not valid.

    Beyond the shape (:meth:`Xid.parse`), group and resource types must exist in the model (without
    a model: be names a model could give them) and every ID must be a valid ID. ``subject`` (the
    entity being processed) defaults to the XID itself.
    """

    def bad(detail: str | None) -> XRegistryError:
        return XRegistryError("malformed_xid", subject or str(xid), xid=xid, detail=detail)

    try:
        parsed = Xid.parse(xid)
    except XRegistryError as err:
        raise bad(err.detail) from None
    if model is None:
        for name in (parsed.group_type, parsed.resource_type):
            if name is not None and not is_type_name(name):
                raise bad(f'"{name}" is not the name of a group or resource type')
    elif parsed.group_type is not None:
        group = model.group(parsed.group_type)
        if group is None:
            raise bad(f'unknown group type "{parsed.group_type}"')
        if parsed.resource_type is not None and parsed.resource_type not in group.resources:
            raise bad(f'unknown resource type "{parsed.resource_type}" for group type "{parsed.group_type}"')
    for value in (parsed.group_id, parsed.resource_id, parsed.version_id):
        problem = id_problem(value) if value is not None else None
        if problem:
            raise bad(f'"{value}": {problem}')
    return parsed
