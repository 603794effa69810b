"""Remote xRegistry APIs as sources: our own gateways serving real documents over TCP."""

from __future__ import annotations

import pytest

from adapters.base import Listing
from adapters.file import FileSource
from tests.federation.conftest import data_file, remote_config
from xreg.config import RegistryConfig
from xreg.errors import XRegistryError
from xreg.registry.filters import parse_filters, parse_sort
from xreg.registry.reads import collection_tree

GROUP = "/messagegroups/Contoso.ERP.EmployeeEvents"
MESSAGES = [f"{GROUP}/messages/Contoso.ERP.Employee{n}" for n in ("Added", "Deleted", "Updated")]


async def test_entities_are_read_one_request_per_collection(remotes, open_remote):
    erp = remotes["erp"]
    source = await open_remote(remote_config("erp", erp.base_url))
    erp.wrapper.reset()
    wanted = [*MESSAGES, GROUP, "/messagegroups/Contoso.ERP.PaymentEvents", "/messagegroups/nope",
              "/schemagroups/Contoso.ERP/schemas/Contoso.ERP.EmployeeData"]
    found = await source.get_many(wanted)
    assert sorted(found) == sorted(x.lower() for x in wanted if not x.endswith("nope"))
    # three messages of one group: one request; two groups (and a missing one): one; a schema: one
    assert erp.wrapper.requests == 3, erp.wrapper.log
    message = found[MESSAGES[0].lower()]
    assert message.registry == "erp" and message.kind == "resource" and message.ctype == "messagegroups/messages"
    assert message.meta["xid"] == MESSAGES[0] + "/meta"  # meta inlined
    schema = found["/schemagroups/contoso.erp/schemas/contoso.erp.employeedata"]
    assert schema.view["schema"]["type"] == "object"  # the document inlined
    # cached: nothing more is asked
    await source.get_many(wanted)
    assert erp.wrapper.requests == 3


async def test_collections_are_read_page_by_page_through_link_next(remotes, open_remote):
    erp = remotes["erp"]
    source = await open_remote(remote_config("erp", erp.base_url, page_size=3))
    erp.wrapper.reset()
    page = await source.list(Listing(ctypes=("messagegroups",), limit=100))
    assert len(page.items) == 7 and page.total == 7 and not page.has_next
    assert sum(1 for line in erp.wrapper.log if line.startswith("/registry/messagegroups?")) == 3  # 3 + 3 + 1


@pytest.mark.parametrize("hide", [set(), {"filter"}], ids=["filter-sent", "filter-in-gateway"])
async def test_pages_filters_and_sorts_match_the_local_engine(remotes, open_remote, hide):
    """The same document read from a remote and from the embedded engine gives the same pages."""
    erp = remotes["erp"]
    erp.wrapper.hide_flags = hide
    remote = await open_remote(remote_config("erp", erp.base_url, page_size=4))
    local = FileSource(RegistryConfig(id="erp-file", kind="file", path=data_file("contoso-erp-jsons07.xreg.json")))
    await local.open()
    try:
        model = local.model
        cases = [
            (("messagegroups/messages",), None, None),
            (("messagegroups/messages",), "envelopemetadata.type.value=*Employee*", "name=desc"),
            (("messagegroups/messages",), "dataschemauri=*Data", "dataschemauri"),
            (("messagegroups/messages",), "envelope=CloudEvents/1.0,dataschemauri=*Employee*", None),
            (("endpoints",), None, "usage"),
            (("messagegroups",), "messages.envelopemetadata.type.value=*Order*", None),
        ]
        for ctypes, expr, sort in cases:
            tree = collection_tree(model, ctypes[0])
            filters = parse_filters([expr], collections=tree) if expr else None
            order = parse_sort(sort, collections=tree) if sort else None
            for backward in (False, True):
                seen = {"remote": [], "local": []}
                for name, source in (("remote", remote), ("local", local)):
                    cursor = None
                    while True:
                        listing = Listing(ctypes=ctypes, filters=filters, sort=order, limit=3, backward=backward,
                                          **({"before": cursor} if backward else {"after": cursor}))
                        page = await source.list(listing)
                        seen[name].extend(e.xid for e in page.items)
                        more = page.has_prev if backward else page.has_next
                        if not more:
                            break
                        cursor = page.cursors[0] if backward else page.cursors[-1]
                assert seen["remote"] == seen["local"] and seen["remote"], (ctypes, expr, sort, backward)
                assert await remote.count(Listing(ctypes=ctypes, filters=filters)) == len(seen["local"])
    finally:
        await local.close()
    if hide:
        assert not any("filter=" in line for line in erp.wrapper.log), "the filter was sent anyway"


