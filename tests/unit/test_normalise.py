"""Normalising older xRegistry document shapes into the 1.0-rc4 shape."""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from tests.corpus import DOCUMENTS, XREG_DATA
from xreg.documents.normalise import Normalisation, normalise
from xreg.documents.reader import read_document
from xreg.errors import XRegistryError

DATA = XREG_DATA
REAL = DOCUMENTS
ALL_FEEDS = "rts__ALL-117-feeders-merged.xreg.json"
LEGACY = "codegen-5675db7__Microsoft.Storage.0.4-wip.cereg.json"
NEWER = "codegen__Microsoft.Storage.xreg.json"

#: Keys that must not survive normalisation (outside schema documents).
OLD_KEYS = {"definitiongroups", "definitions", "basemessageurl", "basemessage", "protocolmetadata",
            "schemauri", "metadata", "$schema", "application_properties", "message_annotations"}


@cache
def _read(name: str) -> dict:
    return read_document(DATA / name)


@cache
def _normalised(name: str) -> tuple[dict, tuple[Normalisation, ...]]:
    out, changes = normalise(_read(name))
    return out, tuple(changes)


def _walk(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) of every node, not descending into schema documents."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in ("schema", "dataschema"):
                yield from _walk(v, (*path, k))
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, path)


def _rules(changes: Any) -> Counter:
    return Counter(c.rule for c in changes)


def _message(message: dict, group: dict | None = None) -> dict:
    return {"messagegroups": {"g1": {**(group or {}), "messages": {"m1": message}}}}


# -- the real documents --------------------------------------------------------------------


@pytest.mark.parametrize("name", [p.name for p in REAL])
def test_real_documents_leave_no_older_shape_behind(name: str) -> None:
    out, _ = _normalised(name)
    for path, value in _walk(out):
        assert not (path and path[-1] in OLD_KEYS), path
        assert not (isinstance(value, str) and value.startswith("#/")), (path, value)
        assert not (path and path[-1] == "protocol" and value == "None"), path
    # normalising again finds nothing: strict mode accepts the result as it is
    again, changes = normalise(out, strict=True)
    assert again == out and changes == []


@pytest.mark.parametrize("name", [p.name for p in REAL])
def test_input_is_not_mutated(name: str) -> None:
    original = _read(name)
    snapshot = copy.deepcopy(original)
    out, _ = normalise(original)
    assert original == snapshot
    out.clear()
    assert original == snapshot


def test_all_feeds_keep_every_entity_and_count_changes() -> None:
    out, changes = _normalised(ALL_FEEDS)
    groups = out["messagegroups"].values()
    schemagroups = out["schemagroups"].values()
    assert len(out["endpoints"]) == 415
    assert len(out["messagegroups"]) == 545
    assert sum(len(g["messages"]) for g in groups) == 1538
    assert len(out["schemagroups"]) == 217
    assert sum(len(g["schemas"]) for g in schemagroups) == 685
    assert _rules(changes) == {
        "json-pointer-ref": 1119,  # 554 dataschemauri, 521 endpoint messagegroups, 44 basemessageuri
        "timestamp-timezone": 156,
        "protocol-none": 43,
        "amqp-option-names": 24,  # 18 message_annotations, 6 application_properties
        "basemessageurl": 23,  # "basemessage"
        "legacy-id": 7,
    }
    # ids of 65-128 characters are valid rc4 ids and stay as they are
    long_ids = [m for g in groups for m in g["messages"] if len(m) > 64]
    assert len(long_ids) == 14 and all(len(m) <= 128 for m in long_ids)


