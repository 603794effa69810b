"""Fixtures of the Spark tests: one live gateway loaded with the 117-feed corpus, served by
uvicorn on 127.0.0.1 with a request log, and one local[2] SparkSession for the whole session.

The gateway refuses anonymous reads, so every read of the data source carries the bearer token
(an API key with read and write scopes, configured by its hash like any other key).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from gateway.app import create_app
from gateway.auth import hash_key
from tests.corpus import XREG_DATA
from tests.support.live import LiveServer
from xreg.config import ApiKey, Settings
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.registry.service import LocalRegistry

CORPUS_117 = XREG_DATA / "rts__ALL-117-feeders-merged.xreg.json"
REGISTRY_ID = "main"
TOKEN = "spark-tests-token"
#: What the 117-feed corpus holds, per entity type of the data source.
CORPUS_COUNTS = {"endpoints": 415, "messagegroups": 545, "messages": 1538, "schemagroups": 217, "schemas": 685,
                 "schemaversions": 685}


class RequestLog:
    """ASGI middleware that records every ``/graphql`` request body and response body, and
    the rows the bulk read (``/bulk/rows``) returned; ``before_bulk``, when set, runs (in a
    thread of its own) before each bulk read is answered."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.entries: list[tuple[dict[str, Any], dict[str, Any]]] = []
        #: ``(query string, rows returned)`` of every bulk read answered with rows.
        self.bulk: list[tuple[str, int]] = []
        self.before_bulk: Callable[[], None] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/bulk/rows":
            if self.before_bulk is not None:
                await asyncio.to_thread(self.before_bulk)
            await self._bulk(scope, receive, send)
            return
        if scope["type"] != "http" or scope["path"] != "/graphql":
            await self.app(scope, receive, send)
            return
        request, response = bytearray(), bytearray()

        async def recv() -> dict[str, Any]:
            message = await receive()
            request.extend(message.get("body", b""))
            return message

        async def snd(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                response.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, recv, snd)
        try:
            self.entries.append((json.loads(request or b"{}"), json.loads(response or b"{}")))
        except ValueError:
            pass

    async def _bulk(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body, status = bytearray(), [0]

        async def snd(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if status[0] == 200 and not message.get("more_body"):  # recorded before the client has it
                    self.bulk.append((scope["query_string"].decode(),
                                      pa.ipc.open_stream(bytes(body)).read_all().num_rows))
            await send(message)

        await self.app(scope, receive, snd)

    def bulk_rows(self) -> int:
        """Rows the bulk read returned since the log was cleared."""
        return sum(rows for _, rows in list(self.bulk))

    def clear(self) -> None:
        """Forget what was recorded so far."""
        self.entries.clear()
        self.bulk.clear()

    def returned(self, operation: str, segment: str) -> int:
        """How many entity views (``json``) the gateway returned to ``query <operation>``
        requests whose XID contains ``segment``."""
        def walk(node: Any) -> int:
            if isinstance(node, dict):
                own = isinstance(node.get("json"), dict) and segment in node["json"].get("xid", "")
                return own + sum(walk(v) for k, v in node.items() if k != "json")
            if isinstance(node, list):
                return sum(walk(v) for v in node)
            return 0

        return sum(walk(resp.get("data")) for req, resp in list(self.entries)
                   if req.get("query", "").lstrip().startswith(f"query {operation}("))


@dataclass
class Gateway:
    """The running gateway: its GraphQL URL, its request log, the corpus' revision."""

    url: str
    log: RequestLog
    corpus_revision: int
    #: The gateway's settings (another app on them is another worker of the same deployment).
    settings: Settings
    token: str = TOKEN
    http: httpx.Client = field(default=None)  # type: ignore[assignment]

    def graphql(self, query: str, **variables: Any) -> dict[str, Any]:
        """Run a query or mutation with the token; fails the test on errors."""
        resp = self.http.post(self.url, json={"query": query, "variables": variables})
        body = resp.json()
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def revision(self) -> int:
        """The registry's current revision."""
        return self.graphql("{ registry { revision } }")["registry"]["revision"]

    def total(self, collection: str, revision: int) -> int:
        """``totalCount`` of a registry-wide collection as of ``revision``."""
        field_ = {"schemaversions": 'versions(resourceType: "schemas")'}.get(collection, collection)
        data = self.graphql(f"query($v: Int) {{ registry(asOf: $v) {{ {field_} {{ totalCount }} }} }}", v=revision)
        return next(iter(data["registry"].values()))["totalCount"]

    def import_document(self, document: dict[str, Any]) -> int:
        """Write through the gateway's API (one atomic import); returns the new revision."""
        data = self.graphql("mutation($d: JSON!) { importDocument(document: $d) { revision } }", d=document)
        return data["importDocument"]["revision"]


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """``app`` on a real uvicorn at 127.0.0.1 (its own thread); yields the base URL."""
    with LiveServer(app) as live:
        yield live.url


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A real gateway on 127.0.0.1, loaded with the 117-feed corpus."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("gateway"), registry_id=REGISTRY_ID, anonymous_read=False,
        api_keys=[ApiKey(name="spark-tests", sha256=hash_key(TOKEN), scopes=["read", "write"])],
        history_keep_days=None,
    )

    async def load() -> int:
        registry = LocalRegistry.from_settings(settings)
        await registry.open()
        try:
            doc, _ = normalise(read_document(CORPUS_117))
            return (await registry.apply_document(doc, note="117-feed corpus")).revision
        finally:
            await registry.close()

    revision = asyncio.run(load())
    log = RequestLog(create_app(settings))
    http = httpx.Client(timeout=30, headers={"authorization": f"Bearer {TOKEN}"})
    with serve(log) as base:
        try:
            yield Gateway(f"{base}/graphql", log, revision, settings, http=http)
        finally:
            http.close()


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    """One local[2] SparkSession for every Spark test, with the data source registered."""
    from pyspark_xregistry.snapshot import build_session

    session = build_session("local[2]", "1g")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def read(spark_session: Any, gateway: Gateway):
    """``read(entity, **options)``: a DataFrame of the data source against the live gateway."""
    def _read(entity: str, schema: Any = None, **options: Any) -> Any:
        reader = spark_session.read.format("xregistry").option("url", gateway.url).option("entity", entity)
        reader = reader.option("token", gateway.token)
        for key, value in options.items():
            reader = reader.option(key, str(value))
        if schema is not None:
            reader = reader.schema(schema)
        return reader.load()

    return _read
