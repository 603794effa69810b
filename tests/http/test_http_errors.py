"""Every error the API can be made to produce: its status, spec type, problem document — and
that the rejected request changed nothing (same revision, same export)."""

from __future__ import annotations

import json

import pytest

from gateway.http_api import routes
from tests.http.support import asgi_client, assert_problem, make_settings, revision, running

J = {"Content-Type": "application/json"}
S = "/registry/schemagroups/sg1/schemas"
M = "/registry/messagegroups"
FORMAT = {"format": "JSONSchema/draft-07"}

CASES = [
    # flags
    ("GET", "/registry?bogus=1", {}, 400, "bad_flag"),
    ("GET", f"{M}?sort=name&sort=priority", {}, 400, "bad_flag"),
    ("GET", f"{M}?doc=maybe", {}, 400, "bad_flag"),
    ("GET", f"{M}?epoch=1", {}, 400, "bad_flag"),
    ("GET", f"{M}/orders?limit=2", {}, 400, "bad_flag"),
    ("GET", f"{S}?ignore=epoch", {}, 400, "bad_flag"),
    ("PUT", f"{M}/x?epoch=1", {"json": {}}, 400, "bad_flag"),
    ("DELETE", f"{M}/x?filter=name=a", {}, 400, "bad_flag"),
    ("PUT", f"{M}/x?sort=name", {"json": {}}, 400, "sort_noncollection"),
    ("GET", "/registry?inline=name", {}, 400, "inline_noninlineable"),
    ("GET", "/registry?inline=nope", {}, 400, "bad_inline"),
    ("GET", "/registry?inline=*.messagegroups", {}, 400, "bad_inline"),
    ("GET", f"{M}?inline=messages.meta.x", {}, 400, "bad_inline"),
    ("GET", f"{M}?filter=name=a,,b", {}, 400, "bad_filter"),
    ("GET", f"{M}?filter=name<null", {}, 400, "bad_filter"),
    ("GET", f"{M}?filter=name>a*", {}, 400, "bad_filter"),
    ("GET", f"{M}?filter=excludeall&filter=name=a", {}, 400, "bad_filter"),
    ("GET", f"{M}?filter=messages", {}, 400, "bad_filter"),
    ("GET", f"{M}?sort=name=up", {}, 400, "bad_sort"),
    ("GET", f"{M}?sort=messages", {}, 400, "bad_sort"),
    ("GET", f"{M}/orders?sort=name", {}, 400, "sort_noncollection"),
    ("GET", f"{M}?limit=0", {}, 400, "bad_request"),
    ("GET", f"{M}?limit=many", {}, 400, "bad_request"),
    ("GET", f"{M}?page=not-a-token", {}, 400, "bad_request"),
    ("GET", "/registry?specversion=0.5", {}, 400, "unsupported_specversion"),
    ("PUT", f"{M}/x?ignore=everything", {"json": {}}, 400, "bad_ignore"),
    ("PATCH", f"{S}/s1/meta?setdefaultversionid=zz", {"json": {}}, 400, "unknown_id"),
    ("PATCH", f"{S}/s1/meta?setdefaultversionid=bad%20id", {"json": {}}, 400, "bad_defaultversionid"),
    ("PATCH", f"{S}/s1/meta?setdefaultversionid=request", {"json": {}}, 400, "bad_flag"),
    # paths and methods
    ("GET", "/registry/widgets", {}, 404, "not_found"),
    ("PUT", "/registry/capabilities", {"json": {"nosuch": 1}}, 400, "capability_unknown"),
    ("GET", f"{M}/orders/widgets", {}, 404, "not_found"),
    ("GET", f"{S}/s1/versions/1.0/more", {}, 404, "not_found"),
    ("GET", f"{M}/bad%20id", {}, 400, "malformed_id"),
    ("PUT", f"{M}/-dash", {"json": {}}, 400, "malformed_id"),
    ("GET", f"{M}/{'x' * 129}", {}, 400, "malformed_id"),
    ("GET", f"{M}/orders$details", {}, 400, "bad_details"),
    ("GET", f"{S}/s1/meta$details", {}, 400, "bad_details"),
    ("GET", f"{M}/a$b", {}, 400, "malformed_id"),
    ("GET", f"{M}/nope", {}, 404, "not_found"),
    ("DELETE", f"{M}/nope", {}, 404, "not_found"),
    ("DELETE", f"{S}/s1/meta", {}, 405, "action_not_supported"),
    ("POST", f"{S}/s1/versions/1.0", {"json": {}}, 405, "action_not_supported"),
    ("PUT", "/registry/model", {"json": {}}, 405, "action_not_supported"),
    ("DELETE", "/registry", {}, 405, "action_not_supported"),
    ("PUT", f"{M}", {"json": {}}, 405, "action_not_supported"),
    ("PATCH", f"{S}/s1", {"content": b"{}"}, 405, "details_required"),
    # bodies
    ("PUT", f"{M}/x", {}, 400, "missing_body"),
    ("PUT", f"{M}/x", {"content": b"  ", "headers": J}, 400, "missing_body"),
    ("PUT", f"{M}/x", {"content": b'{"name": ', "headers": J}, 400, "parsing_data"),
    ("PUT", f"{M}/x", {"content": b'{"n": NaN}', "headers": J}, 400, "parsing_data"),
    ("PUT", f"{M}/x", {"content": b'{"n": "\xff"}', "headers": J}, 400, "parsing_data"),
    ("PUT", f"{M}/x", {"content": b"[" * 100000 + b"]" * 100000, "headers": J}, 400, "parsing_data"),
    ("PUT", f"{M}/x", {"content": b"[1, 2]", "headers": J}, 400, "bad_request"),
    ("PUT", f"{M}/x", {"content": b"{}", "headers": {"Content-Type": "text/plain"}}, 415, "unsupported_media_type"),
    ("PUT", f"{M}/x", {"content": b"{}"}, 415, "unsupported_media_type"),
    ("PUT", f"{M}/x", {"content": b"{}", "headers": {"Content-Type": "application/json; charset=latin-1"}},
     415, "unsupported_media_type"),
    ("POST", f"{M}", {"json": {"a": None}}, 400, "bad_request"),
    ("POST", f"{M}", {"json": {"a": []}}, 400, "bad_request"),
    ("POST", "/registry", {"json": {"name": "x"}}, 400, "groups_only"),
    ("POST", f"{M}/orders", {"json": {"name": "x"}}, 400, "resources_only"),
    ("POST", f"{S}/new/versions", {"json": {}}, 400, "missing_versions"),
    ("DELETE", f"{M}/orders/messages", {"json": {"created": {"epoch": 1}}}, 400, "misplaced_epoch"),
    ("DELETE", f"{M}", {"json": {"orders": {"messagegroupid": "other"}}}, 400, "mismatched_id"),
    ("DELETE", f"{M}", {"content": b"{", "headers": J}, 400, "parsing_data"),
    ("PUT", f"{S}/s1", {"content": b"{}", "headers": {"xRegistry-schema": "x"}}, 400, "extra_xregistry_header"),
    ("PUT", f"{S}/s1$details", {"json": FORMAT, "headers": {"xRegistry-name": "n"}}, 400, "extra_xregistry_header"),
    ("PUT", f"{S}/s1", {"content": b"{}", "headers": {"xRegistry-name": "%FF"}}, 400, "header_error"),
    ("PUT", f"{S}/s1", {"content": b"{}", "headers": {"xRegistry-epoch": "x"}}, 400, "header_error"),
    # entity rules
    ("PUT", f"{M}/x", {"json": {"messagegroupid": "y"}}, 400, "mismatched_id"),
    ("PUT", f"{S}/s1/versions/1.0$details", {"json": {**FORMAT, "versionid": "2"}}, 400, "mismatched_id"),
    ("PUT", f"{M}/orders", {"json": {"epoch": 99}}, 400, "mismatched_epoch"),
    ("PUT", f"{M}/x", {"json": {"labels": "not a map"}}, 400, "invalid_attribute"),
    ("PUT", f"{M}/x", {"json": {"createdat": "yesterday"}}, 400, "invalid_attribute"),
    ("PUT", f"{M}/ORDERS", {"json": {}}, 400, "bad_request"),
    ("PUT", "/registry/endpoints/e2", {"json": {}}, 400, "required_attribute_missing"),
    ("PUT", f"{S}/s1/meta", {"json": {"xref": "nonsense"}}, 400, "malformed_xref"),
    ("PUT", f"{S}/s1/meta", {"json": {"defaultversionid": "9", "defaultversionsticky": True}}, 400,
     "unknown_id"),
    ("PUT", f"{S}/s2$details", {"json": {**FORMAT, "schema": {}, "schemabase64": "AA=="}}, 400, "one_resource"),
    ("PUT", f"{S}/s3$details", {"json": {"meta": {"xref": "/schemagroups/sg1/schemas/s1"}, **FORMAT}}, 400,
     "extra_xref_attribute"),
    ("PUT", f"{S}/s1/versions/3.0$details", {"json": {**FORMAT, "ancestorid": "nope"}}, 400, "unknown_id"),
    ("PATCH", f"{S}/s1/versions", {"json": {"1.0": {"ancestorid": "2.0"}, "2.0": {"ancestorid": "1.0"}}}, 400,
     "ancestor_circular_reference"),
    ("PUT", "/registry", {"json": {"registryid": "other"}}, 400, "mismatched_id"),
    ("PATCH", "/registry", {"json": {"capabilities": {"shortself": True}}}, 400, "capability_value"),
    ("PATCH", "/registry", {"json": {"modelsource": {"groups": {"x": {}}}}}, 400, "model_error"),
    ("PATCH", "/registry", {"json": {"modelsource": {"groups": {}}}}, 400, "model_compliance_error"),
    ("PUT", "/registry/modelsource", {"json": {"groups": {"x": {"plural": "x", "singular": "y"}}}}, 400,
     "model_compliance_error"),
]


