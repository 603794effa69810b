"""Structured Streaming over the gateway's event log: ``spark.readStream.format("xregistry")``.

The stream reads ``GET /events`` (the registry's events as CloudEvents, each at its position
``<revision>.<index>``; see the gateway's ``docs/events.md``). An offset is the registry's
instance id and a position: ``{"instance": "<uuid>", "position": "12.3"}`` (``""``: before the
oldest event retained). Every answer of ``/events`` names the instance (``X-Registry-Instance``);
an offset of another instance — a checkpoint restored against a rebuilt or foreign registry, whose
positions mean something else — is refused with :class:`~pyspark_xregistry.client.CheckpointMismatch`
(``instance_mismatch``).

The driver finds the end of a micro-batch by reading the events after its start (at most
``maxEventsPerTrigger`` of them, unless the trigger reads everything available); a partition
reads a range of positions again, so a replayed batch gives the same rows. With
``includeDocument`` every row also carries its entity's document (its xRegistry JSON view) as of
the batch's last revision, read with the GraphQL change feed (``changes(since:, until:,
instanceId:)``) — ``null`` when the entity no longer exists then. Keeping the last row per
subject, upserting those with a document and deleting those without keeps a copy of the
registry current (:class:`~pyspark_xregistry.mirror.ParquetMirror`).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from pyspark_xregistry.client import (
    INSTANCE_MISMATCH,
    RETRY_STATUSES,
    CheckpointMismatch,
    ClientConfig,
    GatewayClient,
    GatewayError,
)

log = logging.getLogger("pyspark_xregistry")

#: The event log's path, relative to the GraphQL endpoint's folder.
EVENTS_PATH = "events"
#: The header of ``/events`` naming the registry instance.
INSTANCE_HEADER = "X-Registry-Instance"
#: The largest index of a position ``/events`` accepts: ``<revision>.<MAX_INDEX>`` follows every
#: event of the revision.
MAX_INDEX = 999_999_999
#: Most events per ``/events`` request (the gateway's limit).
MAX_PAGE = 1000
#: Events one partition reads (a micro-batch with more is cut into several partitions).
EVENTS_PER_PARTITION = 5000
#: The code of an answer after a pruned position.
EVENTS_GONE = "events_gone"
#: The column of the entity's document (``includeDocument``).
DOCUMENT_COLUMN = "document"

_POSITION = re.compile(r"(0|[1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,8})")

#: The columns of a stream: the event's CloudEvent attributes, its position split in two.
EVENT_SCHEMA = StructType([
    StructField("position", StringType(), False),
    StructField("revision", LongType(), False),
    StructField("index", IntegerType(), False),
    StructField("id", StringType(), False),
    StructField("type", StringType(), False),
    StructField("source", StringType(), True),
    StructField("subject", StringType(), False),
    StructField("time", TimestampType(), True),
    StructField("xregcorrelationid", StringType(), True),
    StructField("changed", ArrayType(StringType()), True),
])


def stream_schema(documents: bool) -> StructType:
    """The stream's columns; ``document`` (JSON text) last with ``includeDocument``."""
    if not documents:
        return EVENT_SCHEMA
    return StructType([*EVENT_SCHEMA.fields, StructField(DOCUMENT_COLUMN, StringType(), True)])


def parse_position(text: str) -> tuple[int, int]:
    """``"<revision>.<index>"`` as a pair; ``ValueError`` otherwise."""
    m = _POSITION.fullmatch(text)
    if m is None:
        raise ValueError(f"an event position is '<revision>.<index>' (e.g. '42.0'), not {text!r}")
    return int(m.group(1)), int(m.group(2))


def _key(position: str) -> tuple[int, int]:
    """A position's order (``""``, before every event, first)."""
    return parse_position(position) if position else (-1, -1)


def _bool(options: Mapping[str, str], name: str) -> bool:
    value = str(options.get(name.lower(), "false")).strip().lower()
    if value not in ("true", "false", ""):
        raise ValueError(f"option {name} must be true or false, not {value!r}")
    return value == "true"


