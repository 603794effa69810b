"""Property-based run of schemathesis against the served OpenAPI description, over a real
uvicorn server: no request may produce a server error or a response the description does not
allow, schema-violating requests must be refused, and a refused request (4xx) must leave the
registry exactly as it was (same store revision). A positive-only run checks that every request
the description allows — reads, writes and deletes — is accepted (schemathesis'
positive_data_acceptance) or refused as the operation documents (``x-xregistry-refusals``).

CI runs the examples and fuzzing phases, derandomized (:data:`MAX_EXAMPLES` per operation and
test: about 2,400 requests, three minutes on two busy cores). ``XREG_TEST_FUZZ_RANDOM=1`` explores
new examples (``--hypothesis-seed=N`` repeats a run), ``XREG_TEST_FUZZ_EXAMPLES=N`` sets how many,
``XREG_TEST_FUZZ_COVERAGE=1`` adds schemathesis' coverage phase (every boundary and negative case
of every parameter: about 8,000 requests more).
"""

from __future__ import annotations

import os

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from gateway.app import create_app
from tests.http.support import SEED, WRITE_KEY, bearer, make_settings
from tests.support.live import LiveServer

#: Examples per operation and phase; the description has about a hundred operations
#: (XREG_TEST_FUZZ_EXAMPLES=N explores more).
MAX_EXAMPLES = int(os.environ.get("XREG_TEST_FUZZ_EXAMPLES", "12"))
#: CI runs the same examples every time (a repeatable verdict); XREG_TEST_FUZZ_RANDOM=1 explores
#: new ones — what a random run finds becomes a regression test (tests/http/test_http_writes.py).
DERANDOMIZE = os.environ.get("XREG_TEST_FUZZ_RANDOM") != "1"
#: Checked on its own below, where the refusals each operation documents are expected.
NOT_EXPRESSIBLE = [positive_data_acceptance]
CONFIG = schemathesis.Config.from_dict(
    {"phases": {"coverage": {"enabled": os.environ.get("XREG_TEST_FUZZ_COVERAGE") == "1"}}})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LiveServer(create_app(make_settings(tmp_path_factory.mktemp("fuzz")))) as live:
        assert httpx.post(f"{live.url}/registry", json=SEED, headers=bearer(WRITE_KEY)).status_code == 200
        yield live


@pytest.fixture(scope="module")
def probe(server):
    """A client of its own, reading the store revision between requests."""
    with httpx.Client(base_url=server.url) as client:
        yield client


@pytest.fixture(scope="module")
def api(server):
    return schemathesis.openapi.from_url(f"{server.url}/registry/openapi.json", config=CONFIG)


schema = schemathesis.pytest.from_fixture("api")


def revision(probe: httpx.Client) -> int:
    return probe.get("/healthz").json()["revision"]


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
def test_api_never_fails_and_rejections_change_nothing(case, server, probe):
    before = revision(probe)
    response = case.call(base_url=f"{server.url}/registry", headers=bearer(WRITE_KEY), timeout=30)
    case.validate_response(response, headers=bearer(WRITE_KEY), excluded_checks=NOT_EXPRESSIBLE)
    if response.status_code >= 400:
        assert revision(probe) == before, f"{case.method} {case.formatted_path} was refused but wrote"


# -- schema-valid requests are accepted -----------------------------------------------------------
#: Positive data only: every request the description allows must be accepted (2xx, or 404 / 409
#: for ids the registry does not hold / conflicts, as positive_data_acceptance allows) — or refused
#: with one of the problem types the operation lists under ``x-xregistry-refusals`` (refusals that
#: depend on what the registry holds, or on rules across attributes the schemas do not state).
POSITIVE = schemathesis.Config.from_dict(
    {"generation": {"mode": "positive"}, "phases": {"coverage": {"enabled": False}}})


@pytest.fixture(scope="module")
def positive_api(server):
    return schemathesis.openapi.from_url(f"{server.url}/registry/openapi.json", config=POSITIVE)


positive_schema = schemathesis.pytest.from_fixture("positive_api")


def documented_refusal(case, response: httpx.Response) -> bool:
    """Whether ``response`` is a 400 the operation documents as a refusal of valid requests: its
    problem type, or ``invalid_attribute`` of an attribute it names."""
    if response.status_code != 400:
        return False
    problem, operation = response.json(), case.operation.definition.raw
    if problem["type"].endswith("#invalid_attribute"):
        return problem.get("args", {}).get("name") in operation.get("x-xregistry-refused-attributes", ())
    return problem["type"] in operation.get("x-xregistry-refusals", ())


@positive_schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
def test_schema_valid_requests_are_accepted(case, server, probe):
    # ?page takes only tokens the server made (Link headers): opaque to a generator; filter and
    # sort expressions have a grammar JSON Schema cannot state (tests/unit/test_filters.py).
    for name in ("page", "filter", "sort"):
        (case.query or {}).pop(name, None)
    before = revision(probe)
    response = case.call(base_url=f"{server.url}/registry", headers=bearer(WRITE_KEY), timeout=30)
    if documented_refusal(case, response):
        assert revision(probe) == before, f"{case.method} {case.formatted_path} was refused but wrote"
        return
    case.validate_response(response, headers=bearer(WRITE_KEY), checks=[positive_data_acceptance])