def test_all_feeds_references_resolve_to_xids() -> None:
    out, _ = _normalised(ALL_FEEDS)
    for endpoint in out["endpoints"].values():
        assert all(ref.startswith("/messagegroups/") for ref in endpoint["messagegroups"])
    bases = [m["basemessageuri"] for g in out["messagegroups"].values()
             for m in g["messages"].values() if "basemessageuri" in m]
    assert len(bases) == 1006 and all(b.startswith("/messagegroups/") for b in bases)
    amqp = [m for g in out["messagegroups"].values() for m in g["messages"].values()
            if m.get("protocol") == "AMQP/1.0"]
    assert all("_" not in section for m in amqp for section in m["protocoloptions"])
    # user-defined application property names keep their underscores
    assert any("_" in name for m in amqp for name in m["protocoloptions"].get("application-properties", {}))


def test_legacy_04_document_becomes_the_newer_shape() -> None:
    legacy, changes = _normalised(LEGACY)
    newer, _ = _normalised(NEWER)
    assert set(legacy) == {"messagegroups", "schemagroups"}
    assert {"legacy-toplevel", "legacy-definitiongroups", "legacy-format", "legacy-metadata",
            "legacy-dataschema", "legacy-id", "json-pointer-ref", "ce-attribute-type",
            "ce-required-attribute", "stale-self"} <= set(_rules(changes))

    [(gid, group)] = legacy["messagegroups"].items()
    [new_group] = newer["messagegroups"].values()
    assert gid.lower() == "microsoft.storage" and group["messagegroupid"] == gid
    assert set(group["messages"]) == set(new_group["messages"])
    for mid, message in group["messages"].items():
        expected = new_group["messages"][mid]
        assert message["messageid"] == mid
        assert message["envelope"] == expected["envelope"] == "CloudEvents/1.0"
        assert message["envelopemetadata"].keys() == expected["envelopemetadata"].keys()
        for attr, decl in message["envelopemetadata"].items():
            want = expected["envelopemetadata"][attr]
            assert {k: v for k, v in decl.items() if k != "value"} == \
                   {k: v for k, v in want.items() if k != "value"}
            assert str(decl.get("value")).lower() == str(want.get("value")).lower()
        assert message.get("dataschemauri", "").lower() == expected.get("dataschemauri", "").lower()
        if "dataschemauri" in message:
            schema_xid = message["dataschemauri"].split("#")[0]
            _, _, sgid, _, sid = schema_xid.split("/")
            assert sid in legacy["schemagroups"][sgid]["schemas"]  # the reference resolves

    [new_schemas] = [g["schemas"] for g in newer["schemagroups"].values()]
    [schemas] = [g["schemas"] for g in legacy["schemagroups"].values()]
    assert set(schemas) == set(new_schemas)
    for sid, schema in schemas.items():
        assert schema["schemaid"] == sid
        assert set(schema["versions"]) == set(new_schemas[sid]["versions"])
        for vid, version in schema["versions"].items():
            assert version["versionid"] == vid
            assert version["schemaurl"] == new_schemas[sid]["versions"][vid]["schemaurl"]
    for _, value in _walk(legacy):
        assert value not in ("definitiongroup", "schemaversion", "cloudevent")


@pytest.mark.parametrize("name", [p.name for p in REAL])
def test_strict_accepts_only_what_needs_no_change(name: str) -> None:
    _, changes = _normalised(name)
    if not changes:
        assert normalise(_read(name), strict=True) == (_read(name), [])
        return
    with pytest.raises(XRegistryError) as caught:
        normalise(_read(name), strict=True)
    err = caught.value
    assert err.type == "invalid_attribute"
    assert err.detail.endswith("(older shape; rejected by --strict)")
    assert err.subject == changes[0].path


# -- one rule at a time, on small documents ------------------------------------------------


