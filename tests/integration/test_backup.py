"""Backups keep the history: `xreg-gateway backup` of a served registry, `restore` into a fresh data
directory, and the restored gateway continues the revision sequence, reads every revision as
before and accepts the change-feed checkpoints taken against the original — while a checkpoint
of another instance, or of a registry copied by export + import, is refused (`instance_mismatch`).

Everything is real: SQLite files under ``XREG_DATA_DIR``, the CLI in subprocesses, the gateway
under uvicorn (tests/support/live.py) asked over HTTP.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from mongomock_motor import AsyncMongoMockClient

from gateway.app import create_app
from gateway.auth import hash_key
from tests.support.live import LiveServer
from xreg.config import ApiKey, Settings
from xreg.registry.materialise import derived_of
from xreg.registry.service import LocalRegistry
from xreg.storage.backup import VERSION, backup, restore
from xreg.storage.mongo import MongoStore
from xreg.storage.sqlite import SQLiteStore

KEY = "backup-test-write-key-5d1e"
G = "/messagegroups/g/messages/"

CREATE = """mutation($id: String!, $name: String!) { createGroup(groupType: "endpoints", groupId: $id,
  attributes: {name: $name, usage: ["producer"]}) { revision } }"""
RENAME = """mutation($id: String!, $name: String!) { updateGroup(groupType: "endpoints", groupId: $id,
  attributes: {name: $name}) { revision } }"""
DELETE = """mutation($xid: String!) { deleteEntity(xid: $xid) { revision } }"""
IMPORT = """mutation($doc: JSON!) { importDocument(document: $doc) { revision } }"""
STATE = "{ registry { instanceId revision } }"
AS_OF = """query($rev: Int) { registry(asOf: $rev) { revision asOf instanceId
  endpoints { totalCount nodes { xid name epoch revision } }
  messages(first: 50) { nodes { xid description protocol revision } }
  quakes: messages(search: "earthquake") { nodes { xid } } } }"""
CHANGES = """query($since: Int!, $instance: String) { registry {
  changes(since: $since, instanceId: $instance, first: 100) { nodes { xid type revision node { xid } } } } }"""


def chain(description: str) -> dict:
    """Messages whose base gives them their description (materialised in the store)."""
    return {"messagegroups": {"g": {"messages": {
        "root": {"description": description, "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t"}}},
        "leaf": {"basemessageuri": G + "root", "protocol": "KAFKA"},
    }}}}


def settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, registry_id="backup", base_url="http://gw/registry",
                    api_keys=[ApiKey(name="writer", sha256=hash_key(KEY), scopes=["read", "write"])])


class Gateway:
    """The gateway on a data directory, served by uvicorn; GraphQL over real HTTP."""

    def __init__(self, data_dir: Path) -> None:
        self.live = LiveServer(create_app(settings(data_dir)))

    def __enter__(self) -> Gateway:
        self.live.start()
        self.http = httpx.Client(base_url=self.live.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()
        self.live.stop()

    def post(self, query: str, **variables: Any) -> dict[str, Any]:
        response = self.http.post("/graphql", json={"query": query, "variables": variables})
        assert response.status_code == 200, response.text
        return response.json()

    def data(self, query: str, **variables: Any) -> dict[str, Any]:
        body = self.post(query, **variables)
        assert "errors" not in body, body["errors"]
        return body["data"]

    def error(self, query: str, **variables: Any) -> dict[str, Any]:
        body = self.post(query, **variables)
        assert body.get("errors"), body
        return body["errors"][0]

    def write(self, query: str, **variables: Any) -> int:
        return next(iter(self.data(query, **variables).values()))["revision"]


def cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``xreg-gateway`` in a subprocess, on the SQLite store of ``data_dir``."""
    script = Path(sys.executable).with_name("xreg-gateway")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]
    env = {k: v for k, v in os.environ.items() if k not in ("XREG_CONFIG", "XREG_STORE_URL")}
    env.update(XREG_DATA_DIR=str(data_dir), XREG_REGISTRY_ID="backup")
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=120)


