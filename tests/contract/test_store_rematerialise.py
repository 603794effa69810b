"""The store side of deferred re-materialisation (``xreg.storage.rematerialise``), on every
backend: work items recorded with a commit, progress and completion only while the item is
the one of its revision, the one lease, and pages of the reverse index."""

from __future__ import annotations

import threading

import pytest

from tests.contract.test_store_contract import gone, message
from xreg.storage.base import THREAD_DECODE_REFERRERS
from xreg.storage.errors import Conflict

BASE = "/messagegroups/g/messages/base"


async def test_a_commit_records_its_work_items_in_the_same_transaction(store):
    assert await store.rematerialisations() == []
    rev = await store.commit([message("g", "base")], rematerialise=[BASE.upper(), BASE + "/versions/1"])
    items = await store.rematerialisations()
    assert [(i.key, i.revision, i.after) for i in items] == [(BASE, rev, None), (BASE + "/versions/1", rev, None)]
    with pytest.raises(Conflict):  # a refused commit records nothing
        await store.commit([message("g", "other"), message("g", "base", expect=None)],
                           rematerialise=["/messagegroups/g/messages/other"])
    assert [i.key for i in await store.rematerialisations()] == [BASE, BASE + "/versions/1"]
    assert await store.commit([], rematerialise=[BASE]) == rev  # nothing written: nothing recorded


async def test_a_later_commit_replaces_the_item_and_resets_its_progress(store):
    first = await store.commit([message("g", "base")], rematerialise=[BASE])
    [item] = await store.rematerialisations()
    assert await store.rematerialised(BASE, first, "/messagegroups/g/messages/m", done=False)
    assert (await store.rematerialisations())[0].after == "/messagegroups/g/messages/m"
    second = await store.commit([message("g", "base", {"name": "2"})], rematerialise=[BASE])
    [again] = await store.rematerialisations()
    assert (again.revision, again.after) == (second, None) and again.at == item.at  # stale since the first
    # the worker of the first revision can neither record progress nor finish the replaced item
    assert not await store.rematerialised(BASE, first, "/messagegroups/g/messages/z", done=False)
    assert not await store.rematerialised(BASE, first, None, done=True)
    assert (await store.rematerialisations())[0].after is None
    assert await store.rematerialised(BASE, second, None, done=True)
    assert await store.rematerialisations() == []


async def test_one_holder_at_a_time_holds_the_lease(store):
    assert await store.rematerialise_lease("a", 100.0, 130.0)
    assert not await store.rematerialise_lease("b", 110.0, 140.0)
    assert await store.rematerialise_lease("a", 120.0, 150.0)  # renewed
    assert not await store.rematerialise_lease("b", 149.0, 170.0)
    assert await store.rematerialise_lease("b", 151.0, 170.0)  # expired: taken over
    assert not await store.rematerialise_lease("a", 152.0, 180.0)
    assert not await store.rematerialise_lease("a", 153.0, 153.0)  # not a's to give up
    assert not await store.rematerialise_lease("a", 154.0, 180.0)
    assert not await store.rematerialise_lease("b", 155.0, 155.0)  # given up
    assert await store.rematerialise_lease("a", 156.0, 180.0)


async def test_referrers_come_in_pages_in_key_order(store):
    names = ["d", "a", "c", "e", "b"]
    await store.commit([message("g", n, links=(BASE,)) for n in names] + [message("g", "x")])
    first = await store.referrers([BASE], limit=2)
    assert [r.id for r in first] == ["a", "b"]
    second = await store.referrers([BASE.upper()], after=first[-1].key, limit=2)
    assert [r.id for r in second] == ["c", "d"]
    assert [r.id for r in await store.referrers([BASE], after=second[-1].key, limit=2)] == ["e"]
    assert [r.id for r in await store.referrers([BASE], after="/messagegroups/g/messages/bb")] == ["c", "d", "e"]
    assert await store.referrers([BASE], limit=0) == []


async def test_unordered_referrers_bound_a_count_without_reading_them_all(store):
    names = [f"m{i:02d}" for i in range(12)]
    await store.commit([message("g", n, links=(BASE, BASE + "/versions/1")) for n in names])
    some = await store.referrers([BASE, BASE + "/versions/1"], limit=5, ordered=False)
    assert len(some) == 5 and len({r.key for r in some}) == 5  # once each, though linked twice
    assert {r.id for r in some} <= set(names) and [r.key for r in some] == sorted(r.key for r in some)
    assert len(await store.referrers([BASE], limit=50, ordered=False)) == 12


