"""Who a request is for: the caller's credentials, a value the service roof puts on the request's
sources (:class:`adapters.request.RequestSources`) — for registries that receive them
(``auth.forward``) and for the cache keys of answers that depend on them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """The caller of one request: its ``Authorization`` header (``None``: anonymous)."""

    credentials: str | None = None


#: The caller of reads made on nobody's behalf (probes, tools, background work).
ANONYMOUS = Caller()
