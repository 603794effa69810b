"""The generic attribute checker: attribute values against model definitions (core/model.md).

:class:`Checker` checks one object's attributes against their definitions — types (core/spec.md
"Data Types"), ``enum``/``strict``, ``required``, nested ``attributes``, ``item``,
``ifvalues``/``siblingattributes``, XID references and ``target`` — and collects every
violation. It knows no domain: the rules of message/spec.md, endpoint/spec.md and schema/spec.md
are in ``xreg.registry.rules``, and ``xreg.registry.validation`` runs both per entity.

Attributes the built-in model does not name are kept as they are (no ``unknown_attribute``),
but their names must still be valid attribute names. A model given through ``modelsource``
is *closed* (core/spec.md "Extensions"): there, an attribute neither defined nor permitted by
a ``*`` definition at its level is ``unknown_attribute``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from xreg.errors import XRegistryError, invalid, missing
from xreg.ids import parse_xid
from xreg.model.registry_model import AttributeDef, RegistryModel
from xreg.xid import Xid

# core/spec.md, "Attributes": names "MUST be between 1 and 63 characters in length", "MUST only
# contain lowercase alphanumeric characters or an underscore ([a-z0-9_]) and MUST NOT start
# with a digit".
ATTRIBUTE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# core/spec.md, "Data Types", map keys: "a non-empty string consisting of only lowercase
# alphanumeric characters ([a-z0-9]), `:`, `-`, `_` or a `.`", "no longer than 63 characters",
# "Start with an alphanumeric character". Also the ``extended`` namecharset (core/model.md).
MAP_KEY = re.compile(r"[a-z0-9][a-z0-9:\-_.]{0,62}")

# RFC 3339 date-time, "time-offset" required (Z or +hh:mm).
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_URI_FORBIDDEN = re.compile(r"[\x00-\x20\x7f<>\"\\^`|{}]")
_PCT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_TEMPLATE_EXPR = re.compile(r"\{([^{}]*)\}")
_TEMPLATE_VAR = re.compile(r"[+#./;?&=,!@|]?[A-Za-z0-9_.%]+(:[0-9]+|\*)?(,[A-Za-z0-9_.%]+(:[0-9]+|\*)?)*")


# -- scalar type checks: each returns why the value is wrong, or None -----------------------
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def to_datetime(v: Any) -> datetime | None:
    """An RFC 3339 timestamp with a time zone offset as a datetime, else ``None``."""
    if not isinstance(v, str) or not _TIMESTAMP.fullmatch(v):
        return None
    text = v[:17] + min(v[17:19], "59") + v[19:]  # tolerate a leap second
    try:
        return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return None


def _timestamp_problem(v: Any) -> str | None:
    if not isinstance(v, str) or not _TIMESTAMP.fullmatch(v):
        return "must be an RFC 3339 timestamp with a time zone offset (e.g. 2030-12-19T06:00:00Z)"
    return None if to_datetime(v) else "is not a valid date and time"


def _uri_problem(v: Any, *, template: bool = False, absolute: bool | None = None) -> str | None:
    if not isinstance(v, str):
        return "must be a string"
    text = v
    if template:
        for expr in _TEMPLATE_EXPR.findall(v):
            if not _TEMPLATE_VAR.fullmatch(expr):
                return f"has an invalid URI template expression {{{expr}}}"
        text = _TEMPLATE_EXPR.sub("x", v)
        if "{" in text or "}" in text:
            return "has unbalanced braces"
    bad = _URI_FORBIDDEN.search(text)
    if bad:
        return f"contains a character not allowed in a URI ({bad.group(0)!r})"
    if _PCT.search(text):
        return "has a '%' that does not start a percent-encoding"
    head = re.match(r"([^:/?#]*):", text)
    if head and not _SCHEME.fullmatch(head.group(1)):
        return f"has an invalid URI scheme {head.group(1)!r}"
    if absolute is True and not head:
        return "must be an absolute URI (with a scheme)"
    if absolute is False and head:
        return "must be a relative URI (without a scheme)"
    return None


_SCALAR_CHECKS = {
    "string": lambda v: None if isinstance(v, str) else "must be a string",
    "boolean": lambda v: None if isinstance(v, bool) else "must be true or false",
    "integer": lambda v: None if _is_int(v) else "must be an integer",
    "uinteger": lambda v: None if _is_int(v) and v >= 0 else "must be an unsigned integer",
    "decimal": lambda v: None
    if (_is_int(v) or isinstance(v, float)) and not isinstance(v, bool) and math.isfinite(v)
    else "must be a number",
    "timestamp": _timestamp_problem,
    "uri": _uri_problem,
    "urireference": _uri_problem,
    "url": _uri_problem,
    "uriabsolute": lambda v: _uri_problem(v, absolute=True),
    "urlabsolute": lambda v: _uri_problem(v, absolute=True),
    "urirelative": lambda v: _uri_problem(v, absolute=False),
    "urlrelative": lambda v: _uri_problem(v, absolute=False),
    "uritemplate": lambda v: _uri_problem(v, template=True),
    "xid": lambda v: None if isinstance(v, str) and v.startswith("/") else "must be an XID starting with '/'",
    "xidtype": lambda v: None if isinstance(v, str) and v.startswith("/") else "must be an XID type starting with '/'",
}


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _key_path(parent: str, key: str) -> str:
    """Dot notation (core/spec.md, "xRegistry Dot (.) Notation")."""
    if re.fullmatch(r"[A-Za-z0-9_\-:]+", key) and not key.isdigit():
        return f"{parent}.{key}" if parent else key
    quoted = f"['{key}']" if "'" not in key else f'["{key}"]'
    return parent + quoted


def _target_problem(parts: Xid, target: str) -> str | None:
    """Whether an XID matches a model ``target`` (core/model.md, ``attributes.<STRING>.target``)."""
    base, resource_ok, version_ok = target, True, False
    if target.endswith("[/versions]"):
        base, version_ok = target[: -len("[/versions]")], True
    elif target.endswith("/versions"):
        base, resource_ok, version_ok = target[: -len("/versions")], False, True
    segs = [s for s in base.split("/") if s]
    if not segs:
        ok = parts.level == "registry"
    elif len(segs) == 1:
        ok = parts.level == "group" and parts.group_type == segs[0]
    else:
        ok = (parts.group_type, parts.resource_type) == (segs[0], segs[1]) and (
            (resource_ok and parts.level == "resource") or (version_ok and parts.level == "version")
        )
    return None if ok else f"must reference an entity of type {target}"


@dataclass
class Checker:
    """The violations found in the attributes of one entity (``subject``)."""

    subject: str
    model: RegistryModel | None = None
    errors: list[XRegistryError] = field(default_factory=list)

    def invalid(self, path: str, detail: str) -> None:
        self.errors.append(invalid(self.subject, path, detail))

    def missing(self, path: str) -> None:
        self.errors.append(missing(self.subject, path))

    # -- objects ------------------------------------------------------------------------------
    def check_object(self, attrs: dict, defs: dict[str, AttributeDef], path: str, *,
                     charset: str = "strict", extensible: bool = False, closed: bool = False) -> None:
        active, wildcard = self._activate(attrs, defs, path)
        if wildcard is None and extensible:
            wildcard = AttributeDef("*", "any")
        names = ATTRIBUTE_NAME if charset.lower() == "strict" else MAP_KEY
        for name, value in attrs.items():
            here = _key_path(path, name)
            defn = active.get(name)
            if defn is None:
                if not isinstance(name, str) or not names.fullmatch(name):
                    self.invalid(here, f'"{name}" is not a valid attribute name')
                    continue
                defn = wildcard  # unknown attributes without "*" are kept, not checked (unless closed)
                if defn is None and closed:
                    self.errors.append(XRegistryError("unknown_attribute", self.subject, name=here,
                                                      detail=f"the model does not define {here!r}"))
                    continue
            if defn is not None and value is not None:
                self.check_value(value, defn, here)
        for name, defn in active.items():
            if defn.required and defn.default is None and attrs.get(name) is None:
                self.missing(_key_path(path, name))

    def _activate(self, attrs: dict, defs: dict[str, AttributeDef], path: str):
        """The definitions in force for ``attrs``: ``defs`` plus the ``siblingattributes`` of
        every matching ``ifvalues`` (matched case-insensitively, core/model.md)."""
        active = {n: d for n, d in defs.items() if n != "*"}
        wildcard = defs.get("*")
        added: set[str] = set()
        pending = list(active.items())
        while pending:
            name, defn = pending.pop(0)
            value = attrs.get(name)
            if not defn.ifvalues or value is None or isinstance(value, (dict, list)):
                continue
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            for key, siblings in defn.ifvalues.items():
                if key.lower() != text.lower():
                    continue
                for sname, sdef in siblings.items():
                    if sname == "*":
                        wildcard = wildcard or sdef
                    elif sname in added:
                        # core/model.md, ifvalues: duplicates between active sections "MUST"
                        # generate a runtime error (invalid_attribute).
                        self.invalid(_key_path(path, sname), "defined by two active ifvalues sections")
                    elif sname not in active:
                        active[sname] = sdef
                        added.add(sname)
                        pending.append((sname, sdef))
        return active, wildcard

    # -- values -------------------------------------------------------------------------------
    def check_value(self, value: Any, defn: AttributeDef, path: str) -> None:
        kind = defn.type
        if kind == "any":
            return  # core/spec.md: content under "any" is NOT REQUIRED to be validated
        check = _SCALAR_CHECKS.get(kind)
        if check is not None:
            problem = check(value)
            if problem:
                self.invalid(path, problem)
                return
            self._check_enum(value, defn, path)
            if kind in ("xid", "xidtype") or (defn.target and isinstance(value, str) and value.startswith("/")):
                self._check_reference(value, defn, path)
        elif kind == "array":
            if not isinstance(value, list):
                self.invalid(path, "must be an array")
                return
            for i, item in enumerate(value):
                here = f"{path}[{i}]"
                if item is None:
                    self.invalid(here, "null is not a valid array item")  # core/spec.md, array
                    continue
                if defn.item is not None:
                    self.check_value(item, defn.item, here)
                self._check_enum(item, defn, here)
        elif kind == "map":
            if not isinstance(value, dict):
                self.invalid(path, "must be a map (JSON object)")
                return
            for key, item in value.items():
                here = _key_path(path, key)
                if not MAP_KEY.fullmatch(key):
                    self.invalid(here, f'"{key}" is not a valid map key (lowercase a-z, 0-9, ":-_.", '
                                       "starting with a letter or digit, at most 63 characters)")
                if item is None:
                    self.invalid(here, "null is not a valid map value")
                elif defn.item is not None:
                    self.check_value(item, defn.item, here)
        elif kind == "object":
            if not isinstance(value, dict):
                self.invalid(path, "must be an object")
                return
            # ``namecharset`` (core/model.md) when the model carries it; else the permissive
            # map-key set for nested objects.
            charset = getattr(defn, "namecharset", None) or "extended"
            self.check_object(value, defn.attributes or {}, path, charset=charset,
                              closed=bool(self.model and self.model.closed and defn.attributes is not None))
        # unknown types were rejected when the model was loaded; nothing to check here

    def _check_enum(self, value: Any, defn: AttributeDef, path: str) -> None:
        # core/model.md, strict: "any values used that are not part of the enum set MUST
        # generate an error (invalid_attribute)".
        if defn.enum and defn.strict and not any(_same(value, e) for e in defn.enum):
            self.invalid(path, "must be one of " + ", ".join(map(repr, defn.enum)))

    def _check_reference(self, value: str, defn: AttributeDef, path: str) -> None:
        if self.model is None:
            return
        if defn.type == "xidtype":
            segs = [s for s in value.split("/") if s]
            if segs and segs[-1] == "versions":
                segs = segs[:-1]
            ok = len(segs) <= 2 and (not segs or (self.model.group(segs[0]) is not None and (
                len(segs) == 1 or self.model.resource(segs[0], segs[1]) is not None)))
            if not ok or (value.endswith("versions") and len(segs) != 2):
                self.invalid(path, "must reference a Registry, Group, Resource or Version type of the model")
            return
        try:
            parts = parse_xid(value, self.model, subject=self.subject)
        except XRegistryError as err:
            self.invalid(path, f"is not a valid XID: {err.detail}")
            return
        problem = _target_problem(parts, defn.target) if defn.target else None
        if problem:
            self.invalid(path, problem)


def validate_attributes(
    attrs: dict,
    defs: dict[str, AttributeDef],
    *,
    subject: str,
    extensible: bool,
    model: RegistryModel | None = None,
    path: str = "",
) -> list[XRegistryError]:
    """Check ``attrs`` against the attribute definitions ``defs`` (one entity level).

    Checks types (core/spec.md "Data Types"), ``enum``/``strict``, ``required`` (a required
    attribute with a ``default`` is not reported: the server fills it), nested ``attributes``,
    ``item`` and ``ifvalues``/``siblingattributes``. Attributes without a definition are kept
    (validated against ``*`` when there is one, or taken as ``any`` when ``extensible``),
    but their names must be valid attribute names. ``model`` enables XID checks (types and
    ``target``); ``path`` prefixes error paths. Returns the violations found.
    """
    run = Checker(subject, model)
    run.check_object(attrs, defs, path, extensible=extensible)
    return run.errors

