"""References across registries: parsing rules, resolution through batching loaders, the
effective message, no request forgery, and concurrent fan-out."""

from __future__ import annotations

import asyncio

import pytest

from adapters.base import Listing, SourceUnavailable
from adapters.batching import EntityBatcher
from adapters.effective import complete
from adapters.federation import Federation
from adapters.local import LocalSource
from adapters.references import References, Target
from tests.federation.servers import all_held
from tests.federation.test_federation import remote_entry
from xreg.config import Settings
from xreg.errors import XRegistryError

ERP_GROUP = "/messagegroups/Contoso.ERP.EmployeeEvents"
EDGE_NODE = "/messagegroups/Eclipse.SparkplugB.EdgeNode"


@pytest.fixture
async def fed(registry, remotes, tmp_path):
    settings = Settings(data_dir=tmp_path, registry_id="test", config_watch_seconds=0,
                        registries=[remote_entry(rid, s.base_url) for rid, s in remotes.items()])
    federation = Federation(settings, LocalSource(registry))
    await federation.open()
    try:
        yield federation
    finally:
        await federation.close()


def loader(fed: Federation):
    """The request's batching loader."""
    return EntityBatcher(fed.sources).load


def test_reference_forms(fed, remotes):
    refs = fed.references()
    erp = remotes["erp"].base_url
    assert refs.targets("/messagegroups/g", "iot") == [Target("iot", "/messagegroups/g")]
    assert refs.targets("#/messagegroups/g/messages/m", "iot") == [Target("iot", "/messagegroups/g/messages/m")]
    assert refs.targets(f"{erp}/messagegroups/g/", "test") == [Target("erp", "/messagegroups/g")]
    assert refs.targets(f"{erp.replace('http://', 'HTTP://')}/schemagroups/s/schemas/x$details", "test") == \
        [Target("erp", "/schemagroups/s/schemas/x")]
    assert refs.targets(f"{erp}#/messagegroups/g", "test") == [Target("erp", "/messagegroups/g")]
    assert refs.targets(f"{erp}/messagegroups/a%40b", "test") == [Target("erp", "/messagegroups/a@b")]
    assert refs.targets(erp, "test") == [Target("erp", "/")]
    for bad, needle in [
        ("messagegroups/g", "only XIDs"), ("urn:uuid:1234", "only XIDs"), ("ftp://x/y", "only XIDs"),
        ("file:///etc/passwd", "only XIDs"), ("http://169.254.169.254/latest/meta-data", "not inside"),
        (erp.replace("/registry", "/other") + "/messagegroups/g", "not inside"),
        ("/messagegroups", "is not an XID"), ("", "non-empty"), (42, "non-empty"),
        (f"{erp}/messagegroups/../../admin", "is not an XID"), ("/messagegroups/a%2Fb", "is not an XID"),
    ]:
        with pytest.raises(XRegistryError) as exc:
            refs.targets(bad, "test", "/endpoints/e")
        assert exc.value.type == "unresolved_reference" and needle in exc.value.detail, bad
        assert exc.value.args_map["registry"] == "test" and exc.value.subject == "/endpoints/e"


def test_longest_root_and_priority_decide_between_registries(fed):
    class S:
        def __init__(self, rid):
            self.id = rid

    refs = References([S("a"), S("b"), S("c")], {
        "a": ["https://reg.example/api"], "b": ["https://reg.example/api/v2"], "c": ["https://REG.example:443/api"]})
    assert refs.targets("https://reg.example/api/v2/endpoints/e", "x") == [Target("b", "/endpoints/e")]
    assert refs.targets("https://reg.example/api/endpoints/e", "x") == [Target("a", "/endpoints/e"), Target("c", "/endpoints/e")]


async def test_references_resolve_across_registries(fed, remotes, registry, canary):
    erp, iot, transit = (remotes[r].base_url for r in ("erp", "iot", "transit"))
    _, canary_hits = canary
    before = sum(canary_hits.values())
    await registry.apply_document({
        "messagegroups": {"local": {"messages": {"vehicle": {
            "basemessageuri": f"{transit}/messagegroups/GeneralTransitFeedRealTime.Vehicle.VehiclePosition/messages/"
                              "GeneralTransitFeedRealTime.Vehicle.VehiclePosition",
            "description": "our vehicle position", "envelope": "CloudEvents/1.0",
            "envelopemetadata": {"source": {"value": "/ours"}},
        }}}},
        "endpoints": {"fleet": {"usage": ["consumer"], "protocol": "HTTP", "messagegroups": [
            f"{erp}{ERP_GROUP}", "#/messagegroups/local", f"{iot}{EDGE_NODE}",
            f"{canary[0].origin}/registry/messagegroups/stolen", f"{erp}/messagegroups/missing"]}},
    })
    refs, load = fed.references(), loader(fed)
    fleet = (await fed.sources["test"].get_many(["/endpoints/fleet"]))["/endpoints/fleet"]
    resolved, errors = [], []
    for ref in fleet.view["messagegroups"]:
        try:
            resolved.append(await refs.resolve(ref, "test", load, fleet.xid, expect=("messagegroups",)))
        except XRegistryError as exc:
            errors.append(exc)
    assert [(e.registry, e.xid) for e in resolved] == [("erp", ERP_GROUP), ("test", "/messagegroups/local"),
                                                       ("iot", EDGE_NODE)]
    assert [e.args_map["reference"].rsplit("/", 1)[-1] for e in errors] == ["stolen", "missing"]
    assert "not inside any configured registry" in errors[0].detail and "has no /messagegroups/missing" in errors[1].detail
    assert sum(canary_hits.values()) == before  # never fetched


