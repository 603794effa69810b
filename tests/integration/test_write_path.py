"""The one write path (``LocalRegistry.write``): every API's writes are units of work that are
serialised within a process and retried with a back-off when a writer elsewhere interferes.

Concurrency is exercised through the real app (GraphQL and the xRegistry HTTP API over ASGI,
on a real SQLite file); a writer in "another process" is a second registry on the same file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from adapters.local import LocalSource
from tests.graphql.conftest import WRITE_KEY, make_settings, open_registry, serve_asgi
from xreg.errors import XRegistryError
from xreg.registry.changeset import Changeset
from xreg.registry.service import LocalRegistry, WritePolicy
from xreg.storage.sqlite import SQLiteStore

UPDATE_GROUP = """mutation($n: Int!) {
  updateGroup(groupType: "messagegroups", groupId: "contended", attributes: {x: $n}) { revision } }"""
CREATE_RESOURCE = """mutation($g: String!, $id: String!) {
  createResource(groupType: "messagegroups", groupId: $g, resourceType: "messages", resourceId: $id,
                 attributes: {name: $id}) { created } }"""
WRITER = {"Authorization": f"Bearer {WRITE_KEY}"}


async def test_concurrent_graphql_updates_of_one_group_all_succeed(tmp_path: Path) -> None:
    async with open_registry(tmp_path / "r.db") as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        gql.as_writer()
        await gql.data('mutation { createGroup(groupType: "messagegroups", groupId: "contended") { revision } }')
        bodies = await asyncio.gather(*(gql(UPDATE_GROUP, n=i) for i in range(50)))
        errors = [b["errors"] for b in bodies if b.get("errors")]
        assert errors == []
        group = await reg.store.get("/messagegroups/contended")
        assert group is not None and group.doc["epoch"] == 51  # created at 1, then 50 acknowledged updates
        assert len({b["data"]["updateGroup"]["revision"] for b in bodies}) == 50


async def test_concurrent_graphql_creates_are_all_written(tmp_path: Path) -> None:
    async with open_registry(tmp_path / "r.db") as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        gql.as_writer()

        async def writer(w: int) -> list[dict[str, Any]]:  # one client: its requests one after another
            return [await gql(CREATE_RESOURCE, g=f"g{w}", id=f"m{i}") for i in range(20)]

        bodies = [b for bs in await asyncio.gather(*(writer(w) for w in range(50))) for b in bs]
        assert len(bodies) == 1000
        assert [b["errors"] for b in bodies if b.get("errors")] == []
        for w in range(50):
            children = await reg.store.count_children([f"/messagegroups/g{w}"], "messagegroups/messages")
            assert children == {f"/messagegroups/g{w}": 20}


async def test_concurrent_http_patches_of_one_group_all_succeed(tmp_path: Path) -> None:
    async with open_registry(tmp_path / "r.db") as reg, serve_asgi(reg, make_settings(tmp_path)) as gql:
        http = gql.client
        assert (await http.put("/registry/messagegroups/contended", json={}, headers=WRITER)).status_code == 201
        responses = await asyncio.gather(
            *(http.patch("/registry/messagegroups/contended", json={f"x{i}": i}, headers=WRITER) for i in range(50)))
        assert sorted({r.status_code for r in responses}) == [200]
        group = (await http.get("/registry/messagegroups/contended")).json()
        assert group["epoch"] == 51 and all(group[f"x{i}"] == i for i in range(50))


class _Recorder:
    """An injected back-off: records the delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)


async def _other_writer(path: Path, name: str) -> None:
    """A commit by another registry on the same file, as a second process would make."""
    async with LocalRegistry(SQLiteStore(path), registry_id="test") as other:
        await other.apply_document({"messagegroups": {"g": {"name": name}}})


def _registry(path: Path, recorder: _Recorder, **policy: Any) -> LocalRegistry:
    """A registry whose back-off is recorded (its jitter always the largest delay)."""
    write_policy = WritePolicy(**policy, sleep=recorder.sleep, uniform=lambda lo, hi: hi)
    return LocalRegistry(SQLiteStore(path), registry_id="test", write_policy=write_policy)


async def test_a_unit_that_lost_a_race_is_rebuilt_after_a_back_off(tmp_path: Path) -> None:
    path, recorder = tmp_path / "r.db", _Recorder()
    async with _registry(path, recorder, attempts=5, base_delay=0.1) as reg:
        await reg.apply_document({"messagegroups": {"g": {"name": "start"}}})
        builds = 0

        async def build(cs: Changeset) -> str:
            nonlocal builds
            builds += 1
            await cs.put_group("messagegroups", "g", {"description": f"build {builds}"}, patch=True)
            if builds == 1:  # another writer commits between our read and our commit
                await _other_writer(path, "changed elsewhere")
            return f"build {builds}"

        result, outcome = await reg.write(build, subject="/messagegroups/g", note="test")
        assert (result, builds) == ("build 2", 2)
        assert recorder.delays == [0.1]
        group = await reg.store.get("/messagegroups/g")
        assert group is not None
        assert group.doc["name"] == "changed elsewhere" and group.doc["description"] == "build 2"
        assert outcome.updated == ["/messagegroups/g"]


async def test_a_unit_that_keeps_losing_fails_with_server_busy_and_writes_nothing(tmp_path: Path) -> None:
    path, recorder = tmp_path / "r.db", _Recorder()
    async with _registry(path, recorder, attempts=3, base_delay=0.05) as reg:
        await reg.apply_document({"messagegroups": {"g": {"name": "start"}}})
        attempt = 0

        async def build(cs: Changeset) -> None:
            nonlocal attempt
            attempt += 1
            await cs.put_group("messagegroups", "g", {"description": "mine"}, patch=True)
            await cs.put_group("messagegroups", "mine", {})
            await _other_writer(path, f"theirs {attempt}")

        with pytest.raises(XRegistryError) as caught:
            await reg.write(build, subject="/messagegroups/g", note="test")
        assert caught.value.type == "server_busy" and caught.value.subject == "/messagegroups/g"
        assert attempt == 3 and recorder.delays == [0.05, 0.1]  # no back-off after the last attempt
        assert await reg.store.get("/messagegroups/mine") is None
        group = await reg.store.get("/messagegroups/g")
        assert group is not None and "description" not in group.doc and group.doc["name"] == "theirs 3"


async def test_preconditions_are_checked_again_on_a_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GraphQL create whose first attempt lost a race to a writer that created the same
    entity is refused on the retry (the precondition is part of the unit of work)."""
    path = tmp_path / "r.db"
    recorder = _Recorder()
    policy = WritePolicy(sleep=recorder.sleep)
    async with LocalRegistry(SQLiteStore(path), registry_id="test", write_policy=policy) as reg:
        source = LocalSource(reg)
        original = Changeset.put_group
        raced = False

        async def racing_put_group(self: Changeset, *args: object, **kw: object) -> str:
            nonlocal raced
            out = await original(self, *args, **kw)  # type: ignore[arg-type]
            if not raced:
                raced = True
                await _other_writer(path, "created elsewhere")
            return out

        monkeypatch.setattr(Changeset, "put_group", racing_put_group)
        with pytest.raises(XRegistryError) as caught:
            await source.put_group("messagegroups", "g", {"name": "mine"}, mode="create", patch=False, epoch=None)
        assert caught.value.type == "bad_request" and "already exists" in caught.value.detail
        assert len(recorder.delays) == 1
        group = await reg.store.get("/messagegroups/g")
        assert group is not None and group.doc["name"] == "created elsewhere"
