"""The ``xregistry`` PySpark data source: definition snapshots and change feeds from the gateway.

Planning (:meth:`XRegistryReader.partitions`, once per query) pins the revision of every
selected registry — ``asOfRevision`` or the current one — and lists the groups the read covers
at that revision, each with the opaque cursor that precedes it and its number of children. The
groups are cut into *chunks* (consecutive groups, about one page of rows each, read with one
``first``/``after`` request) and the chunks into contiguous, equally heavy partitions. Every
partition reads ``registry(asOf: <pinned>)``, so all of them see the same state of the registry
however busy its writers are. A change feed (``sinceRevision``) is one partition per registry.

Filter pushdown (:class:`FilteringDataSource`, registered by :func:`pyspark_xregistry.register`;
the source PySpark registers by itself, :class:`XRegistryDataSource`, leaves filters to Spark,
since Spark refuses a reader that takes filters unless ``spark.sql.python.filterPushdown.enabled``
is on) takes equality and ``IN`` on :data:`~pyspark_xregistry.schemas.PUSHABLE` columns: the
registry narrows the registries read, the rest becomes xRegistry filter expressions for the
gateway (which match case-insensitively, so every row is checked again exactly here; pushed
filters need no evaluation by Spark). Everything else is left to Spark.

Without ``entity``, ``spark.readStream`` reads the registry's events (:mod:`pyspark_xregistry.stream`).
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import queue
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, cast, overload

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, EqualTo, Filter, In, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pyspark_xregistry.bulk import ROWS_PER_REQUEST, BulkClient, KeyRange, group_ranges, key_ranges, ordered_parallel
from pyspark_xregistry.client import (
    CheckpointMismatch,
    ClientConfig,
    GatewayClient,
    GatewayError,
    GroupRef,
    Node,
    RegistryState,
)
from pyspark_xregistry.schemas import CHANGE_COLUMN, ENTITIES, PUSHABLE, converter, row_values, schema_for
from pyspark_xregistry.stream import StreamOptions, XRegistryStreamReader, stream_schema

log = logging.getLogger("pyspark_xregistry")

#: The format name: ``spark.read.format("xregistry")``.
NAME = "xregistry"
#: Rows a partition aims at when ``numPartitions`` is not given.
ROWS_PER_PARTITION = 5000
#: Most xRegistry filter expressions one request carries (pushed ``IN`` lists multiply).
MAX_FILTER_EXPRESSIONS = 64
#: Rows per Arrow batch handed to Spark.
BATCH_ROWS = 2000

#: The id attribute of each group and resource type, for pushed ``group`` / ``id`` filters.
ID_ATTRIBUTE = {"endpoints": "endpointid", "messagegroups": "messagegroupid", "schemagroups": "schemagroupid",
                "messages": "messageid", "schemas": "schemaid", "versions": "versionid"}


def _revisions(name: str, value: str | None) -> int | dict[str, int] | None:
    """``"12"`` (every registry) or ``"reg1=12,reg2=40"`` (per registry)."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        if "=" not in text:
            return int(text)
        return {k.strip(): int(v) for k, v in (part.split("=", 1) for part in text.split(",") if part.strip())}
    except ValueError:
        raise ValueError(f"option {name} must be a revision or registry=revision pairs, not {value!r}") from None


