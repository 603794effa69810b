"""The context of one GraphQL request: the registries (sources), the caller, the loaders, the
reference rules, and the errors reported without failing a field."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from graphql import GraphQLError
from strawberry.types import Info

from adapters.base import RegistrySource
from adapters.events import EventFeed
from adapters.references import References, rules_over
from resolvers.loaders import Loaders
from resolvers.pacing import Pacer
from xreg.config import Settings
from xreg.errors import XRegistryError


class Caller(Protocol):
    """Who is calling (the service roof's ``gateway.auth.Principal``): ``identity`` names the
    caller (``key:<name>``, ``jwt:<iss>|<sub>``, ``anonymous``), ``scopes`` what it holds."""

    @property
    def identity(self) -> str: ...

    @property
    def scopes(self) -> AbstractSet[str]: ...

    def can(self, scope: str) -> bool: ...


class Access(Protocol):
    """The caller's rights (the service roof's ``gateway.auth.Authenticator``): :meth:`require`
    raises a :class:`~xreg.errors.GatewayError` (``unauthorized``, ``forbidden``) unless
    ``principal`` holds ``scope``; :meth:`require_admin` unless it also holds the administration
    ``scope`` or is one of the identities ``allowed``."""

    def require(self, principal: Any, scope: str) -> None: ...

    def require_admin(self, principal: Any, scope: str, allowed: list[str] | tuple[str, ...] = ()) -> None: ...


class Budget(Protocol):
    """The caller's rate limit for this request (the service roof's ``gateway.ratelimit.Budget``):
    charged the operation's cost once it is known; the decision has ``allowed`` and
    ``retry_after`` (``None``: not limited)."""

    async def charge(self, cost: float) -> Any: ...


@dataclass
class Context:
    """What resolvers get as ``info.context``.

    The HTTP binding (``gateway.graphql_http``) passes the request's caller as values:
    ``principal`` and ``auth`` (together; ``auth`` is ``None`` only when the schema runs without
    the HTTP layer — tools, tests of the schema alone — and then nothing is checked), the rate
    limit's ``budget`` and the request's log ``record`` (``gateway.request_context.RequestRecord``:
    the operation's name and outcome are written on it).
    """

    settings: Settings
    sources: Mapping[str, RegistrySource]
    default_registry: str
    principal: Caller | None = None
    auth: Access | None = None
    #: The reference rules (default: the sources' own base URLs).
    rules: References | None = None
    loaders: Loaders = field(init=False)
    #: How the request's lists are completed without starving the event loop (``resolvers/pacing.py``).
    pacer: Pacer = field(init=False)
    #: Errors reported by resolvers that still returned data (see :meth:`report`).
    reported: list[GraphQLError] = field(default_factory=list)
    #: The operation's estimated cost (``resolvers/cost.py``), once its document is validated.
    cost: int = 0
    #: The connections' listings by their arguments (``resolvers.types.pages.collection``).
    listings: dict[tuple, tuple] = field(default_factory=dict)
    #: The webhook subscriptions (``adapters.webhook_admin.Webhooks``), when served.
    webhooks: Any = None
    #: The local registry's events (``resolvers/subscriptions.py``; ``None``: none served).
    events: EventFeed | None = None
    #: The ``xregcorrelationid`` of each write the operation's mutations committed, in order: the
    #: response's ``extensions.xregcorrelationid`` (core/events.md).
    correlation_ids: list[str] = field(default_factory=list)
    #: The caller's rate limit, charged the operation's cost (``None``: not limited).
    budget: Budget | None = None
    #: The request's log record (``operation`` and ``outcome`` are set on it), if any.
    record: Any = None

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
        """Raise (``unauthorized``, ``forbidden``) unless the caller holds ``scope``."""
        if self.auth is not None:
            self.auth.require(self.principal, scope)
