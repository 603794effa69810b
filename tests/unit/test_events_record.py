"""The event engine without a store: positions, filters, the CloudEvent form, and
``derive_events`` as a pure function of before/after states."""

from __future__ import annotations

import pytest

from xreg.errors import XRegistryError
from xreg.events.derive import EntityChange, derive_events
from xreg.events.record import EventDraft, EventPosition, matches

T = "2026-01-01T00:00:00.000000Z"


def test_positions_order_print_and_parse() -> None:
    assert EventPosition(2, 10) > EventPosition(2, 9) > EventPosition(1, 99)
    assert str(EventPosition(42, 0)) == "42.0" and EventPosition.parse("42.0") == EventPosition(42, 0)
    assert EventPosition(3, 5) < EventPosition.end_of(3) < EventPosition(4, 0)
    for bad in ("", "1", "1.", ".1", "1.2.3", "-1.0", "01.0", "a.b", "1.0 "):
        with pytest.raises(XRegistryError) as err:
            EventPosition.parse(bad)
        assert err.value.type == "bad_request" and "<revision>.<index>" in (err.value.detail or "")


def test_subject_and_type_filters() -> None:
    assert matches("io.xregistry.group.created", "/dirs/D1", None, "/dirs/d1")
    assert not matches("io.xregistry.group.created", "/dirs/d10", None, "/dirs/d1")
    assert matches("io.xregistry.group.created", "/dirs/d10", None, "/dirs/d1*")
    assert matches("io.xregistry.version.created", "/dirs/d1/files/f/versions/1", None, "/dirs/d1/")
    assert not matches("io.xregistry.group.created", "/dirs/d1", None, "/dirs/d1/*")
    assert matches("io.xregistry.registry.updated", "/", None, "/") and not matches("x", "/dirs", None, "/")
    assert matches("io.xregistry.registry.updated", "/", ["io.xregistry.registry.updated"], "*")
    assert not matches("io.xregistry.registry.updated", "/", ["io.xregistry.group.created"], None)


def test_the_structured_cloudevent() -> None:
    event = EventDraft("io.xregistry.group.updated", "/dirs/d1", T, "c-1", ("epoch", "name")).at(
        EventPosition(7, 1), "inst")
    assert event.to_cloudevent("https://example.com") == {
        "specversion": "1.0", "type": "io.xregistry.group.updated", "source": "https://example.com",
        "subject": "/dirs/d1", "id": "inst.7.1", "time": T, "xregcorrelationid": "c-1",
        "datacontenttype": "application/json", "data": {"changed": ["epoch", "name"]}}
    created = EventDraft("io.xregistry.group.created", "/dirs/d1", T, "c-1").at(EventPosition(7, 0), "inst")
    assert "data" not in created.to_cloudevent("https://example.com")
    assert (created.entity, created.action) == ("group", "created")


def derive(*changes: EntityChange) -> list[tuple[str, str, tuple[str, ...] | None]]:
    return [(d.type.removeprefix("io.xregistry."), d.subject, d.changed)
            for d in derive_events(changes, time=T, correlation_id="c")]


def test_derivation_is_a_pure_function_of_the_states() -> None:
    reg0 = {"registryid": "r", "xid": "/", "epoch": 1}
    reg1 = {**reg0, "epoch": 2, "@modelsource": {"groups": {}}}
    v1 = {"fileid": "f", "versionid": "1", "xid": "/dirs/d/files/f/versions/1", "epoch": 1}
    assert derive(
        EntityChange("/dirs/d/files/f/versions/1", "version", "dirs/files/versions", None, v1),
        EntityChange("/", "registry", "", reg0, reg1),
        EntityChange("/dirs/d", "group", "dirs", None, {"dirid": "d", "epoch": 1}),
        EntityChange("/dirs/d/files/f", "resource", "dirs/files", None,
                     {"meta": {"defaultversionid": "1"}, "default": v1}),
    ) == [
        ("registry.updated", "/", ("dirs", "dirscount", "epoch", "model", "modelsource", "modifiedat")),
        ("model.updated", "/model", None), ("modelsource.updated", "/modelsource", None),
        ("group.created", "/dirs/d", None), ("resource.created", "/dirs/d/files/f", None),
        ("version.created", "/dirs/d/files/f/versions/1", None)]
    # a parent the commit did not write still gets its implied update; nothing changed: no event
    assert derive(EntityChange("/dirs/d/files/f/versions/2", "version", "dirs/files/versions", None, v1)) == [
        ("resource.updated", "/dirs/d/files/f", ("meta.epoch", "meta.modifiedat", "versions", "versionscount")),
        ("version.created", "/dirs/d/files/f/versions/2", None)]
    assert derive(EntityChange("/dirs/d", "group", "dirs", {"dirid": "d"}, {"dirid": "d"})) == []


def test_the_end_of_a_revision_parses_back() -> None:
    """``EventPosition.end_of(R)`` is what clients send back as ``after`` (a webhook's start
    cursor, a stream's offset): its text must be a position ``GET /events`` accepts."""
    end = EventPosition.end_of(41)
    assert EventPosition.parse(str(end)) == end
    assert EventPosition(41, 7) < end < EventPosition(42, 0)
