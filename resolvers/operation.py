"""One GraphQL operation, start to end: the gateway's schema runs every operation through
:func:`run_operation` (``GatewaySchema.execute``).

The steps, in order, all inside one :class:`~resolvers.observed.ObservedOperation`:

1. **parse** the document (cached; at most ``max_tokens`` tokens) — a syntax error refuses it;
2. **the operation**: the one named, else the only one (``CannotGetOperationTypeError``), of a
   type the caller may run (``InvalidOperationTypeError``: a mutation over GET) — both raised,
   for the HTTP binding to answer;
3. **refusals** (``resolvers/limits.py``): depth, aliases, introspection, the validation rules
   (cached per document), then the cost ceiling and the caller's rate limit;
4. **the current model** of the local registry (``resolvers/current_model.py``);
5. **execute** with the schema's executor (``resolvers/execution.py``);
6. **errors**: the execution's are logged when internal (``GatewaySchema.process_errors``), then
   the errors resolvers reported without failing a field are appended (``resolvers/reported.py``);
7. **stale registries**: the registries that answered from a stale cache because they are down
   (:mod:`adapters.staleness`) are named in the result's ``extensions.stale``.

These are strawberry's own steps (``strawberry.Schema.execute``) with its schema-extension
hooks replaced by direct calls: the gateway's concerns around an operation are fixed, and
running them through the generic hook machinery cost more per request (several context managers
and hook lookups per extension and phase) than the whole execution of a small query.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graphql import GraphQLError, OperationDefinitionNode
from strawberry import Schema
from strawberry.exceptions import MissingQueryError
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType
from strawberry.utils.operation import get_first_operation, get_operation_type

from adapters import staleness
from resolvers.current_model import sync_current_model
from resolvers.limits import QueryLimits, parse_document, refusals
from resolvers.observed import ObservedOperation
from resolvers.reported import with_reported


async def run_operation(
    schema: Schema, limits: QueryLimits | None, query: str | None, variables: dict[str, Any] | None,
    context: Any, root_value: Any, operation_name: str | None, allowed: Iterable[OperationType],
) -> ExecutionResult:
    """The result of one operation of ``schema`` under ``limits`` (see the module for its steps).
    A failure other than the strawberry errors raised for the HTTP binding is the result's one
    error."""
    with ObservedOperation(getattr(context, "record", None)) as observed, staleness.collecting() as stale:
        if not query:
            raise MissingQueryError
        try:
            result = await _run(schema, limits, query, variables, context, root_value, operation_name, allowed,
                                observed)
            if stale:
                result.extensions = {**(result.extensions or {}), "stale": stale.as_json()}
            return result
        except (CannotGetOperationTypeError, InvalidOperationTypeError):
            raise
        except Exception as exc:  # reported as the result's error, and logged when internal
            return _refused(schema, [_coerced(exc)])


async def _run(
    schema: Schema, limits: QueryLimits | None, query: str, variables: dict[str, Any] | None, context: Any,
    root_value: Any, operation_name: str | None, allowed: Iterable[OperationType], observed: ObservedOperation,
) -> ExecutionResult:
    try:
        document = parse_document(query, limits.max_tokens if limits else None)
    except GraphQLError as exc:
        return _refused(schema, [exc])
    if operation_name is None:
        first = get_first_operation(document)
        observed.name = first.name.value if isinstance(first, OperationDefinitionNode) and first.name else None
    else:
        observed.name = operation_name
    try:
        operation_type = get_operation_type(document, operation_name)
    except RuntimeError as exc:
        raise CannotGetOperationTypeError(operation_name) from exc
    observed.kind = operation_type.value
    if operation_type not in allowed:
        raise InvalidOperationTypeError(operation_type)
    errors = await refusals(schema._schema, query, document, operation_name, variables, limits, context)
    if errors:
        return _refused(schema, errors)
    await sync_current_model(context)
    observed.outcome = "error"  # executing; "ok" once it gave no errors
    result = schema._get_execute_function()(
        schema._schema, document, root_value=root_value, context_value=context, variable_values=variables,
        operation_name=operation_name, is_awaitable=optimized_is_awaitable,
        executor_class=schema.execution_context_class, operation_extensions=None)
    if optimized_is_awaitable(result):
        result = await result
    if result.errors:
        schema._process_errors(result.errors)
    reported = with_reported(result.errors, context)
    if not reported:
        observed.outcome = "ok"
    return ExecutionResult(data=result.data, errors=reported)


def _refused(schema: Schema, errors: list[GraphQLError]) -> ExecutionResult:
    """The result of an operation refused, or failed as a whole (its errors logged when internal)."""
    schema._process_errors(errors)
    return ExecutionResult(data=None, errors=errors)


def _coerced(exc: Exception) -> GraphQLError:
    return exc if isinstance(exc, GraphQLError) else GraphQLError(str(exc), original_error=exc)