def test_legacy_definition_groups() -> None:
    doc = {
        "$schema": "https://cloudevents.io/schemas/registry",
        "specversion": "0.5-wip",
        "definitionGroupsCount": 1,
        "definitionGroups": {
            "g1": {
                "id": "g1",
                "format": "CloudEvents/1.0",
                "definitions": {
                    "e1": {
                        "definitionid": "e1",
                        "format": "CloudEvents/1.0",
                        "metadata": {"attributes": {
                            "type": {"value": "com.example.e1"},
                            "source": {"type": "uritemplate", "required": False},
                            "time": {"type": "datetime"},
                        }},
                        "schemaformat": "Protobuf/3.0",
                        "schemaurl": "#/schemaGroups/s/schemas/d/versions/1.0",
                        "createdOn": "2024-01-01T00:00:00+00:00",
                    },
                    "e2": {"format": "MQTT/5.0", "metadata": {"topic_name": {"value": "t"}},
                           "schema": "syntax = \"proto3\";", "schemaformat": "Protobuf/3"},
                },
            }
        },
    }
    out, changes = normalise(doc)
    group = out["messagegroups"]["g1"]
    assert set(out) == {"messagegroups"}
    assert group == {
        "messagegroupid": "g1",
        "envelope": "CloudEvents/1.0",
        "messages": {
            "e1": {
                "messageid": "e1",
                "envelope": "CloudEvents/1.0",
                "envelopemetadata": {
                    "type": {"value": "com.example.e1"},
                    "source": {"type": "uritemplate", "required": True},
                    "time": {"type": "timestamp"},
                },
                "dataschemaformat": "Protobuf/3.0",
                "dataschemauri": "/schemagroups/s/schemas/d/versions/1.0",
                "createdat": "2024-01-01T00:00:00+00:00",
            },
            "e2": {"protocol": "MQTT/5.0", "protocoloptions": {"topic_name": {"value": "t"}},
                   "dataschema": "syntax = \"proto3\";", "dataschemaformat": "Protobuf/3"},
        },
    }
    paths = {c.path for c in changes}
    assert {"/", "/messagegroups/g1", "/messagegroups/g1/messages/e1"} <= paths
    assert {"legacy-toplevel", "legacy-collection-helper", "legacy-definitiongroups", "legacy-id",
            "legacy-format", "legacy-metadata", "legacy-dataschema", "json-pointer-ref",
            "ce-attribute-type", "ce-required-attribute", "legacy-attribute-names"} == set(_rules(changes))


def test_legacy_ids_rekey_entities_and_drop_markers() -> None:
    doc = {"schemagroups": {"SG": {
        "type": "schemagroup", "id": "sg", "self": "#/schemagroups/sg",
        "schemas": {"x": {"id": "X", "groupId": "sg", "type": "schema", "versions": {
            "v": {"id": "1", "type": "schemaversion"}, "1": {"schemauri": "https://e.org/x"}}}},
    }}}
    out, changes = normalise(doc)
    group = out["schemagroups"]["sg"]
    assert group == {"schemagroupid": "sg", "self": "#/schemagroups/sg", "schemas": {"X": {"schemaid": "X", "versions": {
        "v": {"versionid": "1"}, "1": {"schemaurl": "https://e.org/x"}}}}}
    # "1" was taken, so version "v" keeps its key; the engine reports the id mismatch
    assert _rules(changes)["legacy-id"] == 5
    assert _rules(changes)["legacy-type"] == 3
    assert _rules(changes)["legacy-groupid"] == 1
    assert "stale-self" not in _rules(changes)  # "#/schemagroups/sg" locates the re-keyed group


