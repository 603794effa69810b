"""Events in the one write path (``LocalRegistry.write`` → ``Changeset.commit`` → ``Store.commit``),
on both backends: stored in the commit's transaction (an acknowledged write never lacks its events,
a failed one leaves none), one correlation id per interaction, and the ``updated`` events of
messages whose materialisation a write of their base changed."""

from __future__ import annotations

from typing import Any

import pytest
from mongomock_motor import AsyncMongoMockClient

import xreg.storage.sqlite as sqlite_module
from xreg.registry.changeset import Changeset
from xreg.registry.service import LocalRegistry
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

G = "/messagegroups/g/messages/"


@pytest.fixture(params=["sqlite", "mongomock"])
async def reg(request, tmp_path):
    store = (SQLiteStore(tmp_path / "r.db") if request.param == "sqlite"
             else MongoStore(client=AsyncMongoMockClient(), database="events"))
    async with LocalRegistry(store, registry_id="test") as registry:
        yield registry


async def put_group(reg: LocalRegistry, gid: str, attrs: dict[str, Any] | None = None):
    async def build(cs: Changeset) -> None:
        await cs.put_group("messagegroups", gid, attrs or {})

    return (await reg.write(build, subject=f"/messagegroups/{gid}", note="test"))[1]


async def all_events(reg: LocalRegistry):
    return await reg.store.events_after(None, limit=10_000)


async def test_the_registrys_creation_has_no_event(reg: LocalRegistry) -> None:
    """core/events.md: "The `io.xregistry.registry.created` [...] events are not defined as part of
    this specification" — opening a new store creates the registry entity without one."""
    assert await reg.store.current_revision() == 1
    assert await all_events(reg) == []


async def test_an_acknowledged_write_has_its_events_at_its_revision(reg: LocalRegistry) -> None:
    outcome = await put_group(reg, "a")
    stored = await all_events(reg)
    assert outcome.revision is not None and outcome.correlation_id
    assert [(e.type, e.subject, e.changed, e.correlation_id, e.time) for e in stored] == [
        (d.type, d.subject, d.changed, d.correlation_id, d.time) for d in outcome.events]
    assert {e.position.revision for e in stored} == {outcome.revision}
    assert [e.position.index for e in stored] == list(range(len(stored)))


async def test_a_failed_commit_leaves_no_events(reg: LocalRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure inside the store's commit: after the states are written (SQLite: writing the
    events, the transaction's last step) or after the events are (MongoDB without transactions:
    recording the revision, its last step)."""
    await put_group(reg, "a")
    before = await all_events(reg)
    revision = await reg.store.current_revision()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected failure")

    if isinstance(reg.store, SQLiteStore):
        monkeypatch.setattr(sqlite_module, "_event_row", broken)
    else:
        monkeypatch.setattr(reg.store.revisions, "insert_one", broken)
    with pytest.raises(RuntimeError, match="injected failure"):
        await put_group(reg, "b", {"name": "never"})
    monkeypatch.undo()
    assert await all_events(reg) == before
    if isinstance(reg.store, SQLiteStore):  # one transaction: nothing of it is kept
        assert await reg.store.current_revision() == revision
        assert await reg.store.get("/messagegroups/b") is None
    outcome = await put_group(reg, "c")  # and the next write has its events
    assert [e.subject for e in await all_events(reg)][len(before):] == ["/", "/messagegroups/c"]
    assert outcome.revision is not None


async def test_a_dry_run_and_an_unchanged_import_have_no_correlation_id(reg: LocalRegistry) -> None:
    async def build(cs: Changeset) -> None:
        await cs.put_group("messagegroups", "d", {})

    _, outcome = await reg.write(build, subject="/messagegroups/d", note="dry", dry_run=True)
    assert outcome.correlation_id is None and outcome.events == []
    doc = {"messagegroups": {"g": {"name": "x"}}}
    assert (await reg.apply_document(doc)).correlation_id
    again = await reg.apply_document(doc)
    assert again.correlation_id is None and again.revision is None
    assert [e.type for e in await all_events(reg)] == ["io.xregistry.registry.updated", "io.xregistry.group.created"]


async def test_correlation_ids_are_unique_per_interaction(reg: LocalRegistry) -> None:
    """`xregcorrelationid`: "MUST be case-insensitively unique within the scope of the Registry
    instance, for the lifetime of the Registry."."""
    ids = [(await put_group(reg, f"g{i}")).correlation_id for i in range(20)]
    assert len({i.lower() for i in ids if i}) == 20
    by_interaction: dict[str, set[int]] = {}
    for e in await all_events(reg):
        by_interaction.setdefault(e.correlation_id, set()).add(e.position.revision)
    assert all(len(revs) == 1 for revs in by_interaction.values()) and set(by_interaction) == set(ids)


def chain_document() -> dict:
    return {"messagegroups": {"g": {"messages": {
        "root": {"description": "root", "envelope": "CloudEvents/1.0",
                 "envelopemetadata": {"type": {"value": "t"}}},
        "mid": {"basemessageuri": G + "root", "protocol": "KAFKA"},
        "leaf": {"basemessageuri": G + "mid", "description": "own"},
        "alone": {"description": "no base"},
    }}}}


async def test_a_base_message_written_reports_its_dependents_updated(reg: LocalRegistry) -> None:
    """A message's materialisation (its ``basemessageuri`` chain merged) is what it really is: a
    write of its base changes it, and the message (resource and default version) is reported
    `updated` with the inherited attributes that changed in `changed`, although none of its own
    attributes did (its epoch stays)."""
    await reg.apply_document(chain_document())
    start = (await all_events(reg))[-1].position
    await reg.apply_document({"messagegroups": {"g": {"messages": {"root": {
        "description": "root v2", "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t"}}}}}}})
    events = [(e.type.removeprefix("io.xregistry."), e.subject, e.changed)
              for e in await reg.store.events_after(start, limit=100)]
    assert events == [
        ("resource.updated", G + "mid", ("description",)),
        ("version.updated", G + "mid/versions/1", ("description",)),
        ("resource.updated", G + "root", ("description", "epoch", "modifiedat")),
        ("version.updated", G + "root/versions/1", ("description", "epoch", "modifiedat")),
    ]  # leaf declares its own description: its materialisation did not change; alone has no base
    mid = await reg.store.get(G + "mid")
    assert mid is not None and mid.doc["default"]["epoch"] == 1
