"""The xRegistry engine: model, registry (the one write path), storage, documents, formats,
XIDs and ids, errors, JSON limits and encoding, settings, metrics and tracing.

It imports nothing of the sources (``adapters``), GraphQL (``resolvers``) or the service
roof (``gateway``); see docs/architecture.md."""