def test_json_pointer_references_become_xids() -> None:
    doc = {
        "endpoints": {"e": {"usage": ["producer"], "protocol": "MQTT/3.1.1",
                            "protocoloptions": {"willmessage": "#/messagegroups/g/messages/will"},
                            "messagegroups": ["#/messagegroups/g", "/messagegroups/h",
                                              "https://x.example/reg#/messagegroups/z"]}},
        "messagegroups": {"g": {"messages": {"m": {
            "basemessageuri": "#/messagegroups/h/messages/base",
            "dataschemauri": "#/schemagroups/s/schemas/d/versions/1:Payload",
            "dataschemaformat": "Protobuf/3",
            "envelope": "CloudEvents/1.0",
            "envelopemetadata": {"dataschema": {"value": "#/schemagroups/s/schemas/d#/definitions/D"}},
        }, "x": {"xref": "#/messagegroups/h/messages/base"}}}},
    }
    out, changes = normalise(doc)
    endpoint = out["endpoints"]["e"]
    assert endpoint["messagegroups"] == ["/messagegroups/g", "/messagegroups/h",
                                         "https://x.example/reg#/messagegroups/z"]
    assert endpoint["protocoloptions"]["willmessage"] == "/messagegroups/g/messages/will"
    m = out["messagegroups"]["g"]["messages"]["m"]
    assert m["basemessageuri"] == "/messagegroups/h/messages/base"
    assert m["dataschemauri"] == "/schemagroups/s/schemas/d/versions/1:Payload"
    assert m["envelopemetadata"]["dataschema"]["value"] == "/schemagroups/s/schemas/d#/definitions/D"
    assert out["messagegroups"]["g"]["messages"]["x"]["xref"] == "/messagegroups/h/messages/base"
    assert _rules(changes) == {"json-pointer-ref": 6}
    assert {c.path for c in changes} == {"/endpoints/e", "/messagegroups/g/messages/m",
                                         "/messagegroups/g/messages/x"}


def test_pointers_outside_the_registry_are_left_alone() -> None:
    doc = _message({"dataschemauri": "#/definitions/Foo", "dataschemaformat": "JsonSchema/draft-07"})
    assert normalise(doc) == (doc, [])


@pytest.mark.parametrize("old", ["basemessageurl", "basemessage"])
def test_basemessage_names(old: str) -> None:
    out, changes = normalise(_message({old: "/messagegroups/b/messages/m", "name": "n"}))
    assert out["messagegroups"]["g1"]["messages"]["m1"] == {
        "basemessageuri": "/messagegroups/b/messages/m", "name": "n"}
    assert changes == [Normalisation("/messagegroups/g1/messages/m1", "basemessageurl",
                                     f"{old} -> basemessageuri")]


def test_protocolmetadata_on_messages_and_endpoints() -> None:
    doc = {"endpoints": {"e": {"usage": ["consumer"], "protocol": "KAFKA",
                               "protocolmetadata": {"topic": "t"}, "messagegroups": []}},
           **_message({"protocol": "KAFKA", "protocolmetadata": {"key": "k"}})}
    out, changes = normalise(doc)
    assert out["endpoints"]["e"]["protocoloptions"] == {"topic": "t"}
    assert out["messagegroups"]["g1"]["messages"]["m1"]["protocoloptions"] == {"key": "k"}
    assert _rules(changes) == {"protocolmetadata": 2}


def test_schema_versions() -> None:
    doc = {"schemagroups": {"g": {"schemas": {"s": {
        "format": "Avro/1.11.0", "schemauri": "https://e.org/s.avsc",
        "versions": {"1.0": {"version": "1.0", "schemauri": "https://e.org/s.avsc"},
                     "2": {"version": 7, "schemaurl": "https://e.org/t.avsc"}}}}}}}
    out, changes = normalise(doc)
    schema = out["schemagroups"]["g"]["schemas"]["s"]
    assert schema["schemaurl"] == "https://e.org/s.avsc"  # rc4's name; the rc1-rc3 name is renamed
    assert schema["versions"] == {"1.0": {"versionid": "1.0", "schemaurl": "https://e.org/s.avsc"},
                                  "2": {"version": 7, "schemaurl": "https://e.org/t.avsc"}}  # "version": kept
    assert _rules(changes) == {"schemauri": 2, "legacy-version-attr": 1}