def history(gw: Gateway) -> tuple[list[int], dict[str, Any]]:
    """Writes, updates and deletions over several revisions; the revisions and what each reads."""
    revs = [gw.data(STATE)["registry"]["revision"]]
    revs.append(gw.write(CREATE, id="a", name="first"))
    revs.append(gw.write(IMPORT, doc=chain("earthquake root")))
    revs.append(gw.write(RENAME, id="a", name="second"))
    revs.append(gw.write(CREATE, id="b", name="other"))
    revs.append(gw.write(IMPORT, doc=chain("tremor root")))
    revs.append(gw.write(DELETE, xid="/endpoints/a"))
    assert revs == sorted(set(revs))
    instance = gw.data(STATE)["registry"]["instanceId"]
    seen: dict[str, Any] = {"instance": instance}
    for k in revs:
        seen[f"asof {k}"] = gw.data(AS_OF, rev=k)
        seen[f"since {k}"] = gw.data(CHANGES, since=k, instance=instance)
    seen["now"] = gw.data(AS_OF)
    return revs, seen


def test_a_restored_backup_continues_the_registry(tmp_path: Path) -> None:
    original, fresh, copied = tmp_path / "original", tmp_path / "fresh", tmp_path / "copied"
    with Gateway(original) as gw:
        revs, before = history(gw)
        instance = before["instance"]
        assert uuid.UUID(instance)
        header = gw.http.get("/registry").headers
        assert header["X-Registry-Instance"] == instance
        # what the history reads show (so the comparison below compares something)
        assert before[f"asof {revs[1]}"]["registry"]["endpoints"]["nodes"][0]["name"] == "first"
        assert sorted(n["xid"] for n in before[f"asof {revs[2]}"]["registry"]["quakes"]["nodes"]) == [G + "leaf",
                                                                                                   G + "root"]
        assert before[f"asof {revs[5]}"]["registry"]["quakes"]["nodes"] == []
        leaf = {n["xid"]: n for n in before[f"asof {revs[5]}"]["registry"]["messages"]["nodes"]}[G + "leaf"]
        assert leaf["description"] == "tremor root"  # materialised from its base
        assert ("/endpoints/a", "DELETED") in [(n["xid"], n["type"])
                                               for n in before[f"since {revs[5]}"]["registry"]["changes"]["nodes"]]

    made = cli("backup", "-o", str(tmp_path / "registry.backup.gz"), data_dir=original)
    assert made.returncode == 0, made.stderr
    assert f"backed up revision {revs[-1]} of registry instance {instance}" in made.stderr
    exported = cli("export", "-o", str(tmp_path / "registry.xreg.json"), data_dir=original)
    assert exported.returncode == 0, exported.stderr
    shutil.rmtree(original)  # the backup is all there is

    restored = cli("restore", str(tmp_path / "registry.backup.gz"), data_dir=fresh)
    assert restored.returncode == 0, restored.stderr
    assert f"restored revision {revs[-1]} of registry instance {instance}" in restored.stderr
    again = cli("restore", str(tmp_path / "registry.backup.gz"), data_dir=fresh)
    assert again.returncode == 1 and "not empty" in again.stderr

    with Gateway(fresh) as gw:
        assert gw.data(STATE)["registry"] == {"instanceId": instance, "revision": revs[-1]}
        assert gw.http.get("/registry/endpoints").headers["X-Registry-Instance"] == instance
        for k in revs:  # every revision reads as before; every checkpoint gives the same changes
            assert gw.data(AS_OF, rev=k) == before[f"asof {k}"], k
            assert gw.data(CHANGES, since=k, instance=instance) == before[f"since {k}"], k
        assert gw.data(AS_OF) == before["now"]
        # the revision sequence continues, and the checkpoint taken before sees the new write
        nxt = gw.write(CREATE, id="c", name="after the restore")
        assert nxt == revs[-1] + 1
        feed = gw.data(CHANGES, since=revs[-1], instance=instance)["registry"]["changes"]["nodes"]
        assert [(n["xid"], n["revision"]) for n in feed] == [("/", nxt), ("/endpoints/c", nxt)]
        # writing the base re-materialises its dependant (the reverse index came through)
        gw.write(IMPORT, doc=chain("aftershock root"))
        leaf = {n["xid"]: n for n in gw.data(AS_OF)["registry"]["messages"]["nodes"]}[G + "leaf"]
        assert leaf["description"] == "aftershock root"
        # a checkpoint of another registry instance is refused
        error = gw.error(CHANGES, since=revs[2], instance=str(uuid.uuid4()))
        assert error["extensions"]["code"] == "instance_mismatch"
        assert error["extensions"]["type"].endswith("#instance_mismatch") and error["path"] == ["registry", "changes"]

    # a plain export imported into a fresh store is another instance: old checkpoints are refused
    imported = cli("import", str(tmp_path / "registry.xreg.json"), data_dir=copied)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    with Gateway(copied) as gw:
        now = gw.data(STATE)["registry"]
        assert now["instanceId"] != instance and now["revision"] < revs[-1]
        names = [(n["xid"], n["name"]) for n in gw.data(AS_OF)["registry"]["endpoints"]["nodes"]]
        assert names == [(n["xid"], n["name"]) for n in before["now"]["registry"]["endpoints"]["nodes"]]
        error = gw.error(CHANGES, since=revs[3], instance=instance)
        assert error["extensions"]["code"] == "instance_mismatch" and instance in error["message"]
        # without the instance id, a checkpoint beyond the revision is refused all the same
        error = gw.error(CHANGES, since=revs[-1])
        assert error["extensions"]["code"] == "instance_mismatch"
        assert "ahead of this registry's current revision" in error["extensions"]["detail"]
        # and reading from 0 with the new instance id works
        assert gw.data(CHANGES, since=0, instance=now["instanceId"])["registry"]["changes"]["nodes"]


