"""``GET /events``: the registry's event log over HTTP, for pollers (the Spark streaming reader,
federating gateways). See docs/events.md.

Parameters (query string):

``after``    the position (``<revision>.<index>``) of the last event already handled; absent: from
             the oldest event retained
``limit``    events per answer (default :data:`DEFAULT_LIMIT`, at most :data:`MAX_LIMIT`)
``type``     only events of these types (``io.xregistry.group.created``; repeated or
             comma-separated: any of them)
``subject``  only events about this XID; ``…/*`` (or a trailing ``/``) everything below it

The answer is ``application/cloudevents-batch+json``: a JSON array of structured CloudEvents in
position order, each with the extension attribute ``xregposition``, and a ``Link: <…>;
rel="next"`` header that continues after the last event of the page (or, on an empty page, asks
again from the same place: an empty page means the reader is up to date), and the registry's
instance id in ``X-Registry-Instance`` (positions are those of that instance: a reader that
kept a position checks it before continuing). Events older than the
retained history answer ``events_gone`` (410): read again without ``after``. Reads need the
``read`` scope, like the API's; errors are the API's problem documents. A top-level route, beside
``/bulk/rows``, so it never shadows a collection a custom model names. The OpenAPI document of
the API (``GET /registry/openapi.json``) describes it (:mod:`gateway.http_api.event_log_openapi`,
where its limits are defined).
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.admission import EVENTS_PATH
from gateway.auth import Authenticator, AuthError, principal_of
from gateway.http_api.event_log_openapi import BATCH_MEDIA_TYPE, DEFAULT_LIMIT, MAX_LIMIT, MAX_SUBJECT_LENGTH
from gateway.http_api.responses import json_response, problem_response
from gateway.http_api.routes import INSTANCE_HEADER
from gateway.request_context import current_request_id, new_request_id
from xreg.errors import XRegistryError
from xreg.events.record import ACTIONS, ENTITIES, POSITION_ATTRIBUTE, TYPE_PREFIX, EventPosition
from xreg.registry.service import LocalRegistry
from xreg.storage.errors import EventsGone


def _bad(detail: str, name: str) -> XRegistryError:
    return XRegistryError("bad_request", EVENTS_PATH, path=name, detail=detail)


def events_gone(exc: EventsGone) -> XRegistryError:
    """The client error of a read after a pruned position (``events_gone``, 410)."""
    return XRegistryError("events_gone", EVENTS_PATH, position=str(exc.after), horizon=str(exc.horizon),
                          detail="read again without 'after' (from the oldest event retained)")


def parse_types(values: list[str]) -> tuple[str, ...]:
    """The ``type`` filter: full event type names, each checked against core/events.md."""
    out: list[str] = []
    for value in values:
        for name in (v.strip() for v in value.split(",")):
            if not name:
                continue
            parts = name.removeprefix(TYPE_PREFIX).split(".") if name.startswith(TYPE_PREFIX) else []
            if len(parts) != 2 or parts[0] not in ENTITIES or parts[1] not in ACTIONS:
                raise _bad(f"type must be io.xregistry.<entity>.<action> (entity: {', '.join(ENTITIES)}; "
                           f"action: {', '.join(ACTIONS)}), not {name!r}", "type")
            out.append(name)
    return tuple(dict.fromkeys(out))


async def read_events(request: Request, registry: LocalRegistry) -> Response:
    """The answer to one ``GET /events`` over ``registry``'s event log (errors raised)."""
    params = request.query_params
    after_text = params.get("after")
    after = EventPosition.parse(after_text) if after_text else None
    limit_text = params.get("limit")
    try:
        limit = int(limit_text) if limit_text else DEFAULT_LIMIT
    except ValueError:
        raise _bad(f"limit must be an integer, not {limit_text!r}", "limit") from None
    if not 1 <= limit <= MAX_LIMIT:
        raise _bad(f"limit must be between 1 and {MAX_LIMIT}, not {limit}", "limit")
    types = parse_types(params.getlist("type"))
    subject = params.get("subject") or None
    if subject is not None and (len(subject) > MAX_SUBJECT_LENGTH or not subject.startswith(("/", "*"))):
        raise _bad("subject must be an XID (starting with '/'), optionally ending in '*'", "subject")
    try:
        events = await registry.store.events_after(after, limit=limit, types=types, subject=subject)
    except EventsGone as exc:
        raise events_gone(exc) from None
    source = registry.base_url
    body = []
    for event in events:
        ce = event.to_cloudevent(source)
        ce[POSITION_ATTRIBUTE] = str(event.position)
        body.append(ce)
    following = events[-1].position if events else after
    query: list[tuple[str, str]] = [("after", str(following))] if following is not None else []
    query += [("limit", str(limit)), *(("type", t) for t in types)]
    if subject is not None:
        query.append(("subject", subject))
    link = str(request.url.replace(query=urlencode(query)))
    return Response(json.dumps(body, ensure_ascii=False, separators=(",", ":")), media_type=BATCH_MEDIA_TYPE,
                    headers={"Link": f'<{link}>; rel="next"', "Cache-Control": "no-store",
                             INSTANCE_HEADER: registry.instance_id})


def build_routes(registry: LocalRegistry, auth: Authenticator) -> list[Route]:
    """The route of ``registry``'s event log, for the callers ``auth`` lets read."""

    async def events_endpoint(request: Request) -> Response:
        """``GET /events`` (see the module documentation)."""
        request_id = current_request_id() or new_request_id()
        try:
            auth.require(await principal_of(request, auth), "read")
            return await read_events(request, registry)
        except AuthError as err:
            problem = err.to_problem(EVENTS_PATH)
            problem["instance"] = request_id
            return json_response(problem, err.status, err.headers())
        except XRegistryError as err:
            return problem_response(err, request_id)

    return [Route(EVENTS_PATH, events_endpoint, methods=["GET"])]
