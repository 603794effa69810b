"""HTTP caching of the xRegistry API's reads over a real uvicorn: ETag and Cache-Control on GET
and HEAD, If-None-Match → 304 without a body, a write moves every tag, credentials make a
response private and tagged per caller; and CORS answered by the middleware before the API's
own OPTIONS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from tests.http.support import READ_KEY, SEED, WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer

GROUP = "/registry/messagegroups/orders"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[httpx.Client]:
    with LiveServer(create_app(make_settings(tmp_path))) as live, httpx.Client(base_url=live.url, timeout=30) as c:
        assert c.post("/registry", json=SEED, headers=bearer(WRITE_KEY)).status_code == 200
        yield c


def test_reads_revalidate_to_304_until_a_write(http: httpx.Client):
    first = http.get(GROUP)
    etag = first.headers["etag"]
    assert first.status_code == 200 and first.headers["cache-control"] == "public, no-cache"
    assert first.headers["vary"] == "Authorization"
    same = http.get(GROUP, headers={"If-None-Match": etag})
    assert same.status_code == 304 and same.content == b""
    assert same.headers["etag"] == etag and same.headers["x-request-id"]
    head = http.head(GROUP, headers={"If-None-Match": etag})
    assert head.status_code == 304
    assert http.head(GROUP).headers["etag"] == etag

    # the request is part of the tag
    inlined = http.get(GROUP + "?inline=messages", headers={"If-None-Match": etag})
    assert inlined.status_code == 200 and inlined.headers["etag"] != etag
    collection = http.get("/registry/messagegroups?limit=1")
    assert collection.headers["etag"] not in (etag, inlined.headers["etag"])

    # any write moves the revision, so every tag changes (this one's entity did not)
    assert http.patch("/registry/messagegroups/Billing", json={"name": "b"}, headers=bearer(WRITE_KEY)).status_code == 200
    after = http.get(GROUP, headers={"If-None-Match": etag})
    assert after.status_code == 200 and after.headers["etag"] != etag
    assert after.json() == first.json()


def test_credentials_make_responses_private_and_per_caller(http: httpx.Client):
    anonymous = http.get(GROUP)
    reader = http.get(GROUP, headers=bearer(READ_KEY))
    writer = http.get(GROUP, headers=bearer(WRITE_KEY))
    assert reader.headers["cache-control"] == writer.headers["cache-control"] == "private, no-cache"
    assert len({anonymous.headers["etag"], reader.headers["etag"], writer.headers["etag"]}) == 3
    crossed = http.get(GROUP, headers={**bearer(WRITE_KEY), "If-None-Match": reader.headers["etag"]})
    assert crossed.status_code == 200
    # credentials are checked before a 304 is given
    assert http.get(GROUP, headers={"Authorization": "Bearer wrong", "If-None-Match": reader.headers["etag"]}
                    ).status_code == 401


def test_only_successful_reads_are_tagged(http: httpx.Client):
    missing = http.get("/registry/messagegroups/nope", headers={"If-None-Match": "*"})
    assert missing.status_code == 404 and "etag" not in missing.headers
    assert http.get(GROUP, headers={"If-None-Match": "*"}).status_code == 304
    written = http.put("/registry/messagegroups/new", json={}, headers=bearer(WRITE_KEY))
    assert written.status_code == 201 and "etag" not in written.headers


def test_cors_preflight_is_answered_before_the_api(tmp_path: Path):
    origin = "http://127.0.0.1:5999"
    settings = make_settings(tmp_path, cors_origins=[origin], cors_max_age=120)
    with LiveServer(create_app(settings)) as live, httpx.Client(base_url=live.url, timeout=30) as c:
        for path in ("/graphql", GROUP, "/registry", "/.well-known/xregistry"):
            preflight = c.options(path, headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                 "Access-Control-Request-Headers": "authorization, content-type, "
                                                                                   "apollographql-client-name"})
            assert preflight.status_code == 200, path
            assert preflight.headers["access-control-allow-origin"] == origin
            assert preflight.headers["access-control-max-age"] == "120"
            allowed = preflight.headers["access-control-allow-headers"].lower()
            assert {"authorization", "content-type", "apollographql-client-name"} <= set(allowed.split(", "))
        refused = c.options("/graphql", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
        # a plain OPTIONS still gets the API's Allow
        assert "GET" in c.options(GROUP).headers["allow"]
        read = c.get("/registry", headers={"Origin": origin})
        assert read.headers["access-control-allow-origin"] == origin
        exposed = {h.strip().lower() for h in read.headers["access-control-expose-headers"].split(",")}
        assert {"etag", "x-request-id", "link", "retry-after", "ratelimit-remaining", "xregistry-epoch"} <= exposed
        # GraphiQL and health are not offered cross-origin
        assert "access-control-allow-origin" not in c.get("/healthz", headers={"Origin": origin}).headers


def test_cors_is_off_unless_configured(tmp_path: Path):
    with LiveServer(create_app(make_settings(tmp_path))) as live, httpx.Client(base_url=live.url, timeout=30) as c:
        preflight = c.options("/graphql", headers={"Origin": "http://127.0.0.1:5999",
                                                   "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers


def test_a_wildcard_origin_refuses_credentials(tmp_path: Path):
    with pytest.raises(ValueError, match="cannot be combined"):
        make_settings(tmp_path, cors_origins=["*"], cors_allow_credentials=True)
    with pytest.raises(ValueError, match="is not an origin"):
        make_settings(tmp_path, cors_origins=["http://a.example/path"])
