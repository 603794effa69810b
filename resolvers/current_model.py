"""Operations run on the local registry's current model, whichever process changed it last.

Once an operation has passed parsing, validation and the cost checks (so a refused operation
reads nothing), and before it executes, :func:`sync_current_model` brings the local registry's
model up to date like the xRegistry HTTP API does it — :meth:`LocalRegistry.sync_model
<xreg.registry.service.LocalRegistry.sync_model>` with :data:`~xreg.registry.service.MODEL_MAX_AGE`:
at most one read of the registry entity per second and process, upkeep that the store's
per-request call counts leave out. A model installed through ``modelsource`` by another process
or replica is so what this one's operations read within a second.
"""

from __future__ import annotations

from typing import Any

from resolvers.context import Context
from xreg.registry.service import MODEL_MAX_AGE


async def sync_current_model(context: Any) -> None:
    """Bring the local registry's model up to date before an operation with ``context`` executes."""
    if isinstance(context, Context):
        source = context.sources.get(context.default_registry)
        registry = source.own_registry() if source is not None else None
        if registry is not None:
            await registry.sync_model(max_age=MODEL_MAX_AGE)
