"""Authentication and authorisation of the gateway's callers (xRegistry HTTP API and GraphQL).

A caller presents ``Authorization: Bearer <token>``, where the token is either a static API key
(configured by its SHA-256 only) or a JWT, signed with the shared secret (HS256/384/512) or with
a key from a JWKS (file or URL; RS*, PS*, ES*, EdDSA). Without credentials the caller is the
anonymous principal, who may read when ``anonymous_read`` is on. Tokens never reach logs or
error messages.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
from starlette.requests import Request

from adapters.clock import SYSTEM_CLOCK, Clock
from xreg.config import Settings
from xreg.errors import GatewayError

log = logging.getLogger("xreg.auth")

ERROR_BASE = "https://xregistry.io/gateway/errors#"
REALM = "xregistry"
#: Clock skew tolerated on ``exp``, ``nbf`` and ``iat`` (seconds).
JWT_LEEWAY_SECONDS = 30.0
#: How long a fetched JWKS is trusted before it is fetched again.
JWKS_TTL_SECONDS = 600.0
#: Least time between two refetches caused by unknown ``kid`` values (or after a failed fetch).
JWKS_REFETCH_COOLDOWN_SECONDS = 10.0
#: Deadline of one JWKS fetch.
JWKS_FETCH_TIMEOUT_SECONDS = 5.0
#: Longest accepted bearer token.
MAX_TOKEN_LENGTH = 8192

_SCOPES = {"read": "read", "write": "write", "xregistry:read": "read", "xregistry:write": "write"}
_HMAC_ALGS = frozenset({"HS256", "HS384", "HS512"})
#: Signing algorithm prefix -> the JWK key type it needs.
_ASYMMETRIC_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_ASYMMETRIC_ALGS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})


def _now() -> float:
    return time.monotonic()


def hash_key(key: str) -> str:
    """The hex SHA-256 of an API key, as configured in ``api_keys[*].sha256``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _scopes(values: Any, extra: frozenset[str] = frozenset()) -> frozenset[str]:
    """Gateway scopes from a space-separated string or a list: ``read``, ``write`` and the
    configured ``extra`` scopes (``trusted_documents_bypass_scope``, ``webhook_admin_scope``);
    others are ignored."""
    if isinstance(values, str):
        values = values.split()
    if not isinstance(values, (list, tuple)):
        return frozenset()
    return frozenset(_SCOPES.get(v, v) for v in values if isinstance(v, str) and (v in _SCOPES or v in extra))


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``subject`` is "anonymous", the API key's name or the JWT ``sub``;
    ``issuer`` the JWT's ``iss`` (``None`` for the others, and for a JWT without one), ``expires``
    its ``exp``."""

    subject: str
    scopes: frozenset[str]
    via: str  # "anonymous" | "api-key" | "jwt"
    issuer: str | None = None
    #: When the credentials stop being valid (a JWT's ``exp``, epoch seconds); ``None``: never.
    #: Not part of who the principal is (equality).
    expires: float | None = field(default=None, compare=False)

    def can(self, scope: str) -> bool:
        """Whether the principal holds ``scope`` ("read" or "write")."""
        return scope in self.scopes

    @property
    def identity(self) -> str:
        """The caller in logs and rate-limit buckets, one namespace per kind of credential:
        ``anonymous``, ``key:<name>`` or ``jwt:<iss>|<sub>`` — a JWT whose ``sub`` is an API
        key's name (or another issuer's subject) is someone else."""
        if self.via == "api-key":
            return f"key:{self.subject}"
        if self.via == "jwt":
            return f"jwt:{self.issuer or ''}|{self.subject}"
        return "anonymous"


class AuthError(GatewayError):
    """A refused request: 401 ``unauthorized`` (no or bad credentials) or 403 ``forbidden``.

    ``error`` is the RFC 6750 error code for ``WWW-Authenticate`` (``invalid_token`` when
    credentials were presented and rejected, ``insufficient_scope`` on 403); ``scope`` the scope
    that was missing.
    """

    def __init__(self, status: int, title: str, detail: str | None = None, *,
                 error: str | None = None, scope: str | None = None) -> None:
        if status not in (401, 403):
            raise ValueError("AuthError status must be 401 or 403")
        self.status = status
        self.code = "unauthorized" if status == 401 else "forbidden"
        self.title = title
        self.detail = detail
        self.error = error or ("insufficient_scope" if status == 403 else None)
        self.scope = scope
        super().__init__(title)

    def headers(self) -> dict[str, str]:
        """Response headers: a ``WWW-Authenticate: Bearer`` challenge (RFC 6750)."""
        params = [f'realm="{REALM}"']
        if self.error:
            params.append(f'error="{self.error}"')
            if self.status == 401:
                params.append(f'error_description="{_quotable(self.title)}"')
        if self.scope and self.status == 403:
            params.append(f'scope="{_quotable(self.scope)}"')
        return {"WWW-Authenticate": "Bearer " + ", ".join(params)}

    def to_problem(self, instance: str | None = None) -> dict[str, Any]:
        """The RFC 9457 body; ``instance`` is the request path (also the ``subject``)."""
        body: dict[str, Any] = {"type": ERROR_BASE + self.code, "title": self.title, "status": self.status,
                                "subject": instance or "/"}
        if self.detail:
            body["detail"] = self.detail
        if instance:
            body["instance"] = instance
        return body

    def __repr__(self) -> str:
        return f"AuthError({self.status}, {self.title!r})"


def _quotable(text: str) -> str:
    """``text`` restricted to the characters RFC 6750 allows in a quoted parameter."""
    return "".join(c for c in text if " " <= c <= "~" and c not in '"\\')


class _KeySet:
    """A JWKS from a loader, cached for :data:`JWKS_TTL_SECONDS`, refetched once on an unknown kid."""

    def __init__(self, load: Callable[[], Awaitable[Any]], where: str) -> None:
        self._load = load
        self._where = where
        self._keys: dict[str | None, dict[str, Any]] = {}
        self._expires = float("-inf")
        self._last_forced = float("-inf")
        self._attempt = 0
        self._lock = asyncio.Lock()

    async def get(self, kid: str | None) -> dict[str, Any] | None:
        """The JWK for ``kid`` (the only key when the token names none), or None."""
        fetched = False
        if _now() >= self._expires:
            await self._refresh(self._attempt)
            fetched = True
        entry = self._select(kid)
        if entry is None and not fetched and _now() - self._last_forced >= JWKS_REFETCH_COOLDOWN_SECONDS:
            self._last_forced = _now()
            await self._refresh(self._attempt)
            entry = self._select(kid)
        return entry

    def _select(self, kid: str | None) -> dict[str, Any] | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self, attempt: int) -> None:
        async with self._lock:
            if attempt != self._attempt:  # another request loaded the set while this one waited
                return
            try:
                async with asyncio.timeout(JWKS_FETCH_TIMEOUT_SECONDS):
                    document = await self._load()
                self._keys = _parse_jwks(document)
            except (httpx.HTTPError, OSError, ValueError, TimeoutError) as exc:
                log.warning("JWKS from %s could not be loaded (%s: %s); keeping %d cached key(s)",
                            self._where, type(exc).__name__, exc, len(self._keys))
                self._expires = _now() + JWKS_REFETCH_COOLDOWN_SECONDS
            else:
                self._expires = _now() + JWKS_TTL_SECONDS
                log.debug("JWKS from %s loaded: %d key(s)", self._where, len(self._keys))
            finally:
                self._attempt += 1


def _parse_jwks(document: Any) -> dict[str | None, dict[str, Any]]:
    """Signature keys of a JWKS document by ``kid`` (symmetric and encryption keys are dropped)."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JWKS document (no 'keys' list)")
    keys = [k for k in document["keys"] if isinstance(k, dict) and k.get("kty") in ("RSA", "EC", "OKP")
            and k.get("use", "sig") == "sig"]
    by_kid = {k["kid"]: k for k in keys if isinstance(k.get("kid"), str)}
    if len(keys) == 1 and not by_kid:
        by_kid[None] = keys[0]
    return by_kid


