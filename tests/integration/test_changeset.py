"""The registry engine's write semantics, on a real SQLite store."""

from __future__ import annotations

import pytest

from xreg.errors import XRegistryError
from xreg.model.registry_model import ANCESTOR_ID
from xreg.registry.changeset import Changeset


async def put_group(registry, gtype, gid, attrs, **kw):
    cs = Changeset(registry.store, registry.model, **kw)
    await cs.put_group(gtype, gid, attrs)
    return await cs.commit()


async def put_resource(registry, gtype, gid, rtype, rid, body, *, patch=False, **kw):
    cs = Changeset(registry.store, registry.model, **kw)
    await cs.put_resource(gtype, gid, rtype, rid, body, patch=patch)
    return await cs.commit()


async def test_group_create_sets_server_attributes_and_bumps_registry(registry):
    root_before = await registry.store.get("/")
    await put_group(registry, "messagegroups", "orders", {"envelope": "CloudEvents/1.0", "name": "Orders"})
    group = await registry.entity("/messagegroups/orders")
    assert group["messagegroupid"] == "orders"
    assert group["xid"] == "/messagegroups/orders"
    assert group["self"] == "http://gw/registry/messagegroups/orders"
    assert group["epoch"] == 1
    assert group["createdat"] == group["modifiedat"]
    assert group["messagescount"] == 0
    root = await registry.store.get("/")
    assert root.doc["epoch"] == root_before.doc["epoch"] + 1


async def test_update_with_stale_epoch_is_rejected_and_writes_nothing(registry):
    await put_group(registry, "messagegroups", "g", {"name": "one"})
    await put_group(registry, "messagegroups", "g", {"name": "two", "epoch": 1})
    rev = await registry.store.current_revision()
    with pytest.raises(XRegistryError) as exc:
        await put_group(registry, "messagegroups", "g", {"name": "three", "epoch": 1})
    assert exc.value.type == "mismatched_epoch"
    assert await registry.store.current_revision() == rev
    assert (await registry.entity("/messagegroups/g"))["name"] == "two"


async def test_epoch_grows_on_every_update_and_modifiedat_moves(registry):
    await put_group(registry, "endpoints", "e", {"usage": ["producer"]})
    first = await registry.entity("/endpoints/e")
    await put_group(registry, "endpoints", "e", {"usage": ["producer"]})
    second = await registry.entity("/endpoints/e")
    assert second["epoch"] == first["epoch"] + 1
    assert second["createdat"] == first["createdat"]
    assert second["modifiedat"] >= first["modifiedat"]


@pytest.mark.parametrize("bad", ["", "-leading-dash", "has space", "x" * 129, "slash/inside"])
async def test_malformed_ids_are_rejected(registry, bad):
    rev = await registry.store.current_revision()
    with pytest.raises(XRegistryError) as exc:
        await put_group(registry, "messagegroups", bad, {})
    assert exc.value.type == "malformed_id"
    assert await registry.store.current_revision() == rev


async def test_id_of_128_characters_is_accepted(registry):
    gid = "a" * 128
    await put_group(registry, "messagegroups", gid, {})
    assert (await registry.entity(f"/messagegroups/{gid}"))["messagegroupid"] == gid


async def test_ids_are_unique_case_insensitively(registry):
    await put_group(registry, "messagegroups", "Orders", {})
    with pytest.raises(XRegistryError) as exc:
        await put_group(registry, "messagegroups", "orders", {})
    assert exc.value.type == "bad_request"
    assert await registry.entity("/messagegroups/orders") is None  # look-up is case-sensitive


async def test_mismatched_id_in_body(registry):
    with pytest.raises(XRegistryError) as exc:
        await put_group(registry, "messagegroups", "a", {"messagegroupid": "b"})
    assert exc.value.type == "mismatched_id"


async def test_unknown_group_type(registry):
    with pytest.raises(XRegistryError) as exc:
        await put_group(registry, "widgets", "a", {})
    assert exc.value.type == "unknown_group_type"


async def test_resource_gets_a_default_version_and_meta(registry):
    await put_resource(registry, "messagegroups", "g", "messages", "m",
                       {"description": "hello", "xcustom": {"kept": True}})
    res = await registry.entity("/messagegroups/g/messages/m")
    assert res["messageid"] == "m" and res["versionid"] == "1" and res["isdefault"] is True
    assert res["description"] == "hello"
    assert res["xcustom"] == {"kept": True}  # unknown extension attributes are kept as they are
    assert res["versionscount"] == 1
    meta = await registry.entity("/messagegroups/g/messages/m/meta")
    assert meta["defaultversionid"] == "1" and meta["defaultversionsticky"] is False
    assert meta["epoch"] == 1 and meta["readonly"] is False
    version = await registry.entity("/messagegroups/g/messages/m/versions/1")
    assert version[ANCESTOR_ID] == "1" and version["isdefault"] is True
    group = await registry.entity("/messagegroups/g")  # implicitly created
    assert group["messagescount"] == 1


