"""Who a caller is, in logs and rate-limit buckets: API keys and JWTs in separate namespaces
(``key:<name>``, ``jwt:<iss>|<sub>``), so a JWT whose ``sub`` is an API key's name — or another
issuer's subject — is someone else. And the order: authentication first (refused credentials
are 401, never 429), then the rate limit per identity, then authorisation; an answer of 401 or
403 keeps its status when the bucket is empty.

The gateway runs with its lifespan (a real SQLite store); requests go through ASGI from one
client address.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt

from gateway.auth import hash_key
from tests.http.support import asgi_client, make_settings, running
from tests.support.observing import captured_logs
from xreg.config import ApiKey, Settings

SECRET = "identity-test-jwt-secret-" + "s" * 24
ALICE_KEY = "alice-api-key-" + "a" * 32
WRITE_ONLY_KEY = "write-only-key-" + "w" * 32
QUERY = {"query": "{ registry { id } }"}


def token(sub: str, iss: str | None = None) -> str:
    claims: dict[str, object] = {"sub": sub, "scope": "read", "exp": int(time.time()) + 600}
    if iss is not None:
        claims["iss"] = iss
    return jwt.encode(claims, SECRET, algorithm="HS256")


def limited(tmp_path: Path, **overrides: object) -> Settings:
    """Buckets that refill too slowly to matter within a test: anonymous 3, read 100, write 3."""
    values: dict[str, object] = dict(
        rate_limit_enabled=True, rate_limit_anonymous_rate=0.001, rate_limit_anonymous_burst=3,
        rate_limit_read_rate=0.001, rate_limit_read_burst=100, rate_limit_write_rate=0.001,
        rate_limit_write_burst=3, jwt_secret=SECRET,
        api_keys=[ApiKey(name="alice", sha256=hash_key(ALICE_KEY), scopes=["read"]),
                  ApiKey(name="deployer", sha256=hash_key(WRITE_ONLY_KEY), scopes=["write"])])
    values.update(overrides)
    return make_settings(tmp_path, **values)


async def test_a_jwt_named_like_an_api_key_is_someone_else(tmp_path: Path):
    callers = {"key": ALICE_KEY, "jwt a": token("alice", "https://a.example"),
               "jwt b": token("alice", "https://b.example"), "jwt": token("alice")}
    with captured_logs() as logs:
        async with running(limited(tmp_path)) as app, asgi_client(app, None) as client:
            remaining = {}
            for name, credential in [*callers.items(), ("key", ALICE_KEY)]:
                answer = await client.get("/registry", headers={"Authorization": f"Bearer {credential}"})
                assert answer.status_code == 200
                remaining.setdefault(name, []).append(int(answer.headers["ratelimit-remaining"]))
    # each identity its own bucket: the key's second request is the only one not from a full bucket
    assert remaining == {"key": [99, 98], "jwt a": [99], "jwt b": [99], "jwt": [99]}
    access = [json.loads(line) for line in logs.json if '"xreg.access"' in line]
    assert [e["caller"] for e in access] == ["key:alice", "jwt:https://a.example|alice",
                                             "jwt:https://b.example|alice", "jwt:|alice", "key:alice"]


async def test_refused_credentials_are_401_even_when_the_address_bucket_is_empty(tmp_path: Path):
    async with running(limited(tmp_path)) as app, asgi_client(app, None) as anonymous, \
            asgi_client(app, "not-a-key-" + "x" * 32) as wrong, asgi_client(app, token("bob") + "x") as forged:
        assert [(await anonymous.get("/registry")).status_code for _ in range(4)] == [200, 200, 200, 429]
        assert (await anonymous.post("/graphql", json=QUERY)).status_code == 429  # the address's bucket is empty
        for client in (wrong, forged):
            for answer in (await client.post("/graphql", json=QUERY), await client.get("/registry")):
                assert answer.status_code == 401, answer.text
                assert "ratelimit-remaining" not in answer.headers  # charged nothing
        assert app.state.rate_limiter.limited("anonymous") == 2


async def test_a_caller_without_scopes_gets_401_not_429(tmp_path: Path):
    async with running(limited(tmp_path, anonymous_read=False)) as app, asgi_client(app, None) as anonymous:
        for _ in range(5):
            assert (await anonymous.post("/graphql", json=QUERY)).status_code == 401
            assert (await anonymous.get("/registry")).status_code == 401
        assert app.state.rate_limiter.limited("anonymous") == 0


async def test_a_403_keeps_its_status_when_the_bucket_is_empty(tmp_path: Path):
    """Authenticate, rate limit, authorise: a known caller past its bucket gets 429 from the HTTP
    API before its scopes are looked at, but a GraphQL answer of 403 stays 403."""
    async with running(limited(tmp_path, anonymous_read=False)) as app, asgi_client(app, WRITE_ONLY_KEY) as deployer:
        got = [(await deployer.get("/registry")).status_code for _ in range(4)]
        assert got == [403, 403, 403, 429]  # no read scope; then the bucket is empty
        answer = await deployer.post("/graphql", json=QUERY)
        assert answer.status_code == 403 and answer.headers["ratelimit-remaining"] == "0"
