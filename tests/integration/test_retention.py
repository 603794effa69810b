"""History retention: configured pruning keeps recent revisions readable, refuses older ones."""

from __future__ import annotations

import pytest

from gateway.app import prune_history
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.registry.changeset import Changeset


async def rename(registry, name):
    cs = Changeset(registry.store, registry.model)
    await cs.put_group("messagegroups", "g", {"name": name})
    return (await cs.commit()).revision


async def test_pruning_by_revision_count(registry, tmp_path):
    revs = [await rename(registry, f"n{i}") for i in range(6)]
    dropped = await prune_history(registry, Settings(data_dir=tmp_path, history_keep_revisions=2,
                                                     history_keep_days=None))
    assert dropped > 0
    assert (await registry.entity("/messagegroups/g", as_of=revs[-2]))["name"] == "n4"
    with pytest.raises(XRegistryError) as exc:
        await registry.export_document(as_of=revs[0])
    assert exc.value.type == "bad_request" and "not readable" in exc.value.title
    assert (await registry.entity("/messagegroups/g"))["name"] == "n5"  # the present is untouched


async def test_pruning_by_age_keeps_recent_history(registry, tmp_path):
    revs = [await rename(registry, f"n{i}") for i in range(3)]
    dropped = await prune_history(registry, Settings(data_dir=tmp_path, history_keep_days=1))
    assert dropped == 0
    assert (await registry.entity("/messagegroups/g", as_of=revs[0]))["name"] == "n0"


async def test_no_retention_configured_keeps_everything(registry, tmp_path):
    await rename(registry, "a")
    assert await prune_history(registry, Settings(data_dir=tmp_path, history_keep_days=None)) == 0


async def test_entity_reads_below_the_horizon_are_refused(registry, tmp_path):
    revs = [await rename(registry, f"n{i}") for i in range(4)]
    await prune_history(registry, Settings(data_dir=tmp_path, history_keep_revisions=1, history_keep_days=None))
    with pytest.raises(XRegistryError) as exc:
        await registry.entity("/messagegroups/g", as_of=revs[0])
    assert exc.value.type == "bad_request" and "older than the retained history" in exc.value.title