def _positive(options: Mapping[str, str], name: str, default: int | None, maximum: int | None = None) -> int | None:
    value = options.get(name.lower())
    if value is None or str(value).strip() == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"option {name} must be an integer, not {value!r}") from None
    if number < 1 or (maximum is not None and number > maximum):
        raise ValueError(f"option {name} must be between 1 and {maximum or 'any'}, not {number}")
    return number


@dataclass(frozen=True)
class StreamOptions:
    """The options of ``spark.readStream.format("xregistry")`` (docs/spark.md, "Streaming")."""

    url: str
    token: str | None = None
    #: ``earliest`` (the oldest event retained), ``latest``, a revision (after its events) or a position.
    starting: str = "earliest"
    #: The registry instance ``startingPosition`` was taken from.
    instance: str | None = None
    documents: bool = False
    types: tuple[str, ...] = ()
    subject: str | None = None
    max_events: int | None = None
    page_size: int = MAX_PAGE
    timeout: float = 30.0
    retries: int = 3

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamOptions:
        """Options as Spark passes them (keys in any case); raises ``ValueError`` when invalid."""
        opts = {str(k).lower(): v for k, v in options.items()}
        url = opts.get("url")
        if not url:
            raise ValueError('option "url" is required: the gateway\'s GraphQL endpoint, e.g. http://host:8080/graphql')
        starting = str(opts.get("startingposition") or "earliest").strip().lower()
        if starting not in ("earliest", "latest") and not starting.isdigit():
            parse_position(starting)
        types = tuple(t.strip() for t in str(opts.get("type") or "").split(",") if t.strip())
        timeout = opts.get("timeout")
        try:
            timeout_s = float(timeout) if timeout not in (None, "") else 30.0
        except ValueError:
            raise ValueError(f"option timeout must be a number of seconds, not {timeout!r}") from None
        retries = opts.get("retries")
        return cls(url=url, token=opts.get("token") or None, starting=starting,
                   instance=(opts.get("instanceid") or "").strip() or None,
                   documents=_bool(opts, "includeDocument"), types=types, subject=opts.get("subject") or None,
                   max_events=_positive(opts, "maxEventsPerTrigger", None),
                   page_size=_positive(opts, "pageSize", MAX_PAGE, MAX_PAGE) or MAX_PAGE,
                   timeout=timeout_s, retries=int(retries) if retries not in (None, "") else 3)

    def client_config(self) -> ClientConfig:
        """How to reach the gateway's GraphQL API."""
        return ClientConfig(url=self.url, token=self.token, timeout=self.timeout, retries=self.retries)


