"""The XID value type: parsing, the string form, parts, relatives."""

import pytest

from xreg.errors import XRegistryError
from xreg.xid import Xid

# (xid, level, depth, ctype, id, collection)
LEVELS = [
    ("/", "registry", 0, "", None, None),
    ("/endpoints/e1", "group", 1, "endpoints", "e1", "endpoints"),
    ("/messagegroups/g/messages/m", "resource", 2, "messagegroups/messages", "m", "messages"),
    ("/messagegroups/g/messages/m/meta", "meta", 2, "messagegroups/messages", "m", None),
    ("/messagegroups/g/messages/m/versions/1.0", "version", 3, "messagegroups/messages/versions", "1.0", "versions"),
]


@pytest.mark.parametrize(("text", "level", "depth", "ctype", "id_", "collection"), LEVELS)
def test_every_level(text, level, depth, ctype, id_, collection):
    xid = Xid.parse(text)
    assert str(xid) == text
    assert (xid.level, xid.depth, xid.ctype, xid.id, xid.collection) == (level, depth, ctype, id_, collection)


def test_parts():
    assert Xid.parse("/schemagroups/g/schemas/s/versions/v") == Xid("schemagroups", "g", "schemas", "s", "v")
    assert Xid.parse("/schemagroups/g/schemas/s/meta") == Xid("schemagroups", "g", "schemas", "s", meta=True)
    assert Xid.parse("/") == Xid()
    assert Xid.parse("/schemagroups/g/schemas/s/versions/v").parts == ("schemagroups", "g", "schemas", "s", "v")
    assert Xid.parse("/schemagroups/g/schemas/s/meta").parts == ("schemagroups", "g", "schemas", "s")
    assert Xid().parts == ()


@pytest.mark.parametrize("id_", ["a:b", "x@y", "~t", "v1.0", "a-b_c", "urn:x:y@1.0~beta"])
def test_ids_with_unreserved_characters_round_trip(id_):
    for text in (f"/endpoints/{id_}", f"/messagegroups/{id_}/messages/{id_}/versions/{id_}"):
        xid = Xid.parse(text)
        assert str(xid) == text and xid.id == id_ and Xid.parse(str(xid)) == xid


@pytest.mark.parametrize("text", [
    "", "endpoints/e", "/endpoints", "/endpoints/", "//e", "/endpoints/e/", "/endpoints//messages/m",
    "/messagegroups/g/messages", "/messagegroups/g/messages/m/", "/messagegroups/g/messages/m/versions",
    "/messagegroups/g/messages/m/other", "/messagegroups/g/messages/m/META", "/messagegroups/g/messages/m/meta/x",
    "/messagegroups/g/messages/m/Versions/1", "/messagegroups/g/messages/m/versions/1/x",
    "/messagegroups/g/messages/m/versions/", "//", " /endpoints/e",
])
def test_bad_shapes_are_malformed_xids(text):
    with pytest.raises(XRegistryError) as info:
        Xid.parse(text)
    assert info.value.type == "malformed_xid"
    assert info.value.subject == text
    assert "form" in info.value.detail or "start" in info.value.detail


@pytest.mark.parametrize("value", [None, 5, b"/endpoints/e"])
def test_non_strings_are_malformed_xids(value):
    with pytest.raises(XRegistryError, match="starting with '/'"):
        Xid.parse(value)


@pytest.mark.parametrize(("args", "kwargs"), [
    (("endpoints",), {}), ((None, "e"), {}), (("endpoints", "e"), {"meta": True}),
    (("g", "x", "r", "y", "v"), {"meta": True}), (("g", "x", None, None, "v"), {}), (("g", "x", "r"), {}),
])
def test_inconsistent_parts_are_refused(args, kwargs):
    with pytest.raises(ValueError):
        Xid(*args, **kwargs)


def test_keys_are_case_insensitive_identities():
    a = Xid.parse("/MessageGroups/G1/Messages/Order.Created/versions/V1")
    b = Xid.parse("/messagegroups/g1/messages/order.created/versions/v1")
    assert a != b and a.key == b.key == "/messagegroups/g1/messages/order.created/versions/v1"
    assert str(a) == "/MessageGroups/G1/Messages/Order.Created/versions/V1"
    assert len({a, b, Xid.parse(str(a))}) == 2


def test_relatives():
    version = Xid.parse("/messagegroups/g/messages/m/versions/1")
    resource = Xid.parse("/messagegroups/g/messages/m")
    group = Xid.parse("/messagegroups/g")
    meta = Xid.parse("/messagegroups/g/messages/m/meta")
    assert version.parent == resource and meta.parent == resource
    assert resource.parent == group and group.parent == Xid()
    assert version.resource == meta.resource == resource.resource == resource
    assert version.group == meta.group == group.group == group
    assert [version.ancestor(d) for d in range(4)] == [Xid(), group, resource, version]
    assert meta.ancestor(2) == resource


def test_builders():
    group = Xid().child("endpoints", "e")
    assert str(group) == "/endpoints/e"
    resource = group.child("messages", "m")
    assert str(resource) == "/endpoints/e/messages/m"
    assert str(resource.child("versions", "2")) == str(resource.version("2")) == "/endpoints/e/messages/m/versions/2"
    assert str(resource.meta_of()) == "/endpoints/e/messages/m/meta"
    assert resource.version("2").meta_of() == resource.meta_of().meta_of() == resource.meta_of()
    assert resource.meta_of().version("3") == resource.version("3")


def test_collection_paths():
    assert Xid.parse("/endpoints/e").collection_path == "/endpoints"
    assert Xid.parse("/endpoints/e/messages/m").collection_path == "/endpoints/e/messages"
    assert Xid.parse("/endpoints/e/messages/m/versions/1").collection_path == "/endpoints/e/messages/m/versions"


@pytest.mark.parametrize("misuse", [
    lambda: Xid().parent,
    lambda: Xid().group,
    lambda: Xid.parse("/endpoints/e").resource,
    lambda: Xid.parse("/endpoints/e").version("1"),
    lambda: Xid.parse("/endpoints/e").meta_of(),
    lambda: Xid.parse("/endpoints/e/messages/m").child("messages", "x"),
    lambda: Xid.parse("/endpoints/e/messages/m/meta").child("versions", "x"),
    lambda: Xid.parse("/endpoints/e/messages/m/versions/1").child("versions", "x"),
    lambda: Xid.parse("/endpoints/e").ancestor(2),
    lambda: Xid().collection_path,
    lambda: Xid.parse("/endpoints/e/messages/m/meta").collection_path,
])
def test_asking_for_missing_parts_is_a_value_error(misuse):
    with pytest.raises(ValueError):
        misuse()


def test_frozen():
    xid = Xid.parse("/endpoints/e")
    with pytest.raises(AttributeError):
        xid.group_id = "f"  # type: ignore[misc]