def _instances(value: str | None) -> str | dict[str, str] | None:
    """``"<id>"`` (every registry) or ``"reg1=<id>,reg2=<id>"`` (per registry)."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if "=" not in text:
        return text
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    if any(len(pair) != 2 or not pair[0].strip() or not pair[1].strip() for pair in pairs):
        raise ValueError(f"option instanceId must be an instance id or registry=id pairs, not {value!r}")
    return {k.strip(): v.strip() for k, v in pairs}


def check_instance(registry: str, expected: str | None, state: RegistryState) -> None:
    """Refuse revisions taken from another instance of ``registry`` (:class:`CheckpointMismatch`);
    when the gateway reports no instance id the check cannot be made, which is logged."""
    if expected is None:
        return
    if state.instance is None:
        log.warning("registry %r: the gateway reports no instance id, so the checkpoint's instance %s cannot be "
                    "checked", registry, expected)
        return
    if state.instance != expected:
        raise CheckpointMismatch(
            f"registry {registry!r}: the checkpoint was taken from instance {expected}, but the gateway now serves "
            f"instance {state.instance} (restored from a backup, rebuilt by an import, or another environment); "
            "its revisions do not continue the checkpoint's — take a full snapshot instead", ("instance_mismatch",))


@overload
def _int(options: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int: ...
@overload
def _int(options: Mapping[str, str], name: str, default: None, *, minimum: int = 1) -> int | None: ...
def _int(options: Mapping[str, str], name: str, default: int | None, *, minimum: int = 1) -> int | None:
    """An integer option (``default`` when not given); ``ValueError`` naming it when malformed."""
    value = options.get(name.lower())
    if value is None or str(value).strip() == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"option {name} must be an integer, not {value!r}") from None
    if number < minimum:
        raise ValueError(f"option {name} must be at least {minimum}, not {number}")
    return number


@dataclass(frozen=True)
class ReadOptions:
    """The options of one read (see README.md, "Spark"), validated."""

    url: str
    entity: str
    registries: tuple[str, ...] | None = None
    as_of: int | dict[str, int] | None = None
    since: int | dict[str, int] | None = None
    #: The registry instance(s) ``asOfRevision`` / ``sinceRevision`` were taken from.
    instance: str | dict[str, str] | None = None
    token: str | None = None
    page_size: int = 500
    timeout: float = 30.0
    retries: int = 3
    partitions: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Options as Spark passes them (keys in any case); raises ``ValueError`` when invalid."""
        opts = {str(k).lower(): v for k, v in options.items()}
        url, entity = opts.get("url"), (opts.get("entity") or "").strip().lower()
        if not url:
            raise ValueError('option "url" is required: the gateway\'s GraphQL endpoint, e.g. http://host:8080/graphql')
        if entity not in ENTITIES:
            raise ValueError(f'option "entity" must be one of {", ".join(ENTITIES)}, not {opts.get("entity")!r}')
        registry = opts.get("registry")
        registries = tuple(r.strip() for r in registry.split(",") if r.strip()) if registry else None
        timeout = opts.get("timeout")
        try:
            timeout_s = float(timeout) if timeout not in (None, "") else 30.0
        except ValueError:
            raise ValueError(f"option timeout must be a number of seconds, not {timeout!r}") from None
        return cls(
            url=url, entity=entity, registries=registries or None,
            as_of=_revisions("asOfRevision", opts.get("asofrevision")),
            since=_revisions("sinceRevision", opts.get("sincerevision")),
            instance=_instances(opts.get("instanceid")),
            token=opts.get("token") or None, page_size=_int(opts, "pageSize", 500),
            timeout=timeout_s, retries=_int(opts, "retries", 3, minimum=0),
            partitions=_int(opts, "numPartitions", None),
        )

    def client_config(self) -> ClientConfig:
        """How to reach the gateway."""
        return ClientConfig(url=self.url, token=self.token, timeout=self.timeout, retries=self.retries,
                            page_size=self.page_size)

    def instance_for(self, registry: str) -> str | None:
        """The instance ``instanceId`` names for ``registry``."""
        return self.instance.get(registry) if isinstance(self.instance, dict) else self.instance

    def revision_for(self, which: int | dict[str, int] | None, registry: str) -> int | None:
        """The revision ``asOfRevision`` / ``sinceRevision`` names for ``registry``."""
        return which.get(registry) if isinstance(which, dict) else which


# -- partitions -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Chunk:
    """``count`` consecutive groups of ``gtype`` after cursor ``after``, read in one request."""

    registry: str
    revision: int
    gtype: str
    after: str | None
    count: int
    weight: int


class SnapshotPartition(InputPartition):
    """Chunks of groups (their entities), all at their registry's pinned revision."""

    def __init__(self, chunks: list[Chunk]) -> None:
        super().__init__(tuple(chunks))
        self.chunks = tuple(chunks)


class BulkPartition(InputPartition):
    """Key ranges of rows read with the gateway's bulk read, all at their registry's pinned revision."""

    def __init__(self, ranges: list[KeyRange]) -> None:
        super().__init__(tuple(ranges))
        self.ranges = tuple(ranges)


