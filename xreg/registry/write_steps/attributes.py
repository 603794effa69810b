"""The attributes a request writes: what is the server's (ignored in a request), how a
replacement or a patch merges into the stored attributes, the depth rule, the model's
``readonly`` attributes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from xreg import json_limits
from xreg.errors import XRegistryError
from xreg.model.registry_model import AttributeDef
from xreg.registry.checker import ATTRIBUTE_NAME, MAP_KEY
from xreg.registry.schema_checks import RESULT_ATTRIBUTES

#: Attributes the server computes; ignored when a request carries them.
#: ``$schema`` may head any single entity of a request and may be ignored (core/spec.md, "Design:
#: JSON ``$schema`` keyword"); it is never stored.
SERVER_ATTRIBUTES = frozenset({"self", "shortself", "xid", "epoch", "createdat", "modifiedat", "isdefault",
                               "$schema", *RESULT_ATTRIBUTES})
#: Resource-level attributes that are not the default version's.
RESOURCE_VIEW_ATTRIBUTES = frozenset({"metaurl", "meta", "versionsurl", "versionscount", "versions"})
META_READONLY = frozenset({"readonly", "defaultversionurl", "self", "shortself", "xid"})
#: What a writer does not set: timestamps, epochs, the format checks' results.
_NOT_USER = frozenset({"epoch", "modifiedat", "createdat", *RESULT_ATTRIBUTES})


def strip(attrs: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """``attrs`` without ``names`` and the server's attributes."""
    drop = set(names) | SERVER_ATTRIBUTES
    return {k: v for k, v in attrs.items() if k not in drop}


def collection_attrs(collections: Iterable[str]) -> set[str]:
    """The ``<COLLECTION>url`` / ``<COLLECTION>count`` attributes of ``collections``."""
    return {f"{c}{suffix}" for c in collections for suffix in ("url", "count")}


def _no_name(name: object) -> bool:
    """Whether ``name`` is no attribute name under any charset (such a null is kept: validation refuses it)."""
    return not isinstance(name, str) or not (ATTRIBUTE_NAME.fullmatch(name) or MAP_KEY.fullmatch(name))


def merge(base: dict[str, Any], update: dict[str, Any], patch: bool) -> dict[str, Any]:
    """``update`` over ``base`` (``patch``) or instead of it; null deletes an attribute, but a null
    under a name no attribute can have is kept for validation to refuse, not silently dropped."""
    if not patch:
        return {k: v for k, v in update.items() if v is not None or _no_name(k)}
    out = dict(base)
    for k, v in update.items():
        if v is None and not _no_name(k):
            out.pop(k, None)
        else:
            out[k] = v
    return out


def check_depth(attrs: dict[str, Any], subject: str) -> None:
    """``invalid_attribute`` for a value of ``attrs`` beyond the one depth rule
    (:func:`xreg.json_limits.check_attributes`) or holding a string that is not Unicode."""
    try:
        json_limits.check_attributes(attrs)
    except json_limits.JSONLimitError as exc:
        path = exc.path.lstrip("/")
        raise XRegistryError("invalid_attribute", subject, path=path.replace("/", ".") or None,
                             name=path.split("/")[0] or subject, detail=exc.detail) from None


def user_view(doc: dict[str, Any]) -> dict[str, Any]:
    """The attributes a writer sets (``doc`` without timestamps, epoch and check results)."""
    return {k: v for k, v in doc.items() if k not in _NOT_USER}


def ts_changed(request: dict[str, Any], existing: dict[str, Any]) -> bool:
    """Whether the request sets a ``createdat`` / ``modifiedat`` other than the stored one."""
    for name in ("createdat", "modifiedat"):
        value = request.get(name)
        if value is not None and value != existing.get(name):
            return True
    return False


def keep_readonly(user: dict[str, Any], defs: dict[str, AttributeDef], existing: dict[str, Any] | None) -> None:
    """core/model.md ``readonly``: "during creation, or update, of an entity if this attribute is
    specified, then its value MUST be silently ignored by the server" — a model's read-only
    attributes keep their stored value (in place)."""
    for name, defn in defs.items():
        if not defn.readonly or name == "*":
            continue
        if existing is not None and name in existing:
            user[name] = existing[name]
        else:
            user.pop(name, None)
