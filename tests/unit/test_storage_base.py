"""The store logic every backend shares (xreg/storage/algorithms.py): the commit's conflict check
and plan, and the retention horizon. The contract suite runs them through both stores; here
they are pinned down as pure functions."""

from __future__ import annotations

import asyncio

import pytest

from xreg.storage.algorithms import CurrentState, plan_commit, retention_horizon
from xreg.storage.errors import Conflict
from xreg.storage.observe import StoreStats, upkeep
from xreg.storage.records import Write


def w(xid: str, doc: dict | None = None, expect: object = ...) -> Write:
    return Write(xid, "group", "messagegroups", doc, expect)  # type: ignore[arg-type]


def test_a_new_entity_is_added_and_an_existing_one_closed() -> None:
    current = {"/messagegroups/a": CurrentState(rev_from=3, deleted=False, handle=17)}
    plan = plan_commit([w("/messagegroups/A", {"n": 1}), w("/messagegroups/b", {"n": 2})], current, rev=5)
    assert plan.closing == ["/messagegroups/a"]
    assert list(plan.new) == ["/messagegroups/a", "/messagegroups/b"]
    assert plan.new["/messagegroups/a"].xid == "/messagegroups/A" and plan.new["/messagegroups/a"].doc == {"n": 1}


def test_expectations_are_checked_against_the_current_state() -> None:
    current = {"/messagegroups/a": CurrentState(rev_from=3, deleted=False)}
    assert plan_commit([w("/messagegroups/a", {}, expect=3)], current, rev=4).closing == ["/messagegroups/a"]
    with pytest.raises(Conflict) as caught:
        plan_commit([w("/messagegroups/a", {}, expect=2)], current, rev=4)
    assert caught.value.xid == "/messagegroups/a"
    with pytest.raises(Conflict):  # "must not exist", but it does
        plan_commit([w("/messagegroups/a", {}, expect=None)], current, rev=4)
    # a tombstone counts as absent
    gone = {"/messagegroups/a": CurrentState(rev_from=3, deleted=True)}
    assert list(plan_commit([w("/messagegroups/a", {}, expect=None)], gone, rev=4).new) == ["/messagegroups/a"]


def test_later_writes_of_the_batch_see_the_earlier_ones() -> None:
    plan = plan_commit([w("/messagegroups/a", {"n": 1}, expect=None), w("/messagegroups/a", {"n": 2}, expect=9)],
                       {}, rev=9)
    assert plan.new["/messagegroups/a"].doc == {"n": 2} and plan.closing == []
    with pytest.raises(Conflict):
        plan_commit([w("/messagegroups/a", {"n": 1}), w("/messagegroups/a", {"n": 2}, expect=None)], {}, rev=9)


def test_deleting_what_does_not_exist_records_nothing() -> None:
    assert plan_commit([w("/messagegroups/a")], {}, rev=2).new == {}
    current = {"/messagegroups/a": CurrentState(rev_from=1, deleted=False)}
    plan = plan_commit([w("/messagegroups/a")], current, rev=2)
    assert plan.closing == ["/messagegroups/a"] and plan.new["/messagegroups/a"].deleted


@pytest.mark.parametrize(("keep_revisions", "keep_seconds", "newest_before", "expected"), [
    (None, None, None, 10),  # nothing kept: everything before the current revision goes
    (3, None, None, 7),
    (30, None, None, 4),  # never moves back
    (None, 60.0, 8, 8),
    (None, 60.0, None, 4),  # nothing committed before the cutoff: no move
    (1, 60.0, 6, 6),  # both: the older horizon
    (0, None, None, 10),
])
def test_retention_horizon(keep_revisions: int | None, keep_seconds: float | None, newest_before: int | None,
                           expected: int) -> None:
    assert retention_horizon(10, 4, keep_revisions=keep_revisions, keep_seconds=keep_seconds,
                             newest_before_cutoff=newest_before) == expected


def test_upkeep_calls_are_not_counted_and_only_in_their_own_task() -> None:
    """A store call made under ``upkeep()`` (the model check) is left out of the per-method counts;
    a call of another task at the same time is counted."""
    stats = StoreStats()

    async def upkeeping(started: asyncio.Event, go: asyncio.Event) -> None:
        with upkeep():
            started.set()
            await go.wait()
            stats.hit("get_many")

    async def main() -> None:
        started, go = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(upkeeping(started, go))
        await started.wait()
        stats.hit("list")  # another task, while the first one is in upkeep
        go.set()
        await task
        stats.hit("get_many")

    asyncio.run(main())
    assert stats.calls == {"list": 1, "get_many": 1} and stats.total == 2