class Authenticator:
    """Turns an ``Authorization`` header into a :class:`Principal`, per the settings; ``clock``
    tells when a principal's credentials expire (:meth:`expired`; tests advance their own).

    Raises ValueError when both ``jwt_jwks_url`` and ``jwt_jwks_file`` are set.
    """

    def __init__(self, settings: Settings, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        # what anonymous callers may do, authenticated callers may do too
        self._implied = frozenset({"read"}) if settings.anonymous_read else frozenset()
        self._anonymous = Principal("anonymous", self._implied, "anonymous")
        bypass = settings.trusted_documents_bypass_scope
        self._extra = frozenset(s for s in (bypass, settings.webhook_admin_scope) if s)
        self._keys = [(bytes.fromhex(k.sha256), k.name, _scopes(k.scopes, self._extra) | self._implied)
                      for k in settings.api_keys]
        self._secret = settings.jwt_secret.get_secret_value().encode() if settings.jwt_secret else None
        if self._secret is not None and len(self._secret) < 32:
            log.warning("jwt_secret is shorter than 32 bytes; use a longer random secret")
        self._issuer = settings.jwt_issuer
        self._audience = settings.jwt_audience
        self._scope_claim = settings.jwt_scope_claim
        self._client: httpx.AsyncClient | None = None
        self._jwks: _KeySet | None = None
        if settings.jwt_jwks_url and settings.jwt_jwks_file:
            raise ValueError("set only one of jwt_jwks_url and jwt_jwks_file")
        if settings.jwt_jwks_file:
            path = Path(settings.jwt_jwks_file)
            self._jwks = _KeySet(lambda: asyncio.to_thread(lambda: json.loads(path.read_text("utf-8"))), str(path))
        elif settings.jwt_jwks_url:
            url = settings.jwt_jwks_url
            self._jwks = _KeySet(lambda: self._fetch(url), url)

    async def _fetch(self, url: str) -> Any:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=JWKS_FETCH_TIMEOUT_SECONDS, headers={"Accept": "application/json"})
        response = await self._client.get(url)
        response.raise_for_status()
        return response.json()

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an ``Authorization`` header value; raises :class:`AuthError` (401)."""
        if not authorization or not authorization.strip():
            return self._anonymous
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            raise self._reject('Unsupported authorization scheme; use "Bearer <token>".', error=None)
        token = token.strip()
        if not token or len(token) > MAX_TOKEN_LENGTH or any(c.isspace() for c in token):
            raise self._reject('Malformed Authorization header; expected "Bearer <token>".')
        principal = self._api_key(token)
        if principal is None:
            if token.count(".") != 2:
                raise self._reject("Unknown API key.")
            principal = await self._jwt(token)
        log.debug("authenticated %s", principal.identity)
        return principal

    def _api_key(self, token: str) -> Principal | None:
        """The API key's principal; every configured key is compared, in constant time."""
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        found = None
        for expected, name, scopes in self._keys:
            if hmac.compare_digest(digest, expected):
                found = Principal(name, scopes, "api-key")
        return found

    async def _jwt(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise self._reject("Malformed bearer token.") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or (kid is not None and not isinstance(kid, str)):
            raise self._reject("Malformed bearer token.")
        key: Any
        if alg in _HMAC_ALGS and self._secret is not None:
            key = self._secret
        elif alg in _ASYMMETRIC_ALGS and self._jwks is not None:
            entry = await self._jwks.get(kid)
            if entry is None:
                raise self._reject("The bearer token is signed with an unknown key.")
            if entry.get("kty") != _ASYMMETRIC_KTY[alg[:2]] or entry.get("alg", alg) != alg:
                raise self._reject("The bearer token's algorithm does not match its key.")
            try:
                key = jwt.PyJWK(entry, algorithm=alg)
            except jwt.PyJWTError:
                raise self._reject("The bearer token's algorithm does not match its key.") from None
        else:
            raise self._reject("The bearer token's signing algorithm is not accepted.")
        try:
            claims = jwt.decode(
                token, key, algorithms=[alg], issuer=self._issuer, audience=self._audience,
                leeway=JWT_LEEWAY_SECONDS,
                options={"require": ["exp", "sub"], "verify_aud": self._audience is not None},
            )
        except jwt.ExpiredSignatureError:
            raise self._reject("The bearer token has expired.") from None
        except jwt.ImmatureSignatureError:
            raise self._reject("The bearer token is not yet valid.") from None
        except jwt.InvalidIssuerError:
            raise self._reject("The bearer token's issuer is not accepted.") from None
        except jwt.InvalidAudienceError:
            raise self._reject("The bearer token's audience is not accepted.") from None
        except jwt.MissingRequiredClaimError as exc:
            raise self._reject(f'The bearer token lacks the "{exc.claim}" claim.') from None
        except jwt.InvalidSignatureError:
            raise self._reject("The bearer token's signature is invalid.") from None
        except (jwt.PyJWTError, ValueError, TypeError):
            raise self._reject("The bearer token is invalid.") from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise self._reject('The bearer token lacks the "sub" claim.')
        issuer, exp = claims.get("iss"), claims.get("exp")
        return Principal(subject, _scopes(claims.get(self._scope_claim), self._extra) | self._implied, "jwt",
                         issuer if isinstance(issuer, str) else None,
                         float(exp) if isinstance(exp, (int, float)) else None)

    def expires_in(self, principal: Principal) -> float | None:
        """Seconds until ``principal``'s credentials expire by the clock, with the leeway
        ``exp`` is checked with (``<= 0``: expired; ``None``: they never do). A connection that
        outlives its token (a WebSocket) checks it with this."""
        if principal.expires is None:
            return None
        return principal.expires + JWT_LEEWAY_SECONDS - self.clock.wall()

    def _reject(self, reason: str, error: str | None = "invalid_token") -> AuthError:
        log.info("authentication failed: %s", reason)
        return AuthError(401, reason, error=error)

    def require(self, principal: Principal, scope: str) -> None:
        """Raise unless ``principal`` holds ``scope``: 401 when anonymous, 403 when authenticated."""
        if principal.can(scope):
            return
        if principal.via == "anonymous":
            raise AuthError(401, f'Authentication is required ("{scope}" scope).', scope=scope)
        raise AuthError(403, f'"{principal.subject}" lacks the "{scope}" scope.', scope=scope)

    def require_admin(self, principal: Principal, scope: str, allowed: list[str] | tuple[str, ...] = ()) -> None:
        """Raise unless ``principal`` holds ``write`` and either ``scope`` or an identity listed in
        ``allowed`` (``key:<name>``, ``jwt:<iss>|<sub>``): the administration of the gateway."""
        self.require(principal, "write")
        if principal.can(scope) or principal.identity in allowed:
            return
        raise AuthError(403, f'"{principal.subject}" lacks the "{scope}" scope.', scope=scope)

    async def aclose(self) -> None:
        """Release the HTTP client used to fetch the JWKS."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


async def principal_of(request: Request, auth: Authenticator) -> Principal:
    """The request's principal, authenticated by ``auth`` once per request (kept on the request's
    ``state``, Starlette's per-request context, for the middleware and the handler after it)."""
    state = request.state
    if getattr(state, "auth_error", None) is not None:
        raise state.auth_error
    principal = getattr(state, "principal", None)
    if principal is None:
        try:
            principal = await auth.authenticate(request.headers.get("authorization"))
        except AuthError as exc:
            state.auth_error = exc
            raise
        state.principal = principal
    return principal
