"""The GraphQL API of the gateway: schema, resolvers, per-request context, limits and cost, and
the operations whose results stream (subscriptions, :mod:`resolvers.streaming`).

Its transports belong to the service roof: HTTP (with GraphQL over SSE) and WebSocket at
``/graphql`` are mounted by :mod:`gateway.graphql_http`.
"""
