"""How many round trips a cold federated query waits for: its remote requests fall in *waves*,
a wave being the requests sent before any answer of the previous one is needed
(``bench/bench_federation.py`` counts the same from times). Here the remotes hold every request:
a wave is what they hold once the gateway has sent all it can, and the test lets exactly those
through (``release_held``) before it waits for the next — so the count depends on no timing.

The data needs two dependency steps: the local page names the endpoint's remote message groups,
the base messages and one message's own schema version (whose resource its XID names); the base
messages name the data schemas the others inherit. Two waves, whether the endpoint and the
messages are read from the registry's pages or across registries (their references read ahead,
``resolvers/types/ahead.py``) or the endpoint is looked up (its references read with the level's
other loads, nothing held for a remote's answer, ``adapters/batching.py``). Within a wave, a
load goes out when its own dependencies are in: the first bases of a page's chains with the page
(whatever the request's loaders hold), a remote's dependent loads once that remote has answered
(the other remotes still holding theirs).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.federation.test_federation import remote_entry
from tests.federation.test_graphql_federation import EDGE_NODE, EMPLOYEE_SCHEMA, ERP_GROUP, start

ERP_BASE = "/messagegroups/Contoso.ERP.EmployeeEvents/messages/Contoso.ERP.EmployeeAdded"
TRANSIT_BASE = "/messagegroups/GeneralTransitFeedRealTime/messages/GeneralTransitFeedRealTime.Alert.Alert"
TRANSIT_SCHEMA = "/schemagroups/GeneralTransitFeedRealTime.jstruct/schemas/GeneralTransitFeedRealTime.Alert.Alert"

#: Per wave, the paths each remote is asked for (``$details``: a resource with its document).
WAVES = [
    {"erp": {ERP_GROUP, ERP_BASE, f"{EMPLOYEE_SCHEMA}/versions/1$details", f"{EMPLOYEE_SCHEMA}$details"},
     "iot": {EDGE_NODE}, "transit": {TRANSIT_BASE}},
    {"transit": {f"{TRANSIT_SCHEMA}$details"}},
]

MESSAGE = "xid basemessage { xid } dataschema { xid schema { xid } }"
GROUPS = "messagegroups { nodes { messages { nodes { " + MESSAGE + " } } } }"
#: The same data read three ways: the registry's pages, a lookup, the connections across registries.
QUERIES = {
    "page": "{ registry { endpoints(first: 1) { nodes { xid messagegroups { xid } } } " + GROUPS + " } }",
    "lookup": '{ registry { lookup(xid: "/endpoints/everything") { ... on Endpoint { xid messagegroups { xid } } } '
              + GROUPS + " } }",
    "across": '{ endpoints(registries: ["test"], first: 1) { nodes { xid messagegroups { xid } } } '
              'messages(registries: ["test"]) { nodes { ' + MESSAGE + " } } }",
}


def document(remotes) -> dict:
    erp, iot, transit = (remotes[r].base_url for r in ("erp", "iot", "transit"))
    return {
        "messagegroups": {"fan": {"messages": {
            "own": {"basemessageuri": erp + ERP_BASE, "dataschemaformat": "JsonSchema/draft-07",
                    "dataschemauri": f"{erp}{EMPLOYEE_SCHEMA}/versions/1"},
            "inherits": {"basemessageuri": transit + TRANSIT_BASE},
        }}},
        "endpoints": {"everything": {"usage": ["consumer"], "protocol": "HTTP",
                                     "messagegroups": [erp + ERP_GROUP, iot + EDGE_NODE]}},
    }


@pytest.fixture
async def gw(tmp_path, remotes):
    """A gateway over the three remotes (each probed at once) and the local ``document``."""
    registries = [remote_entry(rid, s.base_url, probe_seconds=0) for rid, s in remotes.items()]
    gateway, lifespan = await start(tmp_path, registries, document(remotes))
    try:
        yield gateway
    finally:
        await gateway.client.aclose()
        await lifespan.__aexit__(None, None, None)


def path_of(entry: str) -> str:
    """A remote's logged request as the path asked for (no query string, no ``/registry``)."""
    return entry.split("?")[0].removeprefix("/registry")


