"""The gateway's bulk read (``GET /bulk/rows``): the rows of a snapshot as Arrow record batches.

The gateway builds every column of the data source's fixed schema and answers one key range of
rows (bounds on the lower-cased XIDs) per request, pinned to a revision and a registry instance,
as an Arrow IPC stream, its last rows first; the next page's ``before`` comes in the
``X-Registry-Bulk-Before`` header (``xRegistry-bulk-before`` from gateways before it moved out of
the namespace core/http.md keeps for entity attributes).
The batches go to Spark as they are: no per-row work in the Python worker.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import httpx
import pyarrow as pa

from pyspark_xregistry.client import RETRY_STATUSES, CheckpointMismatch, ClientConfig, GatewayError

#: The bulk read's path, relative to the GraphQL endpoint's folder.
ROWS_PATH = "bulk/rows"
NEXT_HEADER = "X-Registry-Bulk-Before"
#: The header naming the ``after`` of a change feed's next page.
NEXT_AFTER_HEADER = "X-Registry-Bulk-After"
#: The header's name on gateways of earlier releases.
LEGACY_NEXT_HEADER = "xRegistry-bulk-before"
#: Rows per request.
ROWS_PER_REQUEST = 5000
#: A key no XID reaches (XIDs are ASCII): ``<group key> + "/" + END`` follows every row of the
#: group and precedes every later group.
END = "\U0010ffff"

T = TypeVar("T")


def next_before(headers: httpx.Headers) -> str | None:
    """The ``before`` of the next page an answer names (``None``: the range is done)."""
    return headers.get(NEXT_HEADER, headers.get(LEGACY_NEXT_HEADER))


@dataclass(frozen=True)
class KeyRange:
    """The rows of one registry whose lower-cased XIDs lie strictly between ``after`` and
    ``before`` (``None``: unbounded), at the pinned ``revision`` of instance ``instance``."""

    registry: str
    revision: int
    instance: str | None
    after: str | None
    before: str | None
    weight: int
    #: xRegistry filter expressions (OR'd) the gateway narrows the rows with (``()``: every row).
    filters: tuple[str, ...] = ()


def key_ranges(
    registry: str, revision: int, instance: str | None, groups: Iterable[tuple[str, int]], rows: int,
) -> list[KeyRange]:
    """The whole key space of a registry cut into ranges of about ``rows`` rows, at group
    boundaries: ``groups`` are ``(XID, rows below or of it)`` of every group the read covers.
    The boundaries increase, so the ranges tile the key space: every row is in exactly one of
    them. (Groups are ordered by the keys of their children, ``<group key>/…``: group ``a``'s
    children sort after those of group ``a.b``, since ``/`` follows ``.``.)"""
    ordered = sorted((xid.lower() + "/", weight) for xid, weight in groups)
    out: list[KeyRange] = []
    after: str | None = None
    weight = 0
    for i, (prefix, children) in enumerate(ordered):
        weight += children
        if weight >= rows and i < len(ordered) - 1:
            boundary = prefix + END
            out.append(KeyRange(registry, revision, instance, after, boundary, weight))
            after, weight = boundary, 0
    out.append(KeyRange(registry, revision, instance, after, None, weight))
    return out


def group_ranges(
    registry: str, revision: int, instance: str | None, groups: Iterable[tuple[str, int]],
) -> list[KeyRange]:
    """One range per group of ``groups`` (``(XID, rows below it)``), holding its rows alone: the
    rows of some groups, not of those between them."""
    return [KeyRange(registry, revision, instance, xid.lower() + "/", xid.lower() + "/" + END, weight)
            for xid, weight in sorted(groups, key=lambda g: g[0].lower())]


def rows_url(graphql_url: str) -> str:
    """The bulk read's URL next to the GraphQL endpoint (``http://h/graphql`` → ``http://h/bulk/rows``)."""
    return str(httpx.URL(graphql_url).join(ROWS_PATH))


