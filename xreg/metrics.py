"""The gateway's Prometheus metrics: every metric object, and the ``/metrics`` exposition.

Modules that count something import the metric from here (one definition per name). Label
values are bounded: routes are templates (never raw paths), methods a fixed set, GraphQL
operation names capped (:func:`operation_label`), registries the configured ids.

Served by several worker processes (``serve --workers N``), prometheus-client runs in its
multi-process mode: the CLI points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory before the
workers start (this module must be imported after that, which spawned workers do), each worker
writes its values there, and :func:`exposition` merges them. Gauges take the largest value
among live workers; the files of workers that died are marked dead when ``/metrics`` is read.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import multiprocess as _multiprocess
from prometheus_client.exposition import generate_latest

#: The environment variable naming the directory of multi-process mode.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Latency buckets (seconds) of HTTP requests and GraphQL operations.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Latency buckets (seconds) of store calls: most take well under a millisecond.
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)

HTTP_REQUESTS = Counter(
    "xreg_http_requests_total", "HTTP requests served, by route template, method and status.",
    ["route", "method", "status"])
HTTP_REQUEST_DURATION = Histogram(
    "xreg_http_request_duration_seconds", "Time to serve an HTTP request (until the response is sent).",
    ["route", "method"], buckets=REQUEST_BUCKETS)
GRAPHQL_OPERATIONS = Counter(
    "xreg_graphql_operations_total",
    "GraphQL operations by operation name and outcome (ok; error: executed with errors; refused: not executed).",
    ["operation", "outcome"])
GRAPHQL_OPERATION_DURATION = Histogram(
    "xreg_graphql_operation_duration_seconds", "Time to parse, validate and execute a GraphQL operation.",
    ["operation"], buckets=REQUEST_BUCKETS)
STORE_CALL_DURATION = Histogram(
    "xreg_store_call_duration_seconds", "Time of calls of the store interface (reads, commits, prunes).",
    ["call"], buckets=STORE_BUCKETS)
REMOTE_REQUESTS = Counter(
    "xreg_remote_requests_total",
    "Requests to remote registries, retries included in one request (ok, not_found, error, breaker_open, refused).",
    ["registry", "outcome"])
REMOTE_BREAKER_STATE = Gauge(
    "xreg_remote_breaker_state", "Circuit breaker of a remote registry: 0 closed, 1 half-open, 2 open.",
    ["registry"], multiprocess_mode="livemax")
REMOTE_CACHE = Counter(
    "xreg_remote_cache_total",
    "Cache lookups and events of remote answers (hit, stale_hit, miss, stale_on_error, revalidation, error, "
    "invalidation).",
    ["registry", "result"])
REGISTRY_REVISION = Gauge(
    "xreg_registry_revision", "The local registry's current revision.", multiprocess_mode="livemax")
IMPORT_ENTITIES = Counter(
    "xreg_import_entities_total",
    "Groups, resources and versions of imported documents by outcome (created, updated, unchanged; rejected: "
    "named by a refused document).",
    ["outcome"])
RATE_LIMITED = Counter(
    "xreg_rate_limited_total", "Requests refused by the per-caller rate limit (429), by the caller's scope.", ["scope"])
ADMISSION_REJECTED = Counter(
    "xreg_admission_rejected_total",
    "Requests refused by admission control (503 server_busy): the line was full or the wait timed out.", ["kind"])
SUBSCRIPTIONS_OPEN = Gauge(
    "xreg_graphql_subscriptions_open", "GraphQL subscriptions open, by transport (ws, sse).", ["transport"],
    multiprocess_mode="livesum")
SUBSCRIPTIONS_SLOW = Counter(
    "xreg_graphql_subscriptions_slow_total",
    "GraphQL subscriptions ended because their consumer fell more than subscription_buffer events behind.",
    ["transport"])

#: Distinct GraphQL operation names counted per process; later names count as ``other``.
MAX_OPERATION_NAMES = 200
#: Longest operation name used as a label (GraphQL names are ``[_A-Za-z][_0-9A-Za-z]*``).
MAX_OPERATION_NAME_LENGTH = 64
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")
_operations: set[str] = set()
_operations_lock = threading.Lock()

#: The methods counted by name; any other is ``other``.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def operation_label(name: str | None) -> str:
    """The label of a GraphQL operation: its name, ``anonymous`` without one, ``other`` past
    :data:`MAX_OPERATION_NAMES` distinct names (or for a name that is not a GraphQL name)."""
    if not name:
        return "anonymous"
    if name in _operations:
        return name
    if len(name) > MAX_OPERATION_NAME_LENGTH or not _NAME.fullmatch(name):
        return "other"
    with _operations_lock:
        if len(_operations) >= MAX_OPERATION_NAMES:
            return "other"
        _operations.add(name)
    return name


#: The children of the operation metrics by label and outcome (``labels`` takes a lock and checks
#: its arguments on every call; the labels are a bounded set, so the children are kept here).
_operation_children: dict[tuple[str, str], tuple[Any, Any]] = {}


def count_operation(label: str, outcome: str, seconds: float) -> None:
    """Count one GraphQL operation of ``label`` (:func:`operation_label`) and ``outcome``, and
    observe its duration."""
    children = _operation_children.get((label, outcome))
    if children is None:
        children = _operation_children[(label, outcome)] = (
            GRAPHQL_OPERATIONS.labels(label, outcome), GRAPHQL_OPERATION_DURATION.labels(label))
    children[0].inc()
    children[1].observe(seconds)


def method_label(method: str) -> str:
    """The label of an HTTP method (a bounded set)."""
    return method if method in METHODS else "other"


def multiprocess_dir() -> Path | None:
    """The directory of multi-process mode, when it is on."""
    value = os.environ.get(MULTIPROC_ENV)
    return Path(value) if value else None


def mark_dead_workers(directory: Path) -> list[int]:
    """Mark the gauge files of worker processes that no longer run as dead (their live gauges
    stop counting); returns their process ids."""
    dead = []
    for path in directory.glob("gauge_live*_*.db"):
        pid_text = path.stem.rpartition("_")[2]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid != os.getpid() and not _alive(pid):
            _multiprocess.mark_process_dead(pid, str(directory))
            dead.append(pid)
    return dead


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: it exists, so it runs
    return stat.rpartition(")")[2].split()[0] != "Z"


def worker_exiting() -> None:
    """Called as a worker process shuts down: its live gauges stop counting."""
    directory = multiprocess_dir()
    if directory is not None and directory.is_dir():
        _multiprocess.mark_process_dead(os.getpid(), str(directory))


def exposition() -> tuple[bytes, str]:
    """The text exposition of every metric (all workers' in multi-process mode) and its media type."""
    directory = multiprocess_dir()
    if directory is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    mark_dead_workers(directory)
    registry = CollectorRegistry()
    _multiprocess.MultiProcessCollector(registry, path=str(directory))
    return generate_latest(registry), CONTENT_TYPE_LATEST