async def held(remotes, wave: dict[str, set[str]]) -> None:
    """Return once each remote holds the requests it is asked for in ``wave`` (the bound only
    ends a wait that would otherwise never end: a wave that never comes)."""
    try:
        await asyncio.gather(*(remotes[r].wrapper.holding(len(paths), seconds=60) for r, paths in wave.items()))
    except Exception as exc:
        raise AssertionError(f"the wave never came: held {({r: s.wrapper.held for r, s in remotes.items()})}, "
                             f"asked {({r: s.wrapper.log for r, s in remotes.items()})}") from exc


@pytest.mark.parametrize("way", list(QUERIES))
async def test_a_cold_query_waits_for_one_wave_per_dependency_step(gw, remotes, way):
    query = QUERIES[way]
    for server in remotes.values():
        server.wrapper.clear()
        server.wrapper.hold()
    running = asyncio.ensure_future(gw.data(query))
    waves: list[dict[str, set[str]]] = []
    seen = {rid: 0 for rid in remotes}
    try:
        for wave in WAVES:
            await held(remotes, wave)
            asked = {}
            for rid, server in remotes.items():
                log = server.wrapper.log
                if log[seen[rid]:]:
                    asked[rid] = {path_of(entry) for entry in log[seen[rid]:]}
                seen[rid] = len(log)
                server.wrapper.release_held()
            waves.append(asked)
        data = await running
    finally:
        for server in remotes.values():
            server.wrapper.release()
        if not running.done():
            running.cancel()
    assert waves == WAVES
    assert {rid: len(s.wrapper.log) for rid, s in remotes.items()} == seen  # nothing after the last wave
    if way == "across":
        endpoint, nodes = data["endpoints"]["nodes"][0], data["messages"]["nodes"]
    else:
        registry = data["registry"]
        endpoint = registry["endpoints"]["nodes"][0] if way == "page" else registry["lookup"]
        nodes = registry["messagegroups"]["nodes"][0]["messages"]["nodes"]
    assert [g["xid"] for g in endpoint["messagegroups"]] == [ERP_GROUP, EDGE_NODE]
    messages = {m["xid"].rsplit("/", 1)[1]: m for m in nodes}
    assert messages["own"]["basemessage"]["xid"] == ERP_BASE
    assert messages["own"]["dataschema"]["schema"]["xid"] == EMPLOYEE_SCHEMA
    assert messages["inherits"]["dataschema"]["xid"] == TRANSIT_SCHEMA

    for server in remotes.values():  # warm: the same query asks nothing
        server.wrapper.clear()
    assert await gw.data(query) == data
    assert all(not s.wrapper.log for s in remotes.values())


async def test_a_pages_first_bases_go_out_while_the_requests_batches_are_held(gw, remotes):
    """The bases a page's chains load first are read ahead as soon as the page is read: they go
    out while the request's loaders hold their batches (the executor's paced work), not once
    the hold is given back, together with what the page's look-aheads name (one request per
    remote collection)."""
    from resolvers.loaders import Loaders
    from resolvers.pacing import Hold

    federation = gw.app.state.federation
    hold = Hold()
    loaders = Loaders(federation.sources, federation.references, hold)
    page = await federation.sources["test"].get_many(["/messagegroups/fan/messages/own",
                                                      "/messagegroups/fan/messages/inherits"])
    schema = ("erp", None, f"{EMPLOYEE_SCHEMA}/versions/1")
    for server in remotes.values():
        server.wrapper.clear()
        server.wrapper.hold()
    hold.take()  # as a paced list completion does
    settling = asyncio.ensure_future(loaders.settle(list(page.values()),
                                                    lambda entities: loaders.batcher.read_ahead([schema])))
    try:
        wave = {"erp": {ERP_BASE, f"{EMPLOYEE_SCHEMA}/versions/1$details", f"{EMPLOYEE_SCHEMA}$details"},
                "transit": {TRANSIT_BASE}}
        await held(remotes, wave)
        assert hold.taken
        assert {rid: {path_of(e) for e in s.wrapper.log}
                for rid, s in remotes.items() if s.wrapper.log} == wave
    finally:
        hold.give()
        for server in remotes.values():
            server.wrapper.release()
    settled = {e.xid.rsplit("/", 1)[1]: e for e in await settling}
    assert settled["own"].materialised.chain == (("erp", ERP_BASE),)
    assert settled["inherits"].materialised.chain == (("transit", TRANSIT_BASE),)


