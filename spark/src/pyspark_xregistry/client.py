"""A small, synchronous GraphQL client for the gateway: the only module that knows query text.

:class:`GraphQLTransport` posts one query with a bearer token, a timeout and retries (connection
errors, timeouts, HTTP 429 and 5xx; exponential back-off honouring ``Retry-After``).
:class:`GatewayClient` puts the data source's questions to the gateway's GraphQL API — the
current revision, the registries, the groups of a type with their child counts, one page of
entities, one page of changes — and answers with plain Python values.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

#: HTTP statuses worth retrying (the request may succeed later).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class GatewayError(RuntimeError):
    """The gateway answered with GraphQL errors, or could not be reached after every retry.
    ``codes``: the errors' ``extensions.code`` values."""

    def __init__(self, message: str, codes: tuple[str, ...] = (), *, cost_ratio: float | None = None) -> None:
        super().__init__(message)
        self.codes = codes
        #: For ``QUERY_TOO_COSTLY``: the gateway's cost ceiling over the operation's estimated cost.
        self.cost_ratio = cost_ratio


class CheckpointMismatch(GatewayError):
    """A checkpoint (a revision to continue from) was taken from another instance of the
    registry — restored from a backup, rebuilt by an import, another environment — so its
    revisions mean something else there: continuing would skip or repeat changes."""


#: The ``extensions.code`` of a change feed refused for a checkpoint of another instance.
INSTANCE_MISMATCH = "instance_mismatch"
#: The extensions.code of an operation the gateway refuses as too costly (fields times page sizes).
TOO_COSTLY = "QUERY_TOO_COSTLY"


@dataclass(frozen=True)
class ClientConfig:
    """Where and how to reach the gateway (picklable: it travels to every Spark task)."""

    url: str
    token: str | None = None
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    page_size: int = 500


class GraphQLTransport:
    """POSTs GraphQL requests; one ``httpx.Client`` (connection pool) per transport."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        headers = {"accept": "application/json"}
        if config.token:
            headers["authorization"] = f"Bearer {config.token}"
        self._http = httpx.Client(timeout=config.timeout, headers=headers)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> GraphQLTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of one GraphQL request; raises :class:`GatewayError` on errors."""
        body = {"query": query, "variables": variables or {}}
        attempt = 0
        while True:
            try:
                resp = self._http.post(self.config.url, json=body)
            except httpx.TransportError as exc:
                if attempt >= self.config.retries:
                    raise GatewayError(f"gateway unreachable at {self.config.url}: {exc}") from exc
                self._sleep(attempt, None)
                attempt += 1
                continue
            if resp.status_code in RETRY_STATUSES and attempt < self.config.retries:
                self._sleep(attempt, resp.headers.get("retry-after"))
                attempt += 1
                continue
            return self._data(resp)

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = self.config.backoff * (2 ** attempt)
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), 60.0))
            except ValueError:
                pass
        time.sleep(delay)

    @staticmethod
    def _data(resp: httpx.Response) -> dict[str, Any]:
        try:
            payload = resp.json()
        except ValueError:
            raise GatewayError(f"gateway answered HTTP {resp.status_code} without JSON: {resp.text[:200]}") from None
        errors = payload.get("errors") if isinstance(payload, dict) else None
        if errors:
            messages = "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors)
            codes = tuple(str(code) for e in errors if isinstance(e, dict)
                          for code in [(e.get("extensions") or {}).get("code")] if code)
            error = CheckpointMismatch if INSTANCE_MISMATCH in codes else GatewayError
            suffix = f" [{', '.join(codes)}]" if codes else ""
            raise error(f"gateway GraphQL error (HTTP {resp.status_code}): {messages}{suffix}", codes,
                        cost_ratio=_cost_ratio(errors))
        if resp.status_code >= 400 or not isinstance(payload, dict) or payload.get("data") is None:
            raise GatewayError(f"gateway answered HTTP {resp.status_code}: {resp.text[:200]}")
        return payload["data"]


def _cost_ratio(errors: list[Any]) -> float | None:
    for e in errors:
        ext = (e.get("extensions") or {}) if isinstance(e, dict) else {}
        if ext.get("code") == TOO_COSTLY and isinstance(ext.get("cost"), int | float) and ext["cost"] > 0 \
                and isinstance(ext.get("maxCost"), int | float):
            return float(ext["maxCost"]) / float(ext["cost"])
    return None


# -- the questions the data source asks ---------------------------------------------------------

_PAGE_INFO = "pageInfo { hasNextPage endCursor }"
#: What a resource or version row needs: its declared view, its revision, a message's materialised attributes.
_ROW = "json revision ... on MessageDefinition { effective }"