async def test_default_version_is_newest_unless_sticky(registry):
    body = {"format": "JSONSchema/draft-07", "versions": {
        "1.0": {"format": "JSONSchema/draft-07", "createdat": "2024-01-01T00:00:00Z"},
        "2.0": {"format": "JSONSchema/draft-07", "createdat": "2024-02-01T00:00:00Z"},
    }}
    await put_resource(registry, "schemagroups", "sg", "schemas", "s", body)
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta["defaultversionid"] == "2.0"
    v2 = await registry.entity("/schemagroups/sg/schemas/s/versions/2.0")
    assert v2[ANCESTOR_ID] == "1.0"

    await put_resource(registry, "schemagroups", "sg", "schemas", "s",
                       {"meta": {"defaultversionid": "1.0", "defaultversionsticky": True}}, patch=True)
    assert (await registry.entity("/schemagroups/sg/schemas/s/meta"))["defaultversionid"] == "1.0"
    await put_resource(registry, "schemagroups", "sg", "schemas", "s",
                       {"versions": {"3.0": {"format": "JSONSchema/draft-07"}}}, patch=True)
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta["defaultversionid"] == "1.0"  # sticky
    assert (await registry.entity("/schemagroups/sg/schemas/s"))["versionscount"] == 3

    with pytest.raises(XRegistryError) as exc:
        await put_resource(registry, "schemagroups", "sg", "schemas", "s",
                           {"meta": {"defaultversionid": "9.9", "defaultversionsticky": True}}, patch=True)
    assert exc.value.type == "unknown_id"  # core/spec.md, "defaultversionid Attribute"


async def test_meta_epoch_grows_when_versions_come_and_go(registry):
    await put_resource(registry, "schemagroups", "sg", "schemas", "s", {"format": "Avro/1.9"})
    meta1 = await registry.entity("/schemagroups/sg/schemas/s/meta")
    await put_resource(registry, "schemagroups", "sg", "schemas", "s",
                       {"versions": {"2": {"format": "Avro/1.9"}}}, patch=True)
    meta2 = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta2["epoch"] == meta1["epoch"] + 1
    cs = Changeset(registry.store, registry.model)
    await cs.delete("/schemagroups/sg/schemas/s/versions/2")
    await cs.commit()
    meta3 = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta3["epoch"] == meta2["epoch"] + 1 and meta3["defaultversionid"] == "1"


async def test_maxversions_prunes_the_oldest_version(registry):
    await put_resource(registry, "messagegroups", "g", "messages", "m", {"versionid": "a", "description": "first"})
    await put_resource(registry, "messagegroups", "g", "messages", "m",
                       {"versions": {"b": {"description": "second"}}}, patch=True)
    res = await registry.entity("/messagegroups/g/messages/m")
    assert res["versionscount"] == 1 and res["versionid"] == "b"
    assert await registry.entity("/messagegroups/g/messages/m/versions/a") is None
    assert (await registry.entity("/messagegroups/g/messages/m/versions/b"))[ANCESTOR_ID] == "b"


async def test_invalid_entity_in_a_changeset_writes_nothing(registry):
    rev = await registry.store.current_revision()
    cs = Changeset(registry.store, registry.model)
    await cs.put_group("messagegroups", "ok", {})
    await cs.put_resource("messagegroups", "ok", "messages", "bad",
                          {"envelope": "CloudEvents/1.0", "dataschema": {"type": "object"},
                           "dataschemauri": "/schemagroups/x/schemas/y"})
    with pytest.raises(XRegistryError):
        await cs.commit()
    assert await registry.store.current_revision() == rev
    assert await registry.entity("/messagegroups/ok") is None


async def test_delete_removes_descendants_and_bumps_parent(registry):
    await put_resource(registry, "schemagroups", "sg", "schemas", "s",
                       {"versions": {"1": {"format": "Avro"}, "2": {"format": "Avro"}}})
    group_before = await registry.entity("/schemagroups/sg")
    cs = Changeset(registry.store, registry.model)
    await cs.delete("/schemagroups/sg/schemas/s")
    out = await cs.commit()
    assert set(out.deleted) == {"/schemagroups/sg/schemas/s", "/schemagroups/sg/schemas/s/versions/1",
                                "/schemagroups/sg/schemas/s/versions/2"}
    group = await registry.entity("/schemagroups/sg")
    assert group["epoch"] == group_before["epoch"] + 1 and group["schemascount"] == 0
    cs = Changeset(registry.store, registry.model)
    with pytest.raises(XRegistryError) as exc:
        await cs.delete("/schemagroups/sg/schemas/s")
    assert exc.value.type == "not_found"


async def test_xref_resource_has_no_versions(registry):
    await put_resource(registry, "messagegroups", "g", "messages", "base", {"description": "base"})
    await put_resource(registry, "messagegroups", "g", "messages", "alias",
                       {"meta": {"xref": "/messagegroups/g/messages/base"}})
    meta = await registry.entity("/messagegroups/g/messages/alias/meta")
    assert meta["xref"] == "/messagegroups/g/messages/base"
    assert (await registry.entity("/messagegroups/g/messages/alias"))["versionscount"] == 0
    with pytest.raises(XRegistryError) as exc:
        await put_resource(registry, "messagegroups", "g", "messages", "bad", {"meta": {"xref": "not-an-xid"}})
    assert exc.value.type == "malformed_xref"


async def test_writes_stamp_increasing_revisions_and_history_is_readable(registry):
    r1 = await put_group(registry, "messagegroups", "g", {"name": "one"})
    r2 = await put_group(registry, "messagegroups", "g", {"name": "two"})
    assert r2.revision > r1.revision
    old = await registry.entity("/messagegroups/g", as_of=r1.revision)
    assert old["name"] == "one"
    cs = Changeset(registry.store, registry.model)
    await cs.delete("/messagegroups/g")
    r3 = await cs.commit()
    assert await registry.entity("/messagegroups/g") is None
    assert (await registry.entity("/messagegroups/g", as_of=r2.revision))["name"] == "two"
    changes = await registry.store.changes(r2.revision)
    assert any(c.record.xid == "/messagegroups/g" and c.type == "deleted" for c in changes)
    assert r3.revision == await registry.store.current_revision()