async def test_nested_pages_of_many_parents_take_one_request(remotes, open_remote):
    erp = remotes["erp"]
    source = await open_remote(remote_config("erp", erp.base_url))
    groups = (await source.list(Listing(ctypes=("messagegroups",), limit=100))).items
    erp.wrapper.reset()
    pages = await source.list_children([g.xid for g in groups], Listing(ctypes=("messagegroups/messages",), limit=2))
    assert erp.wrapper.requests == 1, erp.wrapper.log
    assert sum(p.total for p in pages.values()) == 17
    employee = pages[GROUP.lower()]
    assert [e.xid for e in employee.items] == MESSAGES[:2] and employee.has_next and employee.total == 3


async def test_group_types_come_from_the_remote_model(faulty, open_remote):
    source = await open_remote(remote_config("exotic", faulty[0].origin + "/exotic/registry"))
    assert list(source.model.groups) == ["devices"] and "firmwares" in source.model.group("devices").resources
    devices = await source.list(Listing(ctypes=("devices",)))
    assert [d.view["vendor"] for d in devices.items] == ["Acme"]
    firmware = (await source.get_many(["/devices/d1/firmwares/f1"]))["/devices/d1/firmwares/f1"]
    assert firmware.kind == "resource" and firmware.ctype == "devices/firmwares" and firmware.view["channel"] == "stable"
    across = await source.list(Listing(ctypes=("devices/firmwares",)))
    assert [e.xid for e in across.items] == ["/devices/d1/firmwares/f1"]
    first = await source.revision()  # a remote's revisions are snapshots it mints, 1, 2, …
    assert first >= 1 and await source.revision() == first + 1


async def test_remotes_have_no_history(remotes, open_remote):
    source = await open_remote(remote_config("erp", remotes["erp"].base_url))
    with pytest.raises(XRegistryError) as exc:
        await source.get_many([GROUP], as_of=3)
    assert exc.value.type == "bad_request" and "erp" in exc.value.detail
    with pytest.raises(XRegistryError) as exc:
        await source.changes(0)
    assert exc.value.type == "action_not_supported"
    with pytest.raises(XRegistryError) as exc:
        await source.put_group("messagegroups", "x", {}, mode="create", patch=False, epoch=None)
    assert exc.value.type == "action_not_supported"


async def test_status_of_a_healthy_remote(remotes, open_remote):
    source = await open_remote(remote_config("erp", remotes["erp"].base_url))
    await source.get_many([GROUP])
    status = source.status()
    assert status.healthy and status.breaker == "closed" and status.last_error is None
    assert status.last_success is not None and status.requests >= 4 and status.cache["misses"] >= 1


async def test_a_remote_request_imports_nothing(remotes, open_remote):
    """Requests to a remote look no module up: httpcore (httpx's transport) imports ``sniffio``
    for each connection-pool lock and request, and a missing module is a failed import each time
    (a scan of ``sys.path``, a few tenths of a millisecond per request, paid before it is sent):
    ``sniffio`` is a pinned dependency."""
    import sys

    looked_up: list[str] = []

    class Recorder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            looked_up.append(name)
            return None

    source = await open_remote(remote_config("erp", remotes["erp"].base_url))
    await source.get_many([GROUP])  # the first request's own one-time imports
    erp = remotes["erp"].wrapper
    erp.clear()
    sys.meta_path.insert(0, Recorder)
    try:
        found = await source.get_many([*MESSAGES, "/messagegroups/Contoso.ERP.InventoryEvents",
                                       "/schemagroups/Contoso.ERP"])
    finally:
        sys.meta_path.remove(Recorder)
    assert len(found) == 5 and len(erp.log) >= 2  # requests in parallel, over more than one connection
    assert looked_up == []
