"""The round trip of the issue: import the real xRegistry documents, GET /export from one
gateway (over a real uvicorn server), PUT it into an empty gateway through the API, and get
the same entities."""

from __future__ import annotations

import httpx

from gateway.app import create_app
from tests.corpus import XREG_DATA
from tests.http.support import WRITE_KEY, asgi_client, bearer, make_settings, running
from tests.integration.test_import_export import entities
from tests.support.live import LiveServer
from xreg.documents.normalise import normalise
from xreg.documents.reader import find_documents, read_document

#: The two Microsoft.Storage catalogues name one group with ids differing in case only; one
#: registry cannot hold both (see test_import_export), so the older one is left out.
SKIPPED = {"codegen-5675db7__Microsoft.Storage.0.4-wip.cereg.json"}


async def test_export_then_put_into_an_empty_registry_gives_the_same_entities(tmp_path):
    source_settings = make_settings(tmp_path / "a", registry_id="source")
    source_app = create_app(source_settings)
    async with source_app.router.lifespan_context(source_app):
        registry = source_app.state.registry
        for path in find_documents([XREG_DATA]):
            if path.name not in SKIPPED:
                doc, _ = normalise(read_document(path))
                await registry.apply_document(doc, note=f"import {path.name}")
        with LiveServer(source_app) as server:
            response = httpx.get(f"{server.url}/registry/export", headers=bearer(WRITE_KEY), timeout=120)
    assert response.status_code == 200
    exported = response.json()
    assert len(entities(exported)) > 5000

    async with running(make_settings(tmp_path / "b", registry_id="target")) as target:
        async with asgi_client(target) as client:
            put = await client.put("/registry?ignore", json=exported)
            assert put.status_code == 200, put.text[:2000]
            assert put.json()["registryid"] == "target"
            again = (await client.get("/registry/export")).json()
    assert entities(again) == entities(exported)
    assert again["messagegroupscount"] == exported["messagegroupscount"]
