"""The remote adapter against a fake xRegistry server written from the specification alone
(:mod:`tests.federation.spec_server`), served on 127.0.0.1: without paging, with ``Link``
paging (relative and absolute next links), with ``inline`` offered for some paths only or not
at all, with a custom model, in an older document shape, and hostile — and one GraphQL query
through the federation over several of them."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from adapters.base import Listing, SourceUnavailable
from adapters.remote import RemoteSource
from tests.federation.conftest import remote_config
from tests.federation.servers import Served
from tests.federation.spec_server import ROOT, Shape, spec_app
from tests.federation.test_federation import remote_entry
from tests.federation.test_graphql_federation import start

MESSAGES = {"messagegroups": {"singular": "messagegroup", "resources": {
    "messages": {"singular": "message", "hasdocument": False}}},
    "schemagroups": {"singular": "schemagroup", "resources": {"schemas": {"singular": "schema"}}}}
ORDER_V1 = b'{"type": "object", "title": "v1"}'
ORDER_V2 = b'{"type": "object", "title": "v2"}'
PROTO = b'syntax = "proto3";\nmessage Order { string id = 1; }\n'


def message_data() -> dict[str, Any]:
    """Three message groups of three messages, and schemas with documents (JSON and text)."""
    return {
        "messagegroups": {f"g{i}": {"attrs": {"name": f"Group {i}"}, "messages": {
            f"m{j}": {"1": {"name": f"Message {i}.{j}", "envelope": "CloudEvents/1.0",
                            "envelopemetadata": {"type": {"value": f"com.example.m{i}{j}"}}}}
            for j in (1, 2, 3)}} for i in (1, 2, 3)},
        "schemagroups": {"sg": {"attrs": {}, "schemas": {
            "order": {"1": {"format": "JsonSchema/draft-07", "contenttype": "application/json", "$document": ORDER_V1},
                      "2": {"format": "JsonSchema/draft-07", "contenttype": "application/json", "$document": ORDER_V2}},
            "proto": {"1": {"format": "Protobuf/3", "contenttype": "text/plain", "$document": PROTO}}}}},
    }


def custom_shape(**kw: Any) -> Shape:
    """The spec's ``dirs`` / ``files`` example model, a type the gateway does not know; ``links``
    have no document."""
    groups = {"dirs": {"singular": "dir", "resources": {"files": {"singular": "file", "hasdocument": True},
                                                        "links": {"singular": "link", "hasdocument": False}}}}
    data = {"dirs": {"d1": {"attrs": {"name": "Home", "owner": "ops"},
                            "files": {"readme": {"1": {"contenttype": "text/plain", "$document": b"hello\n"}}},
                            "links": {"up": {"1": {"target": "/dirs/d2"}}}},
                     "d2": {"attrs": {"name": "Work"}, "files": {}, "links": {}}}}
    return Shape(groups=groups, data=data, registryid="files", **kw)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Shape], Any]]:
    """``await serve(shape)``: the fake registry of ``shape`` on 127.0.0.1, stopped after the test."""
    async with contextlib.AsyncExitStack() as stack:

        async def make(shape: Shape) -> Served:
            return await stack.enter_async_context(Served(spec_app(shape)))

        yield make


async def opened(open_remote, server: Served, rid: str = "spec", **settings: Any) -> RemoteSource:
    return await open_remote(remote_config(rid, server.url + ROOT, retries=0, **settings))


def asked(shape: Shape, path: str) -> int:
    return shape.hits[path]


# -- the three shapes ----------------------------------------------------------------------------


async def test_a_server_without_paging_is_read_whole(serve, open_remote):
    shape = Shape(groups=MESSAGES, data=message_data())
    source = await opened(open_remote, await serve(shape))
    assert source.capabilities["pagination"] is False
    groups = await source.list(Listing(ctypes=("messagegroups",)))
    assert [g.xid for g in groups.items] == ["/messagegroups/g1", "/messagegroups/g2", "/messagegroups/g3"]
    assert groups.items[0].view["name"] == "Group 1"
    # messages of every group: one request for the groups with their messages inlined
    messages = await source.list(Listing(ctypes=("messagegroups/messages",), limit=100))
    assert len(messages.items) == 9 and messages.items[0].meta is not None
    assert asked(shape, "/messagegroups") == 2 and asked(shape, "/messagegroups/g1/messages") == 0


async def test_a_server_without_capabilities_is_asked_for_nothing_it_did_not_offer(serve, open_remote):
    """No ``/capabilities``: no flag is supported and there is no pagination (spec.md: absent
    flags are unsupported, ``pagination`` defaults to false) — no ``limit``, no ``inline``."""
    shape = Shape(groups=MESSAGES, data=message_data(), capabilities=False)
    source = await opened(open_remote, await serve(shape))
    assert source.capabilities == {} and not source.supports("inline")
    groups = await source.list(Listing(ctypes=("messagegroups",)))
    assert len(groups.items) == 3
    messages = await source.list(Listing(ctypes=("messagegroups/messages",), limit=100))
    assert len(messages.items) == 9 and asked(shape, "/messagegroups/g3/messages") == 1
    # a document not inlined is read from the document URL (the metadata from $details)
    xids = ["/schemagroups/sg/schemas/order", "/schemagroups/sg/schemas/proto", "/schemagroups/sg/schemas/order/versions/1"]
    found = await source.get_many(xids)
    order, proto, first = (found[x] for x in xids)
    assert order.view["versionid"] == "2" and order.view["schema"]["title"] == "v2"
    assert base64.b64decode(proto.view["schemabase64"]) == PROTO and first.view["schema"]["title"] == "v1"
    assert asked(shape, "/schemagroups/sg/schemas/order$details") == asked(shape, "/schemagroups/sg/schemas/order") == 1


@pytest.mark.parametrize("paging", ["relative", "absolute"])
@pytest.mark.parametrize("inline", ["all", "none"])
async def test_link_paging_relative_and_absolute(serve, open_remote, paging, inline):
    shape = Shape(groups=MESSAGES, data=message_data(), paging=paging, page_size=2, inline=inline)
    source = await opened(open_remote, await serve(shape), page_size=50)
    assert source.capabilities["pagination"] is True
    groups = await source.list(Listing(ctypes=("messagegroups",)))
    assert [g.id for g in groups.items] == ["g1", "g2", "g3"]
    assert asked(shape, "/messagegroups") == 2  # pages of 2: the link followed once, as given
    messages = await source.list(Listing(ctypes=("messagegroups/messages",), limit=100))
    assert sorted(e.id for e in messages.items) == sorted(f"m{j}" for _ in range(3) for j in (1, 2, 3))
    assert {e.xid.rsplit("/", 2)[0] for e in messages.items} == {f"/messagegroups/g{i}" for i in (1, 2, 3)}
    walked = asked(shape, "/messagegroups/g1/messages")
    if inline == "none":  # no inline: the groups' collections are walked, two pages each
        assert walked == 2 and messages.items[0].meta is None
    else:
        assert walked == 0 and messages.items[0].meta is not None


async def test_a_custom_model_is_read_from_the_remote(serve, open_remote):
    shape = custom_shape(paging="relative", page_size=1)
    source = await opened(open_remote, await serve(shape))
    assert list(source.model.groups) == ["dirs"]
    assert set(source.model.group("dirs").resources) == {"files", "links"}
    dirs = await source.list(Listing(ctypes=("dirs",)))
    assert [(d.id, d.view["name"]) for d in dirs.items] == [("d1", "Home"), ("d2", "Work")]
    found = await source.get_many(["/dirs/d1/files/readme", "/dirs/d1/links/up", "/dirs/d1"])
    readme, up = found["/dirs/d1/files/readme"], found["/dirs/d1/links/up"]
    assert readme.kind == "resource" and readme.ctype == "dirs/files"
    assert base64.b64decode(readme.view["filebase64"]) == b"hello\n"  # not JSON: base64, inlined
    assert up.view["target"] == "/dirs/d2" and found["/dirs/d1"].view["owner"] == "ops"
    # metadata of a resource with a document through $details; none for a type without documents
    assert asked(shape, "/dirs/d1/files/readme$details") == 1 and asked(shape, "/dirs/d1/files/readme") == 0
    assert asked(shape, "/dirs/d1/links/up") == 1 and asked(shape, "/dirs/d1/links/up$details") == 0
    across = await source.list(Listing(ctypes=("dirs/files",)))
    assert [f.xid for f in across.items] == ["/dirs/d1/files/readme"]


# -- documents, inline negotiation, older shapes -------------------------------------------------------


async def test_documents_are_read_through_details_and_inline(serve, open_remote):
    shape = Shape(groups=MESSAGES, data=message_data())
    source = await opened(open_remote, await serve(shape))
    xids = ["/schemagroups/sg/schemas/order", "/schemagroups/sg/schemas/proto",
            "/schemagroups/sg/schemas/order/versions/1", "/messagegroups/g1/messages/m1"]
    found = await source.get_many(xids)
    order, proto, first = (found[x] for x in xids[:3])
    assert order.view["schema"]["title"] == "v2" and order.meta["defaultversionid"] == "2"
    assert base64.b64decode(proto.view["schemabase64"]) == PROTO
    assert first.kind == "version" and first.view["schema"]["title"] == "v1"
    assert found[xids[3]].view["name"] == "Message 1.1"
    assert asked(shape, "/schemagroups/sg/schemas/order$details") == 1
    assert asked(shape, "/schemagroups/sg/schemas/order/versions/1$details") == 1
    assert asked(shape, "/messagegroups/g1/messages/m1") == 1  # hasdocument false: no $details


async def test_inline_offered_for_some_paths_only(serve, open_remote):
    """The remote lists ``inline`` but refuses it for nested collections: those are walked, the
    refusal remembered; ``meta`` and documents are still inlined where it accepts them."""
    shape = Shape(groups=MESSAGES, data=message_data(), inline="leaf")
    source = await opened(open_remote, await serve(shape), cache_ttl=0)
    for _ in range(2):
        messages = await source.list(Listing(ctypes=("messagegroups/messages",), limit=100))
        assert len(messages.items) == 9 and all(m.meta is not None for m in messages.items)
    # first: refused once, then the groups and each group's messages; second: walked at once
    assert asked(shape, "/messagegroups") == 3 and asked(shape, "/messagegroups/g2/messages") == 2
    order = (await source.get_many(["/schemagroups/sg/schemas/order"]))["/schemagroups/sg/schemas/order"]
    assert order.view["schema"]["title"] == "v2"


async def test_answers_in_an_older_document_shape_are_normalised(serve, open_remote):
    data = {"messagegroups": {"legacy": {"attrs": {}, "messages": {"m": {"1": {
        "basemessageurl": "/messagegroups/legacy/messages/base", "schemaurl": "/schemagroups/sg/schemas/order",
        "schemaformat": "JsonSchema/draft-07", "envelope": "CloudEvents/1.0",
        "createdat": "2024-01-01T00:00:00"}}}}}}
    shape = Shape(groups=MESSAGES, data=data, specversion="1.0-rc1")
    source = await opened(open_remote, await serve(shape))
    xid = "/messagegroups/legacy/messages/m"
    for message in ((await source.get_many([xid]))[xid], (await source.list(
            Listing(ctypes=("messagegroups/messages",)), "/messagegroups/legacy")).items[0]):
        view = message.view
        assert view["basemessageuri"] == "/messagegroups/legacy/messages/base" and "basemessageurl" not in view
        assert view["dataschemauri"] == "/schemagroups/sg/schemas/order"
        assert view["dataschemaformat"] == "JsonSchema/draft-07"
        assert view["createdat"] == "2024-01-01T00:00:00Z"


# -- hostile remotes ------------------------------------------------------------------------------------


async def test_a_next_link_cycle_is_cut_off(serve, open_remote):
    shape = Shape(groups=MESSAGES, data=message_data(), paging="relative", hostile="cycle")
    source = await opened(open_remote, await serve(shape))
    with pytest.raises(SourceUnavailable) as exc:
        await source.list(Listing(ctypes=("messagegroups",)))
    assert exc.value.type == "data_retrieval_error" and "link back to a page already read" in exc.value.reason
    assert asked(shape, "/messagegroups") == 3  # pages 1, 2 and 1 again (named differently): then page 2 repeats


async def test_an_endless_page_chain_is_cut_off(serve, open_remote):
    shape = Shape(groups=MESSAGES, data=message_data(), paging="relative", hostile="endless")
    source = await opened(open_remote, await serve(shape), max_pages=5)
    with pytest.raises(SourceUnavailable) as exc:
        await source.list(Listing(ctypes=("messagegroups",)))
    assert "more than 5 pages" in exc.value.reason
    assert asked(shape, "/messagegroups") == 5


async def test_a_next_link_to_another_host_is_refused(serve, open_remote, canary):
    served, canary_hits = canary
    before = sum(canary_hits.values())
    shape = Shape(groups=MESSAGES, data=message_data(), paging="relative", hostile="offhost",
                  elsewhere=served.origin)
    source = await opened(open_remote, await serve(shape))
    with pytest.raises(SourceUnavailable) as exc:
        await source.list(Listing(ctypes=("messagegroups",)))
    assert "refusing to fetch" in exc.value.reason and served.origin in exc.value.reason
    assert sum(canary_hits.values()) == before


# -- GraphQL through the federation ----------------------------------------------------------------


async def test_graphql_over_spec_servers(tmp_path, serve, canary):
    whole = await serve(Shape(groups=MESSAGES, data=message_data(), registryid="whole"))
    paged = await serve(Shape(groups=MESSAGES, data=message_data(), registryid="paged", paging="absolute",
                              inline="none"))
    custom = await serve(custom_shape(paging="relative", page_size=1))
    cycle = await serve(Shape(groups=MESSAGES, data=message_data(), registryid="cycle", paging="relative",
                              hostile="cycle"))
    endless = await serve(Shape(groups=MESSAGES, data=message_data(), registryid="endless", paging="relative",
                                hostile="endless"))
    offhost = await serve(Shape(groups=MESSAGES, data=message_data(), registryid="offhost", paging="relative",
                                hostile="offhost", elsewhere=canary[0].origin))
    registries = [remote_entry("whole", whole.url + ROOT), remote_entry("paged", paged.url + ROOT),
                  remote_entry("files", custom.url + ROOT), remote_entry("cycle", cycle.url + ROOT),
                  remote_entry("endless", endless.url + ROOT, max_pages=4),
                  remote_entry("offhost", offhost.url + ROOT)]
    gw, lifespan = await start(tmp_path, registries)
    try:
        body = await gw("""{ messagegroups(first: 100) { totalCount nodes { registryid xid } }
            messages(first: 100, registries: ["whole", "paged"]) { totalCount }
            groups(groupType: "dirs") { nodes { registryid xid ... on GenericGroup { name
              resources(resourceType: "files") { nodes { xid } } } } } }""")
        data, errors = body["data"], body["errors"]
        found = {(n["registryid"], n["xid"]) for n in data["messagegroups"]["nodes"]}
        assert found == {(r, f"/messagegroups/g{i}") for r in ("whole", "paged") for i in (1, 2, 3)}
        assert data["messages"]["totalCount"] == 18
        dirs = data["groups"]["nodes"]
        assert [(d["registryid"], d["xid"], d["name"]) for d in dirs] == [("files", "/dirs/d1", "Home"),
                                                                          ("files", "/dirs/d2", "Work")]
        assert dirs[0]["resources"]["nodes"] == [{"xid": "/dirs/d1/files/readme"}]
        by_registry = {e["extensions"]["args"]["registry"]: e["extensions"] for e in errors}
        assert set(by_registry) == {"cycle", "endless", "offhost"}
        assert all(e["code"] == "data_retrieval_error" for e in by_registry.values())
        assert "link back" in by_registry["cycle"]["detail"]
        assert "more than 4 pages" in by_registry["endless"]["detail"]
        assert "refusing to fetch" in by_registry["offhost"]["detail"]
    finally:
        await gw.client.aclose()
        await lifespan.__aexit__(None, None, None)
