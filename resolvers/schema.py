"""The GraphQL schema of the gateway, and its SDL.

``build_schema(settings)`` is the executable schema with the settings' limits;
``python -m resolvers > schema.graphql`` regenerates the committed SDL (a test fails when
the two differ).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from functools import lru_cache
from typing import Any

import strawberry
from graphql import GraphQLError, OperationType
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext, ExecutionResult

from resolvers.errors import is_internal
from resolvers.execution import GatewayExecutor
from resolvers.limits import QueryLimits
from resolvers.mutations import Mutation
from resolvers.operation import run_operation
from resolvers.queries import Query
from resolvers.scalars import SCALARS
from resolvers.streaming import SharedResults, Subscriber, open_stream
from resolvers.subscriptions import Subscription
from resolvers.types import TYPES, read_field
from xreg.config import Settings

log = logging.getLogger("xreg.graphql")


#: What ``allowed_operation_types=None`` allows (strawberry's default): every operation type
#: (the pipeline compares them by value, :func:`resolvers.operation.require_allowed`).
_EVERY_OPERATION_TYPE = tuple(OperationType)


def _pre_execution_error() -> type[ExecutionResult]:
    """Strawberry's ``PreExecutionError``: the subclass of ``ExecutionResult`` its subscription
    protocols answer with an error message instead of a result (it has no public import)."""
    found = [cls for cls in ExecutionResult.__subclasses__() if cls.__name__ == "PreExecutionError"]
    if len(found) != 1:
        raise RuntimeError("strawberry's PreExecutionError is not found")
    return found[0]


async def _refusal(result: ExecutionResult) -> AsyncIterator[ExecutionResult]:
    yield result


class GatewaySchema(strawberry.Schema):
    """The gateway's schema: every operation runs through :func:`resolvers.operation.run_operation`
    under the schema's ``limits`` (none: only the validation rules), not through strawberry's
    schema extensions, which it therefore does not take. Logs internal errors only: registry, auth
    and input errors are the client's business."""

    def __init__(self, *args: Any, limits: QueryLimits | None = None, **kwargs: Any) -> None:
        if kwargs.get("extensions"):
            raise ValueError("GatewaySchema runs its operations without schema extensions (resolvers/operation.py)")
        super().__init__(*args, **kwargs)
        self.limits = limits
        #: the results of recent events, shared by the subscribers running one operation alike
        self.shared_results = SharedResults()

    async def execute(
        self, query: str | None, variable_values: dict[str, Any] | None = None, context_value: Any | None = None,
        root_value: Any | None = None, operation_name: str | None = None,
        allowed_operation_types: Iterable[Any] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        allowed = _EVERY_OPERATION_TYPE if allowed_operation_types is None else allowed_operation_types
        return await run_operation(self, self.limits, query, variable_values, context_value, root_value,
                                   operation_name, allowed)

    async def stream(  # type: ignore[override]
        self, query: str | None, variable_values: dict[str, Any] | None = None, context_value: Any | None = None,
        root_value: Any | None = None, operation_name: str | None = None,
        operation_extensions: dict[str, Any] | None = None,
        allowed_operation_types: Iterable[Any] | None = None,
    ) -> AsyncIterator[ExecutionResult]:
        """Through :func:`resolvers.streaming.open_stream` (limits, cost, rate limit), as
        :meth:`execute` runs its operations; ``context_value`` is a :class:`~resolvers.streaming.Subscriber`.
        A refusal is the stream's one result, a ``PreExecutionError`` (:func:`_pre_execution_error`)."""
        allowed = _EVERY_OPERATION_TYPE if allowed_operation_types is None else allowed_operation_types
        if not isinstance(context_value, Subscriber):
            raise TypeError("a streamed operation's context is a resolvers.streaming.Subscriber")
        opened = await open_stream(self, self.limits, query, variable_values, context_value, operation_name, allowed)
        if isinstance(opened, ExecutionResult):
            return _refusal(_pre_execution_error()(data=None, errors=opened.errors))
        return opened

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        for error in errors:
            if is_internal(error):
                log.error("GraphQL resolver failed: %s", error.message, exc_info=error.original_error)


@lru_cache(maxsize=8)
def _schema(limits: QueryLimits | None) -> GatewaySchema:
    introspection = limits.introspection if limits else True
    return GatewaySchema(
        query=Query, mutation=Mutation, subscription=Subscription, types=list(TYPES), limits=limits,
        execution_context_class=GatewayExecutor,
        config=StrawberryConfig(disable_field_suggestions=not introspection, scalar_map=SCALARS,
                                default_resolver=read_field),
    )


def build_schema(settings: Settings | None = None) -> GatewaySchema:
    """The schema with the limits of ``settings`` (none without settings: for the SDL and tools)."""
    if settings is None:
        return _schema(None)
    return _schema(QueryLimits(max_depth=settings.graphql_max_depth, max_tokens=settings.graphql_max_tokens,
                               max_aliases=settings.graphql_max_aliases, introspection=settings.graphql_introspection,
                               max_cost=settings.graphql_max_cost, default_page_size=settings.page_size_default,
                               max_page_size=settings.graphql_max_page_size))


def sdl() -> str:
    """The schema in GraphQL SDL, as committed in ``schema.graphql``."""
    return build_schema().as_str() + "\n"