REGISTRIES = "query Registries { registries { registryid revision instanceId } }"
#: The same, for a gateway that does not report registry instance ids yet.
REGISTRIES_WITHOUT_INSTANCE = "query Registries { registries { registryid revision } }"

#: One page of the groups of a type, with each group's cursor (and view, for child counts).
GROUP_CURSORS = """
query GroupCursors($r: String!, $v: Int!, $t: String!, $f: Filter, $n: Int!, $a: String, $views: Boolean!) {
  registry(id: $r, asOf: $v) {
    groups(groupType: $t, filter: $f, first: $n, after: $a) {
      edges { cursor node { xid json @include(if: $views) } }
      %s
    }
  }
}""" % _PAGE_INFO

#: Groups themselves: a page range of groups.
GROUPS = """
query Groups($r: String!, $v: Int!, $t: String!, $f: Filter, $n: Int!, $a: String) {
  registry(id: $r, asOf: $v) {
    groups(groupType: $t, filter: $f, first: $n, after: $a) { nodes { json revision } %s }
  }
}""" % _PAGE_INFO

#: Resources of a page range of groups: the first page of each group's resources.
RESOURCES = """
query Resources($r: String!, $v: Int!, $t: String!, $gf: Filter, $n: Int!, $a: String,
                $rt: String!, $f: Filter, $p: Int!) {
  registry(id: $r, asOf: $v) {
    groups(groupType: $t, filter: $gf, first: $n, after: $a) {
      nodes { xid resources(resourceType: $rt, filter: $f, first: $p) { nodes { %s } %s } }
    }
  }
}""" % (_ROW, _PAGE_INFO)

#: The next page of one group's resources.
MORE_RESOURCES = """
query MoreResources($r: String!, $v: Int!, $x: String!, $rt: String!, $f: Filter, $p: Int!, $a: String) {
  registry(id: $r, asOf: $v) {
    lookup(xid: $x) {
      ... on Group { resources(resourceType: $rt, filter: $f, first: $p, after: $a) { nodes { %s } %s } }
    }
  }
}""" % (_ROW, _PAGE_INFO)

#: Versions of the resources of a page range of groups (first page of each level).
VERSIONS = """
query Versions($r: String!, $v: Int!, $t: String!, $gf: Filter, $n: Int!, $a: String,
               $rt: String!, $f: Filter, $p: Int!) {
  registry(id: $r, asOf: $v) {
    groups(groupType: $t, filter: $gf, first: $n, after: $a) {
      nodes { xid resources(resourceType: $rt, first: $p) {
        nodes { xid versions(filter: $f, first: $p) { nodes { %s } %s } } %s } }
    }
  }
}""" % (_ROW, _PAGE_INFO, _PAGE_INFO)

#: The next page of one group's resources, with the first page of their versions.
MORE_VERSIONED_RESOURCES = """
query MoreVersionedResources($r: String!, $v: Int!, $x: String!, $rt: String!, $f: Filter, $p: Int!, $a: String) {
  registry(id: $r, asOf: $v) {
    lookup(xid: $x) {
      ... on Group { resources(resourceType: $rt, first: $p, after: $a) {
        nodes { xid versions(filter: $f, first: $p) { nodes { %s } %s } } %s } }
    }
  }
}""" % (_ROW, _PAGE_INFO, _PAGE_INFO)

#: The next page of one resource's versions.
MORE_VERSIONS = """
query MoreVersions($r: String!, $v: Int!, $x: String!, $f: Filter, $p: Int!, $a: String) {
  registry(id: $r, asOf: $v) {
    lookup(xid: $x) { ... on Resource { versions(filter: $f, first: $p, after: $a) { nodes { %s } %s } } }
  }
}""" % (_ROW, _PAGE_INFO)

#: One page of the change feed between two revisions.
CHANGES = """
query Changes($r: String!, $v: Int!, $s: Int!, $c: [String!], $p: Int!, $a: String) {
  registry(id: $r, asOf: $v) {
    changes(since: $s, until: $v, collections: $c, first: $p, after: $a) {
      nodes { xid type revision node { json ... on MessageDefinition { effective } } }
      %s
    }
  }
}""" % _PAGE_INFO

#: The same, refused by the gateway (``instance_mismatch``) unless the registry is instance ``$i``.
CHANGES_OF_INSTANCE = CHANGES.replace("$a: String)", "$a: String, $i: String)").replace(
    "after: $a)", "after: $a, instanceId: $i)")


