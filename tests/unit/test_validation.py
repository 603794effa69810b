"""Attribute and entity validation: model types, model aspects, message/endpoint rules, real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus import XREG_DATA
from xreg.documents.normalise import normalise
from xreg.errors import ValidationErrors, XRegistryError
from xreg.model.registry_model import AttributeDef, RegistryModel
from xreg.registry.checker import validate_attributes
from xreg.registry.validation import validate_entity
from xreg.xid import Xid

MODEL = RegistryModel.default()
TS = "2030-12-19T06:00:00Z"
S = "/test"


def defs(**raw) -> dict[str, AttributeDef]:
    return {name: AttributeDef.from_json(name, doc) for name, doc in raw.items()}


def found(attrs, definitions, *, extensible=False, model=None) -> set[tuple[str, str]]:
    return {(e.type, e.path) for e in validate_attributes(attrs, definitions, subject=S,
                                                          extensible=extensible, model=model)}


def server(xid: str, **more) -> dict:
    """The attributes the engine sets on every entity."""
    return {"xid": xid, "self": "https://registry.example.com" + xid, "epoch": 1, "createdat": TS,
            "modifiedat": TS, **more}


def entity_errors(level, attrs, *, group_type, resource_type=None, group_attrs=None) -> set[tuple[str, str]]:
    subject = attrs.get("xid", "/")
    try:
        validate_entity(level, attrs, model=MODEL, group_type=group_type, resource_type=resource_type,
                        subject=subject, group_attrs=group_attrs)
    except ValidationErrors as errs:
        assert all(e.subject == subject for e in errs.errors)
        return {(e.type, e.path) for e in errs.errors}
    return set()


MXID = "/messagegroups/g/messages/m/versions/1"


def message_errors(group_attrs=None, group_type="messagegroups", **attrs):
    xid = MXID.replace("/messagegroups/", f"/{group_type}/")
    return entity_errors("version", server(xid, versionid="1", **attrs), group_type=group_type,
                         resource_type="messages", group_attrs=group_attrs)


def endpoint_errors(**attrs):
    return entity_errors("group", server("/endpoints/e", **attrs), group_type="endpoints")


def group_errors(**attrs):
    return entity_errors("group", server("/messagegroups/g", **attrs), group_type="messagegroups")


INVALID, MISSING = "invalid_attribute", "required_attribute_missing"
CE = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.e"}}}


# -- scalar types (core/spec.md, "Data Types") -------------------------------------------------
@pytest.mark.parametrize(
    ("type_", "good", "bad"),
    [
        ("string", ["", "x"], [1, True, ["x"]]),
        ("integer", [0, -5, 2**40], [1.5, "1", True]),
        ("uinteger", [0, 7], [-1, 1.0, False]),
        ("decimal", [0, 1.5, -2], ["1.5", True, float("nan")]),
        ("boolean", [True, False], ["true", 0, 1]),
        ("timestamp", [TS, "2030-12-19T06:00:00.123+02:00", "2016-12-31T23:59:60Z", "2030-12-19t06:00:00z"],
         ["2030-12-19T06:00:00", "2030-12-19", "2030-13-19T06:00:00Z", "2030-02-30T06:00:00Z", 5,
          "2030-12-19 06:00:00Z"]),
        ("uri", ["https://example.com/a?b=c#d", "/messagegroups/g", "urn:x:y", "a%20b", ""],
         ["has space", "http://x/{y}", "1http://x", "a%zz", 5]),
        ("urireference", ["../x"], ["a b"]),
        ("url", ["#/endpoints/e", "https://example.com"], ["https://exa mple.com"]),
        ("uritemplate", ["/vehicles/{vin}/systems/{system}", "{+path}", "plain"],
         ["/a/{b", "/a/{b c}", "/a/}b{", "/a/{}", "a b"]),
        ("xid", ["/", "/endpoints/e"], ["endpoints/e", 5]),
    ],
)
def test_scalar_types(type_, good, bad):
    d = defs(a={"type": type_})
    for value in good:
        assert found({"a": value}, d) == set(), value
    for value in bad:
        assert found({"a": value}, d) == {(INVALID, "a")}, value


def test_absolute_and_relative_uri_variants():
    d = defs(a={"type": "uriabsolute"}, r={"type": "urlrelative"})
    assert found({"a": "https://x", "r": "/x"}, d) == set()
    assert found({"a": "/x", "r": "https://x"}, d) == {(INVALID, "a"), (INVALID, "r")}


def test_xid_checked_against_model_and_target():
    d = defs(any={"type": "xid"}, res={"type": "xid", "target": "/messagegroups/messages"},
             ver={"type": "xid", "target": "/messagegroups/messages/versions"},
             both={"type": "uri", "target": "/messagegroups/messages[/versions]"},
             grp={"type": "xid", "target": "/messagegroups"})
    ok = {"any": "/endpoints/e", "res": "/messagegroups/g/messages/m", "ver": "/messagegroups/g/messages/m/versions/1",
          "both": "/messagegroups/g/messages/m/versions/1", "grp": "/messagegroups/g"}
    assert found(ok, d, model=MODEL) == set()
    assert found({"both": "https://elsewhere.example.com/messagegroups/x"}, d, model=MODEL) == set()
    bad = {"any": "/nothing/e", "res": "/messagegroups/g/messages/m/versions/1", "ver": "/messagegroups/g/messages/m",
           "both": "/messagegroups/g", "grp": "/endpoints/e"}
    assert found(bad, d, model=MODEL) == {(INVALID, n) for n in bad}


def test_xidtype():
    d = defs(t={"type": "xidtype"})
    for value in ["/", "/endpoints", "/messagegroups/messages", "/messagegroups/messages/versions"]:
        assert found({"t": value}, d, model=MODEL) == set(), value
    for value in ["/nothing", "/messagegroups/schemas", "/endpoints/versions", "x"]:
        assert found({"t": value}, d, model=MODEL) == {(INVALID, "t")}, value


def test_any_is_not_checked():
    d = defs(a={"type": "any"})
    assert found({"a": {"Bad Name": [None, {"x-y": 1}]}}, d) == set()


# -- arrays, maps, objects ----------------------------------------------------------------
def test_array_items_and_nulls():
    d = defs(a={"type": "array", "item": {"type": "integer"}})
    assert found({"a": [1, 2]}, d) == set()
    assert found({"a": [1, "x", None]}, d) == {(INVALID, "a[1]"), (INVALID, "a[2]")}
    assert found({"a": "x"}, d) == {(INVALID, "a")}


def test_map_keys_and_values():
    d = defs(m={"type": "map", "item": {"type": "string"}})
    assert found({"m": {"a.b-c:d_e": "x", "0k": ""}}, d) == set()
    bad = {"Upper": "x", "": "x", "_x": "x", "k" * 64: "x", "ok": 5, "nul": None}
    assert found({"m": bad}, d) == {(INVALID, "m.Upper"), (INVALID, "m['']"), (INVALID, "m._x"),
                                    (INVALID, "m." + "k" * 64), (INVALID, "m.ok"), (INVALID, "m.nul")}
    assert found({"m": ["x"]}, d) == {(INVALID, "m")}


def test_nested_object_paths():
    d = defs(o={"type": "object", "attributes": {
        "p": {"type": "object", "attributes": {"q": {"type": "integer"}}},
        "list": {"type": "array", "item": {"type": "object", "attributes": {"n": {"type": "string", "required": True}}}},
        "map": {"type": "map", "item": {"type": "boolean"}},
    }})
    attrs = {"o": {"p": {"q": "x"}, "list": [{"n": "a"}, {}], "map": {"k.1": "no"}}}
    assert found(attrs, d) == {(INVALID, "o.p.q"), (MISSING, "o.list[1].n"), (INVALID, "o.map['k.1']")}
    assert found({"o": "x"}, d) == {(INVALID, "o")}


def test_wildcard_and_unknown_attributes():
    typed = defs(a={"type": "string"}, **{"*": {"type": "integer"}})
    assert found({"a": "x", "extra": 1}, typed, extensible=True) == set()
    assert found({"extra": "x"}, typed, extensible=True) == {(INVALID, "extra")}
    closed = defs(a={"type": "string"})
    # unknown attributes are kept as they are, whether the level is extensible or not
    assert found({"extra": {"anything": [1]}}, closed, extensible=False) == set()
    assert found({"extra": {"anything": [1]}}, closed, extensible=True) == set()


@pytest.mark.parametrize("name", ["Bad", "1abc", "a-b", "a.b", "", "x" * 64, "ümlaut"])
def test_invalid_attribute_names(name):
    errors = validate_attributes({name: 1}, {}, subject=S, extensible=True)
    assert [e.type for e in errors] == [INVALID]
    assert found({"Bad": 1}, defs()) == {(INVALID, "Bad")}


def test_valid_attribute_names():
    assert found({"_a": 1, "a_1": 1, "x" * 63: 1}, defs()) == set()


def test_extended_namecharset_of_nested_objects():
    # nested object names may use the map-key set (core/model.md, namecharset "extended")
    d = defs(o={"type": "object", "namecharset": "extended"})
    assert found({"o": {"link-properties": 1, "bootstrap.servers": 2}}, d) == set()
    assert found({"o": {"Bad Name": 1}}, d) == {(INVALID, "o['Bad Name']")}


# -- model aspects (core/model.md) --------------------------------------------------------
def test_enum_strict_by_default():
    d = defs(a={"type": "string", "enum": ["x", "y"]}, n={"type": "integer", "enum": [1]})
    assert found({"a": "x", "n": 1}, d) == set()
    assert found({"a": "z", "n": True}, d) == {(INVALID, "a"), (INVALID, "n")}


def test_enum_not_strict():
    d = defs(a={"type": "string", "enum": ["x"], "strict": False})
    assert found({"a": "anything"}, d) == set()


def test_enum_on_array_applies_to_each_element():
    d = defs(a={"type": "array", "enum": ["x", "y"], "item": {"type": "string"}})
    assert found({"a": ["x", "y"]}, d) == set()
    assert found({"a": ["x", "z"]}, d) == {(INVALID, "a[1]")}


def test_required():
    d = defs(a={"type": "string", "required": True}, b={"type": "string", "required": True, "default": "d"})
    assert found({"a": ""}, d) == set()  # empty string is a value; b has a default the server fills
    assert found({}, d) == {(MISSING, "a")}
    assert found({"a": None}, d) == {(MISSING, "a")}


def test_ifvalues_define_siblings():
    d = defs(kind={"type": "string", "ifvalues": {"A": {"siblingattributes": {"extra": {"type": "integer"}}}}})
    assert found({"kind": "A", "extra": 1}, d) == set()
    assert found({"kind": "a", "extra": "x"}, d) == {(INVALID, "extra")}  # matched case-insensitively
    assert found({"kind": "B", "extra": "x"}, d) == set()  # not defined: kept as is


def test_duplicate_siblings_from_two_ifvalues():
    sib = {"siblingattributes": {"opts": {"type": "object"}}}
    d = defs(a={"type": "string", "ifvalues": {"x": sib}}, b={"type": "string", "ifvalues": {"y": sib}})
    assert found({"a": "x", "b": "y"}, d) == {(INVALID, "opts")}
    assert found({"a": "x", "b": "n"}, d) == set()


def test_message_envelope_defines_envelopemetadata():
    msg = MODEL.resource("messagegroups", "messages").attributes
    good = {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "com.example.e"}, "source": {"type": "uritemplate", "value": "/{tenant}"},
        "specversion": {"type": "string", "value": "1.0"}, "myext": {"value": "x", "required": True}}}
    assert found(good, msg, model=MODEL) == set()
    bad = {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": 5}, "id": {"required": False}, "specversion": {"value": "0.3"}, "myext": "x"}}
    assert found(bad, msg, model=MODEL) == {(INVALID, "envelopemetadata.type.value"),
                                            (INVALID, "envelopemetadata.id.required"),
                                            (INVALID, "envelopemetadata.specversion.value"),
                                            (INVALID, "envelopemetadata.myext")}


def test_message_protocol_defines_protocoloptions():
    msg = MODEL.resource("messagegroups", "messages").attributes
    kafka = {"protocol": "KAFKA", "protocoloptions": {"topic": "t", "partition": 1, "headers": {
        "h1": {"name": "h1", "value": "v"}}}}
    assert found(kafka, msg, model=MODEL) == set()
    bad = {"protocol": "Kafka", "protocoloptions": {"partition": "1", "headers": {"h1": {"value": "v"}}}}
    assert found(bad, msg, model=MODEL) == {(INVALID, "protocoloptions.partition"),
                                            (MISSING, "protocoloptions.headers.h1.name")}
    mqtt = {"protocol": "MQTT/5.0", "protocoloptions": {"qos": "high", "payload_format_indicator": 2}}
    assert found(mqtt, msg, model=MODEL) == {(INVALID, "protocoloptions.qos"),
                                             (INVALID, "protocoloptions.payload_format_indicator")}


# -- common attributes (core/spec.md, "Common Attributes") --------------------------------
def test_a_valid_group():
    assert group_errors(name="G", description="d", labels={"owner": "me", "empty": ""},
                        deprecated={"effective": TS, "removal": "2031-01-01T00:00:00Z"}) == set()


def test_labels():
    assert group_errors(labels={"Owner": "x", "": "y", "n": 1}) == {
        (INVALID, "labels.Owner"), (INVALID, "labels['']"), (INVALID, "labels.n")}
    assert group_errors(labels=["x"]) == {(INVALID, "labels")}


def test_server_managed_attributes():
    attrs = server("/messagegroups/g", epoch=-1, createdat="2030-12-19T06:00:00", modifiedat=5, self="a b")
    assert entity_errors("group", attrs, group_type="messagegroups") == {
        (INVALID, "epoch"), (INVALID, "createdat"), (INVALID, "modifiedat"), (INVALID, "self")}
    attrs = server("/messagegroups/g")
    del attrs["epoch"], attrs["xid"]
    assert entity_errors("group", attrs, group_type="messagegroups") == {(MISSING, "epoch"), (MISSING, "xid")}


def test_xid_attribute():
    assert entity_errors("group", server("/messagegroups/-g"), group_type="messagegroups") == {
        ("malformed_xid", "xid")}
    assert entity_errors("group", server("/endpoints/e"), group_type="messagegroups") == {(INVALID, "xid")}
    assert entity_errors("group", server("/messagegroups/g/messages/m"), group_type="messagegroups") == {
        (INVALID, "xid")}


def test_ids_in_attributes():
    assert group_errors(messagegroupid="g") == set()
    assert group_errors(messagegroupid="-g") == {("malformed_id", "messagegroupid")}
    attrs = server(MXID, messageid="m" * 129, versionid="v 1")
    assert entity_errors("version", attrs, group_type="messagegroups", resource_type="messages") == {
        ("malformed_id", "messageid"), ("malformed_id", "versionid")}


def test_non_empty_name_and_documentation():
    assert group_errors(name="", documentation="") == {(INVALID, "name"), (INVALID, "documentation")}


def test_deprecated():
    assert group_errors(deprecated={}) == set()
    assert group_errors(deprecated={"effective": TS, "removal": "2020-01-01T00:00:00Z"}) == {
        (INVALID, "deprecated.removal")}
    assert group_errors(deprecated={"effective": "tomorrow"}) == {(INVALID, "deprecated.effective")}


def test_meta_level():
    meta = server("/messagegroups/g/messages/m/meta", defaultversionid="1", defaultversionsticky=True,
                  xref="/messagegroups/h/messages/m")
    assert entity_errors("meta", meta, group_type="messagegroups", resource_type="messages") == set()
    meta.update(defaultversionsticky="yes", readonly="no")
    assert entity_errors("meta", meta, group_type="messagegroups", resource_type="messages") == {
        (INVALID, "defaultversionsticky"), (INVALID, "readonly")}


def test_schema_version_has_document_attributes():
    xid = "/schemagroups/g/schemas/s/versions/1"
    ok = server(xid, versionid="1", format="JsonSchema/draft-07", schema={"type": "object"},
                schemaurl="https://example.com/s.json")
    assert entity_errors("version", ok, group_type="schemagroups", resource_type="schemas") == set()
    bad = server(xid, versionid="1", schemabase64=5)
    assert entity_errors("version", bad, group_type="schemagroups", resource_type="schemas") == {
        (MISSING, "format"), (INVALID, "schemabase64")}


def test_unknown_types_and_levels():
    with pytest.raises(XRegistryError) as info:
        validate_entity("group", {}, model=MODEL, group_type="nothing", subject="/nothing/x")
    assert info.value.type == "unknown_group_type"
    with pytest.raises(XRegistryError) as info:
        validate_entity("version", {}, model=MODEL, group_type="endpoints", resource_type="schemas", subject="/")
    assert info.value.type == "unknown_resource_type"
    with pytest.raises(ValueError):
        validate_entity("resource", {}, model=MODEL, group_type="endpoints", resource_type="messages", subject="/")


def test_all_violations_are_collected():
    with pytest.raises(ValidationErrors) as info:
        validate_entity("group", {"epoch": "x", "labels": {"A": 1}}, model=MODEL, group_type="messagegroups",
                        subject="/messagegroups/g")
    assert len(info.value.errors) >= 6
    assert info.value.type == info.value.errors[0].type


# -- endpoint/spec.md ---------------------------------------------------------------------
def test_usage():
    assert endpoint_errors(usage=["producer"]) == set()
    assert endpoint_errors(usage=["subscriber", "consumer"], protocol="MQTT/5.0",
                           protocoloptions={"topicfilter": "a/#"}) == set()
    assert endpoint_errors(usage=["subscriber", "consumer"], protocol="amqp") == set()
    assert endpoint_errors() == {(MISSING, "usage")}
    assert endpoint_errors(usage=[]) == {(INVALID, "usage")}
    assert endpoint_errors(usage=["publisher"]) == {(INVALID, "usage[0]")}
    assert endpoint_errors(usage="producer") == {(INVALID, "usage")}
    assert endpoint_errors(usage=["producer", "producer"]) == {(INVALID, "usage")}
    assert endpoint_errors(usage=["producer", "consumer"]) == {(INVALID, "usage")}
    assert endpoint_errors(usage=["subscriber", "consumer", "producer"]) == {(INVALID, "usage")}
    for protocol in ("KAFKA", "HTTP", None):
        attrs = {"protocol": protocol} if protocol else {}
        assert endpoint_errors(usage=["subscriber", "consumer"], **attrs) == {(INVALID, "usage")}, protocol


def test_endpoint_channel_envelope_protocol():
    assert endpoint_errors(usage=["producer"], channel="q1", envelope="CloudEvents", protocol="BunnyMQ") == set()
    assert endpoint_errors(usage=["producer"], channel="", envelope="Cloud Events/1.0", protocol="") == {
        (INVALID, "channel"), (INVALID, "envelope"), (INVALID, "protocol")}


def test_endpoint_envelopeoptions():
    base = {"usage": ["producer"], "envelope": "CloudEvents/1.0"}
    assert endpoint_errors(**base, envelopeoptions={"mode": "structured", "format": "application/json"}) == set()
    assert endpoint_errors(**base, envelopeoptions={"mode": "binary", "format": "application/json"}) == {
        (INVALID, "envelopeoptions.format")}
    assert endpoint_errors(**base, envelopeoptions={"mode": "batch"}) == {(INVALID, "envelopeoptions.mode")}


def test_endpoint_protocoloptions_from_model():
    attrs = {"usage": ["producer"], "protocol": "KAFKA",
             "protocoloptions": {"acks": "all", "endpoints": [{"bootstrap.servers": ["b:9092"]}]}}
    assert endpoint_errors(**attrs) == {(INVALID, "protocoloptions.acks")}


# -- message/spec.md ----------------------------------------------------------------------
@pytest.mark.parametrize("value", ["CloudEvents/1.0", "cloudevents/1.0", "SOAP/1.2"])
def test_envelope_form_valid(value):
    assert group_errors(envelope=value) == set()
    assert message_errors(envelope=value, envelopemetadata={}) == set()


@pytest.mark.parametrize("value", ["CloudEvents", "", "Cloud Events/1.0", "a/b/c", "/1.0"])
def test_envelope_form_invalid(value):
    assert group_errors(envelope=value) == {(INVALID, "envelope")}


@pytest.mark.parametrize("value", ["KAFKA", "MQTT/5.0", "AMQP/1.0", "None", "BunnyMQ/0.9.1"])
def test_protocol_form_valid(value):
    assert group_errors(protocol=value) == set()


@pytest.mark.parametrize("value", ["", "MQTT 5", "a/b/c", "MQTT/"])
def test_protocol_form_invalid(value):
    assert group_errors(protocol=value) == {(INVALID, "protocol")}


def test_envelopemetadata_needs_an_envelope():
    assert message_errors(**CE) == set()
    assert message_errors(envelope="CloudEvents/1.0") == {(MISSING, "envelopemetadata")}
    assert message_errors(envelopemetadata={"type": {"value": "x"}}) == {(INVALID, "envelopemetadata")}


def test_protocoloptions_required_with_protocol():
    assert message_errors(protocol="MQTT/5.0", protocoloptions={"topic_name": "t/{id}"}) == set()
    assert message_errors(protocol="MQTT/5.0") == {(MISSING, "protocoloptions")}
    assert message_errors(protocol="None") == {(MISSING, "protocoloptions")}


def test_dataschema_rules():
    assert message_errors(dataschemaformat="JsonSchema/draft-07", dataschema={"type": "object"}) == set()
    assert message_errors(dataschemaformat="Avro/1.9.0", dataschemauri="/schemagroups/g/schemas/s") == set()
    assert message_errors(dataschemaformat="Avro/1.9.0", dataschema={}, dataschemauri="https://x/s") == {
        (INVALID, "dataschemauri")}
    assert message_errors(dataschemauri="https://x/s") == {(MISSING, "dataschemaformat")}
    assert message_errors(dataschema={}) == {(MISSING, "dataschemaformat")}
    assert message_errors(dataschemaformat="JsonSchema", dataschema={}) == {(INVALID, "dataschemaformat")}
    assert message_errors(dataschemauri="not a uri", dataschemaformat="Avro/1") == {(INVALID, "dataschemauri")}


def test_dataschemaxid():
    xid = "/schemagroups/g/schemas/s"
    assert message_errors(dataschemaxid=xid) == set()  # OPTIONAL, even without dataschemauri
    assert message_errors(dataschemaxid=xid, dataschemaformat="Avro/1", dataschemauri=xid) == set()
    assert message_errors(dataschemaxid=xid, dataschemaformat="Avro/1",
                          dataschemauri="https://registry.example.com" + xid) == set()
    assert message_errors(dataschemaxid=xid, dataschemaformat="Avro/1",
                          dataschemauri="https://registry.example.com/schemagroups/g/schemas/t") == {
        (INVALID, "dataschemauri")}
    assert message_errors(dataschemaxid="schemagroups/g") == {(INVALID, "dataschemaxid")}


@pytest.mark.parametrize("protocol", ["KAFKA", "Kafka"])
def test_kafka_key_exclusive(protocol):
    assert message_errors(protocol=protocol, protocoloptions={"key": "{id}"}) == set()
    assert message_errors(protocol=protocol, protocoloptions={"key_base64": "AA=="}) == set()
    assert message_errors(protocol=protocol, protocoloptions={"key": "{id}", "key_base64": "AA=="}) == {
        (INVALID, "protocoloptions.key_base64")}


@pytest.mark.parametrize("protocol", ["HTTP", "HTTP/1.1", "http/2"])
def test_http_method_status_exclusive(protocol):
    assert message_errors(protocol=protocol, protocoloptions={"method": "POST"}) == set()
    assert message_errors(protocol=protocol, protocoloptions={"status": "200"}) == set()
    assert message_errors(protocol=protocol, protocoloptions={"method": "POST", "status": "200"}) == {
        (INVALID, "protocoloptions.status")}


def test_message_matches_its_group():
    group = {"envelope": "CloudEvents/1.0", "protocol": "MQTT/5.0"}
    mqtt = {"protocol": "MQTT/5.0", "protocoloptions": {}}
    assert message_errors(group, **CE, **mqtt) == set()
    assert message_errors(group, **{**CE, "envelope": "cloudevents/1.0"}, **mqtt) == set()
    assert message_errors(group, **mqtt) == {(MISSING, "envelope")}
    assert message_errors(group, **CE) == {(MISSING, "protocol")}
    assert message_errors(group, **{**CE, "envelope": "CloudEvents/2.0"}, protocol="KAFKA",
                          protocoloptions={}) == {(INVALID, "envelope"), (INVALID, "protocol")}
    assert message_errors({}, protocol="KAFKA", protocoloptions={}) == set()


def test_endpoint_message_envelope_precision():
    ce = {"envelopemetadata": {}}
    assert message_errors({"envelope": "CloudEvents"}, "endpoints", envelope="CloudEvents/1.0", **ce) == set()
    assert message_errors({"envelope": "myspec/1.0"}, "endpoints", envelope="myspec/1.0", **ce) == set()
    assert message_errors({"envelope": "myspec/1.0"}, "endpoints", envelope="myspec/2.0", **ce) == {
        (INVALID, "envelope")}
    assert message_errors({"protocol": "AMQP"}, "endpoints", protocol="AMQP/1.0", protocoloptions={}) == set()
    assert message_errors({"protocol": "HTTP"}, "endpoints", protocol="HTTP/1.1", protocoloptions={}) == set()


def test_basemessageuri_target():
    assert message_errors(basemessageuri="/messagegroups/g/messages/base") == set()
    assert message_errors(basemessageuri="https://catalog.example.com/messagegroups/s/messages/b") == set()
    assert message_errors(basemessageuri="/messagegroups/g") == {(INVALID, "basemessageuri")}


# -- real documents -------------------------------------------------------------------------
DATA = XREG_DATA
REAL_FILES = sorted(p for p in DATA.glob("*.xreg.json") if "0.4-wip" not in p.name)


#: Real data that breaks a spec rule even after normalisation: file -> {(error type, path)}.
#: message/spec.md, dataschemauri: "If present, dataschemaformat MUST be present." These five
#: messages reference schemas that are not in the document, so the format cannot be looked up.


def _entities(doc: dict):
    """(level, attrs, group_type, resource_type, xid, group_attrs) for every entity of a document,
    with the server-managed attributes the engine would set."""

    def managed(attrs, xid, **more):
        attrs = {**attrs, **more, "xid": xid, "self": "https://registry.example.com" + xid}
        if not isinstance(attrs.get("epoch"), int) or attrs["epoch"] < 0:
            attrs["epoch"] = 1
        attrs.setdefault("createdat", TS)
        attrs.setdefault("modifiedat", TS)
        return attrs

    for gtype, rtype in (("messagegroups", "messages"), ("endpoints", "messages"), ("schemagroups", "schemas")):
        for gid, group in (doc.get(gtype) or {}).items():
            gattrs = {k: v for k, v in group.items() if not k.startswith(rtype)}
            yield "group", managed(gattrs, str(Xid(gtype, gid))), gtype, None, str(Xid(gtype, gid)), None
            for rid, res in (group.get(rtype) or {}).items():
                versions = res.get("versions")
                if rtype == "messages" and not versions:  # a message's attributes are its version's
                    vid = res.get("versionid", "1")
                    attrs = {k: v for k, v in res.items() if k not in ("meta", "metaurl", "versionsurl", "versionscount")}
                    versions = {vid: attrs}
                for vid, ver in (versions or {}).items():
                    xid = str(Xid(gtype, gid, rtype, rid, vid))
                    yield "version", managed(ver, xid, versionid=vid), gtype, rtype, xid, gattrs
                meta = {k: res[k] for k in ("defaultversionid", "defaultversionsticky", "xref", "compatibility")
                        if k in res}
                xid = str(Xid(gtype, gid, rtype, rid, meta=True))
                yield "meta", managed(meta, xid), gtype, rtype, xid, gattrs


def _violations(path: Path) -> list[tuple[str, str, str, str]]:
    doc, _changes = normalise(json.loads(path.read_text(encoding="utf-8")))
    model = RegistryModel.default()
    found_, count = [], 0
    for level, attrs, gtype, rtype, xid, gattrs in _entities(doc):
        count += 1
        try:
            validate_entity(level, attrs, model=model, group_type=gtype, resource_type=rtype, subject=xid,
                            group_attrs=gattrs)
        except ValidationErrors as errs:
            found_ += [(e.type, e.path, e.subject, e.detail) for e in errs.errors]
    assert count > 0
    return found_


@pytest.mark.skipif(not REAL_FILES, reason="real documents not available")
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_real_documents_validate_after_normalisation(path):
    problems = [f"{subject} {attr}: {kind} {detail}" for kind, attr, subject, detail in _violations(path)]
    assert not problems, f"{len(problems)} violations, e.g.:\n" + "\n".join(problems[:20])


def test_default_model_accepts_endpoint_messagegroup_references():
    assert endpoint_errors(usage=["producer"], messagegroups=["/messagegroups/g"]) == set()