async def test_relative_references_of_a_remote_stay_in_that_registry(fed):
    refs, load = fed.references(), loader(fed)
    iot = fed.sources["iot"]
    producer = (await iot.get_many(["/endpoints/Eclipse.SparkplugBv10EdgeNodeProducer"]))[
        "/endpoints/eclipse.sparkplugbv10edgenodeproducer"]
    will = await refs.resolve(producer.view["protocoloptions"]["willmessage"], "iot", load, producer.xid,
                              expect=("messages",))
    assert will.registry == "iot" and will.xid.endswith("/messages/NDEATH")


async def test_a_chain_into_another_registry_is_materialised_at_read_time(fed, remotes, registry):
    transit = remotes["transit"].base_url
    middle = "/messagegroups/GeneralTransitFeedRealTime.mqtt/messages/GeneralTransitFeedRealTime.Vehicle.VehiclePosition.mqtt"
    base_xid = "/messagegroups/GeneralTransitFeedRealTime/messages/GeneralTransitFeedRealTime.Vehicle.VehiclePosition"
    await registry.apply_document({"messagegroups": {"local": {"messages": {
        "vehicle": {"basemessageuri": "/messagegroups/local/messages/middle", "description": "ours"},
        "middle": {"basemessageuri": transit + middle, "envelope": "CloudEvents/1.0",
                   "envelopemetadata": {"source": {"value": "/ours"}}},
    }}}})
    refs, load = fed.references(), loader(fed)

    async def resolve(ref, registry_id, subject):
        return await refs.resolve(ref, registry_id, load, subject, expect=("messages", "messages/versions"))

    found = await fed.sources["test"].get_many(["/messagegroups/local/messages/vehicle"])
    vehicle = found["/messagegroups/local/messages/vehicle"]
    # the store resolved the local part; the rest waits for the federation
    assert vehicle.materialised.pending and vehicle.materialised.unresolved == (transit + middle, "external")
    assert vehicle.attributes["envelope"] == "CloudEvents/1.0" and "protocol" not in vehicle.attributes
    m = (await complete(vehicle, resolve)).materialised
    base_view = (await fed.sources["transit"].get_many([base_xid]))[base_xid.lower()].view
    assert not m.problems and not m.pending and m.unresolved is None
    merged = m.attributes
    assert merged["description"] == "ours" and merged["messageid"] == "vehicle" and merged["xid"] == vehicle.xid
    assert merged["envelopemetadata"]["source"]["value"] == "/ours"  # overridden
    assert merged["envelopemetadata"]["type"] == base_view["envelopemetadata"]["type"]  # from the base's base
    assert merged["protocol"] == "MQTT/5.0"  # from the base
    assert m.inherited["envelope"] == ("test", "/messagegroups/local/messages/middle")
    assert m.inherited["protocol"] == ("transit", middle)
    assert m.inherited["dataschemaformat"] == ("transit", base_xid) if "dataschemaformat" in base_view else True
    assert m.chain[0] == ("test", "/messagegroups/local/messages/middle") and ("transit", base_xid) in m.chain


async def test_a_cross_registry_cycle_is_reported_not_followed(fed, remotes, registry):
    own = "http://gw/registry"
    await registry.apply_document({"messagegroups": {"local": {"messages": {
        "a": {"basemessageuri": own + "/messagegroups/local/messages/b"},
        "b": {"basemessageuri": own + "/messagegroups/local/messages/a", "description": "from b"},
    }}}})
    refs, load = fed.references(), loader(fed)

    async def resolve(ref, registry_id, subject):
        return await refs.resolve(ref, registry_id, load, subject, expect=("messages", "messages/versions"))

    a = (await fed.sources["test"].get_many(["/messagegroups/local/messages/a"]))["/messagegroups/local/messages/a"]
    m = (await complete(a, resolve)).materialised
    assert m.unresolved[1] == "circular" and len(m.problems) == 1 and "cycle" in m.problems[0].detail
    assert m.attributes["description"] == "from b"  # what resolved before the cycle closed


