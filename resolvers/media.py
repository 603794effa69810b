"""The media types of GraphQL responses (GraphQL over HTTP): which one a request's ``Accept`` picks.

``application/graphql-response+json`` (the specification's own: its status codes tell request
errors from field errors) and ``application/json`` (legacy clients: 200 for every well-formed
request). No ``Accept``, ``*/*`` and ``application/*`` get ``application/json``; when both are
acceptable the higher ``q`` wins, ``application/graphql-response+json`` on a tie. ``None`` when
the header allows neither (406).
"""

from __future__ import annotations

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"


def content_type(media: str) -> str:
    """The ``Content-Type`` of a response in ``media``."""
    return f"{media}; charset=utf-8"


def _q(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return max(0.0, min(1.0, float(value.strip())))
            except ValueError:
                return 0.0
    return 1.0


def negotiate(accept: str | None) -> str | None:
    """The response media type for an ``Accept`` header value (see the module documentation)."""
    if accept is None or not accept.strip():
        return JSON
    ranges: dict[str, float] = {}
    for item in accept.split(","):
        media, *params = item.split(";")
        media = media.strip().lower()
        if media:
            ranges[media] = max(ranges.get(media, 0.0), _q(params))
    # the most specific range that matches decides (RFC 9110 12.5.1); wildcards mean JSON
    json_q = next((ranges[m] for m in (JSON, "application/*", "*/*") if m in ranges), 0.0)
    graphql_q = ranges.get(GRAPHQL_RESPONSE, 0.0)
    if max(json_q, graphql_q) <= 0:
        return None
    return GRAPHQL_RESPONSE if graphql_q >= json_q else JSON
