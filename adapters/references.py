"""References between entities, resolved across the federated registries.

A reference (``messagegroups`` of an endpoint, ``basemessageuri``, ``dataschemauri`` /
``dataschemaxid``, ``meta.xref``, an MQTT ``willmessage``) is read as:

* ``/…``: an XID in the referring entity's registry;
* ``#/…``: a JSON pointer into the referring document, which for a registry document is the
  same XID (normalised);
* ``http(s)://…``: matched against the root URLs of the configured registries (their ``url``,
  ``base_url``, and the root the remote itself reports); the longest matching root wins, ties in
  priority order. The rest of the path is the XID (``$details`` dropped); ``…/registry#/g/x``
  works too.

Anything else — another host, another scheme, a path outside every registry's root — is never
fetched: resolving it fails with ``unresolved_reference`` naming the registry and the
reference. So references cannot make the gateway request arbitrary URLs. When several
registries match, they are tried in order until one has the entity; registries that are down
are skipped.

Entities are loaded through the caller's ``load(registry, xid)`` — the request's batching
loader — so the references of one level of a query become one batch per registry.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from adapters.base import Entity, RegistrySource, SourceUnavailable
from xreg.errors import XRegistryError
from xreg.ids import id_problem
from xreg.xid import Xid

#: Loads one entity (``None``: it does not exist); raises :class:`SourceUnavailable`.
Load = Callable[[str, str], Awaitable["Entity | None"]]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """Where a reference points: a registry and an XID in it."""

    registry: str
    xid: str

    def load_key(self, owner: Entity) -> tuple[str, int | None, str]:
        """The request's load of this target for a reference of ``owner``: in ``owner``'s own
        registry, as of its revision; in another, its current state."""
        return self.registry, owner.as_of if self.registry == owner.registry else None, self.xid


@dataclass(frozen=True)
class _Root:
    scheme: str
    host: str
    port: int
    path: str
    registry: str
    rank: int


@functools.lru_cache(maxsize=4096)
def _origin(url: str) -> tuple[str, str, int, str, str] | None:
    """``(scheme, host, port, path, fragment)`` of an http(s) URL, normalised (cached: the roots
    of the reference rules are parsed again for every request, and references repeat)."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 0)
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port, parts.path.rstrip("/"), parts.fragment


@functools.lru_cache(maxsize=4096)
def _xid_problem(xid: str) -> str | None:
    """``None`` when ``xid`` is an XID of valid ids, else what to add to "… is not an XID"."""
    try:
        parsed = Xid.parse(xid)
    except XRegistryError:
        return ""
    ids = [i for i in (parsed.group_id, parsed.resource_id, parsed.version_id) if i is not None]
    problem = next((p for p in map(id_problem, ids) if p), None)
    return f": {problem}" if problem else None


#: The rules made by :func:`rules_over`, by the identities of their registries and their roots.
_RULES: dict[tuple[Any, ...], tuple[tuple[Any, ...], References]] = {}
#: How many sets of rules :func:`rules_over` keeps (each keeps its registries' objects alive).
_KEPT_RULES = 32


def rules_over(sources: Sequence[RegistrySource], roots: Mapping[str, Sequence[str]]) -> References:
    """``References(sources, roots)``, the same object again for the same registry objects and
    roots: the rules hold nothing of a request, and parsing every root URL again for each
    request cost more than resolving a small query's references."""
    key = (*map(id, sources), *((r, *urls) for r, urls in roots.items()))
    found = _RULES.get(key)
    if found is not None:  # its registries are kept alive with it: their ids are theirs still
        return found[1]
    if len(_RULES) >= _KEPT_RULES:
        _RULES.clear()
    rules = References(sources, roots)
    _RULES[key] = (tuple(sources), rules)
    return rules


