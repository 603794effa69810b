"""The GraphQL API of the gateway: schema, resolvers, per-request context, limits and cost.

Its HTTP binding (``/graphql``) belongs to the service roof: :mod:`gateway.graphql_http`.
"""
