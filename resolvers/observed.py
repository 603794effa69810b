"""GraphQL operations observed: counted by name and outcome, timed, traced, and named on the
request's log line.

:class:`ObservedOperation` wraps one operation (``with``). Its outcome is ``ok`` (executed
without errors), ``error`` (executed; some field failed or a registry was reported down) or
``refused`` (not executed: a syntax or validation error, a limit, an operation type the method
does not allow), which it stays unless the operation says otherwise. Operation names become
labels through :func:`xreg.metrics.operation_label` (``anonymous`` without a name, a bounded
set).
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from xreg import metrics, tracing


class ObservedOperation:
    """Metrics, span and log fields of one GraphQL operation (see the module documentation)."""

    __slots__ = ("_record", "_scope", "_span", "_started", "kind", "name", "outcome")

    def __init__(self, record: Any = None) -> None:
        """``record``: the request's log record (``gateway.request_context.RequestRecord``), on
        which the operation's name and outcome are written."""
        self._record = record
        #: The operation's name (``None``: anonymous) and type (``query``, …; ``graphql``: unknown).
        self.name: str | None = None
        self.kind = "graphql"
        self.outcome = "refused"
        self._scope: Any = None
        self._span: Any = None
        self._started = 0.0

    def __enter__(self) -> ObservedOperation:
        self._started = time.perf_counter()
        self._scope = tracing.span("graphql.operation")
        self._span = self._scope.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        name, outcome, span = self.name, self.outcome, self._span
        metrics.count_operation(metrics.operation_label(name), outcome, time.perf_counter() - self._started)
        record = self._record
        if record is not None:
            record.operation, record.outcome = (name or "anonymous")[:128], outcome
        if span is not None:
            span.update_name(f"{self.kind} {name}" if name else self.kind)
            span.set_attribute("graphql.operation.type", self.kind)
            if name:  # a span carries the name itself (bounded in length; no label cardinality)
                span.set_attribute("graphql.operation.name", name[:metrics.MAX_OPERATION_NAME_LENGTH])
            span.set_attribute("xreg.graphql.outcome", outcome)
        self._scope.__exit__(kind, error, traceback)
