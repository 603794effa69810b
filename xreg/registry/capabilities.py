"""Changing a registry's capabilities (core/spec.md "Updating the Capabilities of a Server",
"Offered Capabilities"; core/http.md "PATCH and PUT /capabilities").

The server's *supported* map (everything it implements, built by the API layer) is both the
ceiling of every change and the default a ``PUT`` resets a missing capability to. A change is
checked whole before anything is stored: an unknown capability is ``capability_unknown``, a
value outside the offered ones ``capability_value``, ``"*"`` next to other values
``capability_wildcard``, a list without its mandatory value (``1.0-rc4`` in ``specversions``,
``manual`` in ``versionmodes``; ``capabilities``, ``entities`` and ``model`` in ``available``)
``capability_missing_value``, and a change that would leave the capabilities unchangeable
``capability_error``. The accepted settings — only the capabilities that differ from the
supported map — are kept in the registry entity's state under :data:`STORED_KEY` (the registry's
one write path, so they have its revisions and survive restarts).
"""

from __future__ import annotations

import copy
from typing import Any

from xreg.errors import XRegistryError

#: The key of the registry entity's stored state holding the capability settings (not an
#: attribute name, so never an attribute).
STORED_KEY = "@capabilities"
SUBJECT = "/capabilities"

#: Capabilities that are lists of case-insensitive strings, and their mandatory values.
LISTS = ("apis", "flags", "formats", "ignores", "mutable", "specversions", "versionmodes")
MANDATORY = {"specversions": ("1.0-rc4",), "versionmodes": ("manual",)}
BOOLEANS = ("pagination", "shortself")
#: ``available`` entries that "MUST always be present".
ALWAYS_AVAILABLE = ("capabilities", "entities", "model")


def effective(supported: dict[str, Any], settings: dict[str, Any] | None) -> dict[str, Any]:
    """The capabilities in force: the supported map with the stored settings over it."""
    return {**copy.deepcopy(supported), **copy.deepcopy(settings or {})}


def is_mutable(settings: dict[str, Any] | None, name: str) -> bool:
    """Whether the stored ``settings`` leave ``name`` (``entities``, ``modelsource``) mutable: its
    ``available`` entry and the ``mutable`` list, where a client narrowed them (the supported map
    has both mutable)."""
    settings = settings or {}
    if "available" in settings:
        entry = {k.lower(): v for k, v in settings["available"].items()}.get(name)
        if not (isinstance(entry, dict) and entry.get("mutable")):
            return False
    return "mutable" not in settings or name in {m.lower() for m in settings["mutable"]}


def offered(supported: dict[str, Any]) -> dict[str, Any]:
    """The offered-capabilities map (core/spec.md "Offered Capabilities") of ``supported``."""
    out: dict[str, Any] = {}
    for name, value in supported.items():
        if name in LISTS:
            out[name] = {"type": "array", "item": {"type": "string"}, "enum": list(value)}
        elif name in BOOLEANS:
            out[name] = {"type": "boolean", "enum": [False, True] if value else [False]}
        elif name == "available":
            out[name] = {"type": "map", "enum": list(value), "item": {
                "type": "object", "attributes": {"mutable": {"type": "boolean"}}}}
        elif name == "compatibilities":
            out[name] = {"type": "map", "enum": list(value), "item": {"type": "array", "item": {"type": "string"}}}
    return out


def _value_error(field: str, value: Any, allowed: list[Any]) -> XRegistryError:
    return XRegistryError("capability_value", SUBJECT, field=field, value=value,
                          list=", ".join(map(str, allowed)), path=field)


def _subset(field: str, value: Any, allowed: list[str]) -> list[str]:
    """A list capability's new value: strings among ``allowed`` (case-insensitive, in their
    offered spelling and order), ``["*"]`` for all of them."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _value_error(field, value, allowed)
    if "*" in value:
        if len(value) > 1:
            raise XRegistryError("capability_wildcard", SUBJECT, field=field, path=field)
        return list(allowed)
    by_lower = {a.lower(): a for a in allowed}
    for v in value:
        if v.lower() not in by_lower:
            raise _value_error(field, v, allowed)
    wanted = {v.lower() for v in value}
    return [a for a in allowed if a.lower() in wanted]


def _checked(name: str, value: Any, supported: Any) -> Any:
    """The new value of one capability (raising the spec's error when it cannot be)."""
    if name in LISTS:
        chosen = _subset(name, value, list(supported))
        for needed in MANDATORY.get(name, ()):
            if needed.lower() not in {c.lower() for c in chosen}:
                raise XRegistryError("capability_missing_value", SUBJECT, name=name, value=needed, path=name)
        return chosen
    if name in BOOLEANS:
        if not isinstance(value, bool) or (value and not supported):
            raise _value_error(name, value, [False, True] if supported else [False])
        return value
    if name == "available":
        if not isinstance(value, dict):
            raise _value_error(name, value, list(supported))
        out: dict[str, Any] = {}
        for key, entry in value.items():
            if key not in supported:
                raise _value_error(name, key, list(supported))
            mutable = entry.get("mutable") if isinstance(entry, dict) else None
            if not isinstance(mutable, bool) or (mutable and not supported[key]["mutable"]):
                raise _value_error(f"available.{key}.mutable", mutable, [False, True] if supported[key]["mutable"]
                                   else [False])
            out[key] = {"mutable": mutable}
        for needed in ALWAYS_AVAILABLE:
            if needed not in out:
                raise XRegistryError("capability_missing_value", SUBJECT, name=name, value=needed, path=name)
        if supported["capabilities"]["mutable"] and not out["capabilities"]["mutable"]:
            raise XRegistryError("capability_error", SUBJECT, path=name,
                                 error_detail="the capabilities cannot be made unchangeable",
                                 detail="available.capabilities.mutable must stay true")
        return out
    if name == "compatibilities":
        if not isinstance(value, dict):
            raise _value_error(name, value, list(supported))
        by_lower = {k.lower(): k for k in supported}
        result: dict[str, list[str]] = {}
        for fmt, rules in value.items():
            key = by_lower.get(str(fmt).lower())
            if key is None:
                raise _value_error(name, fmt, list(supported))
            result[key] = _subset(f"{name}.{key}", rules, list(supported[key]))
        return result
    if value != supported:  # an extension the server has no choices for
        raise _value_error(name, value, [supported])
    return value


def update(request: Any, supported: dict[str, Any], settings: dict[str, Any] | None, *,
           patch: bool) -> dict[str, Any]:
    """The stored settings after a ``PUT`` (``patch=False``: missing capabilities reset to the
    supported ones) or ``PATCH`` (each capability given replaced whole) of ``request``."""
    if not isinstance(request, dict):
        raise XRegistryError("capability_error", SUBJECT, error_detail="the capabilities must be a JSON object",
                             detail="the capabilities must be a JSON object")
    for name in request:
        if name not in supported:
            raise XRegistryError("capability_unknown", SUBJECT, field=name, path=name)
    new = effective(supported, settings) if patch else copy.deepcopy(supported)
    for name, value in request.items():
        if value is None:  # null: back to the supported value
            new[name] = copy.deepcopy(supported[name])
        else:
            new[name] = _checked(name, value, supported[name])
    return {k: v for k, v in new.items() if v != supported[k]}
