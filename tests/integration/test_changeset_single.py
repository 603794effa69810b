"""The single-entity write operations of the engine (meta, versions, default version,
documents) and the registry entity's validation, on a real SQLite store."""

from __future__ import annotations

import base64

import pytest

from xreg.errors import XRegistryError
from xreg.registry.changeset import Changeset

SCHEMA = {"format": "JSONSchema/draft-07"}
S = ("schemagroups", "sg", "schemas", "s")


async def write(registry, op: str, *args, **kwargs):
    cs = Changeset(registry.store, registry.model)
    result = await getattr(cs, op)(*args, **kwargs)
    await cs.commit()
    return result


async def refused(registry, op: str, *args, **kwargs) -> XRegistryError:
    rev = await registry.store.current_revision()
    with pytest.raises(XRegistryError) as exc:
        await write(registry, op, *args, **kwargs)
    assert await registry.store.current_revision() == rev
    return exc.value


async def test_put_version_creates_the_resource_and_group_and_patches(registry):
    await write(registry, "put_version", *S, "1.0", {**SCHEMA, "name": "one"}, patch=False)
    assert (await registry.entity("/schemagroups/sg"))["schemascount"] == 1
    resource = await registry.entity("/schemagroups/sg/schemas/s")
    assert resource["versionid"] == "1.0" and resource["name"] == "one"
    await write(registry, "put_version", *S, "1.0", {"description": "d"}, patch=True)
    version = await registry.entity("/schemagroups/sg/schemas/s/versions/1.0")
    assert version["name"] == "one" and version["description"] == "d" and version["epoch"] == 2
    await write(registry, "put_version", *S, "1.0", SCHEMA, patch=False)
    assert "name" not in await registry.entity("/schemagroups/sg/schemas/s/versions/1.0")


async def test_put_versions_and_post_version(registry):
    await write(registry, "put_versions", *S, {"a": SCHEMA, "b": SCHEMA}, patch=False)
    assert (await registry.entity("/schemagroups/sg/schemas/s/meta"))["defaultversionid"] == "b"
    vid = await write(registry, "post_version", *S, {**SCHEMA, "versionscount": 9, "metaurl": "x"})
    assert vid == "1" and (await registry.entity("/schemagroups/sg/schemas/s"))["versionid"] == "1"
    assert await write(registry, "post_version", *S, {**SCHEMA, "versionid": "a", "name": "A"}) == "a"
    assert (await registry.entity("/schemagroups/sg/schemas/s/versions/a"))["name"] == "A"
    err = await refused(registry, "put_versions", "schemagroups", "sg", "schemas", "new", {}, patch=False)
    assert err.type == "bad_request"
    err = await refused(registry, "post_version", *S, {**SCHEMA, "versionid": "bad id"})
    assert err.type == "malformed_id"


async def test_put_meta(registry):
    await write(registry, "put_versions", *S, {"a": SCHEMA, "b": SCHEMA}, patch=False)
    await write(registry, "put_meta", *S, {"defaultversionid": "a", "defaultversionsticky": True, "labels": {"k": "v"}},
                patch=True)
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta["defaultversionid"] == "a" and meta["labels"] == {"k": "v"}
    await write(registry, "put_meta", *S, {}, patch=False)
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta["defaultversionid"] == "b" and meta["defaultversionsticky"] is False and "labels" not in meta
    # a missing resource is created through its meta; a schema's first version needs its format
    err = await refused(registry, "put_meta", "schemagroups", "sg", "schemas", "missing", {}, patch=True)
    assert err.type == "required_attribute_missing"
    await write(registry, "put_meta", "schemagroups", "sg", "schemas", "x", {"xref": "/schemagroups/sg/schemas/s"},
                patch=False)
    assert (await registry.entity("/schemagroups/sg/schemas/x/meta"))["xref"] == "/schemagroups/sg/schemas/s"