def test_amqp_option_names() -> None:
    doc = {
        "endpoints": {"e": {"usage": ["producer"], "protocol": "AMQP/1.0", "messagegroups": [],
                            "protocoloptions": {"node": "q", "link_properties": {"a_b": "c"},
                                                "distribution_mode": "copy", "content_mode": "binary"}}},
        "messagegroups": {"g1": {"messages": {
            "m1": {"protocol": "AMQP/1.0", "protocoloptions": {
                "properties": {"subject": {"value": "s"}, "content_type": {"value": "a/b"}},
                "header": {"delivery_count": {"value": 1}},
                "application_properties": {"event_type": {"value": "x"}},
                "message_annotations": {"x-opt-partition-key": {"value": "k"}},
                "message-annotations": {"other": {"value": "o"}},
            }},
            "m2": {"protocol": "MQTT/5.0", "protocoloptions": {"topic_name": "t", "message_expiry_interval": 5}},
        }}},
    }
    out, changes = normalise(doc)
    assert out["endpoints"]["e"]["protocoloptions"] == {
        "node": "q", "link-properties": {"a_b": "c"}, "distribution-mode": "copy", "content_mode": "binary"}
    assert out["messagegroups"]["g1"]["messages"]["m1"]["protocoloptions"] == {
        "properties": {"subject": {"value": "s"}, "content-type": {"value": "a/b"}},
        "header": {"delivery-count": {"value": 1}},
        "application-properties": {"event_type": {"value": "x"}},
        "message-annotations": {"x-opt-partition-key": {"value": "k"}, "other": {"value": "o"}},
    }
    assert out["messagegroups"]["g1"]["messages"]["m2"] == doc["messagegroups"]["g1"]["messages"]["m2"]
    assert _rules(changes) == {"amqp-option-names": 6}


def test_timestamps_get_an_offset() -> None:
    doc = {"createdat": "2024-01-01T00:00:00",
           **_message({"createdat": "2024-10-18T13:47:59.334831", "modifiedat": "2024-10-18T13:47:59+02:00",
                           "deprecated": {"effective": "2025-01-01T00:00:00", "removal": "2026-01-01T00:00:00Z"}},
                      {"modifiedat": "2024-10-18T13:47:59.1"})}
    out, changes = normalise(doc)
    group = out["messagegroups"]["g1"]
    message = group["messages"]["m1"]
    assert out["createdat"] == "2024-01-01T00:00:00Z"
    assert group["modifiedat"] == "2024-10-18T13:47:59.1Z"
    assert message["createdat"] == "2024-10-18T13:47:59.334831Z"
    assert message["modifiedat"] == "2024-10-18T13:47:59+02:00"
    assert message["deprecated"] == {"effective": "2025-01-01T00:00:00Z", "removal": "2026-01-01T00:00:00Z"}
    assert _rules(changes) == {"timestamp-timezone": 4}


def test_protocol_none_is_no_protocol() -> None:
    out, changes = normalise(_message({"envelope": "CloudEvents/1.0", "protocol": "None"}))
    assert out["messagegroups"]["g1"]["messages"]["m1"] == {"envelope": "CloudEvents/1.0"}
    assert _rules(changes) == {"protocol-none": 1}


def test_nested_envelopemetadata_attributes_are_flattened() -> None:
    message = {"envelope": "CloudEvents/1.0",
               "envelopemetadata": {"attributes": {"type": {"value": "t"}}, "subject": {"type": "string"}}}
    out, changes = normalise(_message(message))
    assert out["messagegroups"]["g1"]["messages"]["m1"]["envelopemetadata"] == {
        "subject": {"type": "string"}, "type": {"value": "t"}}
    assert _rules(changes) == {"envelopemetadata-attributes": 1}