#: Entity documents of the change feed (``instanceId`` checked): a Resource's view with its ``meta``.
DOCUMENTS = CHANGES_OF_INSTANCE.replace("node { json ... on MessageDefinition { effective } }",
                                        "node { json ... on Resource { meta { json } } }").replace(
    "query Changes(", "query Documents(")


@dataclass(frozen=True)
class RegistryState:
    """A registry as the gateway serves it now: its revision and its instance id (``None``: the
    gateway does not say — a remote registry, or a gateway that predates instance ids)."""

    revision: int
    instance: str | None


@dataclass(frozen=True)
class GroupRef:
    """A group as listed for planning: the cursor *before* it, its id and how many children it has."""

    after: str | None
    id: str
    children: int


@dataclass(frozen=True)
class ChangeRow:
    """One entry of the change feed: ``upserted`` (with the entity's view) or ``deleted``."""

    xid: str
    change: str
    revision: int
    view: dict[str, Any] | None
    #: A message's materialised attributes (its ``basemessageuri`` chain merged); ``None`` otherwise.
    attributes: dict[str, Any] | None = None


#: An entity as read: its xRegistry JSON view (what it declares), the revision that wrote it
#: (``None``: a remote's) and, for a message, its materialised attributes (else ``None``).
Node = tuple[dict[str, Any], "int | None", "dict[str, Any] | None"]


def _nodes(conn: dict[str, Any]) -> list[Node]:
    return [(n["json"], n.get("revision"), n.get("effective")) for n in conn["nodes"]]


def _filter(raw: list[str] | None) -> dict[str, Any] | None:
    return {"raw": raw} if raw else None


