"""Bulk reads for the Spark connector: ``GET /bulk/rows``, the rows of one entity type of one
registry at a pinned revision, as an Arrow IPC stream in the connector's schema.

The ``xregistry`` Spark data source reads whole snapshots. Through GraphQL every row costs
per-field execution, a JSON answer and, in the Spark worker, JSON decoding and per-row Python;
here the gateway builds the rows' columns once and sends them as Arrow record batches, which the
data source hands to Spark as they are. The data path is the GraphQL one: the request's snapshot
of the federation (local, remote and document registries alike), one
:meth:`~adapters.base.RegistrySource.list` keyset page, the views completed with their collection
counts (``json``) and messages materialised across registries (``effective``) by the request's
:class:`~adapters.request.Materialiser`, the one GraphQL's loaders use. Every column holds what
the GraphQL path gives it; columns are gathered with one lookup per row and converted whole
(:mod:`gateway.bulk_columns`).

Parameters (query string):

``registry`` (required)  the registry's id
``entity`` (required)    ``endpoints``, ``messagegroups``, ``messages``, ``schemagroups``,
                         ``schemas`` or ``schemaversions`` (the connector's entity types)
``asOf`` (required)      the pinned revision (a remote registry: a live snapshot number)
``instanceId``           refused with ``instance_mismatch`` (409) unless the registry is that instance
``after``, ``before``    bounds (exclusive) on the rows' lower-cased XIDs: a key range
``filter``               xRegistry filter expressions (repeatable, OR'd; core/http.md), on the rows'
                         attributes as the GraphQL path's ``filter: {raw: …}`` reads them (a
                         message's materialised ones): the rows of the range that match
``limit``                rows per response (default :data:`DEFAULT_LIMIT`, at most :data:`MAX_LIMIT`)
``since``                a change feed instead: the entities written after revision ``since`` up to
                         ``asOf`` (``change`` column in front: ``upserted``, or ``deleted`` with
                         only the row's ids and revision), the first ``limit`` after ``after`` in
                         XID order; a full page names the next ``after`` in ``X-Registry-Bulk-After``
                         (``filter`` and ``before`` are refused with it)

The answer (``application/vnd.apache.arrow.stream``) holds the *last* ``limit`` rows of the
range, in XID order; when it is full it carries ``X-Registry-Bulk-Before``, the ``before`` of the
next request (the rows preceding these; an empty answer ends the range). Reads need the ``read`` scope, like
GraphQL's; errors are the xRegistry API's problem documents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.base import Entity, Listing, RegistrySource
from adapters.batching import EntityBatcher
from adapters.caller import Caller
from adapters.request import Materialiser, RequestSources, Served
from gateway.admission import BULK_PREFIX
from gateway.auth import Authenticator, AuthError, principal_of
from gateway.bulk_columns import column, dumps, json_texts
from gateway.http_api.responses import json_response, problem_response
from gateway.request_context import current_request_id, new_request_id
from xreg.errors import XRegistryError
from xreg.registry.filters import parse_filters
from xreg.registry.reads import collection_tree
from xreg.storage.semantics import Cursor

#: The path of the bulk read.
ROWS_PATH = f"{BULK_PREFIX}/rows"
#: The media type of the answer.
ARROW_STREAM = "application/vnd.apache.arrow.stream"
#: The response header naming the ``before`` of the next page (absent on the last one). Not in
#: the ``xRegistry-`` namespace, which core/http.md keeps for entity attributes (the style of
#: ``X-Registry-Instance``).
NEXT_HEADER = "X-Registry-Bulk-Before"
#: The response header of a change feed naming the ``after`` of its next page.
NEXT_AFTER_HEADER = "X-Registry-Bulk-After"
#: The header naming the revision the rows were read at.
REVISION_HEADER = "X-Registry-Bulk-Revision"
DEFAULT_LIMIT = 5000
MAX_LIMIT = 20000

#: The entity types and their collection types (messages live in message groups and endpoints).
ENTITIES: dict[str, tuple[str, ...]] = {
    "endpoints": ("endpoints",),
    "messagegroups": ("messagegroups",),
    "messages": ("endpoints/messages", "messagegroups/messages"),
    "schemagroups": ("schemagroups",),
    "schemas": ("schemagroups/schemas",),
    "schemaversions": ("schemagroups/schemas/versions",),
}

STR, LONG, BOOL = pa.string(), pa.int64(), pa.bool_()
TS = pa.timestamp("us", tz="UTC")
STR_LIST = pa.list_(pa.field("element", STR))
LABELS = pa.map_(pa.field("key", STR, nullable=False), pa.field("value", STR))

HEAD = [pa.field("registry", STR, False), pa.field("xid", STR, False), pa.field("group", STR, False),
        pa.field("id", STR, False), pa.field("epoch", LONG), pa.field("revision", LONG), pa.field("name", STR),
        pa.field("description", STR), pa.field("documentation", STR), pa.field("labels", LABELS),
        pa.field("createdat", TS), pa.field("modifiedat", TS)]

#: The typed columns of each entity type, between the common ones and ``entity`` (the connector's
#: fixed schema, ``pyspark_xregistry.schemas``, as Arrow types).
DOMAIN: dict[str, list[pa.Field]] = {
    "endpoints": [pa.field("usage", STR_LIST), pa.field("protocol", STR), pa.field("envelope", STR),
                  pa.field("channel", STR), pa.field("messagegroups", STR_LIST), pa.field("deployed", BOOL),
                  pa.field("endpointurls", STR_LIST)],
    "messagegroups": [pa.field("protocol", STR), pa.field("envelope", STR), pa.field("messagescount", LONG)],
    "messages": [pa.field("grouptype", STR, False), pa.field("versionid", STR), pa.field("protocol", STR),
                 pa.field("envelope", STR), pa.field("dataschemaformat", STR), pa.field("dataschemauri", STR),
                 pa.field("dataschemaxid", STR), pa.field("datacontenttype", STR), pa.field("basemessageuri", STR),
                 pa.field("versionscount", LONG)],
    "schemagroups": [pa.field("format", STR), pa.field("schemascount", LONG)],
    "schemas": [pa.field("versionid", STR), pa.field("format", STR), pa.field("contenttype", STR),
                pa.field("versionscount", LONG)],
    "schemaversions": [pa.field("schemaid", STR, False), pa.field("versionid", STR), pa.field("isdefault", BOOL),
                       pa.field("format", STR), pa.field("contenttype", STR), pa.field("ancestor", STR),
                       pa.field("schemauri", STR), pa.field("schema", STR)],
}


#: The column a change feed adds in front.
CHANGE = pa.field("change", STR, False)


def arrow_schema(entity: str, *, changes: bool = False) -> pa.Schema:
    """The Arrow schema of the rows of ``entity`` (of its change feed: ``changes``)."""
    return pa.schema([*([CHANGE] if changes else []), *HEAD, *DOMAIN[entity], pa.field("entity", STR)])


# -- values, converted as the connector's GraphQL path converts them ----------------------------

def _text(value: Any) -> Any:
    return value if value is None or type(value) is str else dumps(value)


def _integer(value: Any) -> Any:
    if value is None or type(value) is int:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _boolean(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware UTC datetime (``None`` when absent or unparseable)."""
    if value is None:
        return None
    try:
        text = str(value).strip().replace("z", "Z")
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def _text_list(value: Any) -> Any:
    return None if value is None else [_text(x) for x in (value if isinstance(value, list) else [value])]


