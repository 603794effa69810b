"""The GraphQL API of the gateway: schema, resolvers, per-request loaders, limits, HTTP binding.

:func:`build_routes` mounts ``/graphql`` — HTTP (with GraphQL over SSE) and WebSocket — and
GraphiQL's routes when ``gateway.graphiql`` exists, on the gateway's Starlette application.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from starlette.routing import BaseRoute, Route, WebSocketRoute

from gateway.config import Settings
from resolvers.http import graphql_endpoint
from resolvers.persisted import PersistedQueries
from resolvers.schema import build_schema
from resolvers.websocket import GraphQLWebSocket


def _graphiql() -> ModuleType | None:
    """``gateway.graphiql`` when it is installed (it is optional for the API itself)."""
    try:
        return importlib.import_module("gateway.graphiql")
    except ModuleNotFoundError as exc:
        if exc.name == "gateway.graphiql":
            return None
        raise


def build_routes(settings: Settings) -> list[BaseRoute]:
    """``/graphql`` (GET and POST; WebSocket), plus GraphiQL's own routes when available."""
    graphiql = _graphiql()
    page = getattr(graphiql, "graphiql_page", None)
    schema = build_schema(settings)
    endpoint = graphql_endpoint(settings, schema, (lambda: page(settings)) if page else None,
                                PersistedQueries.from_settings(settings))
    routes: list[BaseRoute] = [Route("/graphql", endpoint, methods=["GET", "POST"], name="graphql"),
                               WebSocketRoute("/graphql", GraphQLWebSocket(settings, schema), name="graphql-ws")]
    if graphiql is not None and hasattr(graphiql, "graphiql_routes"):
        routes.extend(graphiql.graphiql_routes(settings))
    return routes
