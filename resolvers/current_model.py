"""Operations run on the local registry's current model, whichever process changed it last.

:class:`CurrentModel` is a schema extension: once an operation has passed parsing, validation
and the cost checks (so a refused operation reads nothing), and before it executes, the local
registry's model is brought up to date like the xRegistry HTTP API does it —
:meth:`LocalRegistry.sync_model <gateway.registry.service.LocalRegistry.sync_model>` with
:data:`~gateway.registry.service.MODEL_MAX_AGE`: at most one read of the registry entity per
second and process, upkeep that the store's per-request call counts leave out. A model installed
through ``modelsource`` by another process or replica is so what this one's operations read
within a second.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from strawberry.extensions import SchemaExtension

from adapters.local import LocalSource
from gateway.registry.service import MODEL_MAX_AGE
from resolvers.context import Context


class CurrentModel(SchemaExtension):
    """Bring the local registry's model up to date before an operation executes."""

    async def on_execute(self) -> AsyncIterator[None]:
        context = self.execution_context.context
        if isinstance(context, Context):
            local = context.sources.get(context.default_registry)
            if isinstance(local, LocalSource):
                await local.registry.sync_model(max_age=MODEL_MAX_AGE)
        yield
