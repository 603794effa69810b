"""Size bounds: a schema document over ``XREG_EVAL_MAX_DOCUMENT_BYTES`` is refused on write
(400 ``format_violation`` naming the setting) before any library reads it, and ``/healthz``
answers meanwhile; a payload over ``XREG_EVAL_MAX_PAYLOAD_BYTES`` is refused by
``validateMessage``."""

from __future__ import annotations

import asyncio
import json

from tests.security.conftest import probe_while, store_message, validate_anonymously

SCHEMA_URL = "/registry/schemagroups/g/schemas/big/versions/1"


def large_schema(properties: int) -> dict:
    return {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "d" * 100}
                                             for i in range(properties)}}


async def test_a_large_schema_put_is_refused_while_healthz_answers(gateway):
    body = json.dumps(large_schema(40_000)).encode()
    assert len(body) > 5_000_000
    put = asyncio.create_task(gateway.client.put(SCHEMA_URL, content=body, headers={
        **gateway.headers, "xRegistry-format": "JsonSchema/draft-07", "Content-Type": "application/json"}))
    await probe_while(gateway.client, put)
    response = await put
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["type"].endswith("#format_violation")
    assert "XREG_EVAL_MAX_DOCUMENT_BYTES" in problem["detail"]
    assert (await gateway.client.get("/healthz")).status_code == 200
    missing = await gateway.client.get("/registry/schemagroups/g/schemas/big")
    assert missing.status_code == 404  # nothing was written


async def test_a_schema_under_the_limit_is_still_checked(gateway):
    body = json.dumps(large_schema(100)).encode()
    response = await gateway.client.put(SCHEMA_URL, content=body, headers={
        **gateway.headers, "xRegistry-format": "JsonSchema/draft-07", "Content-Type": "application/json"})
    assert response.status_code in (200, 201), response.text


async def test_a_large_payload_is_refused(gateway):
    xid = await store_message(gateway, "any", "JsonSchema/draft-07", {"type": "array"})
    result = await validate_anonymously(gateway, xid, ["x" * 1000] * 1100)
    assert result["validated"] is False and "XREG_EVAL_MAX_PAYLOAD_BYTES" in result["reason"]
