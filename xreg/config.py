"""Gateway settings: one object, from ``XREG_*`` environment variables and an optional YAML file.

Precedence (highest first): explicit keyword arguments, environment variables, the YAML file
named by ``XREG_CONFIG`` (or passed as ``config``: ``load_settings(config=path)``, ``--config``
on the CLI), then the defaults below. Every field is documented in docs/configuration.md.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, YamlConfigSettingsSource

from xreg.ids import id_problem
from xreg.model.modelsource import ModelLimits

#: Methods a browser may use cross-origin by default (the HTTP API's and GraphQL's).
CORS_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
#: Request headers allowed cross-origin by default: credentials and bodies, the headers Apollo
#: Client and urql send, and conditional requests (the HTTP API's ``xRegistry-*`` headers are
#: added from the model, see ``gateway/cors.py``).
CORS_HEADERS = (
    "Authorization", "Content-Type", "Accept", "If-None-Match", "If-Match", "X-Request-Id",
    "apollographql-client-name", "apollographql-client-version", "apollo-require-preflight",
    "x-apollo-operation-name", "graphql-client-name", "graphql-client-version",
)


class ApiKey(BaseModel):
    """A static API key, stored as the SHA-256 hex digest of the key (never the key itself)."""

    model_config = {"extra": "forbid"}

    name: str = Field(description="Who holds the key (appears in logs instead of the key).")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="hex SHA-256 of the key")
    scopes: list[str] = Field(default_factory=lambda: ["read"],
                              description="read, write and/or the trusted_documents_bypass_scope")


class RegistryAuth(BaseModel):
    """What the gateway sends a remote registry to authenticate (secrets never appear in logs).

    A bearer token comes from ``bearer`` (inline, best set from the environment), ``bearer_file``
    (a mounted secret, re-read on reload) or ``bearer_env`` (the name of an environment
    variable); ``basic_username`` / ``basic_password`` give HTTP Basic; ``headers`` adds others
    (``X-Api-Key``). ``forward`` passes the caller's own ``Authorization`` header instead, and
    then cached answers are kept per caller.
    """

    model_config = {"extra": "forbid"}

    bearer: SecretStr | None = None
    bearer_file: Path | None = None
    bearer_env: str | None = None
    basic_username: str | None = None
    basic_password: SecretStr | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    forward: bool = False

    @model_validator(mode="after")
    def _one_scheme(self) -> RegistryAuth:
        given = [n for n in ("bearer", "bearer_file", "bearer_env", "basic_username", "forward") if getattr(self, n)]
        if len(given) > 1:
            raise ValueError("auth: choose one of bearer, bearer_file, bearer_env, basic_username, forward "
                             f"(got {', '.join(given)})")
        if (self.basic_username is None) != (self.basic_password is None):
            raise ValueError("auth: basic_username and basic_password go together")
        return self

    def resolved_headers(self) -> dict[str, str]:
        """The headers to send (the secret read now); ``ValueError`` when a secret is missing."""
        import base64

        out = {k: v.get_secret_value() for k, v in self.headers.items()}
        token = self.bearer.get_secret_value() if self.bearer else None
        if self.bearer_file is not None:
            try:
                token = self.bearer_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ValueError(f"auth.bearer_file {self.bearer_file}: {exc.strerror or exc}") from None
        if self.bearer_env is not None:
            token = os.environ.get(self.bearer_env)
            if not token:
                raise ValueError(f"auth.bearer_env: the environment variable {self.bearer_env} is not set")
        if token:
            out["Authorization"] = f"Bearer {token}"
        if self.basic_username is not None and self.basic_password is not None:
            pair = f"{self.basic_username}:{self.basic_password.get_secret_value()}".encode()
            out["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return out


class RegistryTimeouts(BaseModel):
    """Timeouts of requests to a remote registry, in seconds."""

    model_config = {"extra": "forbid"}

    connect: float = Field(2.0, gt=0, description="Establishing a connection.")
    read: float = Field(10.0, gt=0, description="Waiting for each part of the answer.")
    total: float = Field(30.0, gt=0, description="One request as a whole, body included (per attempt).")


class BreakerSettings(BaseModel):
    """The circuit breaker of a remote registry."""

    model_config = {"extra": "forbid"}

    failures: int = Field(5, ge=1, description="Consecutive failed requests that open the circuit.")
    reset_seconds: float = Field(30.0, gt=0, description="How long it stays open before one trial request.")


#: The gateway's own store, a remote xRegistry HTTP API, or a document served read-only.
RegistryKind = Literal["local", "xregistry", "file"]


class RegistryConfig(BaseModel):
    """One registry the gateway federates (an entry of ``registries:``)."""

    model_config = {"extra": "forbid"}

    id: str = Field(description="The registry's id in the gateway (GraphQL registry ids, global ids).")
    kind: RegistryKind = Field(
        description="local (the gateway's own store), xregistry (an HTTP API), file (a document).")
    url: str | None = Field(None, description="xregistry: the API's root URL; file: the document's URL.")
    path: Path | None = Field(None, description="file: the document's path (relative: to the settings file).")
    base_url: str | None = Field(None, description="Another URL references use for this registry (its public URL).")
    priority: int = Field(100, description="Resolution order when several registries match a reference: lower first.")
    auth: RegistryAuth = Field(default_factory=RegistryAuth)
    cache_ttl: float = Field(30.0, ge=0, description="Seconds an answer is fresh (0: not cached).")
    stale_while_revalidate: float = Field(
        30.0, ge=0, description="Seconds after cache_ttl a stale answer is served while it is fetched anew.")
    stale_if_error: float = Field(
        3600.0, ge=0, description="Seconds after cache_ttl a stale answer is served when the registry fails.")
    timeouts: RegistryTimeouts = Field(default_factory=RegistryTimeouts)
    retries: int = Field(2, ge=0, le=10, description="Retries after connection errors, 429 and 5xx.")
    backoff_seconds: float = Field(0.2, gt=0, description="First back-off delay (doubled each retry, jittered).")
    max_backoff_seconds: float = Field(5.0, gt=0, description="Longest delay, Retry-After included (longer: no retry).")
    breaker: BreakerSettings = Field(default_factory=BreakerSettings)
    probe_seconds: float = Field(30.0, ge=0, description=(
        "xregistry: seconds between health probes (a GET of its root, sent only when nothing else was asked "
        "of it meanwhile), so that its status follows it while idle; 0: none."))
    max_connections: int = Field(20, ge=1, description="Connection pool size.")
    page_size: int = Field(500, ge=1, description=(
        "?limit asked of the remote when reading collections (only of a remote declaring pagination)."))
    max_pages: int = Field(2000, ge=1, description=(
        "Most pages (Link: rel=next) read for one collection; a longer chain fails the read."))
    snapshot_ttl: float = Field(
        3600.0, gt=0, description="Seconds a snapshot (a revision minted for this remote) lives after its last use.")
    snapshot_max: int = Field(16, ge=1, description="Most live snapshots; the least recently used is dropped first.")
    max_response_bytes: int = Field(32 * 1024 * 1024, ge=1024, description="Largest answer accepted.")
    follow_events: bool = Field(True, description=(
        "xregistry: follow the remote's event log when it offers one (GET /events, as this gateway does) and "
        "drop cached answers when it changes, instead of waiting for cache_ttl (docs/federation.md)."))
    events_url: str | None = Field(None, description=(
        "xregistry: the remote's event log (default: `events` beside the registry's root, `<url>/../events`)."))
    events_poll_seconds: float = Field(2.0, gt=0, le=3600, description="How often the remote's event log is read.")

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        problem = id_problem(value)
        if problem:
            raise ValueError(f"registry id {value!r}: {problem}")
        return value

    @field_validator("url", "base_url", "events_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s) URL with a host")
        if parts.query or parts.fragment:
            raise ValueError(f"{value!r}: a registry URL has no query or fragment")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check_kind(self) -> RegistryConfig:
        where = f"registry {self.id!r} (kind {self.kind})"
        if self.kind == "local" and (self.url or self.path):
            raise ValueError(f"{where}: the local registry takes no url or path (it is the gateway's own store)")
        if self.kind == "xregistry" and (not self.url or self.path):
            raise ValueError(f"{where}: needs url (the xRegistry API's root URL), and no path")
        if self.kind == "file" and (self.url is None) == (self.path is None):
            raise ValueError(f"{where}: needs exactly one of path or url")
        if self.auth.forward and self.kind != "xregistry":
            raise ValueError(f"{where}: auth.forward only applies to xregistry registries")
        return self

    @property
    def match_urls(self) -> list[str]:
        """The URLs that references to this registry start with."""
        urls = [self.base_url] + ([self.url] if self.kind == "xregistry" else [])
        return list(dict.fromkeys(u for u in urls if u))


_ENV_REGISTRY = re.compile(r"XREG_REGISTRIES__(?P<id>[A-Z0-9_]+?)__(?P<path>[A-Z0-9_]+(?:__[A-Z0-9_]+)*)")


def _env_key(registry_id: str) -> str:
    """How a registry id appears in environment variable names (``team-a.prod`` → ``TEAM_A_PROD``)."""
    return re.sub(r"[^A-Z0-9]", "_", registry_id.upper())


def apply_registry_env(registries: list[Any], environ: dict[str, str]) -> list[Any]:
    """Override fields of listed registries from ``XREG_REGISTRIES__<ID>__<FIELD>[__<SUBFIELD>]``
    variables (``XREG_REGISTRIES__CONTOSO__AUTH__BEARER=…``); a variable naming no listed
    registry is an error."""
    entries = [dict(e) if isinstance(e, dict) else e.model_dump(exclude_unset=True) for e in registries]
    by_key = {_env_key(str(e.get("id", ""))): e for e in entries}
    for name, value in sorted(environ.items()):
        m = _ENV_REGISTRY.fullmatch(name)
        if not m:
            continue
        entry = by_key.get(m.group("id"))
        if entry is None:
            raise ValueError(f"{name} names no listed registry (listed: {', '.join(by_key) or 'none'})")
        *heads, last = m.group("path").lower().split("__")
        node = entry
        for head in heads:
            child = node.get(head)
            if isinstance(child, BaseModel):
                child = child.model_dump(exclude_unset=True)
            child = dict(child) if isinstance(child, dict) else {}
            node[head] = child
            node = child
        node[last] = value
    return entries


class Settings(BaseSettings):
    """All settings of the gateway."""

    model_config = SettingsConfigDict(env_prefix="XREG_", extra="forbid", validate_default=True)

    data_dir: Path = Field(Path("./data"), description="Directory for the embedded store and other local state.")
    store_url: str = Field("", description="sqlite:///path/to/file.db (default: <data_dir>/registry.db) or mongodb://…")
    registry_id: str = Field("xregistry", description="The registryid of the local registry.")
    registry_name: str = Field("xRegistry gateway", description="The name of the local registry.")
    base_url: str = Field("http://127.0.0.1:8080/registry",
                          description="Public URL of the xRegistry HTTP API, used in self URLs.")
    history_keep_revisions: int | None = Field(
        None, ge=1,
        description="Keep superseded states and tombstones for this many revisions (unset: no limit by count)."
    )
    history_keep_days: float | None = Field(
        30.0, gt=0, description="Keep superseded states and tombstones this many days (unset: no limit by age)."
    )
    events_poll_seconds: float = Field(
        1.0, gt=0, le=3600,
        description="How often the event feed polls the store's revision for commits of other processes "
                    "(docs/events.md).")
    rematerialise_inline: int = Field(
        100, ge=0, description="Dependents of a message re-materialised in the write's own commit; a write with "
                               "more leaves them all to the background worker (docs/scale.md).")
    rematerialise_batch: int = Field(100, ge=1, description="Dependents the background worker re-materialises "
                                                            "per commit.")
    rematerialise_poll_seconds: float = Field(
        1.0, gt=0, description="How often the re-materialisation worker looks for work of other processes "
                               "(writes in this process wake it at once).")
    config: Path | None = Field(None, description="YAML settings file (XREG_CONFIG).")
    restore_max_line_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="Longest line `restore` reads from a backup (decompressed).")
    restore_max_bytes: int = Field(
        8 * 1024 * 1024 * 1024, ge=1024, description="Most bytes `restore` reads from a backup (decompressed).")
    restore_max_rematerialise: int = Field(
        10_000, ge=0, description="Most pending re-materialisation items `restore` takes from a backup.")

    # -- HTTP -----------------------------------------------------------------------------------
    registry_prefix: str = Field("/registry", description="Path prefix of the xRegistry HTTP API.")
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="Largest accepted request body.")
    max_url_bytes: int = Field(8192, ge=256, description="Longest accepted request target (path and query), in bytes.")
    max_header_bytes: int = Field(16384, ge=1024,
                                  description="Largest accepted header section (names and values), in bytes.")
    max_header_count: int = Field(100, ge=16, description="Most header fields a request may carry.")
    forwarded_allow_ips: list[str] = Field(
        default_factory=list,
        description="Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed: addresses or networks "
                    "('10.0.0.0/8'), '*' for any peer; empty: none (gateway/forwarded.py).")
    page_size_default: int = Field(100, ge=1,
                                   description="Page size when a client asks for pagination without a limit.")
    page_size_max: int = Field(1000, ge=1, description="Largest page a client may ask for.")
    model_max_bytes: int = Field(ModelLimits.max_bytes, ge=1024,
                                 description="Largest model document (modelsource) accepted, in bytes of compact JSON.")
    model_max_groups: int = Field(ModelLimits.max_groups, ge=1, description="Most group types a model may define.")
    model_max_resources: int = Field(ModelLimits.max_resources, ge=1,
                                     description="Most resource types a model may define (all groups).")
    model_max_attributes: int = Field(ModelLimits.max_attributes, ge=1,
                                      description="Most attribute definitions a model may hold (nested ones included).")
    debug: bool = Field(False, description="Show internal error details to clients (never in production).")
    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field(
        "info", description="Level of the gateway's own loggers (xreg.*) and uvicorn's when serving.")
    log_format: Literal["json", "text", "auto"] = Field(
        "auto", description="Log lines as JSON objects or plain text; auto: text on a terminal, else JSON.")

    # -- operations -----------------------------------------------------------------------------
    shutdown_grace_seconds: float = Field(
        30.0, ge=0, description="On SIGTERM, how long requests in flight may take to finish before they are cut.")
    gc_freeze: bool = Field(
        True, description="After start-up, move what is loaded into the garbage collector's permanent generation "
                          "(gc.freeze): collections no longer walk it.")
    gc_gen0_threshold: int = Field(
        5000, ge=1, description="The garbage collector's gen-0 threshold after start-up (CPython's is 700): a "
                                "GraphQL response's short-lived objects mostly die before a collection walks them; "
                                "larger values collect less often but keep more cyclic garbage in memory.")
    malloc_trim_seconds: float = Field(
        60.0, ge=0, description="Every this many seconds, hand freed heap pages back to the system (glibc's "
                                "malloc_trim, in a worker thread); 0: never. Keeps a long-running process's RSS "
                                "at what it uses (bench/bench_soak.py).")
    otel_enabled: bool = Field(
        False, description="Record OpenTelemetry traces (also on when OTEL_TRACES_EXPORTER or an OTLP endpoint is "
                           "set).")
    otel_service_name: str = Field(
        "xreg-gateway", description="service.name of the traces (OTEL_SERVICE_NAME wins when set).")

    # -- authentication -------------------------------------------------------------------------
    anonymous_read: bool = Field(True, description="Allow reads without credentials.")
    api_keys: list[ApiKey] = Field(default_factory=list, description="Static API keys (hashed).")
    jwt_secret: SecretStr | None = Field(None, description="Shared secret for HS256/384/512 JWTs.")
    jwt_jwks_url: str | None = Field(None, description="JWKS URL for RS/ES-signed JWTs.")
    jwt_jwks_file: Path | None = Field(None, description="JWKS file for RS/ES-signed JWTs.")
    jwt_issuer: str | None = Field(None, description="Required iss claim.")
    jwt_audience: str | None = Field(None, description="Required aud claim.")
    jwt_scope_claim: str = Field("scope", description="Claim holding the space-separated scopes.")

    # -- GraphQL --------------------------------------------------------------------------------
    graphql_max_depth: int = Field(12, ge=1, description="Deepest selection a query may have.")
    graphql_max_tokens: int = Field(4000, ge=10, description="Most tokens a query document may have.")
    graphql_max_aliases: int = Field(30, ge=0, description="Most aliases a query may use.")
    graphql_introspection: bool = Field(True, description="Allow schema introspection.")
    graphql_max_page_size: int = Field(500, ge=1, description="Largest first/last a connection accepts.")
    graphql_max_cost: int = Field(
        500_000, ge=1, description="Highest estimated cost of one operation (fields × page sizes, resolvers/cost.py): "
                                   "about twice a UI's page of 100 endpoints with their groups' first 50 messages "
                                   "and schema documents (about 228,000).")
    graphql_pacing_slice_ms: float = Field(
        4.0, ge=0, description="Longest stretch (ms) a GraphQL list completion holds the event loop before it lets "
                               "other work run (resolvers/pacing.py; 0: lists complete in one stretch).")

    # -- untrusted content: the bounded evaluator (xreg/formats/evaluator.py) ---------------------
    eval_max_document_bytes: int = Field(
        1 << 20, ge=1024, description="Largest schema document the gateway validates or compares (bytes); a larger "
                                      "one is refused.")
    eval_max_payload_bytes: int = Field(
        1 << 20, ge=1024, description="Largest payload validateMessage checks (bytes); a larger one is refused.")
    eval_max_depth: int = Field(
        64, ge=8, le=256, description="Deepest nesting evaluated: JSON objects and arrays, XML elements.")
    eval_cpu_seconds: int = Field(5, ge=1, description="CPU one evaluation may use before its worker is ended.")
    eval_wall_seconds: float = Field(
        10.0, gt=0, description="Time one evaluation may take before its worker is killed and replaced.")
    eval_memory_bytes: int = Field(
        1 << 30, ge=256 << 20, description="Address space of an evaluator worker process (RLIMIT_AS).")
    eval_workers: int = Field(2, ge=1, le=64, description="Evaluator worker processes (started on first use).")
    eval_queue_size: int = Field(
        16, ge=0, description="Evaluations that may wait for a free worker; more are refused at once "
                              "(server_busy: 503 + Retry-After).")
    eval_queue_seconds: float = Field(
        30.0, gt=0, description="How long an evaluation waits for a free worker before it is refused (503).")

    # -- overload: admission control and rate limiting --------------------------------------------
    admission_enabled: bool = Field(True, description="Bound the GraphQL operations and API requests at work.")
    admission_graphql_concurrency: int = Field(
        2, ge=1, description="GraphQL requests at work at once (their work is CPU-bound: about one per core).")
    admission_http_concurrency: int = Field(16, ge=1, description="xRegistry HTTP API requests at work at once.")
    admission_queue_size: int = Field(
        64, ge=0, description="Requests of each kind that may wait for a slot; more are refused at once (503).")
    admission_queue_timeout_seconds: float = Field(
        5.0, gt=0, description="How long a request waits for a slot before it is refused (503 + Retry-After).")
    subscriptions_max: int = Field(
        10_000, ge=1, description="GraphQL subscriptions open at once in one process (WebSocket and SSE); more are "
                                  "refused with server_busy.")
    subscription_buffer: int = Field(
        1000, ge=1, description="Events a subscriber may fall behind before it is disconnected as a slow consumer.")
    subscription_init_seconds: float = Field(
        30.0, gt=0, description="How long a WebSocket may stay open without its connection_init (then 4408).")
    rate_limit_enabled: bool = Field(False, description="Limit each caller's request rate (token buckets).")
    rate_limit_url: str = Field(
        "memory://", description="Where the buckets live: memory:// (per process) or redis://host:port/db (shared).")
    rate_limit_anonymous_rate: float = Field(
        100.0, ge=0, description="Points per second refilled for an anonymous caller (0: not limited).")
    rate_limit_anonymous_burst: float = Field(10_000.0, gt=0, description="Bucket size of an anonymous caller.")
    rate_limit_read_rate: float = Field(
        500.0, ge=0, description="Points per second for a caller with the read scope only (0: not limited).")
    rate_limit_read_burst: float = Field(50_000.0, gt=0, description="Bucket size of a reading caller.")
    rate_limit_write_rate: float = Field(
        1000.0, ge=0, description="Points per second for a caller with the write scope (0: not limited).")
    rate_limit_write_burst: float = Field(100_000.0, gt=0, description="Bucket size of a writing caller.")

    # -- browsers and HTTP caches ---------------------------------------------------------------
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins allowed to call /graphql, the registry API and discovery from a browser "
                    "(CORS; empty: off; '*': any origin, only without cors_allow_credentials).")
    cors_allow_credentials: bool = Field(
        False, description="Let browsers send cookies and TLS client certificates cross-origin (not needed "
                           "for an Authorization header).")
    cors_max_age: int = Field(600, ge=0, description="Seconds a browser may reuse a CORS preflight answer.")
    cors_allow_methods: list[str] = Field(
        default_factory=lambda: list(CORS_METHODS), description="Methods allowed cross-origin.")
    cors_allow_headers: list[str] = Field(
        default_factory=lambda: list(CORS_HEADERS), description="Request headers allowed cross-origin.")
    cors_expose_headers: list[str] = Field(
        default_factory=list, description="Response headers shown to cross-origin scripts, besides the "
                                          "gateway's own (ETag, X-Request-Id, Link, RateLimit-*, xRegistry-*, …).")
    http_cache_max_age: int = Field(
        0, ge=0, description="max-age of cacheable GET responses (0: no-cache, revalidate with the ETag each time).")
    apq_enabled: bool = Field(True, description="Accept Apollo's automatic persisted queries.")
    apq_ttl_seconds: float = Field(86400.0, gt=0, description="How long a registered persisted query is kept.")
    apq_max_bytes: int = Field(65536, ge=256, description="Longest query document kept as a persisted query.")
    apq_memory_entries: int = Field(
        10000, ge=1, description="Most persisted queries kept per process when cache_url is memory://.")
    apq_memory_bytes: int = Field(
        16 << 20, ge=256, description="Most bytes (UTF-8) of persisted query documents kept per process when "
                                      "cache_url is memory:// (least recently used dropped first).")
    trusted_documents: Path | None = Field(
        None, description="Allowlist of GraphQL operations (Apollo persisted query manifest or GraphQL "
                          "Codegen persisted-documents.json; relative: to the settings file); when set, "
                          "only listed operations run.")
    trusted_documents_bypass_scope: str | None = Field(
        None, description="Callers holding this scope may run any operation despite trusted_documents.")

    # -- outbound requests and webhooks (adapters/outbound.py, adapters/webhook_delivery.py) -----
    outbound_allow_loopback: bool = Field(
        False, description="Let webhook targets be loopback addresses (127.0.0.0/8, ::1, localhost); link-local, "
                           "unspecified and multicast addresses are always refused.")
    outbound_allow_private: bool = Field(
        True, description="Let webhook targets be private-network addresses (10/8, 172.16/12, 192.168/16, fc00::/7).")
    webhook_enabled: bool = Field(True, description="Deliver webhooks from this process (subscriptions are kept "
                                                    "either way).")
    webhook_admin_scope: str = Field(
        "webhooks", description="Scope that, with write, lets a caller manage webhook subscriptions.")
    webhook_admins: list[str] = Field(
        default_factory=list, description="Callers allowed to manage webhook subscriptions with the write scope alone "
                                          "(identities: key:<name>, jwt:<iss>|<sub>).")
    webhook_max_attempts: int = Field(
        8, ge=1, description="Attempts at one event before it becomes a dead letter.")
    webhook_backoff_seconds: float = Field(1.0, gt=0, description="First back-off delay after a failed delivery.")
    webhook_max_backoff_seconds: float = Field(
        300.0, gt=0, description="Longest back-off delay (doubled per attempt up to this, then jittered).")
    webhook_timeout_seconds: float = Field(10.0, gt=0, description="Deadline of one delivery request.")
    webhook_lease_seconds: float = Field(
        30.0, gt=0, description="How long a process holds a subscription between renewals; longer than the "
                                "delivery deadline, so no two processes deliver one subscription at once.")
    webhook_poll_seconds: float = Field(
        1.0, gt=0, description="How often due subscriptions are looked for (writes in this process wake it at once).")
    webhook_batch: int = Field(100, ge=1, description="Events read per subscription and turn.")
    webhook_concurrency: int = Field(8, ge=1, description="Subscriptions delivered at once by one process.")

    # -- federation -----------------------------------------------------------------------------
    registries: list[RegistryConfig] = Field(
        default_factory=list, description="Registries to federate; the local one is implicit when not listed.")
    cache_url: str = Field("memory://", description="memory:// (per process) or redis://[:password@]host:port/db.")
    cache_memory_entries: int = Field(
        10000, ge=1, description="Most remote answers kept per process when cache_url is memory:// (the "
                                 "one stored longest ago dropped first).")
    config_watch_seconds: float = Field(
        2.0, ge=0, description="How often the settings file is checked for changes (0: only on SIGHUP).")

    @field_validator("store_url")
    @classmethod
    def _check_store_url(cls, value: str) -> str:
        if value and not value.startswith(("sqlite:///", "mongodb://", "mongodb+srv://")):
            raise ValueError("store_url must start with sqlite:///, mongodb:// or mongodb+srv://")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _check_cors_origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            parts = urlsplit(origin)
            if origin != "*" and (parts.scheme not in ("http", "https") or not parts.hostname
                                  or parts.path or parts.query or parts.fragment):
                raise ValueError(f"cors_origins: {origin!r} is not an origin (scheme://host[:port], or *)")
        return [o.rstrip("/") for o in value]

    @model_validator(mode="after")
    def _check_browser_settings(self) -> Settings:
        if self.cors_allow_credentials and "*" in self.cors_origins:
            raise ValueError("cors_origins: '*' cannot be combined with cors_allow_credentials; list the origins")
        path = self.trusted_documents
        if path is not None and not path.is_absolute() and self.config is not None:
            self.trusted_documents = Path(self.config).parent / path  # like registries' paths
        return self

    @model_validator(mode="after")
    def _check_webhook_lease(self) -> Settings:
        if self.webhook_lease_seconds <= self.webhook_timeout_seconds:
            raise ValueError("webhook_lease_seconds must exceed webhook_timeout_seconds (a lease outlives a delivery)")
        return self

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _check_forwarded_allow_ips(cls, value: list[str]) -> list[str]:
        for entry in value:
            if entry != "*":
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    raise ValueError(f"forwarded_allow_ips: {entry!r} is not an address or a network "
                                     "(or '*')") from None
        return value

    @field_validator("rate_limit_url", "cache_url")
    @classmethod
    def _check_shared_url(cls, value: str, info: ValidationInfo) -> str:
        if value != "memory://" and urlsplit(value).scheme not in ("redis", "rediss"):
            raise ValueError(f"{info.field_name} must be memory:// or redis://host:port/db (rediss:// for TLS)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _registries_from_env(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(k.startswith("XREG_REGISTRIES__") for k in os.environ):
            data = {**data, "registries": apply_registry_env(list(data.get("registries") or []), dict(os.environ))}
        return data

    @model_validator(mode="after")
    def _check_registries(self) -> Settings:
        seen: dict[str, str] = {}
        for entry in self.registries:
            if entry.id.lower() in seen:
                raise ValueError(f"registries: the id {entry.id!r} is listed twice")
            seen[entry.id.lower()] = entry.id
            if entry.kind == "local" and entry.id != self.registry_id:
                raise ValueError(f"registries: the local registry is {self.registry_id!r} (registry_id), "
                                 f"not {entry.id!r}")
            if entry.path is not None and not entry.path.is_absolute() and self.config is not None:
                entry.path = Path(self.config).parent / entry.path
            if entry.path is not None and not entry.path.is_file():
                raise ValueError(f"registries: {entry.id!r}: the file {entry.path} does not exist")
        if self.registry_id.lower() in seen and seen[self.registry_id.lower()] != self.registry_id:
            raise ValueError(f"registries: {seen[self.registry_id.lower()]!r} clashes with the local registry's id")
        for entry in self.registries:
            if entry.id.lower() == self.registry_id.lower() and entry.kind != "local":
                raise ValueError(f"registries: {entry.id!r} is the local registry's id (registry_id); "
                                 "give the remote another id")
        return self

    @property
    def federated_registries(self) -> list[RegistryConfig]:
        """Every registry served, the local one included (first unless listed elsewhere)."""
        if any(e.kind == "local" for e in self.registries):
            return list(self.registries)
        return [RegistryConfig(id=self.registry_id, kind="local", base_url=self.base_url), *self.registries]

    @property
    def model_limits(self) -> ModelLimits:
        """The bounds of a model clients may install (``XREG_MODEL_MAX_*``)."""
        return ModelLimits(max_bytes=self.model_max_bytes, max_groups=self.model_max_groups,
                           max_resources=self.model_max_resources, max_attributes=self.model_max_attributes)

    @property
    def effective_store_url(self) -> str:
        """The store URL, defaulting to an SQLite file in the data directory."""
        return self.store_url or f"sqlite:///{self.data_dir / 'registry.db'}"

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        import os

        path = init_settings.init_kwargs.get("config") if hasattr(init_settings, "init_kwargs") else None
        path = path or os.environ.get("XREG_CONFIG")
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path:
            if not Path(path).is_file():
                raise FileNotFoundError(f"settings file not found: {path}")
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and YAML file), with ``overrides`` on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
