"""``GET /events`` (the registry's event log, :mod:`gateway.event_log`) in the OpenAPI document of
the HTTP API (:mod:`gateway.http_api.openapi`): its query parameters, its answer (a CloudEvents
JSON batch with ``Link`` and ``X-Registry-Instance`` headers) and its refusals. The route is
served at the root, beside ``/bulk/rows``, not below the API prefix: the path item names its own
server (``/``). The limits the route applies are defined here, so the description and the route
share them. Its size does not depend on the model."""

from __future__ import annotations

from typing import Any

from xreg.events.record import ACTIONS, ENTITIES, POSITION_ATTRIBUTE, TYPE_PREFIX

#: The media type of the answer (CloudEvents JSON batch format).
BATCH_MEDIA_TYPE = "application/cloudevents-batch+json"
#: Events per answer when ``limit`` is absent, and the most one answer holds.
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
#: The longest ``subject`` accepted (an XID is far shorter).
MAX_SUBJECT_LENGTH = 2048
#: The response header naming the registry instance whose positions the answer gives
#: (``gateway.http_api.routes.INSTANCE_HEADER``, which imports this module's importer).
_INSTANCE = "X-Registry-Instance"

_POSITION = r"^(0|[1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,8})$"
_TYPE = (rf"^{TYPE_PREFIX.replace('.', chr(92) + '.')}({'|'.join(ENTITIES)})\.({'|'.join(ACTIONS)})"
         rf"(,{TYPE_PREFIX.replace('.', chr(92) + '.')}({'|'.join(ENTITIES)})\.({'|'.join(ACTIONS)}))*$")


def _query(name: str, description: str, schema: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema, **more}


def event_schema() -> dict[str, Any]:
    """One event of the answer: a structured CloudEvent (core/events.md) with ``xregposition``."""
    text = {"type": "string"}
    return {
        "type": "object",
        "required": ["specversion", "id", "source", "type", "subject", "time", "xregcorrelationid",
                     POSITION_ATTRIBUTE],
        "properties": {
            "specversion": {"const": "1.0"}, "id": text, "source": text,
            "type": {"type": "string", "pattern": _TYPE},
            "subject": {"type": "string", "description": "The XID of the entity the event is about."},
            "time": {"type": "string", "format": "date-time"},
            "xregcorrelationid": {"type": "string", "description": "The interaction that caused the event."},
            POSITION_ATTRIBUTE: {"type": "string", "pattern": _POSITION,
                                 "description": "Where the event is in the log: pass it as `after` to continue."},
            "datacontenttype": {"const": "application/json"},
            "data": {"type": "object", "properties": {"changed": {"type": "array", "items": text}}},
        },
    }


def events_path_item() -> dict[str, Any]:
    """The OpenAPI path item of ``GET /events`` (its schemas and responses inline or among the
    document's shared ``Problem`` / ``Busy`` components)."""
    parameters = [
        _query("after", "The position (`<revision>.<index>`) of the last event already handled; absent: from the "
                        "oldest event retained.", {"type": "string", "pattern": _POSITION}),
        _query("limit", f"Events per answer (default {DEFAULT_LIMIT}).",
               {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}),
        _query("type", "Only events of these types: repeated or comma-separated, any of them.",
               {"type": "array", "items": {"type": "string", "pattern": _TYPE}}, style="form", explode=True),
        _query("subject", "Only events about this XID; ending in `*` (or `/`): everything below it.",
               {"type": "string", "pattern": "^[/*]", "maxLength": MAX_SUBJECT_LENGTH}),
    ]
    problem = {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    return {
        "servers": [{"url": "/"}],
        "get": {
            "summary": "The registry's event log, oldest first (read scope)",
            "description": "Structured CloudEvents in position order. Continue with the `Link: <…>; rel=\"next\"` "
                           "URL (an empty page: the reader is up to date; ask again later). Positions are those "
                           f"of the registry instance named by `{_INSTANCE}`. Events older than the "
                           "retained history answer `events_gone` (410): read again without `after`.",
            "operationId": "readEvents",
            "parameters": parameters,
            "responses": {
                "200": {
                    "description": "A CloudEvents JSON batch (possibly empty).",
                    "headers": {
                        "Link": {"description": "`<URL>; rel=\"next\"`: where the next read continues.",
                                 "required": True, "schema": {"type": "string"}},
                        _INSTANCE: {"description": "The registry instance whose positions these are.",
                                          "required": True, "schema": {"type": "string"}},
                    },
                    "content": {BATCH_MEDIA_TYPE: {"schema": {"type": "array", "maxItems": MAX_LIMIT,
                                                              "items": event_schema()}}},
                },
                "400": {"description": "A bad parameter (`bad_request`).", "content": problem},
                "410": {"description": "The events after `after` were pruned (`events_gone`).", "content": problem},
                "4XX": {"description": "Problem (`unauthorized`, `forbidden`, `too_many_requests`…)",
                        "content": problem},
                "503": {"$ref": "#/components/responses/Busy"},
            },
        },
    }
