"""core/events.md, rule by rule: each write of the HTTP API gives exactly the events the
specification prescribes, in order, with ``changed`` as specified — on SQLite and on MongoDB
(``store_client``: ``mongomock_motor``). Each test quotes the sentence it checks. The model is the
samples' (``dirs/files``), set through ``/modelsource`` before each test."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

CORRELATION = "xRegistry-xregcorrelationid"
R = "/registry"
G = "/dirs/d1"
M = f"{G}/files/f1"
#: The model of core/events.md's samples.
MODEL = {"groups": {"dirs": {"singular": "dir", "resources": {"files": {"singular": "file", "hasdocument": False}}}}}

Event = tuple[str, str, frozenset[str] | None]


class Log:
    """Reads the events of each interaction from ``GET /events`` (following its ``Link``)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.next = "/events"
        self.raw: list[dict[str, Any]] = []

    async def read(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            response = await self.client.get(self.next)
            assert response.status_code == 200, response.text
            self.next = response.headers["link"].split(">")[0].lstrip("<")
            page = response.json()
            if not page:
                return out
            out += page

    async def skip(self) -> None:
        await self.read()

    async def __call__(self, method: str, path: str, body: Any = None, *, status: int | None = None) -> list[Event]:
        """Run one interaction; its events as ``(type without 'io.xregistry.', subject, changed)``."""
        response = await self.client.request(method, R + path, json=body)
        assert response.status_code < 300 if status is None else response.status_code == status, response.text
        events = await self.read()
        self.raw = events
        if events:
            assert {e["xregcorrelationid"] for e in events} == {response.headers[CORRELATION]}
        self.response = response
        return [(e["type"].removeprefix("io.xregistry."), e["subject"],
                 frozenset(e["data"]["changed"]) if "data" in e else None) for e in events]


@pytest.fixture
async def log(store_client: httpx.AsyncClient) -> Log:
    log = Log(store_client)
    await log("PUT", "/modelsource", MODEL)
    return log


def ch(*names: str) -> frozenset[str]:
    return frozenset(names)


async def _entity(log: Log, path: str) -> dict[str, Any]:
    response = await log.client.get(R + path)
    assert response.status_code == 200, response.text
    return response.json()


def _non_null(view: dict[str, Any], drop: tuple[str, ...] = ()) -> set[str]:
    """The attributes a version holds (its view less what the server computes per request)."""
    computed = {"self", "shortself", "isdefault", "metaurl", "meta", "versionsurl", "versionscount"}
    return {k for k, v in view.items() if v is not None and k not in computed and k not in drop}


# -- Event Definition ----------------------------------------------------------------------------

async def test_only_one_created_updated_or_deleted_per_subject(log: Log) -> None:
    """"Only one `created`, `updated` or `deleted` event MUST be generated per `subject`." — a
    request creating a group, a resource and two versions (the group is also "updated" by its new
    resource, the resource by its versions) gives one event per subject."""
    events = await log("PUT", G, {"files": {"f1": {"versions": {"v1": {}, "v2": {}}}}})
    assert events == [
        ("registry.updated", "/", ch("epoch", "modifiedat", "dirs", "dirscount")),
        ("group.created", G, None),
        ("resource.created", M, None),
        ("version.created", f"{M}/versions/v1", None),
        ("version.created", f"{M}/versions/v2", None),
    ]


async def test_precedence_deleted_over_created(log: Log) -> None:
    """"[...] the single event generated MUST be chosen in the following order of precedence:
    `deleted`, `created`, `updated`." — with ``maxversions`` 1, a request creating two versions
    keeps the newest: the other was created and deleted by the same interaction: `deleted`."""
    source = {"groups": {"dirs": {"singular": "dir", "resources": {"files": {"singular": "file", "hasdocument": False,
                                                                              "maxversions": 1}}}}}
    await log("PUT", "/modelsource", source)
    events = await log("PUT", M, {"versions": {"v1": {}, "v2": {}}})
    assert events == [
        ("registry.updated", "/", ch("epoch", "modifiedat", "dirs", "dirscount")),
        ("group.created", G, None),
        ("resource.created", M, None),
        ("version.deleted", f"{M}/versions/v1", None),
        ("version.created", f"{M}/versions/v2", None),
    ]


async def test_precedence_deleted_created_updated(log: Log) -> None:
    """"If the interaction involved more than one of those actions, then the single event generated
    MUST be chosen in the following order of precedence: `deleted`, `created`, `updated`." — a
    resource updated and created in one request is `created`; its versions deleted and its group
    updated when the resource is deleted are `deleted` (the group: `updated` alone)."""
    await log("PUT", G, {})
    events = await log("PUT", M, {"name": "a", "versions": {"v1": {"name": "b"}}})
    assert [e[:2] for e in events] == [("group.updated", G), ("resource.created", M),
                                       ("version.created", f"{M}/versions/v1")]
    events = await log("DELETE", M, status=204)
    assert events == [("group.updated", G, ch("epoch", "modifiedat", "files", "filescount")),
                      ("resource.deleted", M, None), ("version.deleted", f"{M}/versions/v1", None)]


async def test_one_event_per_type_and_subject_changed_merged(log: Log) -> None:
    """"Only one event with the same `type` and `subject` combination MUST be generated." and "If
    an entity is updated for multiple reasons during the processing of an interaction [...] the
    attribute names of all impacted attributes MUST be merged into one `changed` list." — a PATCH
    of a resource changing its default version's name, its meta and adding a version."""
    await log("PUT", M, {"meta": {"defaultversionsticky": True, "defaultversionid": "v1"}, "versions": {"v1": {}}})
    events = await log("PATCH", M, {"name": "n", "meta": {"labels": {"a": "b"}}, "versions": {"v2": {}}})
    assert sorted(events, key=str) == sorted([
        ("resource.updated", M, ch("epoch", "modifiedat", "name", "meta.epoch", "meta.modifiedat", "meta.labels",
                                   "versions", "versionscount")),
        ("version.updated", f"{M}/versions/v1", ch("epoch", "modifiedat", "name")),
        ("version.created", f"{M}/versions/v2", None),
    ], key=str)
    assert len({(e[0], e[1]) for e in events}) == len(events)


async def test_time_is_the_interactions_and_the_same_for_all_its_events(log: Log) -> None:
    """`time`: "This value MUST be the same for all events generated within the same interaction."
    and "Typically, this will be the `modifiedat` value assigned to the entities being processed."
    """
    await log("PUT", f"{M}/versions/v1", {})
    assert len({e["time"] for e in log.raw}) == 1
    version = await _entity(log, f"{M}/versions/v1")
    assert log.raw[0]["time"] == version["modifiedat"] and log.raw[0]["time"].endswith("Z")


async def test_correlation_id_per_interaction(log: Log) -> None:
    """`xregcorrelationid`: "MUST be a non-empty string.", "MUST be case-insensitively unique within
    the scope of the Registry instance", "All events generated from the same interaction MUST have
    the same `xregcorrelationid` value." and "the following HTTP header MUST be present in the
    response flow: xRegistry-xregcorrelationid"."""
    seen: list[str] = []
    for i in range(3):
        await log("PUT", f"{G}{i}", {})
        ids = {e["xregcorrelationid"] for e in log.raw}
        assert len(ids) == 1 and log.response.headers[CORRELATION] in ids and all(ids)
        seen.append(log.response.headers[CORRELATION].lower())
    assert len(set(seen)) == 3


async def test_changed_never_on_created_or_deleted(log: Log) -> None:
    """`data.changed`: "This attribute MUST NOT appear on the `created` or `deleted` events."."""
    await log("PUT", f"{M}/versions/v1", {"name": "x"})
    await log("DELETE", G, status=204)
    created_or_deleted = [e for e in log.raw if e["type"].endswith((".created", ".deleted"))]
    assert created_or_deleted and all("data" not in e for e in created_or_deleted)


# -- registry Events ------------------------------------------------------------------------------

async def test_registry_updated_names_each_modified_attribute(log: Log) -> None:
    """registry `updated`: "MUST be generated when a Registry's attribute is updated, where each
    modified attribute MUST be included in `changed`" (sample "Update a Registry attribute")."""
    assert await log("PATCH", "", {"name": "foo"}) == [("registry.updated", "/", ch("epoch", "modifiedat", "name"))]


async def test_group_created_updates_the_registry(log: Log) -> None:
    """registry `updated`: "MUST be generated when a Group is created or deleted, where `changed`
    [...] includes (at least) `epoch`, `modifiedat`, `<GROUPS>` and `<GROUPS>count`" (sample
    "Create a tree of entities")."""
    assert await log("PUT", f"{M}/versions/v1", {}) == [
        ("registry.updated", "/", ch("epoch", "modifiedat", "dirs", "dirscount")),
        ("group.created", G, None),
        ("resource.created", M, None),
        ("version.created", f"{M}/versions/v1", None),
    ]


async def test_model_and_modelsource_updated(log: Log) -> None:
    """model `updated`: "MUST be generated when the Registry's model is updated", "MUST NOT include
    a `changed` list", "An `io.xregistry.registry.updated` event will also be generated where the
    `model` attribute will be included in `changed`"; modelsource `updated` likewise."""
    source = {"groups": {"dirs": {"singular": "dir", "resources": {"files": {"singular": "file", "hasdocument": False,
                                                                              "maxversions": 3}}}}}
    events = await log("PUT", "/modelsource", source)
    assert events == [("registry.updated", "/", ch("epoch", "modifiedat", "model", "modelsource")),
                      ("model.updated", "/model", None), ("modelsource.updated", "/modelsource", None)]


async def test_capabilities_updated(log: Log) -> None:
    """capabilities `updated`: "MUST be generated when a Registry's capabilities are updated, where
    the top-level capability names are included in `changed`" and "An
    `io.xregistry.registry.updated` event will also be generated where the `capabilities`
    attribute will be included in `changed`"."""
    offered = await _entity(log, "/capabilities")
    events = await log("PATCH", "/capabilities", {"pagination": not offered.get("pagination", True)})
    assert events == [("registry.updated", "/", ch("epoch", "modifiedat", "capabilities")),
                      ("capabilities.updated", "/capabilities", ch("pagination"))]


# -- group Events ---------------------------------------------------------------------------------

async def test_group_updated_names_each_modified_attribute(log: Log) -> None:
    """group `updated`: "MUST be generated when a Group's attribute is updated, where each modified
    attribute MUST be included in `changed`"."""
    await log("PUT", G, {"name": "a", "description": "d"})
    assert await log("PATCH", G, {"name": "b", "description": None}) == [
        ("group.updated", G, ch("epoch", "modifiedat", "name", "description"))]


async def test_resource_created_or_deleted_updates_the_group(log: Log) -> None:
    """group `updated`: "MUST be generated when a Resource is created or deleted, where `changed`
    [...] includes (at least) `epoch`, `modifiedat`, `<RESOURCES>` and `<RESOURCES>count`"."""
    await log("PUT", G, {})
    names = ch("epoch", "modifiedat", "files", "filescount")
    assert await log("PUT", M, {}) == [("group.updated", G, names), ("resource.created", M, None),
                                      ("version.created", f"{M}/versions/1", None)]
    assert await log("DELETE", M, status=204) == [("group.updated", G, names), ("resource.deleted", M, None),
                                                  ("version.deleted", f"{M}/versions/1", None)]


async def test_group_deprecation(log: Log) -> None:
    """group `deprecation`: "MUST be generated when a Group's `deprecated` sub-object is set or
    deleted, or when any of its attributes are updated, where "changed" [...] includes the list of
    top-level attribute names from the `deprecated` sub-object that were modified" and "An
    `io.xregistry.group.updated` event will also be generated where the `deprecated` attribute will
    be included in `changed`"."""
    await log("PUT", G, {})
    assert await log("PATCH", G, {"deprecated": {"effective": "2030-01-01T00:00:00Z"}}) == [
        ("group.updated", G, ch("epoch", "modifiedat", "deprecated")),
        ("group.deprecation", G, ch("effective"))]
    assert await log("PATCH", G, {"deprecated": {"effective": "2030-01-01T00:00:00Z",
                                                 "removal": "2031-01-01T00:00:00Z"}}) == [
        ("group.updated", G, ch("epoch", "modifiedat", "deprecated")),
        ("group.deprecation", G, ch("removal"))]
    assert await log("PATCH", G, {"deprecated": None}) == [
        ("group.updated", G, ch("epoch", "modifiedat", "deprecated")),
        ("group.deprecation", G, ch("effective", "removal"))]


async def test_group_deleted(log: Log) -> None:
    """group `deleted`: "MUST be generated when a Group is deleted." with "An
    `io.xregistry.registry.updated` event [...]" (sample "Delete a Group": a deleted event for each
    Resource and Version below it)."""
    await log("PUT", M, {"versions": {"v1": {}, "v2": {}}})
    assert await log("DELETE", G, status=204) == [
        ("registry.updated", "/", ch("epoch", "modifiedat", "dirs", "dirscount")),
        ("group.deleted", G, None),
        ("resource.deleted", M, None),
        ("version.deleted", f"{M}/versions/v1", None),
        ("version.deleted", f"{M}/versions/v2", None),
    ]


# -- resource Events ------------------------------------------------------------------------------

async def test_resource_updated_through_its_default_version(log: Log) -> None:
    """resource `updated`: "MUST be generated when a Resource's (default Version) attribute is
    updated, where each modified attribute MUST be included in `changed`" (sample "Update a
    Resource attribute (a default Version attribute)")."""
    await log("PUT", f"{M}/versions/v1", {})
    assert await log("PATCH", M, {"name": "foo"}) == [
        ("resource.updated", M, ch("epoch", "modifiedat", "name")),
        ("version.updated", f"{M}/versions/v1", ch("epoch", "modifiedat", "name"))]


async def test_resource_meta_updated(log: Log) -> None:
    """resource `updated`: "MUST be generated when a Resource's `meta` attribute is updated, where
    `changed` [...] includes (at least) the changed top-level `meta` attribute names prefixed with
    `meta.`" (sample "Update a Resource's meta sub-object")."""
    await log("PUT", f"{M}/versions/v1", {})
    assert await log("PATCH", f"{M}/meta", {"compatibility": "backward"}) == [
        ("resource.updated", M, ch("meta.epoch", "meta.modifiedat", "meta.compatibility"))]


async def test_resource_meta_deprecation(log: Log) -> None:
    """resource `updated`: "This includes any updates to the `deprecated` sub-object, even though a
    `io.xregistry.resource.deprecation` event is also generated. And in that situation just
    `meta.deprecated` would be included in `changed`"; resource `deprecation`: "MUST be generated
    when a Resource's `meta.deprecated` sub-object is set or deleted, or when any of its attributes
    are updated" (sample "Update a Resource's meta sub-object and deprecate the Resource")."""
    await log("PUT", f"{M}/versions/v1", {})
    events = await log("PATCH", f"{M}/meta", {"compatibility": "backward",
                                              "deprecated": {"alternative": "/dirs/d1/files/f2"}})
    assert events == [
        ("resource.updated", M, ch("meta.epoch", "meta.modifiedat", "meta.compatibility", "meta.deprecated")),
        ("resource.deprecation", M, ch("alternative"))]


async def test_version_created_non_sticky(log: Log) -> None:
    """version `created` with resource `updated`: "where the `versions` and `versionscount`
    attributes will be included in `changed`"; and `changed`: "In the case of changing a
    Resource's default Version pointer, the list MUST include all attributes from the previous
    default Version that have non-`null` values, and all attributes from the new default Version
    that have non-`null` values." (sample "Create a new Version - non-sticky")."""
    await log("PUT", f"{M}/versions/v1", {"name": "one", "description": "first"})
    old = await _entity(log, f"{M}/versions/v1")
    events = await log("PUT", f"{M}/versions/v2", {"labels": {"x": "y"}})
    new = await _entity(log, f"{M}/versions/v2")
    pointer = _non_null(old) | _non_null(new)
    assert {"name", "description", "labels", "versionid", "epoch", "xid"} <= pointer
    assert events == [
        ("resource.updated", M, frozenset({"meta.defaultversionid", "meta.epoch", "meta.modifiedat", "versions",
                                           "versionscount"} | pointer)),
        ("version.created", f"{M}/versions/v2", None)]


async def test_version_created_through_post_non_sticky(log: Log) -> None:
    """Sample "Create a new Version - not sticky": `POST /dirs/d1/files/f1` gives resource `updated`
    (``meta.defaultversionid``, ``meta.epoch``, ``meta.modifiedat``, ``versions``,
    ``versionscount``, the old and new default Versions' attributes) and version `created`."""
    await log("PUT", f"{M}/versions/v1", {})
    events = await log("POST", M, {})
    [created] = [e for e in events if e[0] == "version.created"]
    vid = created[1].rsplit("/", 1)[1]
    pointer = _non_null(await _entity(log, f"{M}/versions/v1")) | _non_null(await _entity(log, f"{M}/versions/{vid}"))
    assert events == [
        ("resource.updated", M, frozenset({"meta.defaultversionid", "meta.epoch", "meta.modifiedat", "versions",
                                           "versionscount"} | pointer)),
        created]


async def test_version_created_sticky(log: Log) -> None:
    """Sample "Create a new Version - sticky": resource `updated` with ``meta.epoch``,
    ``meta.modifiedat``, ``versions``, ``versionscount`` only, and version `created`."""
    await log("PUT", M, {"meta": {"defaultversionsticky": True, "defaultversionid": "v1"}, "versions": {"v1": {}}})
    assert await log("PUT", f"{M}/versions/v2", {}) == [
        ("resource.updated", M, ch("meta.epoch", "meta.modifiedat", "versions", "versionscount")),
        ("version.created", f"{M}/versions/v2", None)]


async def test_default_version_pointer_change(log: Log) -> None:
    """resource `updated`: "Updating a Resource's `meta.defaultversionid` attribute will generate an
    `io.xregistry.resource.updated` event but it MUST NOT generate an `io.xregistry.version.updated`
    event for either the prior or new default Version." (sample "Change `defaultversionid`
    pointer")."""
    await log("PUT", M, {"versions": {"v1": {"name": "one"}, "v2": {"description": "two"}},
                         "meta": {"defaultversionid": "v2", "defaultversionsticky": True}})
    pointer = _non_null(await _entity(log, f"{M}/versions/v1")) | _non_null(await _entity(log, f"{M}/versions/v2"))
    assert await log("PATCH", f"{M}/meta", {"defaultversionid": "v1"}) == [
        ("resource.updated", M, frozenset({"meta.defaultversionid", "meta.epoch", "meta.modifiedat"} | pointer))]


async def test_resource_deleted_with_its_versions(log: Log) -> None:
    """resource `deleted`: "MUST be generated when a Resource is deleted.", "A
    `io.xregistry.version.deleted` event will also be generated for each Version." (and the Group
    is updated: ``<RESOURCES>``, ``<RESOURCES>count``)."""
    await log("PUT", M, {"versions": {"v1": {}, "v2": {}}})
    assert await log("DELETE", M, status=204) == [
        ("group.updated", G, ch("epoch", "modifiedat", "files", "filescount")),
        ("resource.deleted", M, None),
        ("version.deleted", f"{M}/versions/v1", None),
        ("version.deleted", f"{M}/versions/v2", None)]


# -- version Events -------------------------------------------------------------------------------

async def test_version_updated_default_and_not_default(log: Log) -> None:
    """version `updated`: "MUST be generated when a Version attribute is updated, where each
    modified attribute MUST be included in `changed`" (samples "Update a Version attribute (the
    default Version)" and "(not the default Version)")."""
    await log("PUT", M, {"meta": {"defaultversionsticky": True, "defaultversionid": "v1"},
                         "versions": {"v1": {}, "v2": {}}})
    assert await log("PATCH", f"{M}/versions/v1", {"name": "foo"}) == [
        ("resource.updated", M, ch("epoch", "modifiedat", "name")),
        ("version.updated", f"{M}/versions/v1", ch("epoch", "modifiedat", "name"))]
    assert await log("PATCH", f"{M}/versions/v2", {"name": "foo"}) == [
        ("version.updated", f"{M}/versions/v2", ch("epoch", "modifiedat", "name"))]


async def test_version_deleted_updates_the_resource(log: Log) -> None:
    """version `deleted`: "MUST be generated when a Version is deleted." and "An
    `io.xregistry.resource.updated` event will also be generated where the `versions` and
    `versionscount` attributes will be included in `changed`"."""
    await log("PUT", M, {"meta": {"defaultversionsticky": True, "defaultversionid": "v1"},
                         "versions": {"v1": {}, "v2": {}}})
    assert await log("DELETE", f"{M}/versions/v2", status=204) == [
        ("resource.updated", M, ch("meta.epoch", "meta.modifiedat", "versions", "versionscount")),
        ("version.deleted", f"{M}/versions/v2", None)]


# -- Sample: import an entire registry ------------------------------------------------------------

async def test_import_an_entire_registry(log: Log) -> None:
    """Sample "Import an entire Registry": registry `updated` (with ``<GROUPS>``, ``<GROUPS>count``
    and the other attributes), then a `created` event for each new Group, Resource and Version."""
    events = await log("PUT", "", {"name": "imported", "dirs": {
        "d1": {"files": {"f1": {"versions": {"v1": {}}}}}, "d2": {}}})
    assert events == [
        ("registry.updated", "/", ch("epoch", "modifiedat", "name", "dirs", "dirscount")),
        ("group.created", G, None),
        ("resource.created", M, None),
        ("version.created", f"{M}/versions/v1", None),
        ("group.created", "/dirs/d2", None),
    ]