def _labels(value: Any) -> Any:
    return [(_text(k), _text(x)) for k, x in value.items()] if isinstance(value, dict) else None


CONVERT: dict[pa.DataType, Callable[[Any], Any]] = {STR: _text, LONG: _integer, BOOL: _boolean, TS: _timestamp,
                                                    STR_LIST: _text_list, LABELS: _labels}


def _protocol_options(e: dict[str, Any]) -> dict[str, Any]:
    opts = e.get("protocoloptions")
    return opts if isinstance(opts, dict) else {}


def _endpoint_urls(e: dict[str, Any]) -> list[Any] | None:
    eps = _protocol_options(e).get("endpoints")
    if not isinstance(eps, list):
        return None
    return [x.get("uri") if isinstance(x, dict) else x for x in eps]


def _schema_text(e: dict[str, Any]) -> str | None:
    value = e.get("schema")
    return value if value is None or isinstance(value, str) else dumps(value)


#: Columns that are not plain top-level attributes.
DERIVED: dict[str, Callable[[dict[str, Any]], Any]] = {
    "deployed": lambda e: _protocol_options(e).get("deployed"),
    "endpointurls": _endpoint_urls,
    "schema": _schema_text,
    "ancestor": lambda e: e.get("ancestorid", e.get("ancestor")),
    "schemauri": lambda e: e.get("schemaurl", e.get("schemauri")),  # served as rc4's schemaurl
}


def _is_link(key: str, view: dict[str, Any]) -> bool:
    """``<COLLECTION>count`` / ``<COLLECTION>url`` pairs of a view (taken from the full view,
    never from a materialisation)."""
    for suffix, other in (("count", "url"), ("url", "count")):
        if key.endswith(suffix):
            stem = key[: -len(suffix)]
            if stem == "meta" or stem + other in view:
                return True
    return False


