"""The ``capabilities`` map this API serves (core/spec.md "Registry Capabilities").

:func:`supported` states what is implemented, nothing more: the supported flags and ``ignore``
values, pagination, specification version ``1.0-rc4``, the version modes of core/model.md, the
schema formats and compatibility modes checked on write, and the available metadata
(``capabilities``, ``capabilitiesoffered``, ``entities``, ``export``, ``model``,
``modelsource``; the capabilities, entities and the model, through ``modelsource``, are
mutable). Clients narrow it through ``PUT``/``PATCH /capabilities``
(``xreg.registry.capabilities``); :func:`capabilities` is the map in force and
:func:`enforce` refuses what it turned off. ``apis`` (the served root APIs) is kept for
clients of earlier drafts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.http_api.flags import FLAGS, IGNORES, PAGINATION, SPEC_VERSIONS, Flags
from gateway.http_api.targets import Target
from xreg import formats
from xreg.errors import XRegistryError
from xreg.model.registry_model import VERSION_MODES, RegistryModel
from xreg.registry.capabilities import effective


def supported() -> dict[str, Any]:
    """Everything this server implements: the ceiling of a capabilities change and what a
    ``PUT /capabilities`` resets a missing capability to (``formats`` / ``compatibilities``: what
    the schema checks support, see ``xreg.formats``)."""
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


#: Root APIs whose data is an ``available`` entry, and the registry attributes ``?inline`` names
#: of them (core/spec.md "available Capability": the data "MUST be available via all supported
#: retrieval mechanisms", and unavailable "via all mechanisms").
AVAILABLE_APIS = ("capabilities", "capabilitiesoffered", "export", "model", "modelsource")
AVAILABLE_INLINES = ("capabilities", "capabilitiesoffered", "model", "modelsource")
WRITES = frozenset({"PUT", "PATCH", "POST", "DELETE"})


def available(caps: dict[str, Any], name: str) -> bool:
    """Whether the metadata ``name`` is in the ``available`` capability."""
    return name.lower() in {k.lower() for k in caps.get("available", {})}


def mutable(caps: dict[str, Any], name: str) -> bool:
    """Whether ``name`` is available and mutable (its ``available`` entry, and the ``mutable``
    list)."""
    entry = {k.lower(): v for k, v in caps.get("available", {}).items()}.get(name.lower())
    return bool(entry and entry.get("mutable")) and name.lower() in {m.lower() for m in caps.get("mutable", ())}


def enforce(flags: Flags, caps: dict[str, Any], target: Target, method: str) -> Flags:
    """``flags`` as the capabilities in force let a request use them (core/spec.md "Registry
    Capabilities"); raises the spec's error for what a client turned off:

    * a flag not in ``flags`` (including paging, with ``pagination`` false): ``bad_flag`` —
      "Absence in the map indicates no support for that flag";
    * an ``ignore`` value not in ``ignores``: ``bad_ignore`` ("Specifying an invalid, or
      unsupported, value for this flag MUST generate an error"); ``?ignore`` / ``?ignore=*``
      mean the enabled values only ("all possible (server supported) aspects");
    * metadata not in ``available`` (an API, or ``?inline`` of it): ``not_available`` —
      "Attempts to access unavailable metadata MUST generate an error";
    * a write to data that is not ``mutable`` (entities, ``modelsource``): ``readonly``.
    """
    subject = target.path
    enabled = {f.lower() for f in caps.get("flags", ())}
    for name in sorted(flags.given):
        if name in PAGINATION and not caps.get("pagination"):
            raise XRegistryError("bad_flag", subject, flag=name,
                                 detail=f"?{name}: pagination is turned off in the capabilities")
        if name in FLAGS and name not in enabled:
            raise XRegistryError("bad_flag", subject, flag=name,
                                 detail=f"?{name} is turned off in the capabilities")
    if flags.ignore:
        ignores = {i.lower() for i in caps.get("ignores", ())}
        if flags.ignore_all:
            flags = replace(flags, ignore=frozenset(i for i in flags.ignore if i in ignores))
        else:
            for value in sorted(flags.ignore - ignores):
                raise XRegistryError("bad_ignore", subject, value=value,
                                     detail="turned off in the capabilities (ignores)")
    wanted = [target.api] if target.kind in ("api", "modelsource") and target.api in AVAILABLE_APIS else []
    wanted += [v.lower() for v in flags.inline if v.lower() in AVAILABLE_INLINES]
    for name in wanted:
        if not available(caps, name or ""):
            raise XRegistryError("not_available", name or "", detail="not in the available capability")
    if method in WRITES:
        data = (target.api or "") if target.kind in ("api", "modelsource") else "entities"
        if data in ("entities", "modelsource") and not mutable(caps, data):
            raise XRegistryError("readonly", subject, detail=f"{data} is not mutable (capabilities)")
    return flags


def check_versionmodes(model: RegistryModel, caps: dict[str, Any], subject: str) -> None:
    """A model naming a ``versionmode`` turned off in the ``versionmodes`` capability is a
    ``model_error`` (core/model.md: "Indicates the algorithm that MUST be used")."""
    modes = {m.lower() for m in caps.get("versionmodes", ())}
    for gtype, gdef in model.groups.items():
        for rtype, rdef in gdef.resources.items():
            if rdef.versionmode not in modes:
                raise XRegistryError("model_error", subject, detail=(
                    f"groups.{gtype}.resources.{rtype}.versionmode {rdef.versionmode!r} is not in the "
                    "versionmodes capability"))
