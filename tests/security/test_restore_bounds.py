"""A backup file is untrusted: `restore` checks each state as a write checks an entity and reads
the file within bounds (the longest line, the most bytes decompressed), and refuses a bad file
with an error naming its line, writing nothing.

The attacks are real files: a good backup of a real SQLite store, altered one line at a time,
and gzip files that expand far beyond their size; the CLI runs in a subprocess with the default
settings unless a test sets a bound.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.contract.test_store_backup import build_history
from xreg import json_limits
from xreg.config import Settings
from xreg.storage.backup import BackupError, ReadLimits, backup, check_backup, restore
from xreg.storage.records import Write
from xreg.storage.sqlite import SQLiteStore

MIB = 1024 * 1024


def nested(depth: int) -> object:
    """A JSON value ``depth`` containers deep."""
    return json.loads("[" * depth + "]" * depth)


def cli(*args: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``xreg-gateway`` in a subprocess on the SQLite store of ``data_dir``, default settings
    (but ``env``)."""
    script = Path(sys.executable).with_name("xreg-gateway")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("XREG_")}
    return subprocess.run([*command, *args], env={**base, "XREG_DATA_DIR": str(data_dir), **env},
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
async def good(tmp_path: Path) -> list[dict]:
    """The lines of a good backup of a store with some history."""
    async with SQLiteStore(tmp_path / "source.db") as store:
        await build_history(store)
        await backup(store, tmp_path / "good.jsonl")
    with open(tmp_path / "good.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def altered(good: list[dict], change: dict) -> tuple[list[dict], int]:
    """``good`` with ``change`` applied to its first live group state; the line number changed."""
    lines = [dict(x) for x in good]
    index = next(i for i, x in enumerate(lines) if x["type"] == "state" and x["kind"] == "group" and x["doc"])
    lines[index].update(change)
    return lines, index + 1


ATTACKS = {
    "to below from": ({"from": 3, "to": 1}, "a state needs from"),
    "to equal to from": ({"from": 2, "to": 2}, "a state needs from"),
    "a path out of the registry": ({"xid": "/../../etc"}, "is not an XID"),
    "a dot-dot type": ({"xid": "/../etc"}, "is not the name of a group or resource type"),
    "a dot-dot id in a known shape": ({"xid": "/messagegroups/.."}, "an ID must start with"),
    "an xid of another kind": ({"xid": "/messagegroups/g/messages/m"}, "names a resource, not a group"),
    "a ctype that is not the xid's": ({"ctype": "endpoints"}, "the ctype of"),
    "a value 200 deep": ({"doc": {"messagegroupid": "g", "x": nested(200)}}, "nested more than"),
    "a value past the write bound": ({"doc": {"messagegroupid": "g", "x": nested(json_limits.MAX_DEPTH)}},
                                     f"nested more than {json_limits.MAX_DEPTH} levels deep \\(at /x"),
    "a lone surrogate": ({"doc": {"messagegroupid": "g", "x": "\ud800"}}, "not valid Unicode"),
}


@pytest.mark.parametrize("attack", ATTACKS)
async def test_a_hostile_state_is_refused_naming_its_line_and_nothing_is_written(good, tmp_path: Path, attack):
    change, says = ATTACKS[attack]
    lines, number = altered(good, change)
    path = write(tmp_path / "hostile.jsonl", lines)
    with pytest.raises(BackupError, match=f"line {number}\\b.*{says}"):
        check_backup(path)
    async with SQLiteStore(tmp_path / "target.db") as target:
        with pytest.raises(BackupError, match=f"line {number}\\b.*{says}"):
            await restore(target, path)
        assert await target.current_revision() == 0
        assert await target.get("/messagegroups/g") is None


async def test_values_as_deep_as_a_write_accepts_are_restored(good, tmp_path: Path):
    """The bound is the write path's: an attribute nested as deep as a write takes is restored,
    in a group's doc, a resource's meta and default version and a materialised view."""
    deep = nested(json_limits.MAX_DEPTH - 1)
    json_limits.check({"x": deep})  # what a write accepts
    lines, _ = altered(good, {"doc": {"messagegroupid": "g", "x": deep}})
    message = next(x for x in lines if x["type"] == "state" and x["kind"] == "resource" and x["doc"])
    message["doc"] = {"meta": {"x": deep}, "default": {"x": deep, "@materialised": {"x": deep}}}
    path = write(tmp_path / "deep.jsonl", lines)
    async with SQLiteStore(tmp_path / "target.db") as target:
        info = await restore(target, path)
        assert await target.current_revision() == info.revision == good[0]["revision"]
        assert (await target.get("/messagegroups/g")).doc["x"] == deep
    message["doc"] = {"meta": {"x": [deep]}, "default": {"x": deep, "@materialised": {"x": deep}}}
    with pytest.raises(BackupError, match=f"nested more than {json_limits.MAX_DEPTH} levels deep \\(at /meta/x"):
        check_backup(write(tmp_path / "deeper.jsonl", lines))


def test_the_bounds_default_to_the_settings_defaults():
    settings = Settings(_env_file=None)
    assert ReadLimits() == ReadLimits(settings.restore_max_line_bytes, settings.restore_max_bytes,
                                      settings.restore_max_rematerialise)


def gzip_bomb(path: Path, header: dict, line_bytes: int) -> Path:
    """A gzip file whose second line is ``line_bytes`` long: a few hundred kB on disk."""
    chunk = b" " * MIB
    with gzip.open(path, "wb", compresslevel=9) as gz:
        gz.write((json.dumps(header) + "\n").encode())
        gz.write(b'{"type": "revision", "note": "')
        for _ in range(line_bytes // MIB):
            gz.write(chunk)
        gz.write(b'"}\n')
    return path


def test_a_gzip_line_past_the_default_bound_is_refused_by_the_cli(good, tmp_path: Path):
    """The attack: a small .gz holding one line longer than any line a state needs. `restore
    --check` stops at the line bound (64 MiB by default) instead of reading the line whole."""
    bomb = gzip_bomb(tmp_path / "bomb.jsonl.gz", good[0], 80 * MIB)
    assert bomb.stat().st_size < MIB
    checked = cli("restore", "--check", str(bomb), data_dir=tmp_path / "unused")
    assert checked.returncode == 1, checked.stderr
    assert "line 2 is longer than 67108864 bytes" in checked.stderr.replace("\n", "")
    refused = cli("restore", str(bomb), data_dir=tmp_path / "into")
    assert refused.returncode == 1 and "restore refused" in refused.stderr
    assert "line 2 is longer than" in refused.stderr.replace("\n", "")
    assert not (tmp_path / "unused").exists()


async def test_the_line_and_total_bounds_are_settings(good, tmp_path: Path):
    bomb = gzip_bomb(tmp_path / "bomb.jsonl.gz", good[0], 2 * MIB)
    small = {"XREG_RESTORE_MAX_LINE_BYTES": str(MIB)}
    checked = cli("restore", "--check", str(bomb), data_dir=tmp_path / "unused", **small)
    assert checked.returncode == 1 and f"line 2 is longer than {MIB} bytes" in checked.stderr.replace("\n", "")
    # a file of short lines, each within the line bound, past the total bound
    path = write(tmp_path / "good.jsonl", good)
    size = path.stat().st_size
    assert cli("restore", "--check", str(path), data_dir=tmp_path / "unused").returncode == 0
    total = {"XREG_RESTORE_MAX_BYTES": str(size - 1)}
    checked = cli("restore", "--check", str(path), data_dir=tmp_path / "unused", **total)
    assert checked.returncode == 1 and f"line {len(good)} goes past {size - 1} bytes" in checked.stderr.replace("\n", "")
    refused = cli("restore", str(path), data_dir=tmp_path / "into", **total)
    assert refused.returncode == 1 and "restore refused" in refused.stderr
    async with SQLiteStore(tmp_path / "into" / "registry.db") as store:
        assert await store.current_revision() == 0 and await store.get("/messagegroups/g") is None
    with pytest.raises(BackupError, match="goes past"):
        check_backup(path, ReadLimits(max_bytes=size - 1))
    assert check_backup(path, ReadLimits(max_bytes=size)).states == good[-1]["states"]


# -- pending re-materialisation items ---------------------------------------------------------
BASE = "/messagegroups/g/messages/base"


@pytest.fixture
async def pending(tmp_path: Path) -> list[dict]:
    """The lines of a good backup holding a pending re-materialisation item (on BASE)."""
    async with SQLiteStore(tmp_path / "pending.db") as store:
        await build_history(store)
        await store.commit([Write(BASE, "resource", "messagegroups/messages", {"messageid": "base", "v": 2})],
                           rematerialise=[BASE])
        await backup(store, tmp_path / "pending.jsonl")
    with open(tmp_path / "pending.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def with_item(lines: list[dict], change: dict | None = None, *, extra: list[dict] = (), where: int | None = None,
              count: int | None = None) -> tuple[list[dict], int]:
    """``lines`` with its item changed by ``change`` and ``extra`` lines put after it (or at
    ``where``), the end line counting ``count`` items (default: as many as there are); the line
    number of the (first) item."""
    out = [dict(x) for x in lines]
    index = next(i for i, x in enumerate(out) if x["type"] == "rematerialise")
    out[index].update(change or {})
    at = index + 1 if where is None else where
    out[at:at] = [dict(x) for x in extra]
    items = sum(x["type"] == "rematerialise" for x in out)
    out[-1] = {**out[-1], "rematerialise": items if count is None else count}
    return out, index + 1


ITEM_ATTACKS: dict[str, tuple[Any, str]] = {
    "a key out of the registry": ({"key": "/../../etc"}, "the item's key '/../../etc' is not an XID"),
    "a key that is a group": ({"key": "/messagegroups/g"}, "names a group, not a message"),
    "a key in upper case": ({"key": BASE.upper()}, "not an XID in lower case"),
    "a key of 2,000 characters": ({"key": "/" + "a" * 2000}, "of at most 1024 characters"),
    "a key that is no string": ({"key": ["/messagegroups"]}, "not an XID in lower case"),
    "progress out of the registry": ({"after": "/../x"}, "the item's after '/../x' is not an XID"),
    "a revision after the header's": ({"rev": 10_000}, "the item is of a revision after the header's"),
    "revision 0": ({"rev": 0}, "a rematerialise record needs key"),
    "a revision that is text": ({"rev": "7"}, "a rematerialise record needs key"),
    "a negative time": ({"at": -1}, "a rematerialise record needs key"),
    "a time past any float": ({"at": 10 ** 400}, "a rematerialise record needs key"),
    "a time that is text": ({"at": "yesterday"}, "a rematerialise record needs key"),
    "a key naming no entity": ({"key": "/messagegroups/g/messages/nobody"}, "which is no entity of the backup"),
}


@pytest.mark.parametrize("attack", ITEM_ATTACKS)
async def test_a_hostile_pending_item_is_refused_naming_its_line_and_nothing_is_written(pending, tmp_path: Path,
                                                                                         attack):
    change, says = ITEM_ATTACKS[attack]
    lines, number = with_item(pending, change)
    await refused(write(tmp_path / "hostile.jsonl", lines), tmp_path, f"line {number}\\b.*{says}")


async def refused(path: Path, tmp_path: Path, says: str, limits: ReadLimits | None = None) -> None:
    """``path`` is refused by the check and by a restore, which writes nothing (no item either)."""
    limits = limits or ReadLimits()
    with pytest.raises(BackupError, match=says):
        check_backup(path, limits)
    async with SQLiteStore(tmp_path / f"target-{uuid.uuid4().hex[:8]}.db") as target:
        with pytest.raises(BackupError, match=says):
            await restore(target, path, limits)
        assert await target.current_revision() == 0 and await target.rematerialisations() == []
        assert await target.get("/messagegroups/g") is None


async def test_misplaced_repeated_or_too_many_items_are_refused(pending, tmp_path: Path):
    item = next(x for x in pending if x["type"] == "rematerialise")
    quake = {**item, "key": "/messagegroups/g/messages/quake"}
    twice, number = with_item(pending, extra=[item])
    await refused(write(tmp_path / "twice.jsonl", twice), tmp_path, f"line {number + 1}: a second item for")
    first_state = next(i for i, x in enumerate(pending) if x["type"] == "state")
    late, _ = with_item(pending, extra=[quake], where=first_state + 1)
    await refused(write(tmp_path / "late.jsonl", late), tmp_path, f"line {first_state + 2}: a rematerialise record "
                                                                  "follows the states")
    miscounted, _ = with_item(pending, count=0)
    await refused(write(tmp_path / "miscounted.jsonl", miscounted), tmp_path, "and 0 pending items, the file holds")
    v2, number = with_item([{**pending[0], "version": 2}, *pending[1:]])
    await refused(write(tmp_path / "v2.jsonl", v2), tmp_path, f"line {number}: a rematerialise record in a version 2")
    # the count bound: two items where one is allowed (the setting: XREG_RESTORE_MAX_REMATERIALISE)
    two, number = with_item(pending, extra=[quake])
    path = write(tmp_path / "two.jsonl", two)
    await refused(path, tmp_path, f"line {number + 1}: more than 1 pending re-materialisation items",
                  ReadLimits(max_rematerialise=1))
    checked = cli("restore", "--check", str(path), data_dir=tmp_path / "unused", XREG_RESTORE_MAX_REMATERIALISE="1")
    assert checked.returncode == 1 and "more than 1 pending" in checked.stderr.replace("\n", "")
    checked = cli("restore", "--check", str(path), data_dir=tmp_path / "unused")
    assert checked.returncode == 0 and "2 pending re-materialisations" in checked.stderr.replace("\n", "")
    async with SQLiteStore(tmp_path / "two.db") as target:
        await restore(target, path)
        assert [i.key for i in await target.rematerialisations()] == [BASE, "/messagegroups/g/messages/quake"]
