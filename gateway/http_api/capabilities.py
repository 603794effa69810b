"""The ``capabilities`` map this API serves (core/spec.md "Registry Capabilities").

:func:`supported` states what is implemented, nothing more: the supported flags and ``ignore``
values, pagination, specification version ``1.0-rc4``, the version modes of core/model.md, the
schema formats and compatibility modes checked on write, and the available metadata
(``capabilities``, ``capabilitiesoffered``, ``entities``, ``export``, ``model``,
``modelsource``; the capabilities, entities and the model, through ``modelsource``, are
mutable). Clients narrow it through ``PUT``/``PATCH /capabilities``
(``gateway.registry.capabilities``); :func:`capabilities` is the map in force and
:func:`check_enabled` refuses a flag it turned off. ``apis`` (the served root APIs) is kept for
clients of earlier drafts.
"""

from __future__ import annotations

from typing import Any

from gateway import formats
from gateway.errors import XRegistryError
from gateway.http_api.flags import FLAGS, IGNORES, PAGINATION, SPEC_VERSIONS, Flags
from gateway.model.registry_model import VERSION_MODES
from gateway.registry.capabilities import effective


def supported() -> dict[str, Any]:
    """Everything this server implements: the ceiling of a capabilities change and what a
    ``PUT /capabilities`` resets a missing capability to (``formats`` / ``compatibilities``: what
    the schema checks support, see ``gateway.formats``)."""
    checks = formats.capabilities()
    return {
        "apis": ["/capabilities", "/capabilitiesoffered", "/export", "/model", "/modelsource"],
        "available": {
            "capabilities": {"mutable": True},
            "capabilitiesoffered": {"mutable": False},
            "entities": {"mutable": True},
            "export": {"mutable": False},
            "model": {"mutable": False},
            "modelsource": {"mutable": True},
        },
        "compatibilities": checks["compatibilities"],
        "flags": sorted(FLAGS),
        "formats": checks["formats"],
        "ignores": sorted(IGNORES),
        "mutable": ["capabilities", "entities", "modelsource"],
        "pagination": True,
        "shortself": False,
        "specversions": list(SPEC_VERSIONS),
        "versionmodes": list(VERSION_MODES),
    }


def capabilities(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The served capabilities map: :func:`supported` with the registry's stored settings
    (``LocalRegistry.capability_settings``) over it."""
    return effective(supported(), settings)


def check_enabled(flags: Flags, caps: dict[str, Any], subject: str) -> None:
    """A request flag turned off in the capabilities (``flags``, or paging with ``pagination``
    false) is refused like any flag this server does not support (``bad_flag``)."""
    enabled = {f.lower() for f in caps.get("flags", ())}
    for name in sorted(flags.given):
        if name in PAGINATION and not caps.get("pagination"):
            raise XRegistryError("bad_flag", subject, flag=name,
                                 detail=f"?{name}: pagination is turned off in the capabilities")
        if name in FLAGS and name not in enabled:
            raise XRegistryError("bad_flag", subject, flag=name,
                                 detail=f"?{name} is turned off in the capabilities")