async def test_meta_xref_deletes_versions_and_removing_it_creates_one(registry):
    await write(registry, "put_versions", *S, {"a": SCHEMA}, patch=False)
    await write(registry, "put_versions", "schemagroups", "sg", "schemas", "t", {"x": SCHEMA}, patch=False)
    await write(registry, "put_meta", *S, {"xref": "/schemagroups/sg/schemas/t"}, patch=True)
    assert await registry.entity("/schemagroups/sg/schemas/s/versions/a") is None
    err = await refused(registry, "put_version", *S, "b", SCHEMA, patch=False)
    assert err.type == "bad_request"
    err = await refused(registry, "put_meta", *S, {"xref": None}, patch=True)
    assert err.type == "required_attribute_missing"  # the new default version needs a format
    await write(registry, "put_resource", *S, {"meta": {"xref": None}, **SCHEMA}, patch=True)
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert "xref" not in meta and meta["defaultversionid"] == "1"
    assert (await registry.entity("/schemagroups/sg/schemas/s"))["format"] == SCHEMA["format"]


async def test_set_default_version(registry):
    await write(registry, "put_versions", *S, {"a": SCHEMA, "b": SCHEMA}, patch=False)
    await write(registry, "set_default_version", *S, "a")
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta["defaultversionid"] == "a" and meta["defaultversionsticky"] is True
    await write(registry, "set_default_version", *S, None)
    meta = await registry.entity("/schemagroups/sg/schemas/s/meta")
    assert meta["defaultversionid"] == "b" and meta["defaultversionsticky"] is False
    assert (await refused(registry, "set_default_version", *S, "zz")).type == "unknown_id"


async def test_put_document(registry):
    await write(registry, "put_document", *S, None, SCHEMA, b'{"type": "object"}', "application/json")
    version = await registry.entity("/schemagroups/sg/schemas/s/versions/1")
    assert version["schema"] == {"type": "object"} and version["contenttype"] == "application/json"
    vid = await write(registry, "put_document", *S, None, {**SCHEMA, "format": "Custom/1.0"}, b"<xs:schema/>",
                      "application/xml", new_version=True)  # (a format the gateway does not check)
    assert vid == "2"
    version = await registry.entity("/schemagroups/sg/schemas/s/versions/2")
    assert base64.b64decode(version["schemabase64"]) == b"<xs:schema/>" and "schema" not in version
    await write(registry, "put_document", *S, "2", {"schemaurl": "https://example.com/s.xsd"}, b"", None)
    version = await registry.entity("/schemagroups/sg/schemas/s/versions/2")
    assert version["schemaurl"] == "https://example.com/s.xsd"
    assert "schemabase64" not in version and "contenttype" not in version
    err = await refused(registry, "put_document", *S, "2", {"schemauri": "https://example.com/x"}, b"body", None)
    assert err.type == "bad_request"
    err = await refused(registry, "put_document", "messagegroups", "g", "messages", "m", None, {}, b"{}", None)
    assert err.type == "bad_request"


async def test_schemauri_is_taken_as_schemaurl_and_two_links_are_refused(registry):
    await write(registry, "put_resource", *S, {**SCHEMA, "schemauri": "https://example.com/a"})
    assert (await registry.entity("/schemagroups/sg/schemas/s"))["schemaurl"] == "https://example.com/a"
    err = await refused(registry, "put_resource", *S, {**SCHEMA, "schemaurl": "https://example.com/a",
                                                       "schemauri": "https://example.com/b"})
    assert err.type == "one_resource"


async def test_a_resource_level_epoch_is_checked_against_the_default_version(registry):
    await write(registry, "put_resource", *S, SCHEMA)
    await write(registry, "put_resource", *S, {**SCHEMA, "epoch": 1})
    assert (await refused(registry, "put_resource", *S, {**SCHEMA, "epoch": 1})).type == "mismatched_epoch"


async def test_registry_attributes_are_validated(registry):
    err = await refused(registry, "put_registry", "test", {"Bad Name": 1, "documentation": 7}, patch=True)
    assert err.type == "invalid_attribute"
    await write(registry, "put_registry", "test", {"name": "Registry", "x_extension": {"a": 1}}, patch=True)
    assert (await registry.entity("/"))["x_extension"] == {"a": 1}
