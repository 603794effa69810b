"""The ``capabilities`` map this API serves (core/spec.md "Registry Capabilities").

It states what is implemented, nothing more: the supported flags and ``ignore`` values,
pagination, specification version ``1.0-rc4``, the version modes of core/model.md, the schema formats
and compatibility modes checked on write, and the available
metadata (``capabilities``, ``entities``, ``export``, ``model``, ``modelsource``; entities and
the model, through ``modelsource``, are mutable).
``apis`` (the served root APIs) is kept for clients of earlier drafts.
"""

from __future__ import annotations

from typing import Any

from gateway import formats
from gateway.http_api.flags import FLAGS, IGNORES, SPEC_VERSIONS
from gateway.model.registry_model import VERSION_MODES


def capabilities() -> dict[str, Any]:
    """The served capabilities map (``formats`` / ``compatibilities``: what the schema checks
    support, see ``gateway.formats``)."""
    checks = formats.capabilities()
    return {
        "apis": ["/capabilities", "/export", "/model", "/modelsource"],
        "available": {
            "capabilities": {"mutable": False},
            "entities": {"mutable": True},
            "export": {"mutable": False},
            "model": {"mutable": False},
            "modelsource": {"mutable": True},
        },
        "compatibilities": checks["compatibilities"],
        "flags": sorted(FLAGS),
        "formats": checks["formats"],
        "ignores": sorted(IGNORES),
        "mutable": ["entities", "modelsource"],
        "pagination": True,
        "shortself": False,
        "specversions": list(SPEC_VERSIONS),
        "versionmodes": list(VERSION_MODES),
    }
