"""The document view of resources and versions whose type has documents (core/http.md,
"Serializing Resource Domain-Specific Documents", "HTTP Header Values").

Responses carry the document itself as the body (or ``303 See Other`` to an external one) and
the entity's scalar attributes as ``xRegistry-<name>`` headers (maps of scalars as
``xRegistry-<map>.<key>``), percent-encoded. Writes take the document as the body and
attributes from the same headers, with patch semantics; ``null`` deletes an attribute.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from gateway.http_api.render import document_bytes
from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel, ResourceDef
from xreg.registry.validation import entity_definitions

PREFIX = "xregistry-"
#: Attributes a request's headers may not set (the server computes them); silently ignored.
READ_ONLY = frozenset({"self", "shortself", "xid", "isdefault", "metaurl", "versionsurl", "versionscount"})
_KEEP = {chr(c) for c in range(0x21, 0x7F)} - {'"', "%"}
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
#: RFC 9110 token: what a header name may hold (map keys that are not tokens are not sent).
_TOKEN = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")
_PRINTABLE = re.compile(r"[\x20-\x7e]+")
#: Characters a Location header keeps as they are (the rest of a stored URL is percent-encoded).
_URL_SAFE = ":/?#[]@!$&'()*+,;=%~"


def encode_value(value: str) -> str:
    """Percent-encode an attribute value for a header (space, ``"``, ``%`` and non-printable
    or non-ASCII characters, as UTF-8 bytes)."""
    return "".join(c if c in _KEEP else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in value)


def decode_value(name: str, value: str, subject: str) -> str:
    """Undo :func:`encode_value` (double-quoted values are unquoted first); ``header_error``
    when the bytes are not UTF-8."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    raw = bytearray()
    pos = 0
    for m in _PERCENT.finditer(value):
        raw += value[pos:m.start()].encode("utf-8")
        raw.append(int(m.group(1), 16))
        pos = m.end()
    raw += value[pos:].encode("utf-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise XRegistryError("header_error", subject, name=name,
                             detail="the percent-encoded bytes are not UTF-8") from None


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


def attribute_headers(view: dict[str, Any], rdef: ResourceDef) -> list[tuple[str, str]]:
    """``xRegistry-*`` headers of an entity view: top-level scalars and maps of scalars, never
    the document attributes; ``contenttype`` becomes ``Content-Type`` (set by the caller)."""
    skip = {rdef.singular, f"{rdef.singular}base64", "contenttype"}
    out: list[tuple[str, str]] = []
    for name, value in view.items():
        if name in skip:
            continue
        if isinstance(value, dict):
            texts = {k: t for k, v in value.items() if (t := _text(v)) is not None}
            if value and len(texts) == len(value):  # only maps of scalars become headers
                out += [(f"xRegistry-{name}.{k}", encode_value(t)) for k, t in texts.items()
                        if _TOKEN.fullmatch(f"{name}.{k}")]
            continue
        text = _text(value)
        if text is not None and _TOKEN.fullmatch(name):
            out.append((f"xRegistry-{name}", encode_value(text)))
    return out


def document_response(view: dict[str, Any], rdef: ResourceDef, rid: str, *, status: int = 200,
                      headers: dict[str, str] | None = None) -> Response:
    """The document view of a rendered resource or version (its document attributes inlined)."""
    s = rdef.singular
    out = attribute_headers(view, rdef) + [("Content-Disposition", rid)]
    out += list((headers or {}).items())
    link = view.get(f"{s}uri") or view.get(f"{s}url")
    content_type = view.get("contenttype")
    if not isinstance(content_type, str) or not _PRINTABLE.fullmatch(content_type):
        content_type = None
    body = b""
    if link:
        if status == 200:
            status = 303
            out.append(("Location", quote(str(link), safe=_URL_SAFE)))
    elif s in view:
        body = document_bytes(view[s], content_type)
        content_type = content_type or ("application/json" if not isinstance(view[s],
                                                                             str) else "text/plain; charset=utf-8")
    elif view.get(f"{s}base64"):
        body = _unbase64(str(view[f"{s}base64"]))
        content_type = content_type or "application/octet-stream"
    response = Response(body, status_code=status, media_type=content_type if body or content_type else None)
    for name, value in out:
        response.headers.append(name, value)
    return response


def _unbase64(text: str) -> bytes:
    """The bytes of a stored ``<RESOURCE>base64`` (its text itself if it is not base64)."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        return text.encode("utf-8")


def _convert(name: str, text: str, type_: str, subject: str) -> Any:
    if text == "null":
        return None
    try:
        if type_ in ("integer", "uinteger"):
            return int(text)
        if type_ == "decimal":
            return float(text)
    except ValueError:
        raise XRegistryError("header_error", subject, name=f"xRegistry-{name}",
                             detail=f"{text!r} is not a number") from None
    if type_ == "boolean":
        if text not in ("true", "false"):
            raise XRegistryError("header_error", subject, name=f"xRegistry-{name}", detail="expected true or false")
        return text == "true"
    return text


def header_attributes(
    headers: Iterable[tuple[str, str]], model: RegistryModel, gtype: str, rtype: str, subject: str,
) -> dict[str, Any]:
    """Version attributes from the ``xRegistry-*`` headers of a document write."""
    rdef = model.resource_def(gtype, rtype)
    defs = entity_definitions("version", model=model, group_type=gtype, resource_type=rtype)
    attrs: dict[str, Any] = {}
    seen: set[str] = set()
    for raw_name, raw_value in headers:
        name = raw_name.lower()
        if not name.startswith(PREFIX):
            continue
        attr = name[len(PREFIX):]
        if attr in seen:
            raise XRegistryError("header_error", subject, name=raw_name, detail="the header is given more than once")
        seen.add(attr)
        if attr in (rdef.singular, f"{rdef.singular}base64", "contenttype"):
            raise XRegistryError("extra_xregistry_header", subject, name=raw_name,
                                 detail="the document is the body and its media type is Content-Type")
        top, dot, key = attr.partition(".")
        text = decode_value(raw_name, raw_value, subject)
        if top in READ_ONLY or not top:
            continue
        if dot:
            current = attrs.setdefault(top, {})
            if not isinstance(current, dict):
                raise XRegistryError("header_error", subject, name=raw_name,
                                     detail=f"{top} is given as a value and as a map")
            if text != "null":
                current[key] = text
            continue
        if top in attrs:
            raise XRegistryError("header_error", subject, name=raw_name,
                                 detail=f"{top} is given as a value and as a map")
        definition = defs.get(top)
        attrs[top] = _convert(top, text, definition.type if definition else "string", subject)
    return attrs


def has_attribute_headers(headers: Iterable[tuple[str, str]]) -> str | None:
    """The first ``xRegistry-*`` header, if any (they are refused with JSON metadata bodies)."""
    return next((name for name, _ in headers if name.lower().startswith(PREFIX)), None)
