"""Request flags as HTTP query parameters (core/spec.md "Request Flags", core/http.md).

:func:`parse_flags` reads every query parameter: the spec's flags plus ``limit`` and ``page``
(pagination). An unknown parameter, a single-valued flag given twice, or a flag used where it
has no meaning is a ``bad_flag``; ``sort`` on something that is not a collection is
``sort_noncollection``. Flag values are checked here too (``bad_ignore``,
``unsupported_specversion``, ``bad_defaultversionid``); ``filter``, ``sort`` and ``inline``
paths are parsed against the model by their own modules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from gateway.http_api.targets import Target
from xreg.errors import XRegistryError
from xreg.ids import id_problem
from xreg.registry.views import SPEC_VERSION

#: The flags this API supports (the ``flags`` capability).
FLAGS = ("binary", "collections", "doc", "dryrun", "epoch", "filter", "ignore", "inline", "setdefaultversionid",
         "sort", "specversion")
#: Pagination parameters (pagination/spec.md): the client's ``limit`` and the server's opaque ``page``.
PAGINATION = ("limit", "page")
#: Supported ``ignore`` values (the ``ignores`` capability).
IGNORES = ("capabilities", "defaultversionid", "defaultversionsticky", "epoch", "id", "modelsource", "readonly")
SPEC_VERSIONS = (SPEC_VERSION,)
_MULTI = frozenset({"filter", "ignore", "inline"})
_BOOLEAN = frozenset({"binary", "collections", "doc", "dryrun"})
_WRITES = frozenset({"PUT", "PATCH", "POST", "DELETE"})
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?(-.+)?")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: ``setdefaultversionid`` not given (``None`` is the flag's ``null``).
UNSET = _Unset()


@dataclass
class Flags:
    """The flags of one request, values checked."""

    binary: bool = False
    collections: bool = False
    doc: bool = False
    #: An extension of this gateway: check a write (validation, schema format, compatibility)
    #: and answer whether it would be accepted, without writing.
    dryrun: bool = False
    epoch: int | None = None
    filter: list[str] = field(default_factory=list)
    ignore: frozenset[str] = frozenset()
    inline: list[str] = field(default_factory=list)
    setdefaultversionid: str | _Unset | None = UNSET
    sort: str | None = None
    specversion: str | None = None
    limit: int | None = None
    page: str | None = None
    given: frozenset[str] = frozenset()
    #: ``ignore`` given without a value, empty or ``*``: every (enabled) value.
    ignore_all: bool = False


def _bad_flag(flag: str, subject: str, detail: str) -> XRegistryError:
    return XRegistryError("bad_flag", subject, flag=flag, detail=detail)


def _boolean(name: str, value: str, subject: str) -> bool:
    if value in ("", "true"):
        return True
    if value == "false":
        return False
    raise _bad_flag(name, subject, f"?{name} takes no value (or true / false), not {value!r}")


def _uinteger(name: str, value: str, subject: str, *, minimum: int) -> int:
    if not re.fullmatch(r"\d{1,19}", value) or int(value) < minimum:
        raise XRegistryError("bad_request", subject,
                             detail=f"?{name} must be an integer of at least {minimum}, not {value!r}")
    return int(value)


def _specversion(value: str, subject: str) -> str:
    """``value`` when supported: major.minor and any suffix must match, the patch number is ignored."""
    def key(v: str) -> tuple[str, ...] | None:
        m = _VERSION.fullmatch(v.strip().lower())
        return (m.group(1), m.group(2), m.group(3) or "") if m else None

    wanted = key(value)
    if wanted is None or all(key(v) != wanted for v in SPEC_VERSIONS):
        raise XRegistryError("unsupported_specversion", subject, specversion=value, list=", ".join(SPEC_VERSIONS))
    return value


def parse_flags(items: Iterable[tuple[str, str]], subject: str) -> Flags:
    """The flags of a query string (``request.query_params.multi_items()``)."""
    flags = Flags()
    given: dict[str, list[str]] = {}
    for name, value in items:
        if name not in FLAGS and name not in PAGINATION:
            raise _bad_flag(name, subject, f"unknown flag ?{name}; supported: {', '.join(FLAGS + PAGINATION)}")
        given.setdefault(name, []).append(value)
    for name, values in given.items():
        if len(values) > 1 and name not in _MULTI:
            raise _bad_flag(name, subject, f"?{name} may be given only once")
        value = values[0]
        if name in _BOOLEAN:
            setattr(flags, name, _boolean(name, value, subject))
        elif name == "epoch":
            flags.epoch = _uinteger(name, value, subject, minimum=0)
        elif name == "limit":
            flags.limit = _uinteger(name, value, subject, minimum=1)
        elif name == "page":
            flags.page = value
        elif name == "filter":
            flags.filter = values
        elif name == "inline":
            flags.inline = [p for v in values for p in (v.split(",") if v else ["*"])]
        elif name == "ignore":
            flags.ignore = _ignores(values, subject)
            flags.ignore_all = any(part in ("", "*") for v in values for part in (v.split(",") if v else [""]))
        elif name == "sort":
            flags.sort = value
        elif name == "specversion":
            flags.specversion = _specversion(value, subject)
        elif name == "setdefaultversionid":
            flags.setdefaultversionid = _default_version(value, subject)
    flags.given = frozenset(given)
    return flags


def _ignores(values: list[str], subject: str) -> frozenset[str]:
    out: set[str] = set()
    for value in values:
        for part in value.split(",") if value else ["*"]:
            if part == "*":
                out.update(IGNORES)
            elif part in IGNORES:
                out.add(part)
            else:
                raise XRegistryError("bad_ignore", subject, value=part,
                                     detail=f"unsupported value; supported: {', '.join(IGNORES)}")
    return frozenset(out)


def _default_version(value: str, subject: str) -> str | None:
    if value == "null":
        return None
    if value != "request" and id_problem(value):
        raise XRegistryError("bad_defaultversionid", subject, value=value, detail=id_problem(value))
    return value


def check_context(flags: Flags, target: Target, method: str) -> None:
    """Refuse flags that have no meaning for this method on this target."""
    subject = target.path
    reading = method == "GET"
    allowed: set[str] = {"specversion"}
    if target.kind == "api":
        if target.api == "export":
            allowed |= {"inline", "filter", "binary", "doc"}
    else:
        allowed |= {"inline", "doc", "binary"}
        if reading:
            allowed.add("filter")
            if target.is_collection:
                allowed |= {"sort", "limit", "page"}
            if target.kind in ("root", "group"):
                allowed.add("collections")
        if method in _WRITES:
            allowed |= {"ignore", "dryrun"}
            # the read flags that shape a write's response: filter, and sort where the response
            # is a collection (the processed members of a POST or PATCH to a collection)
            if method != "DELETE" and target.kind != "meta":
                allowed.add("filter")
            if method in ("POST", "PATCH") and target.is_collection:
                allowed.add("sort")
            # core/http.md: a write's response "MUST be generated applying the semantics of any
            # request flags specified in the request URL" (inline, doc, binary, and collections
            # where the response is the registry or a group)
            if method in ("PUT", "PATCH") and target.kind in ("root", "group"):
                allowed.add("collections")
            if target.kind in (("version", "versions") if method == "DELETE" else ("resource", "meta", "version",
                                                                                   "versions")):
                allowed.add("setdefaultversionid")
            if method == "DELETE" and target.kind in ("group", "resource", "version"):
                allowed.add("epoch")
    for name in sorted(flags.given):
        if name in allowed:
            continue
        if name == "sort" and method != "DELETE":
            raise XRegistryError("sort_noncollection", subject,
                                 detail="?sort applies to collections of groups, resources or versions")
        raise _bad_flag(name, subject, f"?{name} is not allowed on {method} {subject}")
    if flags.setdefaultversionid == "request" and not (method == "POST" and target.kind == "resource"):
        raise _bad_flag("setdefaultversionid", subject,
                        '"request" is only allowed on POST to a resource (which creates one version)')