def test_restore_refuses_a_defective_backup_and_writes_nothing(tmp_path: Path) -> None:
    with Gateway(tmp_path / "original") as gw:
        history(gw)
    assert cli("backup", "-o", str(tmp_path / "b.jsonl"), data_dir=tmp_path / "original").returncode == 0
    lines = (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "cut.jsonl").write_text("".join(lines[:-3]), encoding="utf-8")
    (tmp_path / "v9.jsonl").write_text(lines[0].replace(f'"version":{VERSION}', '"version":9') + "".join(lines[1:]),
                                       encoding="utf-8")
    for name, says in (("cut.jsonl", "cut short"), ("v9.jsonl", "version 9 is not supported")):
        checked = cli("restore", "--check", str(tmp_path / name), data_dir=tmp_path / "unused")
        assert checked.returncode == 1 and says in checked.stderr
        refused = cli("restore", str(tmp_path / name), data_dir=tmp_path / f"into-{name}")
        assert refused.returncode == 1 and "restore refused" in refused.stderr and says in refused.stderr
        with Gateway(tmp_path / f"into-{name}") as gw:  # nothing was restored: a registry of its own, just created
            assert gw.data(STATE)["registry"]["revision"] == 1
    assert not (tmp_path / "unused").exists()  # --check opens no store
    nothing = cli("backup", "-o", str(tmp_path / "none.jsonl"), data_dir=tmp_path / "missing")
    assert nothing.returncode == 1 and "does not exist" in nothing.stderr and not (tmp_path / "none.jsonl").exists()


@pytest.mark.parametrize("direction", ["sqlite to mongomock", "mongomock to sqlite"])
async def test_a_registry_moves_between_backends_with_its_history(tmp_path: Path, direction: str) -> None:
    def sqlite() -> SQLiteStore:
        return SQLiteStore(tmp_path / f"{uuid.uuid4().hex[:6]}.db")

    def mongomock() -> MongoStore:
        return MongoStore(client=AsyncMongoMockClient(), database=f"moved_{uuid.uuid4().hex[:6]}")

    make_from, make_to = (sqlite, mongomock) if direction.startswith("sqlite") else (mongomock, sqlite)
    async with LocalRegistry(make_from(), registry_id="moved") as source:
        first = (await source.apply_document(chain("earthquake root"))).revision
        second = (await source.apply_document(chain("tremor root"))).revision
        path = tmp_path / "moved.backup"
        await backup(source.store, path)
        instance = source.instance_id
    target = make_to()
    await target.open()
    await restore(target, path)
    async with LocalRegistry(target, registry_id="moved") as moved:  # the store open already: used as it is
        assert (moved.instance_id, await moved.store.current_revision()) == (instance, second)
        leaf = await moved.store.get(G + "leaf", as_of=first)
        assert leaf is not None and derived_of(leaf.kind, leaf.doc)["attributes"]["description"] == "earthquake root"
        third = (await moved.apply_document(chain("aftershock root"))).revision
        assert third == second + 1
        leaf = await moved.store.get(G + "leaf")
        assert leaf is not None and derived_of(leaf.kind, leaf.doc)["attributes"]["description"] == "aftershock root"
        changed = {c.record.xid: c.record.revision for c in await moved.store.changes(second)}
        assert changed[G + "leaf"] == changed[G + "root"] == third
