"""Authentication and authorisation of the HTTP API: API keys, JWTs, scopes, anonymous reads."""

from __future__ import annotations

import time

import jwt

from tests.http.support import (
    READ_KEY,
    WRITE_KEY,
    asgi_client,
    assert_problem,
    bearer,
    make_settings,
    revision,
    running,
)

SECRET = "s" * 48


def token(scope: str, *, expires_in: float = 60, secret: str = SECRET) -> str:
    return jwt.encode({"sub": "ci-job", "scope": scope, "exp": int(time.time() + expires_in)}, secret, algorithm="HS256")


async def test_anonymous_reads_but_does_not_write(app, anon):
    assert (await anon.get("/registry")).status_code == 200
    rev = await revision(app)
    response = await anon.put("/registry/messagegroups/g", json={})
    body = assert_problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert body["subject"] == "/messagegroups/g"
    assert await revision(app) == rev


async def test_scopes_of_api_keys(app):
    async with asgi_client(app, READ_KEY) as reader, asgi_client(app, WRITE_KEY) as writer:
        assert (await reader.get("/registry/messagegroups")).status_code == 200
        response = await reader.delete("/registry/messagegroups")
        assert_problem(response, 403, "forbidden")
        assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
        assert (await writer.put("/registry/messagegroups/g", json={})).status_code == 201
    async with asgi_client(app, "not-a-known-key") as stranger:
        assert_problem(await stranger.get("/registry"), 401, "unauthorized")


async def test_jwts_signed_with_the_shared_secret(tmp_path):
    async with running(make_settings(tmp_path, jwt_secret=SECRET)) as app:
        async with asgi_client(app, None) as client:
            ok = await client.put("/registry/messagegroups/g", json={}, headers=bearer(token("read write")))
            assert ok.status_code == 201
            assert_problem(await client.put("/registry/messagegroups/h", json={}, headers=bearer(token("read"))),
                           403, "forbidden")
            assert_problem(await client.get("/registry", headers=bearer(token("read", expires_in=-3600))),
                           401, "unauthorized")
            assert_problem(await client.get("/registry", headers=bearer(token("read", secret="x" * 48))),
                           401, "unauthorized")
            assert (await client.get("/registry/messagegroups/h")).status_code == 404


async def test_anonymous_reads_can_be_switched_off(tmp_path):
    async with running(make_settings(tmp_path, anonymous_read=False)) as app:
        async with asgi_client(app, None) as anon, asgi_client(app, READ_KEY) as reader:
            assert_problem(await anon.get("/registry"), 401, "unauthorized")
            assert_problem(await anon.get("/registry/export"), 401, "unauthorized")
            assert (await reader.get("/registry")).status_code == 200
            assert (await anon.options("/registry")).status_code == 200  # no data, no credentials needed
