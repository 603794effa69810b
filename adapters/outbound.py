"""Where the gateway may send requests on a caller's behalf: the outbound address rules.

A URL is acceptable when it is ``http`` or ``https`` with a host, no user information, and every
address its host resolves to is acceptable: never link-local (``169.254.0.0/16``, ``fe80::/10``:
cloud metadata services live there), unspecified (``0.0.0.0``, ``::``), multicast or reserved;
loopback (``127.0.0.0/8``, ``::1``, ``localhost``) only when ``allow_loopback`` is set
(``XREG_OUTBOUND_ALLOW_LOOPBACK``); private networks (``10/8``, ``172.16/12``, ``192.168/16``,
``fc00::/7``) unless ``allow_private`` is off (``XREG_OUTBOUND_ALLOW_PRIVATE``). IPv4-mapped
IPv6 addresses are judged as the IPv4 address they carry.

The check runs when a URL is accepted and again before each request (the name may resolve
elsewhere by then).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Resolves a host name to its addresses (tests inject one).
Resolver = Callable[[str, int], Awaitable[list[str]]]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(ValueError):
    """A URL the outbound rules refuse; the message says why (no secret in it)."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses of ``host`` from the system's resolver."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class OutboundPolicy:
    """The outbound address rules (see the module doc)."""

    allow_loopback: bool = False
    allow_private: bool = True

    def address_problem(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be contacted, or ``None``."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_link_local:
            return "a link-local address"
        if address.is_unspecified:
            return "an unspecified address"
        if address.is_multicast:
            return "a multicast address"
        if address.is_loopback:
            return None if self.allow_loopback else "a loopback address (XREG_OUTBOUND_ALLOW_LOOPBACK is off)"
        if address.is_private:
            return None if self.allow_private else "a private address (XREG_OUTBOUND_ALLOW_PRIVATE is off)"
        if address.is_reserved:
            return "a reserved address"
        return None

    def url_problem(self, url: str) -> str | None:
        """What is wrong with ``url`` before any name is resolved, or ``None``."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return f"not a URL ({exc})"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return "not an http(s) URL with a host"
        if parts.username is not None or parts.password is not None:
            return "a URL may not carry user information"
        if parts.fragment:
            return "a URL may not carry a fragment"
        del port
        host = parts.hostname.rstrip(".").lower()
        if host == "localhost" or host.endswith(".localhost"):
            return None if self.allow_loopback else "a loopback address (XREG_OUTBOUND_ALLOW_LOOPBACK is off)"
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            return None
        return self.address_problem(literal)

    async def check(self, url: str, resolve: Resolver = system_resolver) -> None:
        """Raise :class:`OutboundRefused` unless ``url`` and every address of its host pass."""
        problem = self.url_problem(url)
        if problem:
            raise OutboundRefused(f"{url!r} is refused: {problem}")
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            ipaddress.ip_address(host)
            return  # a literal address, judged above
        except ValueError:
            pass
        try:
            addresses = await resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        except OSError as exc:
            raise OutboundRefused(f"{url!r} is refused: its host does not resolve ({exc.strerror or exc})") from None
        if not addresses:
            raise OutboundRefused(f"{url!r} is refused: its host does not resolve")
        for text in addresses:
            problem = self.address_problem(ipaddress.ip_address(text.split("%")[0]))
            if problem:
                raise OutboundRefused(f"{url!r} is refused: {host} resolves to {problem}")