class ChangesPartition(InputPartition):
    """The change feed of one registry between two revisions."""

    def __init__(self, registry: str, since: int, revision: int, instance: str | None = None) -> None:
        super().__init__((registry, since, revision, instance))
        self.registry, self.since, self.revision, self.instance = registry, since, revision, instance


def chunk_groups(
    refs: Sequence[GroupRef], registry: str, revision: int, gtype: str, rows: int, page_size: int,
) -> list[Chunk]:
    """Consecutive groups cut into chunks of about ``rows`` rows (children; for group types the
    groups themselves) and at most ``page_size`` groups; a bigger group is a chunk of its own."""
    out: list[Chunk] = []
    start, weight = 0, 0
    for i, ref in enumerate(refs):
        if i > start and (weight + ref.children > rows or i - start >= page_size):
            out.append(Chunk(registry, revision, gtype, refs[start].after, i - start, weight))
            start, weight = i, 0
        weight += ref.children
    if start < len(refs):
        out.append(Chunk(registry, revision, gtype, refs[start].after, len(refs) - start, weight))
    return out


class _Weighed(Protocol):
    @property
    def weight(self) -> int: ...


W = TypeVar("W", bound=_Weighed)


def split_contiguous(chunks: Sequence[W], n: int) -> list[list[W]]:
    """``chunks`` cut into at most ``n`` runs of consecutive chunks of about equal weight."""
    n = max(1, min(n, len(chunks)))
    total = sum(max(c.weight, 1) for c in chunks)
    bins: list[list[W]] = [[] for _ in range(n)]
    acc = 0
    for c in chunks:
        weight = max(c.weight, 1)
        bins[min(n - 1, int((acc + weight / 2) * n / total))].append(c)  # by the chunk's middle
        acc += weight
    return [b for b in bins if b]


# -- pushdown --------------------------------------------------------------------------------------

def _safe(value: str) -> bool:
    """Whether ``value`` can travel inside an xRegistry filter expression unchanged (``null``
    would test for absence there)."""
    return (bool(value) and value != "null" and not any(ch in value for ch in ",*\\'\"")
            and value == value.strip())


def filter_expressions(terms: Mapping[str, Iterable[str]]) -> list[str] | None:
    """The xRegistry filter expressions (OR'd) for ``attribute IN values`` terms (AND'd);
    ``None`` when nothing can be pushed. Terms with values a filter cannot carry are dropped,
    the widest ones too when the cross product would exceed :data:`MAX_FILTER_EXPRESSIONS` —
    the gateway may return more than asked, never less."""
    usable = {attr: sorted(set(vals)) for attr, vals in terms.items() if vals and all(_safe(v) for v in vals)}
    while usable and math.prod(len(v) for v in usable.values()) > MAX_FILTER_EXPRESSIONS:
        del usable[max(usable, key=lambda a: len(usable[a]))]
    if not usable:
        return None
    attrs = sorted(usable)
    combos = itertools.product(*(usable[a] for a in attrs))
    return [",".join(f"{a}={v}" for a, v in zip(attrs, combo, strict=False)) for combo in combos]


@dataclass(frozen=True)
class Plan:
    """Where an entity type lives and which filter expressions go to the gateway."""

    gtypes: tuple[str, ...]
    rtype: str | None
    versions: bool
    ctypes: tuple[str, ...]

    @classmethod
    def of(cls, entity: str) -> Plan:
        ctypes = ENTITIES[entity]
        parts = ctypes[0].split("/")
        return cls(tuple(c.split("/")[0] for c in ctypes), parts[1] if len(parts) > 1 else None, len(parts) == 3,
                   ctypes)

    def attribute(self, column: str, gtype: str) -> str:
        """The entity attribute a pushed column compares."""
        if column == "id":
            return ID_ATTRIBUTE["versions" if self.versions else (self.rtype or gtype)]
        return column

    def group_filter(self, pushed: Mapping[str, frozenset[str]], gtype: str) -> list[str] | None:
        """Expressions selecting the groups to read (for group types: the groups themselves)."""
        terms: dict[str, frozenset[str]] = {}
        if "group" in pushed:
            terms[ID_ATTRIBUTE[gtype]] = pushed["group"]
        if self.rtype is None:
            for column, values in pushed.items():
                if column not in ("registry", "group"):
                    attr = self.attribute(column, gtype)
                    terms[attr] = terms[attr] & values if attr in terms else values
        return filter_expressions(terms)

    def entity_filter(self, pushed: Mapping[str, frozenset[str]], gtype: str) -> list[str] | None:
        """Expressions selecting resources or versions inside the groups read."""
        if self.rtype is None:
            return None
        return filter_expressions({self.attribute(c, gtype): v for c, v in pushed.items()
                                   if c not in ("registry", "group")})


