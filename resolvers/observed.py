"""GraphQL operations observed: counted by name and outcome, timed, traced, and named on the
request's log line.

:class:`ObservedOperations` is a schema extension around each operation. Its outcome is ``ok``
(executed without errors), ``error`` (executed; some field failed or a registry was reported
down) or ``refused`` (not executed: a syntax or validation error, a limit, an operation type the
method does not allow). Operation names become labels through
:func:`gateway.metrics.operation_label` (``anonymous`` without a name, a bounded set).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from strawberry.extensions import SchemaExtension

from gateway import metrics, tracing
from gateway.request_context import current


class ObservedOperations(SchemaExtension):
    """Metrics, span and log fields of one GraphQL operation (see the module documentation)."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        self._executed = False
        outcome = "refused"
        with tracing.span("graphql.operation") as span:
            try:
                yield
                result = self.execution_context.result
                if self._executed:
                    outcome = "error" if result is not None and result.errors else "ok"
            finally:
                context = self.execution_context
                name = context.operation_name
                label = metrics.operation_label(name)
                metrics.GRAPHQL_OPERATIONS.labels(label, outcome).inc()
                metrics.GRAPHQL_OPERATION_DURATION.labels(label).observe(time.perf_counter() - started)
                record = current()
                if record is not None:
                    record.operation, record.outcome = (name or "anonymous")[:128], outcome
                if span is not None:
                    kind = _operation_type(context)
                    span.update_name(f"{kind} {name}" if name else kind)
                    span.set_attribute("graphql.operation.type", kind)
                    if name:  # a span carries the name itself (bounded in length; no label cardinality)
                        span.set_attribute("graphql.operation.name", name[:metrics.MAX_OPERATION_NAME_LENGTH])
                    span.set_attribute("xreg.graphql.outcome", outcome)

    def on_execute(self) -> Iterator[None]:
        self._executed = True
        yield


def _operation_type(context) -> str:
    try:
        return context.operation_type.value
    except Exception:  # no document (it did not parse) or no such operation
        return "graphql"