def test_legacy_endpoint_config() -> None:
    doc = {"endpoints": {"e": {"id": "e", "usage": "consumer", "format": "CloudEvents/1.0",
                               "config": {"protocol": "MQTT/5.0", "strict": False,
                                          "endpoints": ["mqtt://m.example:1883"], "options": {"topic": "t"}},
                               "definitionGroups": ["#/definitionGroups/g"]}}}
    out, changes = normalise(doc)
    assert out["endpoints"]["e"] == {
        "endpointid": "e", "usage": ["consumer"], "envelope": "CloudEvents/1.0",
        "messagegroups": ["/messagegroups/g"], "protocol": "MQTT/5.0",
        "protocoloptions": {"strict": False, "endpoints": [{"uri": "mqtt://m.example:1883"}], "topic": "t"}}
    assert set(_rules(changes)) == {"legacy-id", "legacy-usage", "legacy-format", "legacy-endpoint-config",
                                    "legacy-definitiongroups", "json-pointer-ref"}


def test_current_shape_and_unknown_attributes_are_untouched() -> None:
    long_id, too_long = "m" * 100, "x" * 200
    doc = {
        "specversion": "1.0-rc4",
        "model": {"groups": {"messagegroups": {"definitions": {"id": {"type": "string"}}}}},
        "agents": {"a": {"id": "keep", "self": "#/elsewhere"}},
        "endpoints": {"e": {"usage": ["producer"], "protocol": "HTTP", "deployed": False,
                            "endpoints": [{"uri": "https://e.example"}], "messagegroups": ["/messagegroups/g"]}},
        "messagegroups": {"g": {"envelope": "CloudEvents/1.0", "origin": "x", "messages": {
            long_id: {"envelope": "CloudEvents/1.0", "format": "JSON", "self": "#/messagegroups/g/messages/" + long_id,
                      "x_custom": {"schemaurl": "#/schemagroups/a"}, "createdat": "2024-01-01T00:00:00Z"},
            too_long: {"name": "left for the engine to reject"},
        }}},
        "schemagroups": {"s": {"format": "Avro/1.11.0", "schemas": {"d": {"format": "Avro/1.11.0", "versions": {
            "1": {"schema": {"$schema": "x", "definitions": {"a": {"$ref": "#/definitions/b"}}, "schemaurl": "y"}}}}}}},
    }
    out, changes = normalise(doc)
    assert out == doc and changes == []
    assert normalise(doc, strict=True) == (doc, [])


def test_strict_mode_names_entity_and_attribute() -> None:
    doc = _message({"basemessageurl": "/messagegroups/b/messages/m"})
    snapshot = copy.deepcopy(doc)
    with pytest.raises(XRegistryError) as caught:
        normalise(doc, strict=True)
    err = caught.value
    assert (err.type, err.subject, err.path) == ("invalid_attribute", "/messagegroups/g1/messages/m1", "basemessageurl")
    assert err.detail == "basemessageurl -> basemessageuri (older shape; rejected by --strict)"
    assert "basemessageurl" in str(err)
    assert doc == snapshot


@pytest.mark.parametrize("doc", [
    {"definitiongroups": {}},
    {"$schema": "x"},
    {"endpoints": {"e": {"messagegroups": ["#/messagegroups/g"]}}},
    {"endpoints": {"e": {"protocol": "AMQP/1.0", "protocoloptions": {"link_properties": {}}}}},
    _message({"protocol": "None"}),
    _message({"createdat": "2024-01-01T00:00:00"}),
    {"schemagroups": {"g": {"schemas": {"s": {"versions": {"1": {"schemauri": "https://e.org"}}}}}}},
], ids=["definitiongroups", "$schema", "pointer", "amqp", "protocol-none", "timestamp", "schemauri"])
def test_strict_mode_rejects_each_rule(doc: dict) -> None:
    with pytest.raises(XRegistryError, match="older shape; rejected by --strict"):
        normalise(doc, strict=True)


def test_normalisation_is_a_frozen_record() -> None:
    change = Normalisation("/messagegroups/g1", "legacy-id", "id -> messagegroupid")
    with pytest.raises(dataclasses.FrozenInstanceError):
        change.rule = "other"  # type: ignore[misc]
    assert dataclasses.astuple(change) == ("/messagegroups/g1", "legacy-id", "id -> messagegroupid")
