"""What the reads a federating gateway sends a remote registry cost its store (issue 36): the
store calls of each (pinned on both embedded stores), and on SQLite the statements they run
and how many of those go through the connection's thread (none: each read here touches a few
entities, so its statements run on the event loop). A read that starts counting what its
response already holds, or looks a parent up twice, fails here."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mongomock_motor import AsyncMongoMockClient

from gateway.app import create_app
from tests.corpus import XREG_DATA
from tests.http.support import asgi_client, make_settings
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore

GROUP = "Contoso.ERP.ReservationEvents"
MESSAGES = ["Contoso.ERP.ReservationPlaced", "Contoso.ERP.ReservationCancelled", "Contoso.ERP.ReservationRefunded"]
GROUPS = [GROUP, "Contoso.ERP.PaymentEvents", "Contoso.ERP.ShippingEvents", "Contoso.ERP.InventoryEvents",
          "Contoso.ERP.ProductEvents", "Contoso.ERP.EmployeeEvents", "Contoso.ERP.PurchasingEvents", "Contoso.ERP.None"]
SCHEMAS = [f"Contoso.ERP.{s}Data" for s in ("Order", "Payment", "Shipment", "Employee", "Inventory", "Product",
                                              "Refund", "Return")]

#: The reads of a federating gateway (adapters/remote.py), with the store calls each costs.
#: Every read also takes the revision for its ETag (``current_revision``).
READS = {
    # messages by id, with their meta: the parent group, the page, the page's cross-references
    # (none), the versions counts; no count of the page (it is whole) nor per message
    "messages by id": (
        f"/registry/messagegroups/{GROUP}/messages?" + "&".join(f"filter=messageid={m}" for m in MESSAGES)
        + "&inline=meta&limit=500",
        {"current_revision": 1, "get_many": 1, "list": 2, "count_children": 1}, 3),
    # groups by id: the page, the messages counts; no count per group
    "groups by id": ("/registry/messagegroups?" + "&".join(f"filter=messagegroupid={g}" for g in GROUPS)
                     + "&limit=500", {"current_revision": 1, "list": 1, "count_children": 1}, 7),
    # schemas by id with their meta and documents (the second wave of a federated query)
    "schemas by id": ("/registry/schemagroups/Contoso.ERP/schemas?" + "&".join(f"filter=schemaid={s}" for s in SCHEMAS)
                      + "&inline=meta&inline=schema&limit=500",
                      {"current_revision": 1, "get_many": 1, "list": 2, "count_children": 1}, 8),
    "message with meta": ("/registry/messagegroups/Contoso.ERP.PaymentEvents/messages/Contoso.ERP.PaymentsReceived"
                          "?inline=meta", {"current_revision": 1, "get_many": 1, "count_children": 1}, None),
    "schema details": ("/registry/schemagroups/Contoso.ERP/schemas/Contoso.ERP.EmployeeData$details"
                       "?inline=meta&inline=schema", {"current_revision": 1, "get_many": 1, "count_children": 1}, None),
    "registry": ("/registry", {"current_revision": 1, "get_many": 1, "count_children": 3}, None),
}


def _registry(store: str) -> LocalRegistry | None:
    if store == "sqlite":
        return None
    return LocalRegistry(MongoStore(client=AsyncMongoMockClient(), database=f"costs_{uuid.uuid4().hex[:12]}"),
                         registry_id="erp", base_url="http://gw.test/registry")


@pytest.fixture(params=["sqlite", "mongomock"])
async def erp(request, tmp_path: Path):
    """A client of a gateway serving the contoso ERP document, and its store."""
    settings = make_settings(tmp_path, registry_id="erp", config_watch_seconds=0)
    app = create_app(settings, registry=_registry(request.param))
    async with app.router.lifespan_context(app), asgi_client(app) as client:
        registry = app.state.registry
        document = normalise(read_document(XREG_DATA / "contoso-erp-jsons07.xreg.json"), strict=False)[0]
        await registry.apply_document(document)
        yield client, registry.store, request.param


@pytest.mark.parametrize("read", list(READS))
async def test_a_remote_read_costs_its_store_calls(erp, read: str):
    client, store, kind = erp
    url, calls, members = READS[read]
    assert (await client.get(url)).status_code == 200  # the first read of the app warms what it caches
    store.stats.calls.clear()
    statements, hops = store.stats.statements, store.stats.thread_hops
    response = await client.get(url)
    assert response.status_code == 200, response.text
    if members is not None:
        assert len(response.json()) == members
    assert store.stats.calls == calls
    if kind == "sqlite":  # one statement a call, and the counts of the pages' parents
        pages = calls.get("list", 0)
        assert store.stats.statements - statements == sum(calls.values()) + pages
        assert store.stats.thread_hops - hops == 0


async def test_a_page_that_is_not_whole_is_counted(erp):
    """``count`` of the ``Link`` headers: the page's own length only when it holds everything."""
    client, store, _ = erp
    url = f"/registry/messagegroups/{GROUP}/messages?limit=2"
    await client.get(url)
    store.stats.calls.clear()
    response = await client.get(url)
    assert store.stats.calls.get("count") == 1
    assert "count=3" in response.headers["link"] and "rel=next" in response.headers["link"]
    whole = await client.get(f"/registry/messagegroups/{GROUP}/messages?limit=3")
    assert "count=3" in whole.headers["link"] and "rel=next" not in whole.headers["link"]
