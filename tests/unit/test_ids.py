"""IDs and XIDs (core/spec.md, "<SINGULAR>id" and "xid" attributes)."""

import pytest

from xreg.errors import XRegistryError
from xreg.ids import check_id, parse_xid
from xreg.model.registry_model import RegistryModel
from xreg.xid import Xid

MODEL = RegistryModel.default()


@pytest.mark.parametrize("value", ["a", "A" * 128, "0abc", "_x", "a-b.c_d~e:f@g", "myEntity.example.com",
                                   "a183e0a9-abf8-4763-99bc-e6b7fcc9544b", "9", "x:y@z"])
def test_valid_ids(value):
    assert check_id(value, subject="/endpoints", attribute="endpointid") == value


@pytest.mark.parametrize("value", ["", "a" * 129, "-a", ".a", "~a", ":a", "@a", "a/b", "a b", "a%20",
                                   "a+b", "a#b", "é", "a$details", None, 5])
def test_malformed_ids(value):
    with pytest.raises(XRegistryError) as info:
        check_id(value, subject="/endpoints", attribute="endpointid")
    err = info.value
    assert err.type == "malformed_id"
    assert err.subject == "/endpoints"
    assert err.path == "endpointid"
    assert "endpointid" in err.detail


def test_id_length_limits():
    check_id("x" * 128, subject="/", attribute="id")
    with pytest.raises(XRegistryError, match="128"):
        check_id("x" * 129, subject="/", attribute="id")


@pytest.mark.parametrize(
    ("xid", "level", "parts"),
    [
        ("/", "registry", Xid()),
        ("/endpoints/e1", "group", Xid("endpoints", "e1")),
        ("/messagegroups/g/messages/m", "resource", Xid("messagegroups", "g", "messages", "m")),
        ("/messagegroups/g/messages/m/meta", "meta", Xid("messagegroups", "g", "messages", "m", meta=True)),
        ("/schemagroups/g/schemas/app.json/versions/v1.0", "version",
         Xid("schemagroups", "g", "schemas", "app.json", "v1.0")),
        ("/endpoints/e/messages/m", "resource", Xid("endpoints", "e", "messages", "m")),  # ximportresources
    ],
)
def test_parse_xid(xid, level, parts):
    parsed = parse_xid(xid, MODEL)
    assert parsed == parts
    assert parsed.level == level
    assert str(parsed) == xid


@pytest.mark.parametrize(
    ("xid", "detail"),
    [
        ("", "start"),
        ("endpoints/e", "start"),
        (None, "start"),
        ("/endpoints", "form"),
        ("/endpoints/e/", "form"),
        ("//e", "form"),
        ("/endpoints/", "form"),
        ("/unknown/x", "unknown group type"),
        ("/messagegroups/g/schemas/s", "unknown resource type"),
        ("/messagegroups/g/messages", "form"),
        ("/messagegroups/g/messages/m/versions", "form"),
        ("/messagegroups/g/messages/m/other", "form"),
        ("/messagegroups/g/messages/m/meta/x", "form"),
        ("/endpoints/-e", "start with"),
        ("/endpoints/" + "e" * 129, "128"),
        ("/messagegroups/g/messages/m/versions/v%201", "only contain"),
    ],
)
def test_malformed_xids(xid, detail):
    with pytest.raises(XRegistryError) as info:
        parse_xid(xid, MODEL, subject="/request")
    assert info.value.type == "malformed_xid"
    assert info.value.subject == "/request"
    assert detail in info.value.detail


def test_parse_xid_checks_types_and_ids_not_only_the_shape():
    version = parse_xid("/messagegroups/g/messages/m/versions/1", MODEL)
    assert version.resource == Xid("messagegroups", "g", "messages", "m")
    with pytest.raises(XRegistryError, match="unknown group type"):
        parse_xid("/widgets/w", MODEL)
    with pytest.raises(XRegistryError, match="only contain"):
        parse_xid("/endpoints/e$", MODEL)
