"""An endpoint's ``messagegroups`` over GraphQL: every kind of reference, resolved together in
order, with an ``unresolved_reference`` error for each one that does not resolve."""

from __future__ import annotations

from tests.graphql.conftest import recorded_reads

GROUPS = """{ registry { endpoints(first: 10) { nodes { endpointid messagegroups { xid name } } } } }"""


async def test_every_kind_of_reference_resolves_in_order_with_an_error_for_each_failure(empty):
    await empty.registry.apply_document({
        "messagegroups": {"a": {"name": "A"}, "b": {"name": "B", "messages": {"m": {"name": "M"}}}},
        "endpoints": {
            "e1": {"usage": ["producer"], "messagegroups": [
                "/messagegroups/b",                       # an XID
                "/messagegroups/missing",                 # nothing there
                "#/messagegroups/a",                      # a pointer
                "http://gw/registry/messagegroups/b/messages/m",  # there, but not a message group
                "http://gw/registry/messagegroups/a",     # a URL of this registry
                "https://elsewhere.example/messagegroups/a",  # a URL of no configured registry
                "/messagegroups/b",                       # the same group again
            ]},
            "e2": {"usage": ["consumer"], "messagegroups": ["/messagegroups/a"]},
        },
    })
    body = await empty(GROUPS)
    e1, e2 = body["data"]["registry"]["endpoints"]["nodes"]
    assert [g["xid"] for g in e1["messagegroups"]] == [
        "/messagegroups/b", "/messagegroups/a", "/messagegroups/a", "/messagegroups/b"]
    assert [g["name"] for g in e1["messagegroups"]] == ["B", "A", "A", "B"]
    assert e2["messagegroups"] == [{"xid": "/messagegroups/a", "name": "A"}]
    errors = body["errors"]
    assert [e["extensions"]["code"] for e in errors] == ["unresolved_reference"] * 3
    assert all(e["path"] == ["registry", "endpoints", "nodes", 0, "messagegroups"] for e in errors)
    by_reference = {e["extensions"]["args"]["reference"]: e["extensions"]["detail"] for e in errors}
    assert "not fetched" in by_reference["https://elsewhere.example/messagegroups/a"]
    assert by_reference["/messagegroups/missing"] == "registry 'test' has no /messagegroups/missing"
    assert by_reference["http://gw/registry/messagegroups/b/messages/m"] == (
        "/messagegroups/b/messages/m in registry 'test' is not of messagegroups")


async def test_references_of_a_page_of_endpoints_are_one_store_read(empty):
    await empty.registry.apply_document({
        "messagegroups": {f"g{i}": {"name": f"G{i}"} for i in range(12)},
        "endpoints": {f"e{i}": {"usage": ["producer"], "messagegroups": [f"/messagegroups/g{i}", f"/messagegroups/g{i + 1}"]}
                      for i in range(11)},
    })
    with recorded_reads(empty.registry.store) as reads:
        data = await empty.data(GROUPS.replace("first: 10", "first: 11"))
    calls = [len(xids) for xids in reads]
    nodes = data["registry"]["endpoints"]["nodes"]
    assert [[g["name"] for g in n["messagegroups"]] for n in nodes] == [
        [f"G{i}", f"G{i + 1}"] for i in sorted(range(11), key=lambda i: f"e{i}")]
    assert calls == [12]  # the twelve groups of the eleven endpoints together (nothing of the registry asked)
