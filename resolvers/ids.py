"""Relay global ids: one opaque string per entity, naming its registry and its XID.

``id = base64url(<registryid><xid>)`` without padding. XIDs start with ``/`` and registry
ids cannot contain one, so the first ``/`` splits them again.
"""

from __future__ import annotations

import base64
import binascii

from xreg.errors import UserInputError


class InvalidGlobalId(UserInputError):
    """A string that is not a global id issued by this gateway."""


def global_id(registry: str, xid: str) -> str:
    """The global id of entity ``xid`` of registry ``registry``."""
    return base64.urlsafe_b64encode(f"{registry}{xid}".encode()).decode().rstrip("=")


def parse_global_id(value: str) -> tuple[str, str]:
    """``(registry, xid)`` of a global id; raises :class:`InvalidGlobalId`."""
    try:
        text = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidGlobalId(f"{value!r} is not a node id") from None
    registry, slash, rest = text.partition("/")
    if not registry or not slash:
        raise InvalidGlobalId(f"{value!r} is not a node id")
    return registry, "/" + rest