class GatewayClient:
    """The gateway's GraphQL API as the data source needs it. Entities come back as :data:`Node`
    pairs: their xRegistry JSON views (plain dicts) and the revisions that wrote them."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.transport = GraphQLTransport(config)
        #: Page sizes of ``$p`` that fit the gateway's cost ceiling, per query (see :meth:`_within_cost`).
        self._fitted: dict[str, int] = {}

    def close(self) -> None:
        """Release the connection pool."""
        self.transport.close()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _registry(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        reg = self._within_cost(query, variables)["registry"]
        if reg is None:
            raise GatewayError(f"the gateway has no registry {variables['r']!r}")
        return reg

    def _within_cost(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """Run ``query``; when the gateway refuses it as too costly (``QUERY_TOO_COSTLY``: fields ×
        page sizes above its ceiling), ask again with smaller pages of ``$p`` — every page is
        read on by its cursor, so only the number of requests changes — and keep that size for
        the next requests of the same query."""
        levels = query.count("first: $p")
        if levels and "p" in variables and query in self._fitted:
            variables = variables | {"p": min(variables["p"], self._fitted[query])}
        while True:
            try:
                return self.transport.execute(query, variables)
            except GatewayError as exc:
                if exc.cost_ratio is None or not levels or variables.get("p", 1) <= 1:
                    raise
                smaller = max(1, min(variables["p"] - 1, int(variables["p"] * (exc.cost_ratio ** (1 / levels)) * 0.9)))
                self._fitted[query] = smaller
                variables = variables | {"p": smaller}

    def registries(self) -> dict[str, int]:
        """Every registry the gateway serves, with its current revision."""
        return {r: state.revision for r, state in self.registry_states().items()}

    def registry_states(self) -> dict[str, RegistryState]:
        """Every registry the gateway serves, with its current revision and instance id."""
        try:
            data = self.transport.execute(REGISTRIES)
        except GatewayError as exc:
            if "instanceId" not in str(exc):
                raise
            data = self.transport.execute(REGISTRIES_WITHOUT_INSTANCE)  # a gateway without instance ids
        return {r["registryid"]: RegistryState(int(r["revision"]), r.get("instanceId")) for r in data["registries"]}

    def group_refs(
        self, registry: str, revision: int, gtype: str, *, raw: list[str] | None, child_type: str | None,
    ) -> list[GroupRef]:
        """Every group of ``gtype`` (matching ``raw``) at ``revision``, in order, with the cursor
        before it and its number of ``child_type`` children (1 when ``child_type`` is None)."""
        out: list[GroupRef] = []
        after = None
        while True:
            conn = self._registry(GROUP_CURSORS, {
                "r": registry, "v": revision, "t": gtype, "f": _filter(raw), "n": self.config.page_size,
                "a": after, "views": child_type is not None,
            })["groups"]
            for edge in conn["edges"]:
                node = edge["node"]
                children = int((node.get("json") or {}).get(f"{child_type}count") or 0) if child_type else 1
                out.append(GroupRef(after, node["xid"].rsplit("/", 1)[-1], children))
                after = edge["cursor"]
            if not conn["pageInfo"]["hasNextPage"] or not conn["edges"]:
                return out

    def groups(
        self, registry: str, revision: int, gtype: str, *, raw: list[str] | None, after: str | None, count: int,
    ) -> list[Node]:
        """The views (and revisions) of ``count`` groups from ``after`` on."""
        conn = self._registry(GROUPS, {"r": registry, "v": revision, "t": gtype, "f": _filter(raw), "n": count,
                                       "a": after})["groups"]
        return _nodes(conn)

    def resources(
        self, registry: str, revision: int, gtype: str, rtype: str, *, group_raw: list[str] | None,
        after: str | None, count: int, raw: list[str] | None,
    ) -> Iterator[list[Node]]:
        """Pages of the views (and revisions) of the ``rtype`` resources of ``count`` groups from ``after`` on."""
        p, f = self.config.page_size, _filter(raw)
        conn = self._registry(RESOURCES, {"r": registry, "v": revision, "t": gtype, "gf": _filter(group_raw),
                                          "n": count, "a": after, "rt": rtype, "f": f, "p": p})["groups"]
        for group in conn["nodes"]:
            page = group["resources"]
            yield _nodes(page)
            while page["pageInfo"]["hasNextPage"]:
                page = self._registry(MORE_RESOURCES, {"r": registry, "v": revision, "x": group["xid"], "rt": rtype,
                                                       "f": f, "p": p, "a": page["pageInfo"]["endCursor"]})
                page = page["lookup"]["resources"]
                yield _nodes(page)

    def versions(
        self, registry: str, revision: int, gtype: str, rtype: str, *, group_raw: list[str] | None,
        after: str | None, count: int, raw: list[str] | None,
    ) -> Iterator[list[Node]]:
        """Pages of the views (and revisions) of the versions of the ``rtype`` resources of ``count`` groups."""
        p, f = self.config.page_size, _filter(raw)
        conn = self._registry(VERSIONS, {"r": registry, "v": revision, "t": gtype, "gf": _filter(group_raw),
                                         "n": count, "a": after, "rt": rtype, "f": f, "p": p})["groups"]
        for group in conn["nodes"]:
            resources = group["resources"]
            while True:
                for resource in resources["nodes"]:
                    page = resource["versions"]
                    yield _nodes(page)
                    while page["pageInfo"]["hasNextPage"]:
                        page = self._registry(MORE_VERSIONS, {"r": registry, "v": revision, "x": resource["xid"],
                                                              "f": f, "p": p, "a": page["pageInfo"]["endCursor"]})
                        page = page["lookup"]["versions"]
                        yield _nodes(page)
                if not resources["pageInfo"]["hasNextPage"]:
                    break
                resources = self._registry(MORE_VERSIONED_RESOURCES, {
                    "r": registry, "v": revision, "x": group["xid"], "rt": rtype, "f": f, "p": p,
                    "a": resources["pageInfo"]["endCursor"]})["lookup"]["resources"]

    def changes(
        self, registry: str, revision: int, since: int, collections: list[str] | None, instance: str | None = None,
        *, documents: bool = False,
    ) -> Iterator[list[ChangeRow]]:
        """Pages of the entities of ``collections`` (``None``: every entity) written after ``since`` up to ``revision``;
        with ``instance``, refused (:class:`CheckpointMismatch`) unless the registry is that instance;
        with ``documents`` (and ``instance``) a Resource's view holds its ``meta``."""
        after = None
        query = CHANGES if instance is None else DOCUMENTS if documents else CHANGES_OF_INSTANCE
        while True:
            variables = {"r": registry, "v": revision, "s": since, "c": collections, "p": self.config.page_size,
                         "a": after} | ({"i": instance} if instance is not None else {})
            conn = self._registry(query, variables)["changes"]
            if documents:  # the document of a Resource holds its meta
                for n in conn["nodes"]:
                    node = n.get("node") or {}
                    if isinstance(node.get("json"), dict) and isinstance(node.get("meta"), dict):
                        node["json"] = {**node["json"], "meta": node["meta"].get("json")}
            yield [ChangeRow(n["xid"], str(n["type"]).lower(), int(n["revision"]), (n.get("node") or {}).get("json"),
                             (n.get("node") or {}).get("effective")) for n in conn["nodes"]]
            if not conn["pageInfo"]["hasNextPage"] or not conn["nodes"]:
                return
            after = conn["pageInfo"]["endCursor"]
