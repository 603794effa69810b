"""The ``inline`` flag (core/spec.md "Inline Flag"): which nested collections and large
attributes a response includes.

Paths are dot notation relative to the entities the request returns: collection names down the
model (``messagegroups.messages.versions``), ending optionally in ``*`` (everything below) or in
a leaf attribute: ``meta`` and the document attribute (``schema``) of resources, the document of
versions, ``model`` / ``capabilities`` / ``modelsource`` of the registry. Those three are never
covered by ``*``. A name the level does not have is ``bad_inline``; a plain attribute there
(``name``) is ``inline_noninlineable``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xreg.errors import XRegistryError
from xreg.model.registry_model import COMMON_ATTRIBUTES, RegistryModel

#: Registry attributes only an explicit path inlines.
CONFIG_ATTRIBUTES = ("model", "capabilities", "capabilitiesoffered", "modelsource")

#: Registry metadata of core/spec.md's ``available`` capability that this registry does not offer.
UNAVAILABLE: tuple[str, ...] = ()

#: A level of the model: ("registry",), ("group", g), ("resource", g, r), ("version", g, r), ("meta",).
Level = tuple[str, ...]


@dataclass(frozen=True)
class Inline:
    """A tree of inlined names; ``everything`` is a ``*`` at this level."""

    names: dict[str, Inline] = field(default_factory=dict)
    everything: bool = False

    def child(self, name: str) -> Inline | None:
        """The subtree for ``name`` when it is inlined, else ``None``."""
        if self.everything and name not in CONFIG_ATTRIBUTES:
            return EVERYTHING
        return self.names.get(name)

    def has(self, name: str) -> bool:
        return self.child(name) is not None


EVERYTHING = Inline(everything=True)
NOTHING = Inline()


def inlineable(model: RegistryModel, level: Level) -> dict[str, Level | None]:
    """The inlineable names at ``level``: nested collections (with their entities' level) and
    leaf attributes (``None``)."""
    kind = level[0]
    if kind == "registry":
        return {**{g: ("group", g) for g in model.groups}, **{a: None for a in CONFIG_ATTRIBUTES}}
    if kind == "group":
        gdef = model.group(level[1])
        return {r: ("resource", level[1], r) for r in (gdef.resources if gdef else {})}
    rdef = model.resource(level[1], level[2]) if kind in ("resource", "version") else None
    doc: dict[str, Level | None] = {rdef.singular: None} if rdef is not None and rdef.hasdocument else {}
    if kind == "resource":
        return {"meta": None, "versions": ("version", level[1], level[2]), **doc}
    return doc


def _attributes(model: RegistryModel, level: Level) -> set[str]:
    names = set(COMMON_ATTRIBUTES) | {"specversion", "registryid", "versionid", "isdefault"}
    if level[0] == "group" and (gdef := model.group(level[1])):
        names |= set(gdef.attributes)
    if level[0] in ("resource", "version") and (rdef := model.resource(level[1], level[2])):
        names |= set(rdef.attributes) | {f"{rdef.singular}base64", f"{rdef.singular}url", f"{rdef.singular}uri"}
    return names - {"*"}


def parse_inline(values: Iterable[str], model: RegistryModel, level: Level, subject: str) -> Inline:
    """The tree of ``inline`` values (already split on ``,``; ``*`` for a bare ``?inline``)."""
    tree: dict = {}
    for value in values:
        parts = value.split(".")
        if "*" in parts[:-1] or any(p == "" for p in parts):
            raise XRegistryError("bad_inline", subject, value=value,
                                 detail='"*" may only end a path, and paths have no empty parts')
        node, here = tree, level
        for i, part in enumerate(parts):
            if part == "*":
                node["*"] = True
                break
            names = inlineable(model, here)
            if part in UNAVAILABLE and here == ("registry",):
                # core/spec.md "available Capability": "Attempts to access unavailable metadata
                # MUST generate an error ([not_available](#not_available))."
                raise XRegistryError("not_available", part, detail=f"this registry does not offer {part}")
            if part not in names:
                if part in _attributes(model, here):
                    raise XRegistryError("inline_noninlineable", subject, name=part, value=value)
                raise XRegistryError("bad_inline", subject, value=value,
                                     detail=f'"{part}" is not inlineable here '
                                            f'(inlineable: {", ".join(names) or "nothing"})')
            nxt = names[part]
            if nxt is None and i < len(parts) - 1:
                raise XRegistryError("bad_inline", subject, value=value,
                                     detail=f'"{part}" has nothing to inline below it')
            node = node.setdefault(part, {})
            here = nxt or here
    return _freeze(tree)


def _freeze(tree: dict) -> Inline:
    return Inline({k: _freeze(v) for k, v in tree.items() if k != "*"}, everything=bool(tree.get("*")))