async def _drain(store, targets: list[str], limit: int) -> list[list[str]]:
    """The pages a worker reads: each after the last key of the one before, until a short one."""
    pages, after = [], None
    while True:
        page = [r.key for r in await store.referrers(targets, after=after, limit=limit)]
        pages.append(page)
        if len(page) < limit:
            return pages
        after = page[-1]


async def test_referrers_page_across_several_targets_in_key_order_each_state_once(store):
    one, two, other = BASE, BASE + "/versions/1", "/messagegroups/g/messages/other"
    links = {f"m{i:02d}": ((one,), (two,), (one, two), (other,))[i % 4] for i in range(24)}
    await store.commit([message("g", n, links=ls) for n, ls in links.items()] + [message("g", "x")])
    # deleted, unlinked, and re-linked states: the first two leave, the last is there once
    await store.commit([gone("/messagegroups/g/messages/m00"), message("g", "m01", {"name": "unlinked"}),
                        message("g", "m02", {"name": "again"}, links=(one, two))])
    want = sorted(f"/messagegroups/g/messages/{n}" for n, ls in links.items()
                  if {one, two} & set(ls) and n not in ("m00", "m01"))
    assert len(want) == 16
    for limit in (1, 3, 5, 16, 50):
        pages = await _drain(store, [two.upper(), one, one], limit)
        assert [k for p in pages for k in p] == want, limit  # in key order, none twice, none missing
        assert all(len(p) == limit for p in pages[:-1]) and len(pages[-1]) < limit
    assert [r.key for r in await store.referrers([one, two], after=want[7], limit=3)] == want[8:11]
    assert [r.key for r in await store.referrers([one, two], after=want[-1], limit=3)] == []
    assert [r.key for r in await store.referrers([other])] == [
        f"/messagegroups/g/messages/m{i:02d}" for i in range(3, 24, 4)]
    # the records are the current states
    again = await store.referrers([one, two], after="/messagegroups/g/messages/m01", limit=1)
    assert [(r.key, r.doc) for r in again] == [("/messagegroups/g/messages/m02", {"messageid": "m02", "name": "again"})]
    # unordered: any of them, each once, none deleted or unlinked
    some = await store.referrers([one, two], limit=10, ordered=False)
    assert len({r.key for r in some}) == 10 and {r.key for r in some} <= set(want)


async def test_referrers_page_across_more_targets_than_one_read_takes(store):
    """Hundreds of targets (more than one statement or find() of a page takes): the pages still
    come in key order across all of them."""
    targets = [f"/messagegroups/bases/messages/b{i:03d}" for i in range(150)]
    await store.commit([message(f"g{i % 7}", f"m{i:03d}", links=(targets[(i * 37) % 150], targets[i % 150]))
                        for i in range(300)])
    want = sorted(f"/messagegroups/g{i % 7}/messages/m{i:03d}" for i in range(300))
    pages = await _drain(store, targets, 40)
    assert [k for p in pages for k in p] == want
    assert [r.key for r in await store.referrers(targets[::-1], after=want[99], limit=4)] == want[100:104]


async def test_a_large_page_of_referrers_is_decoded_off_the_event_loop(store, monkeypatch):
    """A page of more than ``THREAD_DECODE_REFERRERS`` dependents is decoded into records in a
    worker thread (the worker reads such pages while requests are served); a smaller one on the
    event loop. The records are the same either way."""
    names = [f"m{i:02d}" for i in range(THREAD_DECODE_REFERRERS + 4)]
    await store.commit([message("g", n, links=(BASE,)) for n in names] + [message("g", "x")])
    decode = type(store)._record
    on_loop: list[bool] = []

    def spy(row):
        on_loop.append(threading.current_thread() is threading.main_thread())
        return decode(row)

    monkeypatch.setattr(type(store), "_record", staticmethod(spy))
    small = await store.referrers([BASE], limit=THREAD_DECODE_REFERRERS)
    assert len(on_loop) == THREAD_DECODE_REFERRERS and all(on_loop)
    on_loop.clear()
    large = await store.referrers([BASE], limit=THREAD_DECODE_REFERRERS + 1)
    assert len(on_loop) == THREAD_DECODE_REFERRERS + 1 and not any(on_loop)
    assert [r.id for r in large] == names[:THREAD_DECODE_REFERRERS + 1] and large[:-1] == small