class EventsClient:
    """Pages of ``GET /events`` (bearer token, timeout and retries as the GraphQL client's)."""

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self.url = str(httpx.URL(options.url).join(EVENTS_PATH))
        headers = {"accept": "application/cloudevents-batch+json"}
        if options.token:
            headers["authorization"] = f"Bearer {options.token}"
        self._http = httpx.Client(timeout=options.timeout, headers=headers)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> EventsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def page(self, after: str, limit: int) -> tuple[str, list[dict[str, Any]]]:
        """The registry's instance id and up to ``limit`` events after position ``after``."""
        params: list[tuple[str, str | int | float | bool | None]] = [("limit", str(limit))]
        if after:
            params.append(("after", after))
        params += [("type", t) for t in self.options.types]
        if self.options.subject:
            params.append(("subject", self.options.subject))
        resp = self._get(params)
        instance = resp.headers.get(INSTANCE_HEADER)
        if not instance:
            raise GatewayError(f"{self.url} does not name its registry instance ({INSTANCE_HEADER}): positions "
                               "cannot be checkpointed against it")
        events = resp.json()
        if not isinstance(events, list):
            raise GatewayError(f"{self.url} answered no event batch: {resp.text[:200]}")
        return instance, events

    def instance(self) -> str:
        """The instance id of the registry whose events the gateway serves."""
        return self.page("", 1)[0]

    def _get(self, params: list[tuple[str, str | int | float | bool | None]]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                resp: httpx.Response | None = self._http.get(self.url, params=params)
            except httpx.TransportError as exc:
                if attempt >= self.options.retries:
                    raise GatewayError(f"gateway unreachable at {self.url}: {exc}") from exc
                resp = None
            if resp is not None and (resp.status_code not in RETRY_STATUSES or attempt >= self.options.retries):
                if resp.status_code != 200:
                    raise _problem(resp)
                return resp
            time.sleep(0.5 * (2 ** attempt))
            attempt += 1


def _problem(resp: httpx.Response) -> GatewayError:
    """The error of a refused ``/events`` read, from its problem document."""
    try:
        problem = resp.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        return GatewayError(f"gateway event log answered HTTP {resp.status_code}: {resp.text[:200]}")
    code = str(problem.get("type") or "").rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    detail = problem.get("detail") or problem.get("title") or resp.text[:200]
    if code == EVENTS_GONE:
        detail = (f"{detail}: the events after the checkpoint are no longer retained (the registry's history was "
                  "pruned); start again from a snapshot (startingPosition = its revision) with a new checkpoint")
    return GatewayError(f"gateway event log refused (HTTP {resp.status_code}): {detail} [{code}]",
                        (code,) if code else ())


def mismatch(expected: str, actual: str) -> CheckpointMismatch:
    """The error of an offset of another registry instance."""
    return CheckpointMismatch(
        f"the stream's checkpoint was taken from registry instance {expected}, but the gateway now serves instance "
        f"{actual} (restored from a backup without its history, rebuilt by an import, or another registry); its "
        f"event positions do not continue the checkpoint's — start a new checkpoint [{INSTANCE_MISMATCH}]",
        (INSTANCE_MISMATCH,))


class EventsPartition(InputPartition):
    """The events after ``after`` up to ``until`` (positions) of registry instance ``instance``;
    documents, when asked for, as of ``until``'s revision from GraphQL registry ``registry``."""

    def __init__(self, instance: str, after: str, until: str, registry: str | None) -> None:
        super().__init__((instance, after, until, registry))
        self.instance, self.after, self.until, self.registry = instance, after, until, registry


class XRegistryStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the registry's events (see the module doc)."""

    def __init__(self, options: StreamOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        #: The end of ``Trigger.AvailableNow``: no offset beyond it is returned.
        self._target: str | None = None
        #: ``(start, end) -> positions`` the driver read when it found ``end`` (to cut partitions).
        self._scanned: dict[tuple[str, str], list[str]] = {}
        self._last: dict[str, str] | None = None
        self._registry: dict[str, str] = {}

    # -- the driver ------------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, str]:
        """Where a new query starts: ``startingPosition`` of the instance the gateway serves."""
        opts = self.options
        with EventsClient(opts) as events:
            instance = events.instance()
        if opts.instance is not None and opts.instance != instance:
            raise mismatch(opts.instance, instance)
        if opts.starting == "earliest":
            position = ""
        elif opts.starting == "latest":
            position = f"{self._revision(instance)}.{MAX_INDEX}"
        elif opts.starting.isdigit():
            position = f"{int(opts.starting)}.{MAX_INDEX}"
        else:
            position = opts.starting
        return {"instance": instance, "position": position}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxEventsPerTrigger`` events per micro-batch, when set."""
        if self.options.max_events is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_events)

    def latestOffset(self, start: dict[str, str] | None = None, limit: ReadLimit | None = None) -> dict[str, str]:
        """The position of the last event after ``start`` that this micro-batch reads (``start``
        itself when there is none); refused when the gateway serves another instance."""
        start = start or self._last or self.initialOffset()
        most = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if limit is None and self.options.max_events is not None:  # (PySpark before 4.2)
            most = self.options.max_events
        end = self._scan(start, most)
        self._last = end
        return end

    def prepareForTriggerAvailableNow(self) -> None:
        """Record where the log ends now — after every event of the registry's current revision
        (a revision's events are committed with it) — so ``Trigger.AvailableNow`` reads up to there."""
        with EventsClient(self.options) as events:
            instance = events.instance()
        self._target = f"{self._revision(instance)}.{MAX_INDEX}"

    def _scan(self, start: dict[str, str], most: int | None) -> dict[str, str]:
        instance, after = start["instance"], start["position"]
        positions: list[str] = []
        target = _key(self._target) if self._target is not None else None
        if target is not None and _key(after) >= target:
            return start
        with EventsClient(self.options) as events:
            while most is None or len(positions) < most:
                want = self.options.page_size if most is None else min(self.options.page_size, most - len(positions))
                served, page = events.page(after, want)
                if served != instance:
                    raise mismatch(instance, served)
                got = [str(e["xregposition"]) for e in page]
                if target is not None:
                    got = [p for p in got if _key(p) <= target]
                positions += got
                if len(got) < want:
                    break
                after = got[-1]
        if not positions:
            return start
        end = {"instance": instance, "position": positions[-1]}
        self._scanned[(start["position"], end["position"])] = positions
        return end

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        """The range ``start`` … ``end`` cut into partitions of about :data:`EVENTS_PER_PARTITION`
        events (one when the driver did not read the range itself)."""
        if start["instance"] != end["instance"]:
            raise mismatch(start["instance"], end["instance"])
        if _key(end["position"]) <= _key(start["position"]):
            return []
        instance = end["instance"]
        registry = self._graphql_registry(instance) if self.options.documents else None
        positions = self._scanned.pop((start["position"], end["position"]), [])
        bounds = [start["position"], *positions[EVENTS_PER_PARTITION - 1:-1:EVENTS_PER_PARTITION], end["position"]]
        return [EventsPartition(instance, a, b, registry) for a, b in itertools.pairwise(bounds)]

    def _graphql_registry(self, instance: str) -> str:
        """The GraphQL registry id of the registry of ``instance`` (the one whose events these are)."""
        if instance not in self._registry:
            with GatewayClient(self.options.client_config()) as gw:
                found = [r for r, state in gw.registry_states().items() if state.instance == instance]
            if not found:
                raise GatewayError(f"the gateway's GraphQL API serves no registry of instance {instance}")
            self._registry[instance] = found[0]
        return self._registry[instance]

    def _revision(self, instance: str) -> int:
        with GatewayClient(self.options.client_config()) as gw:
            return gw.registry_states()[self._graphql_registry(instance)].revision

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: positions stay readable for as long as the gateway retains them."""

    # -- the executors ---------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """The partition's events in position order, each with its document when asked for."""
        assert isinstance(partition, EventsPartition)
        events = list(self._events(partition))
        documents: dict[str, str | None] = {}
        if self.options.documents and events and partition.registry is not None:
            documents = self._documents(partition, min(e["_revision"] for e in events))
        for e in events:
            row = _row(e)
            if self.options.documents:
                row = (*row, documents.get(str(e["subject"]).lower()))
            yield row

    def _events(self, partition: EventsPartition) -> Iterator[dict[str, Any]]:
        until = _key(partition.until)
        after = partition.after
        with EventsClient(self.options) as events:
            while True:
                served, page = events.page(after, self.options.page_size)
                if served != partition.instance:
                    raise mismatch(partition.instance, served)
                for e in page:
                    key = parse_position(str(e["xregposition"]))
                    if key > until:
                        return
                    e["_revision"], e["_index"] = key
                    yield e
                if len(page) < self.options.page_size:
                    return
                after = str(page[-1]["xregposition"])

    def _documents(self, partition: EventsPartition, first_revision: int) -> dict[str, str | None]:
        """Lower-cased XID → the entity's JSON view as of the partition's last revision (``None``:
        deleted by then), for every entity written from ``first_revision`` on."""
        until = parse_position(partition.until)[0]
        out: dict[str, str | None] = {}
        assert partition.registry is not None
        with GatewayClient(self.options.client_config()) as gw:
            for page in gw.changes(partition.registry, until, max(0, first_revision - 1), None, partition.instance,
                                  documents=True):
                for ch in page:
                    out[ch.xid.lower()] = None if ch.view is None else json.dumps(ch.view, sort_keys=True)
        return out


def _row(e: Mapping[str, Any]) -> tuple[Any, ...]:
    data = e.get("data")
    changed = data.get("changed") if isinstance(data, dict) else None
    when = e.get("time")
    return (str(e["xregposition"]), e["_revision"], e["_index"], e["id"], e["type"], e.get("source"), e["subject"],
            datetime.fromisoformat(when.replace("Z", "+00:00")) if isinstance(when, str) else None,
            e.get("xregcorrelationid"), list(changed) if isinstance(changed, list) else None)
