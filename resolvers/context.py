"""The context of one GraphQL request: the registries (sources), the caller, the loaders, the
reference rules, and the errors reported without failing a field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from graphql import GraphQLError
from strawberry.types import Info

from adapters.base import RegistrySource
from adapters.local import LocalSource
from adapters.references import References, rules_over
from gateway.auth import Authenticator, Principal
from gateway.config import Settings
from gateway.errors import XRegistryError
from resolvers.loaders import Loaders
from resolvers.pacing import Pacer


def sources_of(app: Any) -> dict[str, RegistrySource]:
    """The registries an application serves, by id in priority order: a snapshot of its
    federation (a reload does not change a request under way), or its local registry alone."""
    federation = getattr(app.state, "federation", None)
    if federation is not None:
        return dict(federation.sources)
    sources = getattr(app.state, "graphql_sources", None)
    if sources is None:
        local = LocalSource(app.state.registry)
        sources = app.state.graphql_sources = {local.id: local}
    return sources


def references_of(app: Any, sources: Mapping[str, RegistrySource]) -> References:
    """The reference rules over ``sources`` (the federation's root URLs when it has one)."""
    federation = getattr(app.state, "federation", None)
    if federation is not None:
        return federation.references(list(sources.values()))
    return rules_over(list(sources.values()), {s.id: [s.base_url] for s in sources.values() if s.base_url})


@dataclass
class Context:
    """What resolvers get as ``info.context``.

    ``auth`` is ``None`` only when the schema runs without the HTTP layer (tools, tests of the
    schema alone): then nothing is checked.
    """

    settings: Settings
    sources: Mapping[str, RegistrySource]
    default_registry: str
    principal: Principal | None = None
    auth: Authenticator | None = None
    #: The reference rules (default: the sources' own base URLs).
    rules: References | None = None
    loaders: Loaders = field(init=False)
    #: How the request's lists are completed without starving the event loop (``resolvers/pacing.py``).
    pacer: Pacer = field(init=False)
    #: Errors reported by resolvers that still returned data (see :meth:`report`).
    reported: list[GraphQLError] = field(default_factory=list)
    #: The operation's estimated cost (``resolvers/cost.py``), once its document is validated.
    cost: int = 0
    #: The connections' listings by their arguments (``resolvers.types.collection``).
    listings: dict[tuple, tuple] = field(default_factory=dict)
    #: The ``xregcorrelationid`` of each write the operation's mutations committed, in order: the
    #: response's ``extensions.xregcorrelationid`` (core/events.md).
    correlation_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.pacer = Pacer(self.settings.graphql_pacing_slice_ms / 1000)
        self.loaders = Loaders(self.sources, lambda: self.references, self.pacer.hold)

    @cached_property
    def references(self) -> References:
        """How references between entities are resolved in this request."""
        if self.rules is not None:
            return self.rules
        return rules_over(list(self.sources.values()),
                          {s.id: [s.base_url] for s in self.sources.values() if s.base_url})

    def close(self) -> None:
        """End of the request: what its loaders hold is released at once (:meth:`Loaders.release`)."""
        self.loaders.release()

    def report(self, error: Exception, info: Info) -> None:
        """Add ``error`` to the response's errors at the field ``info`` resolves, which still
        returns its data (a reference that does not resolve, a registry that is down)."""
        raw = getattr(info, "_raw_info", info)  # strawberry's Info wraps graphql-core's
        self.reported.append(GraphQLError(str(error), nodes=getattr(raw, "field_nodes", None),
                                          path=info.path.as_list(), original_error=error))

    def source(self, registry: str | None) -> RegistrySource:
        """The source of ``registry`` (default: the local registry); ``not_found`` if unknown."""
        source = self.sources.get(registry or self.default_registry)
        if source is None:
            raise XRegistryError("not_found", f"registry {registry}", detail=f"no registry {registry!r} here")
        return source

    def require(self, scope: str) -> None:
        """Raise :class:`~gateway.auth.AuthError` unless the caller holds ``scope``."""
        if self.auth is not None:
            self.auth.require(self.principal or Principal("anonymous", frozenset(), "anonymous"), scope)
