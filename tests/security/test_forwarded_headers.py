"""Whose forwarded headers count: with the default settings no one's, so requests from
127.0.0.1 naming different clients in ``X-Forwarded-For`` share the one bucket of their real
address; with ``forwarded_allow_ips`` naming the proxy, each forwarded client has its own.

The gateway runs under uvicorn with the options ``serve`` gives it (the repo's live-server
harness), asked over real HTTP from 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from gateway.forwarded import proxy_options
from gateway.request_limits import server_options
from tests.support.live import LiveServer
from xreg.config import Settings

CLIENTS = ("198.51.100.1", "198.51.100.2", "203.0.113.9")


def settings(tmp_path: Path, **overrides: object) -> Settings:
    """Anonymous callers limited to a bucket of 100 points that refills too slowly to matter."""
    return Settings(data_dir=tmp_path, registry_id="fwd", rate_limit_enabled=True, rate_limit_anonymous_rate=0.001,
                    rate_limit_anonymous_burst=100, **overrides)


def remaining_after_each(s: Settings) -> list[int]:
    """``RateLimit-Remaining`` of one anonymous read per forwarded client, all sent from 127.0.0.1."""
    with LiveServer(create_app(s), **server_options(s), **proxy_options(s)) as live, \
            httpx.Client(base_url=live.url, trust_env=False, timeout=30) as client:
        answers = [client.get("/registry", headers={"X-Forwarded-For": ip}) for ip in CLIENTS]
    assert [a.status_code for a in answers] == [200] * len(CLIENTS)
    return [int(a.headers["ratelimit-remaining"]) for a in answers]


def test_by_default_forwarded_addresses_are_not_believed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")  # uvicorn's own variable changes nothing
    assert remaining_after_each(settings(tmp_path)) == [99, 98, 97]  # one bucket: 127.0.0.1's


def test_a_listed_proxy_forwards_its_clients_addresses(tmp_path: Path):
    s = settings(tmp_path, forwarded_allow_ips=["127.0.0.1"])
    assert remaining_after_each(s) == [99, 99, 99]  # a bucket per forwarded client


def test_another_proxy_listed_does_not_make_loopback_trusted(tmp_path: Path):
    s = settings(tmp_path, forwarded_allow_ips=["10.0.0.0/8"])
    assert remaining_after_each(s) == [99, 98, 97]


def test_the_setting_takes_addresses_and_networks_only(tmp_path: Path):
    assert proxy_options(Settings(data_dir=tmp_path)) == {"proxy_headers": False, "forwarded_allow_ips": []}
    with pytest.raises(ValueError, match="not an address or a network"):
        Settings(data_dir=tmp_path, forwarded_allow_ips=["proxy.example.com"])
