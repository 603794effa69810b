"""Rules of core/spec.md for the attributes of every entity, and the forms the domains share
(``<NAME>/<VERSION>``, protocol names)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from xreg.registry.checker import Checker, to_datetime

NAME_VERSION_FORM = re.compile(r"[^/\s]+/[^/\s]+")
NAME_OPT_VERSION_FORM = re.compile(r"[^/\s]+(/[^/\s]+)?")
#: Rules a request description can state (gateway/http_api/openapi.py): attributes that must not
#: be empty, and the ``<NAME>/<VERSION>`` / ``<NAME>[/<VERSION>]`` forms.
NON_EMPTY = ("name", "documentation", "icon", "format")
NAME_VERSION, NAME_OPT_VERSION = NAME_VERSION_FORM.pattern, NAME_OPT_VERSION_FORM.pattern
_PROTOCOL_ALIASES = {"amqp": "amqp/1.0", "mqtt": "mqtt/5.0", "http/1.1": "http", "http/2": "http", "http/3": "http"}


def canonical_protocol(value: str) -> str:
    """Lower-cased protocol name with the shorthands of endpoint/spec.md resolved
    ("AMQP" = "AMQP/1.0", "MQTT" = "MQTT/5.0", "HTTP" for HTTP/1.1, HTTP/2, HTTP/3)."""
    low = value.strip().lower()
    return _PROTOCOL_ALIASES.get(low, low)


def non_empty(run: Checker, attrs: dict, names: Iterable[str]) -> None:
    """``invalid_attribute`` for each of ``names`` given as an empty string."""
    for name in names:
        if attrs.get(name) == "":
            run.invalid(name, "must not be empty")


def entity_rules(run: Checker, attrs: dict) -> None:
    """The rules of every entity's common attributes."""
    # core/spec.md, name: "If present, MUST be non-empty"; documentation, icon: "If present,
    # MUST be a non-empty URL"; format: "If present, MUST be a non-empty case-insensitive string".
    non_empty(run, attrs, NON_EMPTY)
    # core/spec.md, deprecated.removal: "MUST NOT be sooner than the effective time if present".
    dep = attrs.get("deprecated")
    if isinstance(dep, dict):
        effective, removal = to_datetime(dep.get("effective")), to_datetime(dep.get("removal"))
        if effective and removal and removal < effective:
            run.invalid("deprecated.removal", "must not be sooner than deprecated.effective")
