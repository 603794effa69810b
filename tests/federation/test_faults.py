"""Remotes that misbehave: the faulty registry, a socket that resets, the circuit breaker."""

from __future__ import annotations

import asyncio

import pytest

from adapters.base import Listing, SourceUnavailable
from tests.federation.conftest import remote_config
from tests.support.clock import ManualClock

GROUP = "/messagegroups/g1"


def faulty_url(faulty, mode: str) -> str:
    return f"{faulty[0].origin}/{mode}/registry"


@pytest.mark.parametrize("mode,needle", [
    ("500", "answered HTTP 500"),
    ("malformed", "malformed JSON"),
    ("deep", "nested more than"),
    ("html", "text/html"),
    ("huge", "larger than the limit"),
])
async def test_garbage_is_an_error_naming_the_registry(faulty, open_remote, mode, needle):
    source = await open_remote(remote_config(f"bad-{mode}", faulty_url(faulty, mode), retries=1,
                                             max_response_bytes=1024 * 1024))
    with pytest.raises(SourceUnavailable) as exc:
        await source.get_many([GROUP])
    assert exc.value.registry == f"bad-{mode}" and needle in exc.value.reason
    assert exc.value.type == "data_retrieval_error" and f"'bad-{mode}'" in exc.value.title + exc.value.detail
    status = source.status()
    assert not status.healthy and needle in status.last_error


async def test_a_slow_remote_times_out(faulty, open_remote):
    config = remote_config("slow", faulty_url(faulty, "slow"), retries=0,
                           timeouts={"connect": 0.5, "read": 0.3, "total": 0.5})
    source = await open_remote(config)
    with pytest.raises(SourceUnavailable) as exc:  # the remote would answer after 3 s: given up before
        await source.get_many([GROUP])
    assert "timed out" in exc.value.reason or "within" in exc.value.reason


async def test_connection_resets_are_retried_then_reported(resetting, open_remote):
    source = await open_remote(remote_config("reset", resetting.origin + "/registry", retries=2,
                                             breaker={"failures": 50}))
    before = resetting.accepted
    with pytest.raises(SourceUnavailable) as exc:
        await source.get_many([GROUP])
    assert "connection failed" in exc.value.reason
    assert resetting.accepted - before == 3  # the attempt and two retries


async def test_5xx_with_retry_after_zero_is_retried(faulty, open_remote):
    source = await open_remote(remote_config("flaky", faulty_url(faulty, "flaky"), retries=2))
    found = await source.get_many([GROUP])
    assert found[GROUP].view["name"] == "group of flaky"


async def test_429_honours_retry_after(faulty, open_remote):
    clock = ManualClock()
    source = await open_remote(remote_config("limited", faulty_url(faulty, "ratelimit"), retries=1), clock=clock.clock)
    page = await source.list(Listing(ctypes=("messagegroups",)))
    assert [g.id for g in page.items] == ["g1"] and clock.slept == [1.0]  # Retry-After: 1


async def test_a_retry_after_beyond_the_cap_is_not_waited_for(faulty, open_remote):
    # a fresh path of the rate-limited registry: its first answer is a 429 asking for 1 s
    clock = ManualClock()
    source = await open_remote(remote_config("impatient", faulty_url(faulty, "ratelimit"), retries=3,
                                             max_backoff_seconds=0.5), clock=clock.clock)
    with pytest.raises(SourceUnavailable) as exc:
        await source.get_many(["/messagegroups/g1/messages/m-never-asked"])
    assert "HTTP 429" in exc.value.reason and clock.slept == []


async def test_the_circuit_opens_and_lets_one_trial_through(faulty, open_remote):
    hits = faulty[1]
    clock = ManualClock()
    source = await open_remote(remote_config("down", faulty_url(faulty, "500"), retries=0,
                                             breaker={"failures": 3, "reset_seconds": 30}), clock=clock.clock)
    # discovery made three failing requests: the circuit is open
    assert source.status().breaker == "open" and not source.status().healthy
    before = hits["500"]
    for _ in range(5):
        with pytest.raises(SourceUnavailable) as exc:
            await source.get_many([GROUP])
        assert "circuit open" in exc.value.reason
    assert hits["500"] == before  # nothing was sent
    clock.advance(31)
    assert source.status().breaker == "half_open"
    results = await asyncio.gather(*(source.get_many([f"/messagegroups/g{i}"]) for i in range(4)), return_exceptions=True)
    assert all(isinstance(r, SourceUnavailable) for r in results)
    assert hits["500"] == before + 1  # one trial, the others refused at once
    assert source.status().breaker == "open"


async def test_links_outside_the_registry_are_never_followed(faulty, canary, open_remote):
    _, canary_hits = canary
    before = sum(canary_hits.values())
    source = await open_remote(remote_config("badlink", faulty_url(faulty, "badlink")))
    with pytest.raises(SourceUnavailable) as exc:
        await source.list(Listing(ctypes=("messagegroups",)))
    assert "outside" in exc.value.reason
    assert sum(canary_hits.values()) == before
    status = source.status()  # the refused link is the remote's failure: not shown healthy
    assert not status.healthy and "outside" in (status.last_error or "")