class BulkClient:
    """Reads key ranges from ``GET /bulk/rows`` (bearer token, timeout and retries as the
    GraphQL client's: connection errors, timeouts, 429 and 5xx, honouring ``Retry-After``)."""

    def __init__(self, config: ClientConfig, entity: str, *, page_rows: int = ROWS_PER_REQUEST) -> None:
        self.config = config
        self.entity = entity
        self.page_rows = page_rows
        self.url = rows_url(config.url)
        headers = {"accept": "application/vnd.apache.arrow.stream"}
        if config.token:
            headers["authorization"] = f"Bearer {config.token}"
        # a connection per request: a new connection goes to a gateway worker that is waiting for
        # work, where a kept one would stay with the worker that first accepted it
        self._http = httpx.Client(timeout=config.timeout, headers=headers,
                                  limits=httpx.Limits(max_keepalive_connections=0))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> BulkClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, r: KeyRange) -> list[pa.RecordBatch]:
        """Every row of ``r``, page by page (the gateway answers the last rows of a range first)."""
        out: list[pa.RecordBatch] = []
        before = r.before
        while True:
            params = [("registry", r.registry), ("entity", self.entity), ("asOf", str(r.revision)),
                      ("limit", str(self.page_rows))]
            params += [(k, v) for k, v in (("instanceId", r.instance), ("after", r.after), ("before", before))
                       if v is not None]
            params += [("filter", f) for f in r.filters]
            resp = self._get(params)
            with pa.ipc.open_stream(resp.content) as reader:
                out[:0] = [b for b in reader if b.num_rows]
            before = next_before(resp.headers)
            if before is None:
                return out

    def changes(self, registry: str, revision: int, since: int, instance: str | None) -> Iterator[pa.RecordBatch]:
        """The change feed of ``registry`` after revision ``since`` up to ``revision``, page by page
        (``change`` first; refused unless the registry is ``instance``, when given)."""
        after: str | None = None
        while True:
            params = [("registry", registry), ("entity", self.entity), ("asOf", str(revision)),
                      ("since", str(since)), ("limit", str(self.page_rows))]
            params += [(k, v) for k, v in (("instanceId", instance), ("after", after)) if v is not None]
            resp = self._get(params)
            with pa.ipc.open_stream(resp.content) as reader:
                if "change" not in reader.schema.names:  # a release before the bulk change feed: a snapshot
                    raise GatewayError(f"the gateway at {self.url} has no change feed on its bulk read "
                                       "(an earlier release); upgrade it to read sinceRevision")
                yield from (b for b in reader if b.num_rows)
            after = resp.headers.get(NEXT_AFTER_HEADER)
            if after is None:
                return

    def _get(self, params: list[tuple[str, str]]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                resp = self._http.get(self.url, params=tuple(params))
            except httpx.TransportError as exc:
                if attempt >= self.config.retries:
                    raise GatewayError(f"gateway unreachable at {self.url}: {exc}") from exc
                resp = None
            if resp is not None and (resp.status_code not in RETRY_STATUSES or attempt >= self.config.retries):
                if resp.status_code != 200:
                    raise _error(resp)
                return resp
            delay = self.config.backoff * (2 ** attempt)
            try:
                delay = max(delay, min(float(resp.headers.get("retry-after") or 0), 60.0)) if resp else delay
            except ValueError:
                pass
            time.sleep(delay)
            attempt += 1


def _error(resp: httpx.Response) -> GatewayError:
    """The error of a refused bulk read, from its problem document."""
    try:
        problem = resp.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        return GatewayError(f"gateway bulk read answered HTTP {resp.status_code}: {resp.text[:200]}")
    code = str(problem.get("type") or "").rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    detail = problem.get("detail") or problem.get("title") or resp.text[:200]
    error = CheckpointMismatch if code == "instance_mismatch" else GatewayError
    return error(f"gateway bulk read refused (HTTP {resp.status_code}): {detail} [{code}]", (code,) if code else ())


def ordered_parallel(items: Iterable[T], work: Callable[[T], list[pa.RecordBatch]], workers: int = 2,
                     ) -> Iterator[pa.RecordBatch]:
    """``work`` of every item, ``workers`` at a time (so that several gateway processes answer
    one partition), yielded in the items' order. Errors are re-raised here."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="xregistry-bulk")
    pending: deque[Future[list[pa.RecordBatch]]] = deque()
    it = iter(items)
    try:
        pending.extend(pool.submit(work, item) for item in itertools.islice(it, workers + 1))
        while pending:
            batches = pending.popleft().result()
            pending.extend(pool.submit(work, item) for item in itertools.islice(it, 1))
            yield from batches
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