async def test_nothing_is_read_ahead_for_a_page_whose_settling_was_cancelled(gw, remotes):
    """A page whose settling is cancelled (its request ended) reads nothing ahead for the
    messages completed afterwards: their inherited references are nobody's to read."""
    from resolvers.loaders import Loaders
    from resolvers.pacing import Hold

    federation = gw.app.state.federation
    loaders = Loaders(federation.sources, federation.references, Hold())
    page = list((await federation.sources["test"].get_many(["/messagegroups/fan/messages/inherits"])).values())
    asked: list[list[str]] = []
    for server in remotes.values():
        server.wrapper.clear()
        server.wrapper.hold()
    settling = asyncio.ensure_future(loaders.settle(page, lambda entities: asked.append([e.xid for e in entities])))
    try:
        await held(remotes, {"transit": {TRANSIT_BASE}})
        settling.cancel()
        with pytest.raises(asyncio.CancelledError):
            await settling
    finally:
        for server in remotes.values():
            server.wrapper.release()
    (inherits,) = await loaders.materialiser.settle(page)  # the chain completes all the same
    assert inherits.materialised.chain == (("transit", TRANSIT_BASE),)
    for _ in range(3):  # the loop turns a completion's read-ahead would take
        await asyncio.sleep(0)
    assert asked == [["/messagegroups/fan/messages/inherits"]]  # the page's own, none after


@pytest.mark.parametrize("way", list(QUERIES))
async def test_a_remotes_dependent_loads_go_out_once_its_own_answers_are_in(gw, remotes, way):
    """A dependent load goes out as soon as what it depends on is in, not once the whole wave
    is: transit's data schema, named by transit's base message, is asked for while the other
    remotes still hold their first-wave requests."""
    for server in remotes.values():
        server.wrapper.clear()
        server.wrapper.hold()
    running = asyncio.ensure_future(gw.data(QUERIES[way]))
    transit = remotes["transit"].wrapper
    try:
        await held(remotes, WAVES[0])
        transit.release_held()  # transit answers; erp and iot do not
        await held(remotes, {"transit": WAVES[1]["transit"]})
        assert {rid: s.wrapper.held for rid, s in remotes.items()} == \
            {"erp": len(WAVES[0]["erp"]), "iot": len(WAVES[0]["iot"]), "transit": 1}
        assert path_of(transit.log[-1]) in WAVES[1]["transit"]
    finally:
        for server in remotes.values():
            server.wrapper.release()
    data = await running
    nodes = data["messages"]["nodes"] if way == "across" else \
        data["registry"]["messagegroups"]["nodes"][0]["messages"]["nodes"]
    messages = {m["xid"].rsplit("/", 1)[1]: m for m in nodes}
    assert messages["inherits"]["dataschema"]["xid"] == TRANSIT_SCHEMA
    assert sum(len(s.wrapper.log) for s in remotes.values()) == sum(len(p) for w in WAVES for p in w.values())


@pytest.mark.parametrize("selection", ["dataschema { uri format }", "dataschema @skip(if: true) { xid }"])
async def test_nothing_is_read_ahead_that_the_query_does_not_read(gw, remotes, selection):
    """Only what the selected fields will load is read ahead: a schema reference whose target
    the query does not read (its ``uri``, a skipped field) asks the remotes for no schema."""
    for server in remotes.values():
        server.wrapper.clear()
    await gw.data("{ registry { messagegroups { nodes { messages { nodes { xid " + selection + " } } } } } }")
    asked = [entry for s in remotes.values() for entry in s.wrapper.log]
    assert not [entry for entry in asked if entry.startswith("/registry/schemagroups")], asked
