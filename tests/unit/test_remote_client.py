"""Retries of the remote client (adapters/http_client.py, adapters/retry.py) against
``httpx.MockTransport``: which failures are retried, ``Retry-After``, the back-off cap, giving
up, and the breaker judging a request as a whole. The clock is moved by hand: nothing sleeps."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from adapters.base import SourceUnavailable
from adapters.http_client import RemoteClient
from adapters.retry import backoff_delay, retry_after
from tests.support.clock import ManualClock
from xreg.config import RegistryConfig

URL = "http://remote.test/registry"


def client(answers: list[Callable[[httpx.Request], httpx.Response]], clock: ManualClock,
           **config: object) -> tuple[RemoteClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1](request)

    settings = RegistryConfig(id="r", kind="xregistry", url=URL, backoff_seconds=0.5, max_backoff_seconds=10.0,
                              **config)  # type: ignore[arg-type]
    return RemoteClient(settings, transport=httpx.MockTransport(handler), clock=clock.clock), seen


def status(code: int, **headers: str) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: httpx.Response(code, headers=headers, json={} if code == 200 else None)


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"registryid": "r"}, headers={"content-type": "application/json"})


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


async def test_5xx_429_and_connection_errors_are_retried_with_back_off() -> None:
    time = ManualClock()
    remote, seen = client([status(503), refused, status(429, **{"retry-after": "3"}), ok], time, retries=3)
    answer = await remote.get(URL)
    assert answer.status == 200 and answer.body == {"registryid": "r"} and len(seen) == 4
    assert len(time.slept) == 3 and time.slept[2] == 3.0  # Retry-After honoured
    assert all(0 <= s <= 0.5 * 2**i for i, s in enumerate(time.slept[:2]))
    assert remote.breaker.failures == 0
    await remote.aclose()


async def test_retries_are_bounded_and_the_failure_names_the_registry() -> None:
    time = ManualClock()
    remote, seen = client([status(500)], time, retries=2)
    with pytest.raises(SourceUnavailable) as failed:
        await remote.get(URL)
    assert len(seen) == 3 and len(time.slept) == 2
    assert "'r'" in failed.value.detail and "500" in failed.value.reason
    assert remote.breaker.failures == 1  # one request, one verdict
    await remote.aclose()


async def test_a_retry_after_beyond_the_cap_is_not_waited_for() -> None:
    time = ManualClock()
    remote, seen = client([status(429, **{"retry-after": "60"}), ok], time, retries=3)
    with pytest.raises(SourceUnavailable):
        await remote.get(URL)
    assert len(seen) == 1 and time.slept == []
    await remote.aclose()


async def test_client_errors_are_not_retried() -> None:
    time = ManualClock()
    remote, seen = client([status(400), ok], time, retries=3)
    with pytest.raises(SourceUnavailable):
        await remote.get(URL)
    assert len(seen) == 1
    await remote.aclose()


async def test_urls_outside_the_registry_are_never_fetched() -> None:
    time = ManualClock()
    remote, seen = client([ok], time)
    with pytest.raises(SourceUnavailable) as refused_:
        await remote.get("http://elsewhere.test/registry")
    assert seen == [] and "outside" in refused_.value.reason
    await remote.aclose()


def test_retry_after_forms_and_the_back_off_bound() -> None:
    assert retry_after(httpx.Response(429, headers={"retry-after": "7"})) == 7.0
    http_date = httpx.Response(503, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert retry_after(http_date, now=1445412480.0 - 10) == 10.0
    assert retry_after(httpx.Response(503)) is None
    assert retry_after(httpx.Response(503, headers={"retry-after": "soon"})) is None
    assert all(0 <= backoff_delay(a, 0.5, 4.0) <= min(4.0, 0.5 * 2**a) for a in range(8))


async def test_link_relations_are_read_as_rfc_8288_defines_them() -> None:
    """A ``rel`` holds space-separated, case-insensitive types; targets resolve against the answer's URL."""
    time = ManualClock()
    links = '<?page=3>; rel="last"; count=9, <messagegroups?page=2&x=a,b>; rel="Next prev"'
    c, _ = client([lambda r: httpx.Response(200, json={}, headers={"link": links})], time)
    answer = await c.get(URL + "/messagegroups")
    assert answer.links == {"last": URL + "/messagegroups?page=3", "next": URL + "/messagegroups?page=2&x=a,b",
                            "prev": URL + "/messagegroups?page=2&x=a,b"}
    await c.aclose()


async def test_a_document_is_read_as_bytes_and_a_303_is_not_followed() -> None:
    time = ManualClock()
    c, seen = client([lambda r: httpx.Response(200, content=b"syntax", headers={"content-type": "text/plain"}),
                      lambda r: httpx.Response(303, headers={"location": "https://elsewhere.test/doc.avsc"})], time)
    text = await c.get(URL + "/schemagroups/g/schemas/s", document=True)
    assert (text.status, text.raw, text.content_type) == (200, b"syntax", "text/plain")
    moved = await c.get(URL + "/schemagroups/g/schemas/s", document=True)
    assert (moved.status, moved.location) == (303, "https://elsewhere.test/doc.avsc") and len(seen) == 2
    with pytest.raises(SourceUnavailable, match="outside the registry"):  # metadata: a redirect stays inside
        await c.get(URL + "/schemagroups/g/schemas/s$details")
    await c.aclose()
