"""The JSON text of answers (``xreg/json_encoding.py``): compact, UTF-8 without escapes, and a
stored integer beyond 64 bits (which the fast encoder refuses) answered exactly, by the xRegistry
HTTP API and by GraphQL, instead of failing the request."""

from __future__ import annotations

import json
from pathlib import Path

from tests.http.support import WRITE_KEY, asgi_client, make_settings, running

BIG = 2**64 + 1  # past every 64-bit integer
SCHEMA = "/registry/schemagroups/g/schemas/big/versions/1"


async def test_a_stored_integer_beyond_64_bits_is_answered_exactly(tmp_path: Path):
    document = {"type": "integer", "maximum": BIG, "description": "Größe ≤ 2⁶⁴ + 1"}
    async with running(make_settings(tmp_path)) as app, asgi_client(app, WRITE_KEY) as client:
        put = await client.put(SCHEMA + "$details", json={"format": "JSONSchema/draft-07", "schema": document})
        assert put.status_code in (200, 201), put.text

        read = await client.get(SCHEMA + "$details?inline=schema")
        assert read.status_code == 200 and json.loads(read.content)["schema"] == document
        # compact and not ASCII-escaped, whichever encoder wrote it
        assert b'"maximum":18446744073709551617' in read.content
        assert "Größe ≤ 2⁶⁴ + 1".encode() in read.content

        answer = await client.post("/graphql", json={"query": """{ lookup(xid: "/schemagroups/g/schemas/big/versions/1")
            { ... on SchemaVersion { xid schema } } }"""})
        assert answer.status_code == 200
        assert json.loads(answer.content) == {"data": {"lookup": {
            "xid": "/schemagroups/g/schemas/big/versions/1", "schema": document}}}


async def test_graphql_answers_are_compact_utf8(tmp_path: Path):
    async with running(make_settings(tmp_path)) as app, asgi_client(app, WRITE_KEY) as client:
        put = await client.put("/registry/messagegroups/g1", json={"name": "Grüße"})
        assert put.status_code in (200, 201), put.text
        answer = await client.post("/graphql", json={"query": '{ lookup(xid: "/messagegroups/g1") { ... on MessageGroup { name } } }'})
        assert answer.content == '{"data":{"lookup":{"name":"Grüße"}}}'.encode()