class RowBuilder:
    """Rows of one entity type as Arrow record batches."""

    def __init__(self, entity: str) -> None:
        self.entity = entity
        self.schema = arrow_schema(entity)
        names = [f.name for f in self.schema]
        self._attributes = [(f.name, DERIVED.get(f.name), CONVERT[f.type]) for f in self.schema
                            if f.name not in ("registry", "xid", "group", "id", "revision", "grouptype", "schemaid",
                                              "entity")]
        self._names = names
        #: Columns that may be a view's collection count (a link, never materialised).
        self._counts = frozenset(n for n in names if n.endswith("count"))

    def batch(self, rows: Sequence[tuple[Entity, dict[str, Any], int]]) -> pa.RecordBatch:
        """One batch: per row its entity (materialised), its full view and its revision.

        Built column by column: each attribute's values are gathered in one pass and converted
        as a whole (:func:`gateway.bulk_columns.column`).
        """
        entities = [row[0] for row in rows]
        views = [row[1] for row in rows]
        xids = [view.get("xid") or entity.xid for entity, view, _ in rows]
        parts = [xid.strip("/").split("/") for xid in xids]
        columns: dict[str, Any] = {
            "registry": [entity.registry for entity in entities], "xid": xids,
            "group": [p[1] for p in parts], "id": [p[-1] for p in parts],
            "revision": [row[2] for row in rows]}
        if self.entity == "messages":
            columns["grouptype"] = [p[0] for p in parts]
        elif self.entity == "schemaversions":
            columns["schemaid"] = [p[3] if len(p) >= 4 else None for p in parts]
        # a message's attributes are materialised, but for the collection counts of its full view
        materialised = [entity.materialised for entity in entities]
        shown = views if materialised.count(None) == len(materialised) else [
            view if m is None else m.attributes for view, m in zip(views, materialised, strict=True)]
        arrays = {}
        for name, derive, convert in self._attributes:
            if derive is not None:
                values = list(map(derive, shown))
            elif shown is views:
                values = [view.get(name) for view in views]
            elif name in self._counts:
                values = [s.get(name) if s is view or not _is_link(name, entity.view) else view.get(name)
                          for entity, view, s in zip(entities, views, shown, strict=True)]
            else:
                values = [s.get(name) for s in shown]
            arrays[name] = column(values, self.schema.field(name).type, convert)
        arrays["entity"] = json_texts(views)
        return pa.RecordBatch.from_arrays(
            [arrays[f.name] if f.name in arrays else pa.array(columns[f.name], type=f.type) for f in self.schema],
            schema=self.schema)


    def changes(self, rows: Sequence[tuple[Entity, dict[str, Any], int]],
                deleted: Sequence[tuple[str, str, int]]) -> pa.RecordBatch:
        """A change feed's batch: the ``rows`` upserted (as :meth:`batch`), then the entities
        ``deleted`` (registry, XID, revision) with their ids alone."""
        live = self.batch(rows)
        parts = [xid.strip("/").split("/") for _, xid, _ in deleted]
        keys: dict[str, list[Any]] = {
            "registry": [d[0] for d in deleted], "xid": [d[1] for d in deleted], "group": [p[1] for p in parts],
            "id": [p[-1] for p in parts], "revision": [d[2] for d in deleted], "grouptype": [p[0] for p in parts],
            "schemaid": [p[3] if len(p) >= 4 else None for p in parts]}
        gone = pa.RecordBatch.from_arrays(
            [pa.array(keys[f.name], type=f.type) if f.name in keys else pa.nulls(len(deleted), f.type)
             for f in self.schema], schema=self.schema)
        both = pa.Table.from_batches([live, gone]).combine_chunks()
        change = pa.array(["upserted"] * live.num_rows + ["deleted"] * len(deleted), type=STR)
        return both.add_column(0, CHANGE, change).to_batches()[0] if both.num_rows else \
            pa.RecordBatch.from_pylist([], schema=arrow_schema(self.entity, changes=True))


