"""Request bodies: read with a size cap, then parsed as the JSON the API takes.

The body is streamed and refused (``payload_too_large``, 413) as soon as it passes
``max_body_bytes``, before any parsing. Entity bodies must be ``application/json`` (a
``charset`` parameter, UTF-8, is allowed): anything else is ``unsupported_media_type`` (415);
empty bodies where metadata is expected are ``missing_body``; malformed JSON is
``parsing_data``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request

from xreg import json_limits
from xreg.errors import XRegistryError


async def read_body(request: Request, limit: int, subject: str) -> bytes:
    """The raw body, at most ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise XRegistryError("payload_too_large", subject, limit=limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise XRegistryError("payload_too_large", subject, limit=limit)
            chunks.append(chunk)
    except ClientDisconnect as exc:
        raise XRegistryError("bad_request", subject, detail="the client closed the connection mid-body") from exc
    return b"".join(chunks)


def check_json_media_type(content_type: str | None, subject: str) -> None:
    """Refuse a body that is not declared as ``application/json`` (UTF-8)."""
    media, _, params = (content_type or "").partition(";")
    media = media.strip().lower()
    if media != "application/json":
        raise XRegistryError("unsupported_media_type", subject, media_type=media or "none",
                             detail="send the xRegistry metadata as Content-Type: application/json")
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise XRegistryError("unsupported_media_type", subject, media_type=content_type,
                                 detail="JSON bodies must be UTF-8")


def parse_json(raw: bytes, content_type: str | None, subject: str) -> Any:
    """The JSON value of a body; an empty body is ``missing_body``."""
    if not raw.strip():
        raise XRegistryError("missing_body", subject)
    check_json_media_type(content_type, subject)
    try:
        return json_limits.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        detail = "the body is not UTF-8" if isinstance(exc, UnicodeDecodeError) else (
            str(exc) if isinstance(exc, json_limits.JSONLimitError) else f"malformed JSON: {exc}")
        raise XRegistryError("parsing_data", subject, detail=detail) from None


def json_object(value: Any, subject: str, what: str = "the body") -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``bad_request``."""
    if not isinstance(value, dict):
        raise XRegistryError("bad_request", subject, detail=f"{what} must be a JSON object")
    return value
