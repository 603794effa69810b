"""Group constraints on the Versions of the Resources inside a Group: the Group type's
(core/model.md ``groups.<STRING>.constraints``, checked with the model in
``xreg.model.modelsource``) and a Group instance's own ``constraints`` attribute
(core/spec.md "constraints Attribute"), both maps of ``<RESOURCES>.<PATH>`` to ``default`` /
``enum`` / ``equals``.

:func:`apply_defaults` fills an absent attribute of
a Version with the constraint's ``default``; :func:`violations` lists the
``constraint_failure`` errors of a Version: a value outside ``enum`` (both levels apply, so the
instance's set only narrows the type's), or different from the Group attribute ``equals``
names (ignored while that attribute has no value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xreg.errors import XRegistryError
from xreg.model.registry_model import GroupDef


@dataclass(frozen=True)
class Constraint:
    """One ``<RESOURCES>.<PATH>`` entry: the attribute path inside a Version and its aspects."""

    path: tuple[str, ...]
    default: Any = None
    enum: tuple[Any, ...] = ()
    equals: tuple[str, ...] = ()


def _split(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split(".") if p)


def parse(raw: Any, resource_plural: str) -> list[Constraint]:
    """The constraints of ``raw`` (a ``constraints`` map) on ``resource_plural``; entries that
    are not objects are skipped (the model check refuses them; an instance's are validated as
    its attribute)."""
    out: list[Constraint] = []
    for key, spec in (raw or {}).items() if isinstance(raw, dict) else ():
        parts = _split(str(key))
        if len(parts) < 2 or parts[0] != resource_plural or not isinstance(spec, dict):
            continue
        enum = spec.get("enum")
        equals = spec.get("equals")
        out.append(Constraint(parts[1:], spec.get("default"),
                              tuple(enum) if isinstance(enum, list) else (),
                              _split(equals) if isinstance(equals, str) else ()))
    return out


def _lookup(attrs: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(attrs, dict):
            return None
        attrs = attrs.get(part)
    return attrs


def in_force(gdef: GroupDef, group_attrs: dict[str, Any] | None, resource_plural: str) -> list[Constraint]:
    """The constraints of the Group type and of the Group instance on ``resource_plural``."""
    return [*parse(gdef.source.get("constraints"), resource_plural),
            *parse((group_attrs or {}).get("constraints"), resource_plural)]


def apply_defaults(attrs: dict[str, Any], constraints: list[Constraint]) -> None:
    """Set absent attributes of a Version to their constraint ``default`` (in place; the
    instance's default, listed last, wins over the type's)."""
    defaults = {c.path: c.default for c in constraints if c.default is not None}
    for path, default in defaults.items():
        holder: Any = attrs
        for part in path[:-1]:
            if not isinstance(holder, dict):
                break
            holder = holder.setdefault(part, {})
        if isinstance(holder, dict) and holder.get(path[-1]) is None:
            holder[path[-1]] = default


def violations(attrs: dict[str, Any], constraints: list[Constraint], group_attrs: dict[str, Any] | None,
               subject: str) -> list[XRegistryError]:
    """``constraint_failure`` for each constraint a Version's ``attrs`` break."""
    errors: list[XRegistryError] = []
    for c in constraints:
        path = ".".join(c.path)
        value = _lookup(attrs, c.path)
        if c.enum and value is not None and value not in c.enum:
            errors.append(XRegistryError("constraint_failure", subject, path=path, kind="enum",
                                         detail=f"{path} must be one of {', '.join(map(repr, c.enum))}"))
        if c.equals:
            wanted = _lookup(group_attrs or {}, c.equals)
            if wanted is not None and value != wanted:
                errors.append(XRegistryError("constraint_failure", subject, path=path, kind="equals",
                                             detail=f"{path} must equal the group's {'.'.join(c.equals)} "
                                                    f"({wanted!r})"))
    return errors
