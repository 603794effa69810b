"""Root look-ups (``lookup``, ``node``) under several aliases: read together, one store read per
registry and revision, and each alias answered, or failed, on its own."""

from __future__ import annotations

import pytest

from resolvers.ids import global_id
from tests.graphql.conftest import recorded_reads

MESSAGES = "/messagegroups/g/messages"
DOC = {"messagegroups": {"g": {"messages": {f"m{i}": {"name": f"first {i}"} for i in range(3)}}}}


@pytest.fixture
async def messages(empty):
    await empty.registry.apply_document(DOC)
    return empty


def _errors(body: dict) -> dict[str, str]:
    return {e["path"][0]: e["extensions"]["code"] for e in body.get("errors", [])}


async def test_aliased_lookups_are_one_read_and_each_answered_alone(messages):
    query = f"""{{ a: lookup(xid: "{MESSAGES}/m0") {{ xid }}
      b: lookup(xid: "{MESSAGES}/M1") {{ xid ... on Message {{ name }} }}
      same: lookup(xid: "{MESSAGES}/m1") {{ xid }}
      missing: lookup(xid: "{MESSAGES}/none") {{ xid }}
      bad: lookup(xid: "messagegroups/g") {{ xid }}
      empty: lookup(xid: "/messagegroups//messages/m0") {{ xid }}
      collection: lookup(xid: "/messagegroups") {{ xid }}
      elsewhere: lookup(xid: "/messagegroups/g", registry: "nowhere") {{ xid }} }}"""
    with recorded_reads(messages.registry.store) as reads:
        body = await messages(query)
    assert reads == [[f"{MESSAGES}/m0", f"{MESSAGES}/m1", f"{MESSAGES}/none"]]  # one read, each XID once
    assert body["data"] == {"a": {"xid": f"{MESSAGES}/m0"}, "b": {"xid": f"{MESSAGES}/m1", "name": "first 1"},
                            "same": {"xid": f"{MESSAGES}/m1"}, "missing": None, "bad": None, "empty": None,
                            "collection": None, "elsewhere": None}
    assert _errors(body) == {"bad": "malformed_xid", "empty": "malformed_xid", "collection": "malformed_xid",
                             "elsewhere": "not_found"}


async def test_lookups_at_two_revisions_read_each_revision_once(messages):
    before = await messages.registry.store.current_revision()
    await messages.registry.apply_document(
        {"messagegroups": {"g": {"messages": {"m0": {"name": "second 0"}}}}})
    query = f"""{{ now: lookup(xid: "{MESSAGES}/m0") {{ ... on Message {{ name }} }}
      then: lookup(xid: "{MESSAGES}/m0", asOf: {before}) {{ ... on Message {{ name }} }}
      thenOther: lookup(xid: "{MESSAGES}/m2", asOf: {before}) {{ ... on Message {{ name }} }}
      ahead: lookup(xid: "{MESSAGES}/m0", asOf: {before + 1000}) {{ xid }} }}"""
    with recorded_reads(messages.registry.store) as reads:
        body = await messages(query)
    assert sorted(map(sorted, reads)) == [[f"{MESSAGES}/m0"], [f"{MESSAGES}/m0", f"{MESSAGES}/m2"]]
    assert body["data"] == {"now": {"name": "second 0"}, "then": {"name": "first 0"},
                            "thenOther": {"name": "first 2"}, "ahead": None}
    assert set(_errors(body)) == {"ahead"}  # the revision that does not exist fails its alias alone


async def test_aliased_nodes_are_one_read_and_each_answered_alone(messages):
    query = """query($a: ID!, $b: ID!, $other: ID!) { a: node(id: $a) { xid } b: node(id: $b) { xid }
      bad: node(id: "%%%") { xid } other: node(id: $other) { xid } }"""
    with recorded_reads(messages.registry.store) as reads:
        body = await messages(query, a=global_id("test", f"{MESSAGES}/m0"), b=global_id("test", f"{MESSAGES}/m2"),
                              other=global_id("elsewhere", f"{MESSAGES}/m1"))
    assert reads == [[f"{MESSAGES}/m0", f"{MESSAGES}/m2"]]
    assert body["data"] == {"a": {"xid": f"{MESSAGES}/m0"}, "b": {"xid": f"{MESSAGES}/m2"}, "bad": None,
                            "other": None}
    assert _errors(body) == {"bad": "BAD_USER_INPUT"}

