"""A version's document as attributes: raw bytes as ``<RESOURCE>`` (JSON) or ``<RESOURCE>base64``,
or a link (``<RESOURCE>url``, older ``<RESOURCE>uri``), one of them at a time. Writing one is
:func:`~xreg.registry.write_steps.resources.put_document`; its format and compatibility checks
are :func:`~xreg.registry.write_steps.checks.check_documents`."""

from __future__ import annotations

import base64
from typing import Any

from xreg import json_limits
from xreg.errors import XRegistryError
from xreg.model.registry_model import ResourceDef


def check_one_document(request: dict[str, Any], rdef: ResourceDef, subject: str) -> None:
    """``one_resource`` when a request gives a version's document in more than one way."""
    if not rdef.hasdocument:
        return
    present = [n for n in (rdef.singular, f"{rdef.singular}base64", f"{rdef.singular}uri", f"{rdef.singular}url")
               if n in request and request[n] is not None]
    if len(present) > 1:
        raise XRegistryError("one_resource", subject, list=", ".join(present),
                             detail=f"only one of {', '.join(present)} may be given")


def alias_document_link(request: dict[str, Any], rdef: ResourceDef) -> None:
    """``<RESOURCE>uri`` (the name older registries used) is taken as ``<RESOURCE>url``, the
    1.0-rc4 name, which is what is stored and served."""
    url, uri = f"{rdef.singular}url", f"{rdef.singular}uri"
    if rdef.hasdocument and uri in request and url not in request:
        request[url] = request.pop(uri)


def upgrade_document_link(doc: dict[str, Any], singular: str) -> None:
    """A version state stored by an older gateway keeps its external document's link as
    ``<RESOURCE>uri``: rename it to ``<RESOURCE>url`` (in place)."""
    uri, url = f"{singular}uri", f"{singular}url"
    if uri in doc and url not in doc:
        doc[url] = doc.pop(uri)


JSON_MEDIA_TYPES = ("application/json", "text/json")


def is_json_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` names JSON (``application/json``, ``…+json``, ``text/json``)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media in JSON_MEDIA_TYPES or media.endswith("+json")


def document_attributes(
    rdef: ResourceDef, content: bytes, content_type: str | None, attrs: dict[str, Any], *, subject: str,
) -> dict[str, Any]:
    """The version attributes that hold a raw document: ``<RESOURCE>`` for JSON content,
    ``<RESOURCE>base64`` otherwise (empty content: an empty document), and ``contenttype``.
    With a link (``<RESOURCE>uri`` / ``url``) in ``attrs`` the content must be empty."""
    s = rdef.singular
    out: dict[str, Any] = {"contenttype": content_type}
    if attrs.get(f"{s}uri") is not None or attrs.get(f"{s}url") is not None:
        if content:
            raise XRegistryError("bad_request", subject,
                                 detail=f"the body must be empty when {s}url links the document")
        return out
    if content and (content_type is None or is_json_media_type(content_type)):
        try:  # kept as JSON within the depth of attribute values: the export shows it as one
            out[s] = json_limits.loads(content.decode("utf-8"), max_depth=json_limits.MAX_VALUE_DEPTH)
            return out
        except (UnicodeDecodeError, ValueError):  # kept as bytes (the format check judges them)
            pass
    out[f"{s}base64"] = base64.b64encode(content).decode("ascii")
    return out


def drop_other_documents(user: dict[str, Any], request: dict[str, Any], rdef: ResourceDef) -> None:
    """A document given one way replaces the stored one given another way (in ``user``)."""
    names = [rdef.singular, f"{rdef.singular}base64", f"{rdef.singular}uri", f"{rdef.singular}url"]
    given = [n for n in names if n in request]
    if given:
        for n in names:
            if n not in given:
                user.pop(n, None)
