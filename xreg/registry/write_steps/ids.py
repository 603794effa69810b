"""Where an entity goes and under which id: ids that must match the URL, a ``versionid`` /
``defaultversionid`` that must be a string, case-insensitive uniqueness, the next version id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg.errors import XRegistryError

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import EntityState, Unit


async def next_version_id(cs: Unit, rxid: str, vctype: str) -> str:
    """The next numeric ``versionid`` of a resource (one past the highest numeric one)."""
    ids = {s.id for s in await cs.version_states(rxid, vctype)}
    n = 1
    numeric = [int(v) for v in ids if v.isdigit()]
    if numeric:
        n = max(numeric) + 1
    while str(n) in ids:
        n += 1
    return str(n)


def check_same_id(attrs: dict[str, Any], id_attr: str, expected: str, subject: str) -> None:
    """``mismatched_id`` when the request's ``id_attr`` is not the id of the URL."""
    given = attrs.get(id_attr)
    if given is not None and given != expected:
        raise XRegistryError("mismatched_id", subject, singular=id_attr.removesuffix("id"), expected_id=expected,
                             invalid_id=given, detail=f"{id_attr} {given!r} does not match {expected!r}")


def check_version_id(body: dict[str, Any], subject: str) -> None:
    """A ``versionid`` in a request must be a string (an id), whatever else it is checked for."""
    value = body.get("versionid")
    if value is not None and not isinstance(value, str):
        raise XRegistryError("invalid_attribute", subject, path="versionid", name="versionid",
                             detail=f"versionid must be a string, not a JSON {type(value).__name__}")


def check_default_version_id(meta: dict[str, Any], subject: str) -> None:
    """A ``defaultversionid`` in a request must be a string (a version's id) or null."""
    value = meta.get("defaultversionid")
    if value is not None and not isinstance(value, str):
        raise XRegistryError("invalid_attribute", subject, path="defaultversionid", name="defaultversionid",
                             detail=f"defaultversionid must be a string, not a JSON {type(value).__name__}")


def check_case(state: EntityState, xid: str) -> None:
    """``bad_request`` when ``xid`` names an existing entity in another case."""
    if state.doc is not None and state.xid != xid:
        raise XRegistryError("bad_request", xid,
                             detail=f"{state.xid} already exists; ids are unique case-insensitively")