class References:
    """The reference rules over a set of registries (see the module documentation)."""

    def __init__(self, sources: Sequence[RegistrySource], roots: Mapping[str, Sequence[str]]) -> None:
        """``sources`` in priority order; ``roots``: each registry's root URLs."""
        self.registries = [s.id for s in sources]
        self._roots: list[_Root] = []
        for rank, source in enumerate(sources):
            for url in roots.get(source.id, ()):
                o = _origin(url)
                if o is not None:
                    self._roots.append(_Root(o[0], o[1], o[2], o[3], source.id, rank))

    def targets(self, reference: Any, referrer: str, subject: str = "/") -> list[Target]:
        """The candidate targets of ``reference`` made in registry ``referrer`` (best first);
        ``unresolved_reference`` when it points nowhere the gateway may read."""
        if not isinstance(reference, str) or not reference.strip():
            raise self.error(reference, referrer, subject, "it is not a non-empty string")
        ref = reference.strip()
        if ref.startswith("#/"):
            ref = ref[1:]
        if ref.startswith("/"):
            return [Target(referrer, self._xid(ref, reference, referrer, subject))]
        o = _origin(ref)
        if o is None:
            raise self.error(reference, referrer, subject,
                             "only XIDs, #/ pointers and http(s) URLs of configured registries are followed")
        scheme, host, port, path, fragment = o
        matching = [r for r in self._roots if (r.scheme, r.host, r.port) == (scheme, host, port)
                    and (path == r.path or path.startswith(r.path + "/"))]
        if not matching:
            raise self.error(reference, referrer, subject, "the URL is not inside any configured registry; not fetched")
        matching.sort(key=lambda r: (-len(r.path), r.rank))
        out: list[Target] = []
        problem: XRegistryError | None = None
        for root in matching:
            rest = unquote(path[len(root.path):]) or "/"
            if rest == "/" and fragment.startswith("/"):
                rest = unquote(fragment)
            if rest.endswith("$details"):
                rest = rest[: -len("$details")]
            try:
                target = Target(root.registry, self._xid(rest, reference, referrer, subject))
            except XRegistryError as exc:  # not an XID below this root: maybe below a longer one
                problem = problem or exc
                continue
            if target not in out:
                out.append(target)
        if not out and problem is not None:
            raise problem
        return out

    def _xid(self, xid: str, reference: str, referrer: str, subject: str) -> str:
        xid = xid.rstrip("/") or "/"
        problem = _xid_problem(xid)
        if problem is not None:  # also keeps "..", "%2F" and the like out of the URLs built from it
            raise self.error(reference, referrer, subject, f"{xid!r} is not an XID{problem}")
        return xid

    async def resolve(self, reference: Any, referrer: str, load: Load, subject: str = "/",
                      expect: Sequence[str] | None = None) -> Entity:
        """The entity ``reference`` points at; raises ``unresolved_reference`` naming the
        registry and the reference when there is none. ``expect``: the collection types it may
        be of, matched at the end (``("messages", "messages/versions")``)."""
        reasons = []
        for target in self.targets(reference, referrer, subject):
            try:
                entity = await load(target.registry, target.xid)
            except SourceUnavailable as exc:
                reasons.append(exc.reason)
                continue
            reason = self.mismatch(entity, target, expect)
            if reason is None and entity is not None:
                return entity
            reasons.append(reason or "")
        raise self.error(reference, referrer, subject, "; ".join(reasons))

    @staticmethod
    def mismatch(entity: Entity | None, target: Target, expect: Sequence[str] | None = None) -> str | None:
        """Why ``entity``, loaded for ``target``, is not what the reference wants (``None``: it is)."""
        if entity is None:
            return f"registry {target.registry!r} has no {target.xid}"
        if expect is not None and not any(entity.ctype == e or entity.ctype.endswith("/" + e) for e in expect):
            return f"{target.xid} in registry {target.registry!r} is not of {' or '.join(expect)}"
        return None

    def error(self, reference: Any, referrer: str, subject: str, reason: str) -> XRegistryError:
        """``unresolved_reference`` of ``reference`` made by ``subject`` in registry ``referrer``."""
        return XRegistryError("unresolved_reference", subject, reference=reference, registry=referrer, detail=reason)

