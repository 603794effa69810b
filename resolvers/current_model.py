"""Operations run on the local registry's current model, whichever process changed it last.

:class:`CurrentModel` is a schema extension: once an operation has passed parsing, validation
and the cost checks (so a refused operation reads nothing), and before it executes, the local
registry's model is brought up to date with :meth:`LocalRegistry.refresh_model
<gateway.registry.service.LocalRegistry.refresh_model>` — one read of the store's revision, and
of the registry entity only when the revision moved. A model installed through ``modelsource``
by another process or replica is so what the next operation of this one reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from strawberry.extensions import SchemaExtension

from adapters.local import LocalSource
from resolvers.context import Context


class CurrentModel(SchemaExtension):
    """Refresh the local registry's model before an operation executes."""

    async def on_execute(self) -> AsyncIterator[None]:
        context = self.execution_context.context
        if isinstance(context, Context):
            local = context.sources.get(context.default_registry)
            if isinstance(local, LocalSource):
                await local.registry.refresh_model()
        yield
