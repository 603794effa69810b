"""The GraphQL schema of the gateway, and its SDL.

``build_schema(settings)`` is the executable schema with the settings' limits;
``python -m resolvers > schema.graphql`` regenerates the committed SDL (a test fails when
the two differ).
"""

from __future__ import annotations

import logging
from functools import lru_cache

import strawberry
from graphql import GraphQLError
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from gateway.config import Settings
from resolvers.current_model import CurrentModel
from resolvers.errors import is_internal
from resolvers.execution import GatewayExecutor
from resolvers.limits import Limits, QueryLimits
from resolvers.mutations import Mutation
from resolvers.observed import ObservedOperations
from resolvers.queries import Query
from resolvers.reported import ReportedErrors
from resolvers.scalars import SCALARS
from resolvers.types import TYPES, read_field

log = logging.getLogger("xreg.graphql")


class GatewaySchema(strawberry.Schema):
    """Logs internal errors only: registry, auth and input errors are the client's business."""

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        for error in errors:
            if is_internal(error):
                log.error("GraphQL resolver failed: %s", error.message, exc_info=error.original_error)


@lru_cache(maxsize=8)
def _schema(limits: QueryLimits | None) -> GatewaySchema:
    introspection = limits.introspection if limits else True
    return GatewaySchema(
        query=Query, mutation=Mutation, types=list(TYPES),
        extensions=[ObservedOperations, *([lambda: Limits(limits)] if limits else []), CurrentModel, ReportedErrors],
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