def ipc_stream(batch: pa.RecordBatch) -> bytes:
    """``batch`` as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


# -- the endpoint ---------------------------------------------------------------------------------

def _bad(detail: str) -> XRegistryError:
    return XRegistryError("bad_request", ROWS_PATH, detail=detail)


def _int(params: Any, name: str, default: int | None) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise _bad(f"{name} must be an integer, not {value!r}") from None


async def read_rows(request: Request, served: Served) -> tuple[bytes, dict[str, str]]:
    """The rows a request asks for from the registries ``served``, as an Arrow IPC stream, and
    the response's headers."""
    params = request.query_params
    registry, entity = params.get("registry"), params.get("entity", "")
    if not registry:
        raise _bad("registry is required: the id of the registry to read")
    if entity not in ENTITIES:
        raise _bad(f"entity must be one of {', '.join(ENTITIES)}, not {entity!r}")
    as_of = _int(params, "asOf", None)
    if as_of is None:
        raise _bad("asOf is required: the revision every page of the read is pinned to")
    limit = _int(params, "limit", DEFAULT_LIMIT)
    if limit is None or not 1 <= limit <= MAX_LIMIT:
        raise _bad(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    reads = RequestSources(served, Caller(request.headers.get("authorization")))
    sources = reads.sources
    source: RegistrySource | None = sources.get(registry)
    if source is None:
        raise XRegistryError("not_found", ROWS_PATH, detail=f"no registry {registry!r} here (registries: "
                                                            f"{', '.join(sources)})")
    instance = params.get("instanceId")
    if instance:
        source.check_instance(instance)
    await source.check_revision(as_of)
    ctypes = tuple(c for c in ENTITIES[entity] if _in_model(source, c))
    after, before = params.get("after"), params.get("before")
    raw = params.getlist("filter")
    builder = RowBuilder(entity)
    headers = {REVISION_HEADER: str(as_of)}
    since = _int(params, "since", None)
    if since is not None:
        if raw or before:
            raise _bad("filter and before do not apply to a change feed (since): it pages by after alone")
        body, next_after = await _changes(reads, source, builder, ctypes, since, as_of, limit, after)
        return body, headers | ({NEXT_AFTER_HEADER: next_after} if next_after else {})
    filters = parse_filters(raw, subject=ROWS_PATH, collections=collection_tree(source.model, ctypes[0])) \
        if raw and ctypes else None
    # the last rows of the range (keyset pages read backwards: a source's page between two cursors)
    listing = Listing(ctypes, filters=filters, limit=limit, as_of=as_of, backward=True,
                      after=Cursor(after.lower()).encode() if after else None,
                      before=Cursor(before.lower()).encode() if before else None)
    if not ctypes:
        return ipc_stream(builder.batch([])), headers
    page = await source.list(listing)
    rows = await _rows(reads, source, page.items, as_of)
    body = await asyncio.to_thread(lambda: ipc_stream(builder.batch(rows)))
    if len(rows) >= limit:  # a full page: rows of the range may precede it
        headers[NEXT_HEADER] = rows[0][0].xid.lower()
    return body, headers


async def _rows(reads: RequestSources, source: RegistrySource, entities: list[Entity],
                as_of: int) -> list[tuple[Entity, dict[str, Any], int]]:
    """Per entity: itself (its messages materialised across registries), its full view and its
    revision (the pinned one where the registry has none)."""
    items = await Materialiser(EntityBatcher(reads.sources), lambda: reads.references).settle(entities)
    partial = [e for e in items if e.partial]
    full = dict(zip((id(e) for e in partial), await source.complete(partial), strict=True)) if partial else {}
    return [(e, full.get(id(e), e.view), as_of if e.revision is None else e.revision) for e in items]


async def _changes(reads: RequestSources, source: RegistrySource, builder: RowBuilder, ctypes: tuple[str, ...],
                   since: int, as_of: int, limit: int, after: str | None) -> tuple[bytes, str | None]:
    """One page of the change feed (see the module documentation) and the next page's ``after``."""
    if not ctypes:
        return ipc_stream(builder.changes([], [])), None
    items, more = await source.changes(since, until=as_of, ctypes=ctypes, limit=limit,
                                       after=Cursor(after.lower()).encode() if after else None)
    rows = await _rows(reads, source, [i.entity for i in items if i.entity is not None], as_of)
    deleted = [(source.id, i.xid, i.revision) for i in items if i.entity is None]
    body = await asyncio.to_thread(lambda: ipc_stream(builder.changes(rows, deleted)))
    return body, items[-1].xid.lower() if more and items else None


def _in_model(source: RegistrySource, ctype: str) -> bool:
    parts = ctype.split("/")
    gdef = source.model.group(parts[0])
    return gdef is not None and (len(parts) == 1 or parts[1] in gdef.resources)


def build_routes(served: Served, auth: Authenticator) -> list[Route]:
    """The bulk read's route, over the registries ``served``, for callers ``auth`` lets read."""

    async def rows_endpoint(request: Request) -> Response:
        """``GET /bulk/rows`` (see the module documentation)."""
        request_id = current_request_id() or new_request_id()
        try:
            auth.require(await principal_of(request, auth), "read")
            body, headers = await read_rows(request, served)
        except AuthError as err:
            problem = err.to_problem(ROWS_PATH)
            problem["instance"] = request_id
            return json_response(problem, err.status, err.headers())
        except XRegistryError as err:
            return problem_response(err, request_id)
        return Response(body, media_type=ARROW_STREAM, headers={**headers, "Cache-Control": "no-store"})

    return [Route(ROWS_PATH, rows_endpoint, methods=["GET"])]