@pytest.mark.parametrize("method, path, kwargs, status, type_", CASES,
                         ids=[f"{c[4]}:{c[0]} {c[1][:60]}" for c in CASES])
async def test_errors_are_typed_problems_and_change_nothing(app, seeded, method, path, kwargs, status, type_):
    before = (await seeded.get("/registry/export")).json()
    rev = await revision(app)
    response = await seeded.request(method, path, **kwargs)
    body = assert_problem(response, status, type_)
    assert body["subject"].startswith("/")
    if type_ == "action_not_supported":
        assert "GET" in response.headers["allow"]
    assert await revision(app) == rev
    assert (await seeded.get("/registry/export")).json() == before


async def test_every_violation_of_a_rejected_write_is_listed(seeded):
    response = await seeded.put(f"{M}/x", json={"labels": "no", "createdat": "never", "documentation": 5})
    body = assert_problem(response, 400, "invalid_attribute")
    assert {e["args"]["name"] for e in body["errors"]} >= {"labels", "createdat", "documentation"}
    assert all(e["subject"] == "/messagegroups/x" for e in body["errors"])


async def test_oversized_bodies_are_refused_before_parsing(tmp_path):
    async with running(make_settings(tmp_path, max_body_bytes=1024)) as app:
        async with asgi_client(app) as client:
            rev = await revision(app)
            big = json.dumps({"description": "x" * 2000}).encode()
            body = assert_problem(await client.put(f"{M}/x", content=big, headers=J), 413, "payload_too_large")
            assert body["args"] == {"limit": "1024"}

            async def stream():
                for _ in range(10):
                    yield b" " * 200

            assert_problem(await client.put(f"{M}/x", content=stream(), headers=J), 413, "payload_too_large")
            assert await revision(app) == rev
            assert (await client.put(f"{M}/x", json={"description": "x" * 100})).status_code == 201


async def test_unexpected_failures_are_500_problems_without_details(app, client, monkeypatch, caplog):
    """A fault injected into a handler: the dispatcher answers a bare server_error and logs it."""
    async def broken(call):
        raise RuntimeError("secret internals")

    monkeypatch.setitem(routes.HANDLERS["root"], "GET", broken)
    response = await client.get("/registry")
    body = assert_problem(response, 500, "server_error")
    assert "secret" not in response.text
    assert body["instance"] in caplog.text and "secret internals" in caplog.text
