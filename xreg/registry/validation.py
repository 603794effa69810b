"""Model-driven attribute validation and the message/endpoint domain rules.

:func:`validate_attributes` checks attribute values against model definitions
(core/model.md); :func:`validate_entity` checks a whole group, version or meta entity: the
spec's common attributes, the model's attributes and the rules of message/spec.md and
endpoint/spec.md. Every violation is collected; nothing stops at the first one.

Attributes the built-in model does not name are kept as they are (no ``unknown_attribute``),
but their names must still be valid attribute names. A model given through ``modelsource``
is *closed* (core/spec.md "Extensions"): there, an attribute neither defined nor permitted by
a ``*`` definition at its level is ``unknown_attribute``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from xreg.errors import ValidationErrors, XRegistryError, invalid, missing
from xreg.ids import id_problem, parse_xid
from xreg.model.registry_model import (
    COMMON_ATTRIBUTES,
    META_ATTRIBUTES,
    VERSION_ATTRIBUTES,
    AttributeDef,
    RegistryModel,
)
from xreg.registry import constraints
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


def _to_datetime(v: Any) -> datetime | None:
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
    return None if _to_datetime(v) else "is not a valid date and time"


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
class _Run:
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
    run = _Run(subject, model)
    run.check_object(attrs, defs, path, extensible=extensible)
    return run.errors


# -- entities -------------------------------------------------------------------------------
def _defs(raw: dict[str, dict[str, Any]]) -> dict[str, AttributeDef]:
    return {n: AttributeDef.from_json(n, d) for n, d in raw.items()}


_COMMON = _defs(COMMON_ATTRIBUTES)
# core/spec.md, "Version Entity": attributes beyond VERSION_ATTRIBUTES.
_VERSION = _defs({
    **VERSION_ATTRIBUTES,
    "format": {"type": "string"},
    "formatvalidated": {"type": "boolean", "readonly": True},
    "formatvalidatedreason": {"type": "string", "readonly": True},
    "compatibilityvalidated": {"type": "boolean", "readonly": True},
    "compatibilityvalidatedreason": {"type": "string", "readonly": True},
})
_META = _defs(META_ATTRIBUTES)
#: A Group instance's ``constraints`` (core/spec.md "constraints Attribute"): a map of
#: ``<RESOURCES>.<PATH>`` to ``default`` / ``enum`` / ``equals``.
_GROUP_CONSTRAINTS = AttributeDef("constraints", "map", item=AttributeDef("", "object", attributes={
    "default": AttributeDef("default", "any"), "enum": AttributeDef("enum", "array", item=AttributeDef("", "any")),
    "equals": AttributeDef("equals", "string")}))
LEVELS = ("group", "version", "meta")


def entity_definitions(
    level: str, *, model: RegistryModel, group_type: str, resource_type: str | None = None
) -> dict[str, AttributeDef]:
    """All attribute definitions of a ``group``, ``version`` or ``meta`` entity."""
    group = model.group(group_type)
    if group is None:
        raise XRegistryError("unknown_group_type", "/" + group_type, name=group_type)
    if level == "group":
        return {**_COMMON, group.id_attribute: AttributeDef(group.id_attribute, "string"),
                "constraints": _GROUP_CONSTRAINTS, **group.attributes}
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    resource = group.resources.get(resource_type or "")
    if resource is None:
        raise XRegistryError("unknown_resource_type", "/" + group_type, name=resource_type, group=group_type)
    rid = {resource.id_attribute: AttributeDef(resource.id_attribute, "string")}
    if level == "meta":
        return {**_COMMON, **_META, **rid, **resource.metaattributes}
    document: dict[str, AttributeDef] = {}
    if resource.hasdocument:  # core/spec.md: <RESOURCE>url, <RESOURCE>, <RESOURCE>base64
        s = resource.singular
        document = {f"{s}url": AttributeDef(f"{s}url", "url"), s: AttributeDef(s, "any"),
                    f"{s}base64": AttributeDef(f"{s}base64", "string")}
    return {**_COMMON, **_VERSION, **rid, **document, **resource.attributes}


def registry_definitions(model: RegistryModel) -> dict[str, AttributeDef]:
    """Attribute definitions of the registry entity (core/spec.md "Registry Entity")."""
    return {**_COMMON, "self": AttributeDef("self", "url", readonly=True),
            "registryid": AttributeDef("registryid", "string", required=True),
            "specversion": AttributeDef("specversion", "string"), **model.attributes}


def validate_entity(
    level: str,
    attrs: dict,
    *,
    model: RegistryModel,
    group_type: str,
    resource_type: str | None = None,
    subject: str,
    group_attrs: dict | None = None,
) -> None:
    """Validate one entity; raise :class:`ValidationErrors` listing every violation.

    ``level`` is ``group``, ``version`` or ``meta``; ``subject`` is the entity's XID;
    ``group_attrs`` are the owning group's attributes (for a message's envelope/protocol).
    """
    defs = dict(entity_definitions(level, model=model, group_type=group_type, resource_type=resource_type))
    defs["xid"] = AttributeDef("xid", "any", required=True)  # checked below: malformed_xid
    # ``self`` is REQUIRED "in API and document views" only (core/spec.md, Version and Meta
    # entities: "OPTIONAL/ignored in requests"); stored states may leave it to the views.
    defs["self"] = AttributeDef("self", "url", readonly=True)
    run = _Run(subject, model)
    run.check_object(attrs, defs, "", extensible="*" in defs, closed=model.closed)
    _check_ids(run, attrs, level, model, group_type, resource_type)
    _common_rules(run, attrs)
    if level == "group" and group_type == "endpoints":
        _endpoint_rules(run, attrs)
    if level == "group" and group_type in ("messagegroups", "endpoints"):
        _group_envelope_protocol_rules(run, attrs, endpoint=group_type == "endpoints")
    if level == "version":
        # core/model.md, groups.<STRING>.constraints: "The constraints MUST be applied to all
        # Versions of all Resources in the Group instances, and generate an error
        # (constraint_failure) if a violation is detected."
        in_force = constraints.in_force(model.group_def(group_type), group_attrs, resource_type or "")
        run.errors += constraints.violations(attrs, in_force, group_attrs, subject)
    if level == "version" and resource_type == "messages":
        _message_rules(run, attrs, group_attrs or {}, endpoint=group_type == "endpoints")
    if run.errors:
        raise ValidationErrors(run.errors)


def validate_values(
    attrs: dict, *, model: RegistryModel, group_type: str, resource_type: str, subject: str,
) -> None:
    """Validate the values of version attributes a request carries without them being applied —
    a new resource's default-version attributes next to the ``versions`` that win over them
    (core/spec.md, Resource Processing Algorithm, step 2). Each value present is checked as it
    would be on a version (types, nested definitions, non-empty strings, the
    ``<NAME>/<VERSION>`` forms); what is absent, and rules across attributes, are not: the
    attributes are not a version. Raises :class:`ValidationErrors` listing every violation."""
    defs = {n: replace(d, required=False) for n, d in entity_definitions(
        "version", model=model, group_type=group_type, resource_type=resource_type).items()}
    run = _Run(subject, model)
    run.check_object(attrs, defs, "", extensible="*" in defs, closed=model.closed)
    _common_rules(run, attrs)
    if resource_type == "messages":
        _check_envelope_protocol_form(run, attrs)
        _check_dataschemaformat_form(run, attrs)
    if run.errors:
        raise ValidationErrors(run.errors)


def _check_ids(run: _Run, attrs: dict, level: str, model: RegistryModel, group_type: str,
               resource_type: str | None) -> None:
    if level == "group":
        id_attrs = [model.group_def(group_type).id_attribute]
    else:
        id_attrs = [model.resource_def(group_type, resource_type or "").id_attribute]
    if level == "version":
        id_attrs.append("versionid")
    for name in id_attrs:  # core/spec.md, <SINGULAR>id: "Otherwise, an error (malformed_id)"
        value = attrs.get(name)
        if value is not None and id_problem(value):
            run.errors.append(XRegistryError("malformed_id", run.subject, id=value, path=name,
                                             detail=f'"{name}": {id_problem(value)}'))
    xid = attrs.get("xid")
    if xid is None:
        return
    try:  # core/spec.md, xid: "reference valid Group and Resource types. Otherwise ... malformed_xid"
        parts = parse_xid(xid, model, subject=run.subject)
    except XRegistryError as err:
        err.path = "xid"
        run.errors.append(err)
        return
    if (parts.level, parts.group_type, parts.resource_type) != (
        level, group_type, resource_type if level != "group" else None
    ):
        run.invalid("xid", f"must be the XID of this {level}, not {xid}")


# -- domain rules ---------------------------------------------------------------------------
_NAME_VERSION = re.compile(r"[^/\s]+/[^/\s]+")
_NAME_OPT_VERSION = re.compile(r"[^/\s]+(/[^/\s]+)?")
#: Domain rules a request description can state (gateway/http_api/openapi.py): attributes that
#: must not be empty, and the ``<NAME>/<VERSION>`` / ``<NAME>[/<VERSION>]`` forms.
NON_EMPTY = ("name", "documentation", "icon", "format")
NAME_VERSION, NAME_OPT_VERSION = _NAME_VERSION.pattern, _NAME_OPT_VERSION.pattern
_PROTOCOL_ALIASES = {"amqp": "amqp/1.0", "mqtt": "mqtt/5.0", "http/1.1": "http", "http/2": "http", "http/3": "http"}
_SUBSCRIBER_CONSUMER_PROTOCOLS = {"mqtt/3.1.1", "mqtt/5.0", "amqp/1.0", "nats"}
USAGE_VALUES = ("subscriber", "consumer", "producer")


def canonical_protocol(value: str) -> str:
    """Lower-cased protocol name with the shorthands of endpoint/spec.md resolved
    ("AMQP" = "AMQP/1.0", "MQTT" = "MQTT/5.0", "HTTP" for HTTP/1.1, HTTP/2, HTTP/3)."""
    low = value.strip().lower()
    return _PROTOCOL_ALIASES.get(low, low)


def _non_empty(run: _Run, attrs: dict, names: Iterable[str]) -> None:
    for name in names:
        if attrs.get(name) == "":
            run.invalid(name, "must not be empty")


def _common_rules(run: _Run, attrs: dict) -> None:
    # core/spec.md, name: "If present, MUST be non-empty"; documentation, icon: "If present,
    # MUST be a non-empty URL"; format: "If present, MUST be a non-empty case-insensitive string".
    _non_empty(run, attrs, NON_EMPTY)
    # core/spec.md, deprecated.removal: "MUST NOT be sooner than the effective time if present".
    dep = attrs.get("deprecated")
    if isinstance(dep, dict):
        effective, removal = _to_datetime(dep.get("effective")), _to_datetime(dep.get("removal"))
        if effective and removal and removal < effective:
            run.invalid("deprecated.removal", "must not be sooner than deprecated.effective")


def _endpoint_rules(run: _Run, attrs: dict) -> None:
    # endpoint/spec.md, channel: "When specified, the value MUST be a non-empty string."
    _non_empty(run, attrs, ("channel",))
    # endpoint/spec.md, usage: "REQUIRED." "MUST contain only the following possible values"
    # (the model's strict enum), "MUST be an array of at least one value." "MUST declare
    # exactly one usage value, except for the single combination permitted below." "MUST NOT
    # combine producer with any other value." "MUST NOT declare all three values." "MAY
    # declare ["subscriber", "consumer"] only when the protocol is MQTT/3.1.1, MQTT/5.0,
    # AMQP/1.0, or NATS." "MUST NOT declare ["subscriber", "consumer"] for HTTP or KAFKA".
    usage = attrs.get("usage")
    if usage is None:
        run.missing("usage")
    elif isinstance(usage, list):
        values = [u for u in usage if isinstance(u, str)]
        if not usage:
            run.invalid("usage", "must contain at least one value")
        elif len(set(values)) != len(values):
            run.invalid("usage", "must not repeat a value")
        elif len(values) > 1:
            protocol = attrs.get("protocol")
            if set(values) != {"subscriber", "consumer"}:
                run.invalid("usage", 'must be one value, or exactly ["subscriber", "consumer"]')
            elif not (isinstance(protocol, str) and canonical_protocol(protocol) in _SUBSCRIBER_CONSUMER_PROTOCOLS):
                run.invalid("usage", '["subscriber", "consumer"] is only allowed with the MQTT/3.1.1, '
                                     "MQTT/5.0, AMQP/1.0 or NATS protocols")
    # endpoint/spec.md, envelopeoptions, CloudEvents/1.0: format "MUST NOT be specified when
    # mode is binary".
    options = attrs.get("envelopeoptions")
    if (isinstance(options, dict) and str(attrs.get("envelope", "")).lower() == "cloudevents/1.0"
            and options.get("mode") == "binary" and options.get("format") is not None):
        run.invalid("envelopeoptions.format", 'must not be specified when mode is "binary"')


def _group_envelope_protocol_rules(run: _Run, attrs: dict, *, endpoint: bool) -> None:
    envelope, protocol = attrs.get("envelope"), attrs.get("protocol")
    if endpoint:
        # endpoint/spec.md, envelope: "MUST be a non-empty case-insensitive string of the form
        # <SPEC>[/<VERSION>]"; protocol: "MUST be a non-empty case-insensitive string."
        if isinstance(envelope, str) and not _NAME_OPT_VERSION.fullmatch(envelope):
            run.invalid("envelope", "must have the form <SPEC>[/<VERSION>]")
        if protocol == "":
            run.invalid("protocol", "must not be empty")
    else:
        _check_envelope_protocol_form(run, attrs)


def _check_envelope_protocol_form(run: _Run, attrs: dict) -> None:
    # message/spec.md, envelope (Message Group): "If present, MUST be a non-empty
    # case-insensitive string." "If present, MUST follow the naming convention
    # <NAME>/<VERSION>".
    envelope, protocol = attrs.get("envelope"), attrs.get("protocol")
    if isinstance(envelope, str) and not _NAME_VERSION.fullmatch(envelope):
        run.invalid("envelope", "must have the form <NAME>/<VERSION>, e.g. CloudEvents/1.0")
    # message/spec.md, protocol (Message Group): "If present, MUST be a non-empty
    # case-insensitive string." "If present, MUST follow the naming convention <NAME> or
    # <NAME>/<VERSION>".
    if isinstance(protocol, str) and not _NAME_OPT_VERSION.fullmatch(protocol):
        run.invalid("protocol", "must have the form <NAME> or <NAME>/<VERSION>, e.g. MQTT/5.0 or KAFKA")


def _check_dataschemaformat_form(run: _Run, attrs: dict) -> None:
    # message/spec.md, dataschemaformat: "If present, MUST be a non-empty case-insensitive
    # string." "MUST follow the naming convention <NAME>/<VERSION>".
    fmt = attrs.get("dataschemaformat")
    if isinstance(fmt, str) and not _NAME_VERSION.fullmatch(fmt):
        run.invalid("dataschemaformat", "must have the form <NAME>/<VERSION>, e.g. JsonSchema/draft-07")


def _message_rules(run: _Run, attrs: dict, group_attrs: dict, *, endpoint: bool) -> None:
    _check_envelope_protocol_form(run, attrs)
    envelope, protocol = attrs.get("envelope"), attrs.get("protocol")
    # A message with a base (basemessageuri) is completed by it (message/spec.md: the base's
    # definitions are copied into it): what must come in pairs may come half from the base.
    based = bool(attrs.get("basemessageuri"))
    # message/spec.md, envelopemetadata: "REQUIRED if envelope is specified." Its content "is
    # defined by the message envelope", so without an envelope it has no meaning.
    if envelope is not None and attrs.get("envelopemetadata") is None and not based:
        run.missing("envelopemetadata")
    if envelope is None and attrs.get("envelopemetadata") is not None and not based:
        run.invalid("envelopemetadata", "is only allowed together with an envelope")
    # message/spec.md, protocoloptions: "REQUIRED if protocol is specified."
    if protocol is not None and attrs.get("protocoloptions") is None and not based:
        run.missing("protocoloptions")
    # message/spec.md, dataschema / dataschemauri: "Mutually exclusive with the dataschemauri
    # attribute." "If present, dataschemaformat MUST be present."
    if attrs.get("dataschema") is not None and attrs.get("dataschemauri") is not None:
        run.invalid("dataschemauri", "dataschema and dataschemauri are mutually exclusive")
    if (attrs.get("dataschema") is not None or attrs.get("dataschemauri") is not None) and attrs.get(
        "dataschemaformat"
    ) is None and not based:
        run.missing("dataschemaformat")
    _check_dataschemaformat_form(run, attrs)
    # message/spec.md, dataschemaxid: "If dataschemauri is also present then its value MUST be
    # the self URL of the entity referenced by this attribute."
    xid, uri = attrs.get("dataschemaxid"), attrs.get("dataschemauri")
    if isinstance(xid, str) and isinstance(uri, str):
        target = uri.split("#", 1)[0].removesuffix("$details")
        if not target.endswith(xid.rstrip("/")):
            run.invalid("dataschemauri", f"must be the self URL of dataschemaxid ({xid})")
    options = attrs.get("protocoloptions")
    if isinstance(protocol, str) and isinstance(options, dict):
        name = canonical_protocol(protocol)
        # message/spec.md, "KAFKA" protocol: "The key and key_base64 properties are mutually
        # exclusive and MUST NOT be present at the same time."
        if name == "kafka" and options.get("key") is not None and options.get("key_base64") is not None:
            run.invalid("protocoloptions.key_base64", "key and key_base64 are mutually exclusive")
        # message/spec.md, HTTP protocols: "The status and method properties are mutually
        # exclusive and MUST NOT be present at the same time."
        if name == "http" and options.get("method") is not None and options.get("status") is not None:
            run.invalid("protocoloptions.status", "status and method are mutually exclusive")
    _check_group_consistency(run, attrs, group_attrs, endpoint=endpoint, based=based)


def _check_group_consistency(run: _Run, attrs: dict, group: dict, *, endpoint: bool, based: bool) -> None:
    genv, gprot = group.get("envelope"), group.get("protocol")
    env, prot = attrs.get("envelope"), attrs.get("protocol")
    if isinstance(genv, str):
        if env is None and not based:
            run.missing("envelope")
        elif isinstance(env, str) and not _envelope_within(genv, env, endpoint=endpoint):
            run.invalid("envelope", f'must match the envelope of its group ("{genv}")')
    if isinstance(gprot, str):
        if prot is None and not based:
            run.missing("protocol")
        elif isinstance(prot, str) and canonical_protocol(prot) != canonical_protocol(gprot):
            run.invalid("protocol", f'must be the protocol of its group ("{gprot}")')


def _envelope_within(group_env: str, env: str, *, endpoint: bool) -> bool:
    # message/spec.md, envelope (message): "MUST be the same as the envelope attribute of the
    # messagegroup object into which the message is embedded or referenced."
    if not endpoint:
        return group_env.lower() == env.lower()
    # endpoint/spec.md, envelope: "If a <VERSION> is specified at the Group level, all
    # Resources within that Group MUST have a <VERSION> value that is at least as precise as
    # its Group, and MUST NOT expand it." No group version: any version of that name.
    gname, _, gver = group_env.lower().partition("/")
    name, _, ver = env.lower().partition("/")
    return name == gname and (not gver or ver == gver or ver.startswith(gver + "."))
