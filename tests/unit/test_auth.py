"""Write authentication and authorisation: API keys, JWTs (shared secret, JWKS file and URL)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

import gateway.auth as auth_mod
from gateway.auth import Authenticator, AuthError, Principal, hash_key, principal_of
from gateway.cli import app as cli_app
from tests.support.live import LiveServer
from xreg.config import ApiKey, Settings

SECRET = "a-shared-secret-of-at-least-32-bytes!!"
RW_KEY = "rw-key-plaintext-5b1f0c8e"
RO_KEY = "ro-key-plaintext-9d27aa41"
ISSUER = "https://issuer.example"
AUDIENCE = "xregistry-gateway"


def settings(**kw: Any) -> Settings:
    base: dict[str, Any] = {
        "api_keys": [ApiKey(name="ci", sha256=hash_key(RW_KEY), scopes=["read", "write"]),
                     ApiKey(name="viewer", sha256=hash_key(RO_KEY), scopes=["xregistry:read"])],
    }
    return Settings(**{**base, **kw})


def hs_token(secret: str = SECRET, **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "alice", "exp": now + 300, "iat": now, "scope": "read write", **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, secret, algorithm="HS256")


@pytest.fixture
async def hs_auth() -> AsyncIterator[Authenticator]:
    auth = Authenticator(settings(jwt_secret=SECRET))
    yield auth
    await auth.aclose()


async def rejected(auth: Authenticator, header: str) -> AuthError:
    with pytest.raises(AuthError) as info:
        await auth.authenticate(header)
    assert info.value.status == 401 and info.value.code == "unauthorized"
    assert info.value.headers()["WWW-Authenticate"].startswith('Bearer realm="xregistry"')
    return info.value


# -- anonymous ------------------------------------------------------------------------------------

async def test_anonymous_read_on() -> None:
    auth = Authenticator(settings())
    for header in (None, "", "   "):
        p = await auth.authenticate(header)
        assert p == Principal("anonymous", frozenset({"read"}), "anonymous")
    auth.require(p, "read")
    with pytest.raises(AuthError) as info:
        auth.require(p, "write")
    assert info.value.status == 401
    # no credentials were presented: a bare challenge, no error code (RFC 6750 §3.1)
    assert info.value.headers() == {"WWW-Authenticate": 'Bearer realm="xregistry"'}


async def test_anonymous_read_off() -> None:
    auth = Authenticator(settings(anonymous_read=False))
    p = await auth.authenticate(None)
    assert p.scopes == frozenset() and not p.can("read")
    with pytest.raises(AuthError) as info:
        auth.require(p, "read")
    assert info.value.status == 401 and info.value.code == "unauthorized"


# -- API keys -------------------------------------------------------------------------------------

async def test_api_key_accepted_with_its_scopes() -> None:
    auth = Authenticator(settings(anonymous_read=False))
    ci = await auth.authenticate(f"Bearer {RW_KEY}")
    assert ci == Principal("ci", frozenset({"read", "write"}), "api-key")
    auth.require(ci, "write")
    viewer = await auth.authenticate(f"bearer {RO_KEY}")  # the scheme is case-insensitive
    assert viewer == Principal("viewer", frozenset({"read"}), "api-key")
    auth.require(viewer, "read")
    with pytest.raises(AuthError) as info:
        auth.require(viewer, "write")
    err = info.value
    assert (err.status, err.code) == (403, "forbidden")
    assert err.headers()["WWW-Authenticate"] == 'Bearer realm="xregistry", error="insufficient_scope", scope="write"'
    assert err.to_problem("/registry/endpoints") == {
        "type": "https://xregistry.io/gateway/errors#forbidden", "title": err.title, "status": 403,
        "subject": "/registry/endpoints", "instance": "/registry/endpoints",
    }


async def test_authenticated_principal_may_read_when_anonymous_may() -> None:
    auth = Authenticator(Settings(api_keys=[ApiKey(name="writer", sha256=hash_key(RW_KEY), scopes=["write"])]))
    assert (await auth.authenticate(f"Bearer {RW_KEY}")).scopes == {"read", "write"}


async def test_api_key_rejected() -> None:
    auth = Authenticator(settings())
    err = await rejected(auth, "Bearer not-a-configured-key")
    assert err.title == "Unknown API key."
    assert 'error="invalid_token"' in err.headers()["WWW-Authenticate"]
    assert err.to_problem()["type"] == "https://xregistry.io/gateway/errors#unauthorized"
    # a key's hash is not a key
    await rejected(auth, f"Bearer {hash_key(RW_KEY)}")


async def test_key_plaintext_never_logged_nor_in_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    auth = Authenticator(settings(jwt_secret=SECRET))
    await auth.authenticate(f"Bearer {RW_KEY}")
    wrong = RW_KEY + "x"
    errors = [await rejected(auth, f"Bearer {wrong}"),
              await rejected(auth, f"Basic {wrong}"),
              await rejected(auth, f"Bearer {hs_token(secret='another-secret-also-32-bytes-long!!')}")]
    assert "authenticated key:ci" in caplog.text and "authentication failed" in caplog.text
    for err in errors:
        text = " ".join([str(err), repr(err), err.title, str(err.detail), json.dumps(err.to_problem("/x")),
                         json.dumps(err.headers())])
        assert RW_KEY not in text and SECRET not in text
    assert RW_KEY not in caplog.text and SECRET not in caplog.text and "Basic" not in caplog.text


def test_api_keys_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    digest = hash_key(RW_KEY)
    monkeypatch.setenv("XREG_API_KEYS", json.dumps([{"name": "ci", "sha256": digest, "scopes": ["read", "write"]}]))
    assert Settings().api_keys == [ApiKey(name="ci", sha256=digest, scopes=["read", "write"])]
    monkeypatch.setenv("XREG_API_KEYS", '[{"name": "ci", "sha256": "not-hex"}]')
    with pytest.raises(ValueError):
        Settings()


# -- JWT with a shared secret ---------------------------------------------------------------------

async def test_hs256_valid(hs_auth: Authenticator) -> None:
    p = await hs_auth.authenticate(f"Bearer {hs_token()}")
    assert p == Principal("alice", frozenset({"read", "write"}), "jwt")
    hs_auth.require(p, "write")
    p = await hs_auth.authenticate(f"Bearer {hs_token(scope=['xregistry:write', 'admin'])}")
    assert p.scopes == {"read", "write"}  # read: anonymous may read, so may alice


async def test_scope_claim_is_configurable() -> None:
    auth = Authenticator(settings(jwt_secret=SECRET, jwt_scope_claim="scp", anonymous_read=False))
    p = await auth.authenticate(f"Bearer {hs_token(scp='xregistry:read')}")
    assert p.scopes == {"read"}


async def test_hs256_time_claims(hs_auth: Authenticator) -> None:
    now = int(time.time())
    # within the leeway
    await hs_auth.authenticate(f"Bearer {hs_token(exp=now - 5, iat=now - 60)}")
    err = await rejected(hs_auth, f"Bearer {hs_token(exp=now - 120, iat=now - 600)}")
    assert err.title == "The bearer token has expired."
    err = await rejected(hs_auth, f"Bearer {hs_token(nbf=now + 300)}")
    assert err.title == "The bearer token is not yet valid."
    err = await rejected(hs_auth, f"Bearer {hs_token(exp=None)}")
    assert err.title == 'The bearer token lacks the "exp" claim.'


async def test_hs256_bad_signature_and_algorithms(hs_auth: Authenticator) -> None:
    err = await rejected(hs_auth, f"Bearer {hs_token(secret='another-secret-also-32-bytes-long!!')}")
    assert err.title == "The bearer token's signature is invalid."
    head, _body, sig = hs_token().split(".")
    forged = jwt.encode({"sub": "mallory", "exp": int(time.time()) + 60, "scope": "write"}, SECRET, algorithm="HS256")
    await rejected(hs_auth, f"Bearer {head}.{forged.split('.')[1]}.{sig}")
    unsigned = jwt.encode({"sub": "mallory", "exp": int(time.time()) + 60}, None, algorithm="none")
    err = await rejected(hs_auth, f"Bearer {unsigned}")
    assert err.title == "The bearer token's signing algorithm is not accepted."


async def test_issuer_and_audience() -> None:
    auth = Authenticator(settings(jwt_secret=SECRET, jwt_issuer=ISSUER, jwt_audience=AUDIENCE))
    assert (await auth.authenticate(f"Bearer {hs_token(iss=ISSUER, aud=[AUDIENCE, 'other'])}")).subject == "alice"
    err = await rejected(auth, f"Bearer {hs_token(iss='https://evil.example', aud=AUDIENCE)}")
    assert err.title == "The bearer token's issuer is not accepted."
    err = await rejected(auth, f"Bearer {hs_token(iss=ISSUER, aud='someone-else')}")
    assert err.title == "The bearer token's audience is not accepted."
    await rejected(auth, f"Bearer {hs_token(aud=AUDIENCE)}")  # iss missing


async def test_missing_scope_is_forbidden(hs_auth: Authenticator) -> None:
    p = await hs_auth.authenticate(f"Bearer {hs_token(scope='read')}")
    assert p.via == "jwt" and not p.can("write")
    with pytest.raises(AuthError) as info:
        hs_auth.require(p, "write")
    assert (info.value.status, info.value.code) == (403, "forbidden")


@pytest.mark.parametrize("header", ["Basic x", "Bearer", "Bearer ", "Bearer a.b", "Bearer a.b.c", "Bearer a b",
                                    "Token abc", "Bearer ..", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x"])
async def test_malformed_headers(hs_auth: Authenticator, header: str) -> None:
    err = await rejected(hs_auth, header)
    challenge = err.headers()["WWW-Authenticate"]
    if header.split()[0] != "Bearer":
        assert challenge == 'Bearer realm="xregistry"'
    else:
        assert 'error="invalid_token", error_description="' in challenge


# -- JWT with a JWKS ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rsa_keys() -> dict[str, rsa.RSAPrivateKey]:
    return {kid: rsa.generate_private_key(public_exponent=65537, key_size=2048) for kid in ("k1", "k2")}


def jwk_of(kid: str, private_key: Any, alg: str = "RS256") -> dict[str, Any]:
    algo = jwt.algorithms.RSAAlgorithm if alg.startswith(("RS", "PS")) else jwt.algorithms.ECAlgorithm
    return {**algo.to_jwk(private_key.public_key(), as_dict=True), "kid": kid, "alg": alg, "use": "sig"}


def signed(private_key: Any, kid: str | None, alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "svc-deployer", "exp": now + 300, "iat": now, "scope": "xregistry:write", **claims}
    return jwt.encode(body, private_key, algorithm=alg, headers={"kid": kid} if kid else None)


async def test_rs256_with_jwks_file(tmp_path, rsa_keys) -> None:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk_of("k1", rsa_keys["k1"]), jwk_of("e1", ec_key, "ES256"),
                                         {"kty": "oct", "k": "c2VjcmV0", "kid": "sym"}]}))
    auth = Authenticator(settings(jwt_jwks_file=path, anonymous_read=False))
    p = await auth.authenticate(f"Bearer {signed(rsa_keys['k1'], 'k1')}")
    assert p == Principal("svc-deployer", frozenset({"write"}), "jwt")
    assert (await auth.authenticate(f"Bearer {signed(ec_key, 'e1', 'ES256')}")).subject == "svc-deployer"
    # a key not in the set, a token claiming another key's id, an algorithm the key is not for
    assert (await rejected(auth, f"Bearer {signed(rsa_keys['k2'], 'k2')}")).title == \
        "The bearer token is signed with an unknown key."
    assert (await rejected(auth, f"Bearer {signed(rsa_keys['k2'], 'k1')}")).title == \
        "The bearer token's signature is invalid."
    assert (await rejected(auth, f"Bearer {signed(rsa_keys['k1'], 'k1', 'PS256')}")).title == \
        "The bearer token's algorithm does not match its key."
    # algorithm confusion: HS256 "signed" with the public key (forged by hand: PyJWT refuses PEM
    # keys as HMAC secrets) is refused, no shared secret being configured
    public_pem = rsa_keys["k1"].public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = b64(b'{"alg":"HS256","kid":"k1"}') + "." + b64(json.dumps({"sub": "x", "exp": 2**31}).encode())
    confused = signing_input + "." + b64(hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest())
    assert (await rejected(auth, f"Bearer {confused}")).title == "The bearer token's signing algorithm is not accepted."


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class JwksServer:
    """A JWKS endpoint on a real uvicorn server: ``/jwks.json`` serves ``keys``, ``/slow`` stalls."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.hits = 0
        self.failing = False
        self.release = asyncio.Event()
        self.url = ""

    def app(self) -> Starlette:
        async def jwks(request: Request) -> JSONResponse:
            self.hits += 1
            return JSONResponse({"error": "unavailable"}, 503) if self.failing else JSONResponse({"keys": self.keys})

        async def slow(request: Request) -> JSONResponse:
            await self.release.wait()
            return JSONResponse({"keys": self.keys})

        return Starlette(routes=[Route("/jwks.json", jwks), Route("/slow", slow)])


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1; yields its base URL."""
    async with LiveServer(app) as live:
        yield live.url


@pytest.fixture
async def jwks_server() -> AsyncIterator[JwksServer]:
    srv = JwksServer()
    async with serving(srv.app()) as url:
        srv.url = url
        yield srv
        srv.release.set()


async def test_rs256_with_jwks_url_cache_and_rotation(jwks_server: JwksServer, rsa_keys, monkeypatch) -> None:
    jwks_server.keys = [jwk_of("k1", rsa_keys["k1"])]
    auth = Authenticator(settings(jwt_jwks_url=f"{jwks_server.url}/jwks.json"))
    try:
        for _ in range(3):
            assert (await auth.authenticate(f"Bearer {signed(rsa_keys['k1'], 'k1')}")).subject == "svc-deployer"
        assert jwks_server.hits == 1  # cached

        # rotation: k2 replaces k1 at the issuer; the first k2 token triggers one refetch
        jwks_server.keys = [jwk_of("k2", rsa_keys["k2"])]
        p = await auth.authenticate(f"Bearer {signed(rsa_keys['k2'], 'k2', scope='read write')}")
        assert p.scopes == {"read", "write"} and jwks_server.hits == 2
        await auth.authenticate(f"Bearer {signed(rsa_keys['k2'], 'k2')}")
        assert jwks_server.hits == 2
        # the retired key is still cached until the next refresh; an unknown kid soon after a
        # refetch does not cause another one
        await rejected(auth, f"Bearer {signed(rsa_keys['k1'], 'nope')}")
        assert jwks_server.hits == 2

        # after the TTL the set is fetched again, and k1 is gone
        start = time.monotonic()
        monkeypatch.setattr(auth_mod, "_now", lambda: start + auth_mod.JWKS_TTL_SECONDS + 1)
        await rejected(auth, f"Bearer {signed(rsa_keys['k1'], 'k1')}")
        assert jwks_server.hits == 3
    finally:
        await auth.aclose()


async def test_concurrent_requests_share_one_fetch(jwks_server: JwksServer, rsa_keys) -> None:
    jwks_server.keys = [jwk_of("k1", rsa_keys["k1"])]
    auth = Authenticator(settings(jwt_jwks_url=f"{jwks_server.url}/jwks.json"))
    try:
        token = signed(rsa_keys["k1"], "k1")
        principals = await asyncio.gather(*(auth.authenticate(f"Bearer {token}") for _ in range(10)))
        assert {p.subject for p in principals} == {"svc-deployer"} and jwks_server.hits == 1
    finally:
        await auth.aclose()


async def test_unknown_kid_refetches_once(jwks_server: JwksServer, rsa_keys) -> None:
    jwks_server.keys = [jwk_of("k1", rsa_keys["k1"])]
    auth = Authenticator(settings(jwt_jwks_url=f"{jwks_server.url}/jwks.json"))
    try:
        await auth.authenticate(f"Bearer {signed(rsa_keys['k1'], 'k1')}")
        for _ in range(3):
            await rejected(auth, f"Bearer {signed(rsa_keys['k2'], 'k2')}")
        assert jwks_server.hits == 2  # the initial fetch and one refetch
    finally:
        await auth.aclose()


async def test_cached_keys_survive_a_failed_refresh(jwks_server: JwksServer, rsa_keys, monkeypatch) -> None:
    jwks_server.keys = [jwk_of("k1", rsa_keys["k1"])]
    auth = Authenticator(settings(jwt_jwks_url=f"{jwks_server.url}/jwks.json"))
    try:
        await auth.authenticate(f"Bearer {signed(rsa_keys['k1'], 'k1')}")
        jwks_server.failing = True
        start = time.monotonic()
        monkeypatch.setattr(auth_mod, "_now", lambda: start + auth_mod.JWKS_TTL_SECONDS + 1)
        assert (await auth.authenticate(f"Bearer {signed(rsa_keys['k1'], 'k1')}")).subject == "svc-deployer"
        assert jwks_server.hits == 2
    finally:
        await auth.aclose()


async def test_jwks_fetch_timeout_and_failure(jwks_server: JwksServer, rsa_keys, monkeypatch) -> None:
    monkeypatch.setattr(auth_mod, "JWKS_FETCH_TIMEOUT_SECONDS", 0.3)
    jwks_server.keys = [jwk_of("k1", rsa_keys["k1"])]
    for url in (f"{jwks_server.url}/slow", f"{jwks_server.url}/missing"):
        auth = Authenticator(settings(jwt_jwks_url=url))
        try:  # /slow answers (with the key) only when released, at the end: rejected, so not waited for
            await rejected(auth, f"Bearer {signed(rsa_keys['k1'], 'k1')}")
        finally:
            await auth.aclose()


# -- per request ----------------------------------------------------------------------------------

async def test_principal_of_over_http(caplog: pytest.LogCaptureFixture) -> None:
    import httpx

    caplog.set_level(logging.DEBUG, logger="xreg.auth")

    auth = Authenticator(settings())

    async def whoami(request: Request) -> JSONResponse:
        try:
            first, second = await principal_of(request, auth), await principal_of(request, auth)
            auth.require(first, "write")
        except AuthError as exc:
            return JSONResponse(exc.to_problem(request.url.path), exc.status, exc.headers())
        assert first is second
        return JSONResponse({"subject": first.subject, "via": first.via})

    app = Starlette(routes=[Route("/whoami", whoami)])
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
        ok = await client.get("/whoami", headers={"Authorization": f"Bearer {RW_KEY}"})
        assert ok.json() == {"subject": "ci", "via": "api-key"}
        anon = await client.get("/whoami")
        assert anon.status_code == 401 and anon.headers["www-authenticate"] == 'Bearer realm="xregistry"'
        assert anon.json()["subject"] == "/whoami"
        bad = await client.get("/whoami", headers={"Authorization": "Bearer wrong"})
        assert bad.status_code == 401 and bad.json()["type"].endswith("#unauthorized")
        ro = await client.get("/whoami", headers={"Authorization": f"Bearer {RO_KEY}"})
        assert ro.status_code == 403 and ro.json()["type"].endswith("#forbidden")
    # each request authenticated once, though principal_of was called twice
    outcomes = [r.getMessage() for r in caplog.records if r.name == "xreg.auth"]
    assert outcomes == ["authenticated key:ci", "authentication failed: Unknown API key.", "authenticated key:viewer"]


# -- CLI ------------------------------------------------------------------------------------------

def test_hash_key_cli() -> None:
    runner = CliRunner()
    result = runner.invoke(cli_app, ["hash-key"], input=RW_KEY + "\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == hashlib.sha256(RW_KEY.encode()).hexdigest()
    assert RW_KEY not in result.stdout

    result = runner.invoke(cli_app, ["hash-key", "--generate"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    assert set(lines) == {"key", "sha256"} and len(lines["key"]) >= 40
    assert lines["sha256"] == hash_key(lines["key"])
    ApiKey(name="generated", sha256=lines["sha256"])  # valid for the settings

    result = runner.invoke(cli_app, ["hash-key"], input="")
    assert result.exit_code == 2


async def test_a_jwt_principal_expires_by_the_authenticators_clock():
    from adapters.clock import Clock
    from gateway.auth import JWT_LEEWAY_SECONDS

    now = [1_800_000_000.0]
    auth = Authenticator(settings(jwt_secret=SECRET), clock=Clock(wall=lambda: now[0]))
    principal = await auth.authenticate("Bearer " + jwt.encode(
        {"sub": "alice", "exp": int(now[0]) + 60}, SECRET, algorithm="HS256"))
    key = Authenticator(Settings(api_keys=[ApiKey(name="k", sha256=hash_key("k" * 20), scopes=["read"])]))
    assert principal.expires == now[0] + 60
    assert auth.expires_in(principal) == 60 + JWT_LEEWAY_SECONDS
    now[0] += 60 + JWT_LEEWAY_SECONDS
    assert auth.expires_in(principal) == 0  # expired: <= 0
    assert key.expires_in(await key.authenticate("Bearer " + "k" * 20)) is None  # API keys never expire
