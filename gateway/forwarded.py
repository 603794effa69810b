"""Whose ``X-Forwarded-For`` / ``X-Forwarded-Proto`` the gateway believes: no one's, unless
``XREG_FORWARDED_ALLOW_IPS`` lists the proxies in front of it.

uvicorn believes them by default when the peer is 127.0.0.1 (or the addresses in the
``FORWARDED_ALLOW_IPS`` environment variable), so any local process — or a sidecar, or a port
forward — could name itself any client. :func:`proxy_options` gives uvicorn the gateway's own
setting instead (``serve`` passes it): with none configured uvicorn leaves the request as it
came; with proxies listed, a request from one of them takes its client address and scheme from
the headers. Either way ``scope["client"]`` is then the one client address the gateway uses
(the rate limits key an anonymous caller by it, :func:`gateway.ratelimit.caller_of`); nothing
in the gateway reads the forwarded headers itself.
"""

from __future__ import annotations

from typing import Any

from xreg.config import Settings


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's ``proxy_headers`` and ``forwarded_allow_ips`` for ``settings``."""
    trusted = list(settings.forwarded_allow_ips)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}