async def test_fifty_references_over_three_remotes_fan_out(fed, remotes):
    """Resolving 50 references spread over the three remotes asks at most once per entity (here:
    once per collection), and asks all remotes at once: each remote holds the requests it gets
    until all three hold one, which asking one remote after another could never give."""
    refs_by_remote: dict[str, list[str]] = {}
    for rid, count in (("erp", 17), ("iot", 16), ("transit", 17)):
        messages = (await fed.sources[rid].list(Listing(ctypes=("messagegroups/messages",), limit=500))).items
        refs_by_remote[rid] = [remotes[rid].base_url + m.xid for m in messages][:count]
    refs = [r for rs in refs_by_remote.values() for r in rs]
    assert len(set(refs)) == 50
    for rid, server in remotes.items():
        await fed.sources[rid].cache.backend.clear()
        server.wrapper.clear()
        server.wrapper.hold()
    rules, load = fed.references(), loader(fed)
    resolving = asyncio.ensure_future(asyncio.gather(*(rules.resolve(r, "test", load) for r in refs)))
    try:
        await all_held([server.wrapper for server in remotes.values()])
    finally:
        for server in remotes.values():
            server.wrapper.release()
    found = await resolving
    assert [e.xid for e in found] == [r.split("/registry", 1)[1] for r in refs]
    collections = {r.split("/registry", 1)[1].rsplit("/", 1)[0] for r in refs}
    asked = {rid: remotes[rid].wrapper.requests for rid in remotes}
    assert sum(asked.values()) == len(collections) < 50, asked


async def test_fetch_reads_a_steps_keys_at_once_and_remembers_them(registry, faulty, open_remote):
    """``EntityBatcher.fetch`` (every reference of a level at once): the keys in order, one read per
    registry with case-folded duplicates read once, ``None`` for what does not exist, a failing
    registry's error for its keys only; and what it read, found missing or saw fail is not asked
    for again by later loads of the request."""
    from tests.federation.conftest import remote_config
    from tests.federation.test_faults import faulty_url

    await registry.apply_document({"messagegroups": {"local": {"name": "L"}, "other": {"name": "O"}}})
    broken = await open_remote(remote_config("broken", faulty_url(faulty, "500"), retries=0))
    batcher = EntityBatcher({"test": LocalSource(registry), "broken": broken})
    await batcher.load("test", "/messagegroups/other")  # loaded earlier in the request
    calls, hits = registry.store.stats.calls, faulty[1]
    calls.clear()
    hits.clear()
    found = await batcher.fetch([("test", None, "/messagegroups/local"), ("broken", None, "/messagegroups/x"),
                                 ("test", None, "/MessageGroups/LOCAL"), ("test", None, "/messagegroups/missing"),
                                 ("test", None, "/messagegroups/other"), ("nowhere", None, "/messagegroups/local")])
    local, failed, same, missing, other, unknown = found
    assert local is same and local.xid == "/messagegroups/local" and local.attribute("name") == "L"
    assert isinstance(failed, SourceUnavailable) and failed.registry == "broken"
    assert missing is None and unknown is None
    assert other.attribute("name") == "O"
    assert calls["get_many"] == 1 and hits["500"] == 1  # one read each; "other" was known already
    again = [await batcher.load("test", "/messagegroups/LOCAL"), await batcher.load("test", "/messagegroups/missing")]
    assert again == [local, None]
    with pytest.raises(SourceUnavailable):
        await batcher.load("broken", "/messagegroups/x")
    assert calls["get_many"] == 1 and hits["500"] == 1  # nothing asked again


async def test_a_fetch_from_a_remote_holds_nothing_and_joins_the_loop_turns_batch(fed, registry, remotes):
    """A fetch's remote keys join the loader's batch (one request per remote collection with the
    loads of the same loop turn) and hold nothing: a load of the same step goes out and comes
    back while the remote's answer is still awaited."""
    from resolvers.loaders import Loaders
    from resolvers.pacing import Hold

    await registry.apply_document({"messagegroups": {"a": {"name": "A"}}})
    hold = Hold()
    batcher = Loaders(fed.sources, fed.references, hold).batcher
    erp = remotes["erp"].wrapper
    erp.clear()
    erp.hold()
    try:
        # in one loop turn (as a level's resolvers): a sibling's load, then the fetch
        sibling = asyncio.ensure_future(batcher.load("erp", "/messagegroups/Contoso.ERP.InventoryEvents"))
        fetching = asyncio.ensure_future(batcher.fetch([("erp", None, ERP_GROUP)]))
        await asyncio.sleep(0)  # both have started: the fetch's key joined the sibling's batch
        local = asyncio.ensure_future(batcher.load("test", "/messagegroups/a"))
        await erp.holding(1)
        done, _ = await asyncio.wait({local}, timeout=60)  # the bound only ends a wait that would never end
        assert local in done and local.result().attribute("name") == "A"
        assert not fetching.done() and not hold.taken
    finally:
        erp.release()
    (found,) = await fetching
    assert found is not None and found.xid == ERP_GROUP
    assert (await sibling).xid == "/messagegroups/Contoso.ERP.InventoryEvents"
    assert [entry.split("?")[0] for entry in erp.log] == ["/registry/messagegroups"]  # one request for both
