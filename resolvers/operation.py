"""One GraphQL operation, start to end: the gateway's schema runs every operation through
:func:`run_operation` (``GatewaySchema.execute``).

The steps, in order, all inside one :class:`~resolvers.observed.ObservedOperation`:

1. **parse** the document (cached; at most ``max_tokens`` tokens) — a syntax error refuses it;
2. **the operation**: the one named, else the first (:class:`~resolvers.errors.OperationNotFound`),
   of a type the caller may run (:class:`~resolvers.errors.OperationNotAllowed`: a mutation over
   GET) — both raised, for the HTTP binding to answer;
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

from collections.abc import Awaitable, Iterable
from enum import Enum
from typing import Any, TypeGuard

from graphql import DocumentNode, GraphQLError, OperationDefinitionNode, execute
from graphql.pyutils import is_awaitable
from strawberry import Schema
from strawberry.exceptions import MissingQueryError
from strawberry.types import ExecutionResult

from adapters import staleness
from resolvers.current_model import sync_current_model
from resolvers.errors import OperationNotAllowed, OperationNotFound
from resolvers.limits import QueryLimits, parse_document, refusals
from resolvers.observed import ObservedOperation
from resolvers.reported import with_reported


async def run_operation(
    schema: Schema, limits: QueryLimits | None, query: str | None, variables: dict[str, Any] | None,
    context: Any, root_value: Any, operation_name: str | None, allowed: Iterable[Enum],
) -> ExecutionResult:
    """The result of one operation of ``schema`` under ``limits`` (see the module for its steps);
    ``allowed`` are the operation types the caller may run (graphql-core's ``OperationType``, or
    any enum with its values). A failure other than the errors raised for the HTTP binding is the
    result's one error."""
    with ObservedOperation(getattr(context, "record", None)) as observed, staleness.collecting() as stale:
        if not query:
            raise MissingQueryError
        try:
            result = await _run(schema, limits, query, variables, context, root_value, operation_name, allowed,
                                observed)
            if stale:
                result.extensions = {**(result.extensions or {}), "stale": stale.as_json()}
            return result
        except (OperationNotFound, OperationNotAllowed):
            raise
        except Exception as exc:  # reported as the result's error, and logged when internal
            return _refused(schema, [_coerced(exc)])


async def _run(
    schema: Schema, limits: QueryLimits | None, query: str, variables: dict[str, Any] | None, context: Any,
    root_value: Any, operation_name: str | None, allowed: Iterable[Enum], observed: ObservedOperation,
) -> ExecutionResult:
    try:
        document = parse_document(query, limits.max_tokens if limits else None)
    except GraphQLError as exc:
        return _refused(schema, [exc])
    observed.name = operation_name
    operation = operation_of(document, operation_name)
    if operation_name is None:
        observed.name = operation.name.value if operation.name else None
    observed.kind = operation.operation.value
    require_allowed(operation, allowed)
    errors = await refusals(schema._schema, query, document, operation_name, variables, limits, context)
    if errors:
        return _refused(schema, errors)
    await sync_current_model(context)
    observed.outcome = "error"  # executing; "ok" once it gave no errors
    result: Any = execute(
        schema._schema, document, root_value=root_value, context_value=context, variable_values=variables,
        operation_name=operation_name, is_awaitable=fast_is_awaitable,
        executor_class=schema.execution_context_class, operation_extensions=None)
    if fast_is_awaitable(result):
        result = await result
    if result.errors:
        schema._process_errors(result.errors)
    reported = with_reported(result.errors, context)
    if not reported:
        observed.outcome = "ok"
    return ExecutionResult(data=result.data, errors=reported)


def operation_of(document: DocumentNode, operation_name: str | None) -> OperationDefinitionNode:
    """The operation of ``document`` named ``operation_name``, else its first one;
    :class:`~resolvers.errors.OperationNotFound` when there is none."""
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode) and (
                operation_name is None or (definition.name is not None and definition.name.value == operation_name)):
            return definition
    raise OperationNotFound(operation_name)


def require_allowed(operation: OperationDefinitionNode, allowed: Iterable[Enum]) -> None:
    """:class:`~resolvers.errors.OperationNotAllowed` unless the type of ``operation`` is one of
    ``allowed`` (compared by value: graphql-core's ``OperationType``, or any enum with its values)."""
    if operation.operation.value not in {kind.value for kind in allowed}:
        raise OperationNotAllowed(operation.operation)


#: Python types of values that are never awaitable (most of a result's values): answered at once.
_NEVER_AWAITABLE = frozenset({type(None), bool, int, float, str, bytes, bytearray, list, tuple, dict, set, frozenset})


def fast_is_awaitable(value: Any) -> TypeGuard[Awaitable[Any]]:
    """graphql-core's ``is_awaitable``, answering at once for the plain values that fill a result."""
    return type(value) not in _NEVER_AWAITABLE and is_awaitable(value)


def _refused(schema: Schema, errors: list[GraphQLError]) -> ExecutionResult:
    """The result of an operation refused, or failed as a whole (its errors logged when internal)."""
    schema._process_errors(errors)
    return ExecutionResult(data=None, errors=errors)


def _coerced(exc: Exception) -> GraphQLError:
    return exc if isinstance(exc, GraphQLError) else GraphQLError(str(exc), original_error=exc)