def _pushed_value(f: Filter) -> frozenset[str] | None:
    if isinstance(f, EqualTo) and isinstance(f.value, str):
        return frozenset({f.value})
    if isinstance(f, In) and f.value and all(isinstance(v, str) for v in f.value):
        return frozenset(f.value)
    return None


# -- the data source --------------------------------------------------------------------------------

class XRegistryDataSource(DataSource):
    """``spark.read.format("xregistry").option("url", …).option("entity", …).load()``; every
    filter is left to Spark (what PySpark registers by itself, see the package doc)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        if not _has_entity(self.options):  # a stream of the registry's events (pyspark_xregistry.stream)
            return stream_schema(StreamOptions.parse(self.options).documents)
        opts = ReadOptions.parse(self.options)
        return schema_for(opts.entity, changes=opts.since is not None)

    def reader(self, schema: StructType) -> XRegistryReader:
        return XRegistryReader(ReadOptions.parse(self.options), schema)

    def streamReader(self, schema: StructType) -> XRegistryStreamReader:
        if _has_entity(self.options):
            raise ValueError('a stream reads the registry\'s events, not an entity type: leave out option "entity" '
                             "(sinceRevision reads the changes of an entity type in a batch)")
        return XRegistryStreamReader(StreamOptions.parse(self.options), schema)


class FilteringDataSource(XRegistryDataSource):
    """The ``xregistry`` source with filter pushdown (needs ``spark.sql.python.filterPushdown.enabled``)."""

    def reader(self, schema: StructType) -> FilteringReader:
        return FilteringReader(ReadOptions.parse(self.options), schema)


class XRegistryReader(DataSourceReader):
    """Plans partitions at a pinned revision and reads them as Arrow record batches."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.plan = Plan.of(options.entity)
        #: column -> the values it may take (pushed equality / IN filters, AND'd).
        self.pushed: dict[str, frozenset[str]] = {}

    def partitions(self) -> list[InputPartition]:
        """Pin each registry's revision and cut the read into partitions (see the module doc)."""
        opts = self.options
        if any(not values for values in self.pushed.values()):  # e.g. group = 'a' AND group = 'b'
            return [BulkPartition([]) if self.bulk else SnapshotPartition([])]
        with GatewayClient(opts.client_config()) as gw:
            states = gw.registry_states()
            current = {r: state.revision for r, state in states.items()}
            selected = list(opts.registries or current)
            unknown = [r for r in selected if r not in current]
            if unknown:
                raise GatewayError(f"the gateway serves no registry {unknown[0]!r} (it serves: {', '.join(current)})")
            if "registry" in self.pushed:
                selected = [r for r in selected if r in self.pushed["registry"]]
            for r in selected:
                check_instance(r, opts.instance_for(r), states[r])
            pins = {r: _first(opts.revision_for(opts.as_of, r), current[r]) for r in selected}
            if opts.since is not None:  # the gateway refuses the feed if the instance changes meanwhile
                return [ChangesPartition(r, self._since(r), pins[r], states[r].instance) for r in selected] or [
                    SnapshotPartition([])]
            listed = [(registry, gtype, gw.group_refs(registry, pins[registry], gtype, child_type=self.plan.rtype,
                                                     raw=self.plan.group_filter(self.pushed, gtype)))
                      for registry in selected for gtype in self.plan.gtypes]
        total = sum(ref.children for *_, refs in listed for ref in refs)
        n = opts.partitions or max(1, math.ceil(total / ROWS_PER_PARTITION))
        if self.bulk:
            return self._bulk_partitions(listed, pins, states, total, n)
        # one request reads about a page of rows, and every partition gets a few of them
        per_chunk = max(1, min(opts.page_size, math.ceil(total / n)))
        chunks = [c for registry, gtype, refs in listed
                  for c in chunk_groups(refs, registry, pins[registry], gtype, per_chunk, opts.page_size)]
        if not chunks:
            return [SnapshotPartition([])]
        return [SnapshotPartition(run) for run in split_contiguous(chunks, n)]

    @property
    def bulk(self) -> bool:
        """Whether the read goes through the gateway's bulk read: a snapshot or a change feed,
        pushed filters or not, whose schema is the fixed one or some of its columns (see the
        module doc)."""
        schema = schema_for(self.options.entity, changes=self.options.since is not None)
        fixed = {f.name: f.dataType for f in schema.fields}
        return all(fixed.get(f.name) == f.dataType for f in self.schema.fields)

    def _bulk_partitions(self, listed: Sequence[tuple[str, str, Sequence[GroupRef]]], pins: Mapping[str, int],
                         states: Mapping[str, RegistryState], total: int, n: int) -> list[InputPartition]:
        """Key ranges of about a request's rows, at least two per partition (read two at a
        time), cut into ``n`` contiguous partitions of about equal weight. With pushed filters
        the gateway narrows the rows: resources and versions by the filter expressions, and to
        the groups listed (a range per group) when ``group`` is pushed; groups by the
        expressions that listed them."""
        rows = max(1, min(ROWS_PER_REQUEST, math.ceil(total / (2 * n))))
        plan, pushed = self.plan, self.pushed
        by_registry: dict[str, list[tuple[str, int]]] = {}
        for registry, gtype, refs in listed:
            by_registry.setdefault(registry, []).extend((f"/{gtype}/{ref.id}", ref.children) for ref in refs)
        expressions = (plan.group_filter(pushed, plan.gtypes[0]) if plan.rtype is None
                       else plan.entity_filter(pushed, plan.gtypes[0])) if pushed else None
        ranges = []
        for registry, groups in by_registry.items():
            pin, instance = pins[registry], states[registry].instance
            if plan.rtype is not None and "group" in pushed:  # (the groups listed may be all: too many to push)
                ranges += group_ranges(registry, pin, instance,
                                       [g for g in groups if g[0].rsplit("/", 1)[-1] in pushed["group"]])
            elif groups or not pushed:
                ranges += key_ranges(registry, pin, instance, groups, rows)
        ranges = [replace(r, filters=tuple(expressions or ())) for r in ranges]
        if not ranges:
            return [BulkPartition([])]
        return [BulkPartition(run) for run in split_contiguous(ranges, n)]

    def _since(self, registry: str) -> int:
        since = self.options.revision_for(self.options.since, registry)
        if since is None:
            raise ValueError(f"sinceRevision names no revision for registry {registry!r}")
        return since

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The partition's rows, as Arrow record batches of the requested schema."""
        pa_schema = to_arrow_schema(self.schema, timezone="UTC")
        if isinstance(partition, BulkPartition) or (isinstance(partition, ChangesPartition) and self.bulk):
            yield from self._bulk(partition, pa_schema)
            return
        converters = [(f.name, converter(f.dataType)) for f in self.schema.fields]
        rows: list[dict[str, Any]] = []
        with GatewayClient(self.options.client_config()) as gw:
            pages = (self._changes(gw, partition) if isinstance(partition, ChangesPartition)
                     else self._snapshot(gw, cast(SnapshotPartition, partition)))
            for page in prefetched(pages):
                rows.extend(r for r in page if self._matches(r))
                if len(rows) >= BATCH_ROWS:
                    yield _batch(rows, converters, pa_schema)
                    rows = []
        if rows:
            yield _batch(rows, converters, pa_schema)

    def _bulk(self, partition: BulkPartition | ChangesPartition, pa_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        names = pa_schema.names
        # the gateway matches pushed filters case-insensitively: its rows are checked again, exactly
        wanted = [(column, pa.array(sorted(values), type=pa.string())) for column, values in self.pushed.items()]
        with BulkClient(self.options.client_config(), self.options.entity) as bulk:
            batches = (bulk.changes(partition.registry, partition.revision, partition.since, partition.instance)
                       if isinstance(partition, ChangesPartition) else ordered_parallel(partition.ranges, bulk.read))
            for batch in batches:
                if wanted:
                    batch = batch.filter(functools.reduce(pc.and_kleene, [
                        pc.is_in(batch.column(column), value_set=values) for column, values in wanted]))
                yield pa.RecordBatch.from_arrays([batch.column(name) for name in names], schema=pa_schema)

    def _matches(self, row: Mapping[str, Any]) -> bool:
        return all(row.get(column) in values for column, values in self.pushed.items())

    def _snapshot(self, gw: GatewayClient, partition: SnapshotPartition) -> Iterator[list[dict[str, Any]]]:
        entity, plan = self.options.entity, self.plan
        for c in partition.chunks:
            group_raw = plan.group_filter(self.pushed, c.gtype)
            if plan.rtype is None:
                pages: Iterable[list[Node]] = [
                    gw.groups(c.registry, c.revision, c.gtype, raw=group_raw, after=c.after, count=c.count)]
            else:
                read = gw.versions if plan.versions else gw.resources
                pages = read(c.registry, c.revision, c.gtype, plan.rtype, group_raw=group_raw, after=c.after,
                             count=c.count, raw=plan.entity_filter(self.pushed, c.gtype))
            for nodes in pages:  # each row's own revision; the pinned one where the registry has none
                yield [_row(entity, c.registry, v, c.revision if rev is None else rev, attrs)
                       for v, rev, attrs in nodes]

    def _changes(self, gw: GatewayClient, partition: ChangesPartition) -> Iterator[list[dict[str, Any]]]:
        entity = self.options.entity
        for changes in gw.changes(partition.registry, partition.revision, partition.since, list(self.plan.ctypes),
                                  partition.instance):
            page = []
            for ch in changes:
                if ch.view is not None:
                    row = _row(entity, partition.registry, ch.view, ch.revision, ch.attributes)
                else:
                    row = _row(entity, partition.registry, {"xid": ch.xid}, ch.revision)
                    row.update({k: None for k in row if k not in _KEYS})
                    row["_view"] = None
                row[CHANGE_COLUMN] = ch.change
                page.append(row)
            yield page


class FilteringReader(XRegistryReader):
    """:class:`XRegistryReader` taking pushed filters (see the module doc)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Take equality and IN on the pushable columns of the entity type; leave the rest."""
        fixed = set(schema_for(self.options.entity).fieldNames())
        for f in filters:
            attribute: tuple[str, ...] = getattr(f, "attribute", ())  # (each kind of Filter has one)
            column = attribute[0] if len(attribute) == 1 else None
            values = _pushed_value(f) if column in PUSHABLE and column in fixed else None
            if column is None or values is None:
                yield f
                continue
            self.pushed[column] = self.pushed[column] & values if column in self.pushed else values


#: Columns a deleted entity still has in a change feed.
_KEYS = frozenset({"registry", "xid", "group", "id", "revision", "grouptype", "schemaid"})


def _has_entity(options: Mapping[str, str]) -> bool:
    return any(str(k).lower() == "entity" and str(v).strip() for k, v in options.items())


def _first(value: int | None, default: int) -> int:
    return default if value is None else value


def _row(entity: str, registry: str, view: dict[str, Any], revision: int,
         attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    row = row_values(entity, registry, view, revision, attributes)
    row["_view"] = view
    return row


def _batch(rows: list[dict[str, Any]], columns: list[tuple[str, Any]], pa_schema: pa.Schema) -> pa.RecordBatch:
    """One Arrow batch; a column the fixed schema lacks is the entity's top-level attribute."""
    arrays = []
    for (name, convert), field in zip(columns, pa_schema, strict=False):
        if rows and name in rows[0]:
            values = [convert(r[name]) for r in rows]
        else:
            values = [convert((r["_view"] or {}).get(name)) for r in rows]
        arrays.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=pa_schema)


def prefetched(pages: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """``pages`` produced by a background thread up to ``depth`` ahead, so that the next request
    to the gateway is under way while this one's rows are converted. Errors are re-raised here;
    the producer stops when the consumer does."""
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for page in pages:
                while not stop.is_set():
                    try:
                        buffer.put((page, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            item: tuple[Any, BaseException | None] = (done, None)
        except BaseException as exc:
            item = (done, exc)
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    thread = threading.Thread(target=produce, name="xregistry-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            page, error = buffer.get()
            if page is done:
                if error is not None:
                    raise error
                return
            yield page
    finally:
        stop.set()
        thread.join()
