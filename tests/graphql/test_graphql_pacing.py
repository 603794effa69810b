"""Paced list completion (``resolvers/pacing.py``): a long list hands the event loop back while it
is completed, in turns given out fairly, with the same answer as in one stretch, and the
request's loaders keep their batches whole meanwhile. Loop turns and store calls are counted;
nothing here is timed."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import strawberry
from strawberry.types import Info

from adapters.local import LocalSource
from resolvers.context import Context
from resolvers.execution import GatewayExecutor
from resolvers.loaders import HeldLoader
from resolvers.pacing import Hold, Pacer, encode_paced, slicer
from resolvers.schema import build_schema
from tests.graphql.conftest import REGISTRY_ID, open_registry
from xreg.config import Settings

#: A slice so short that every item waits for a turn of its own.
EVERY_ITEM = 1e-9

PAGE = """query($n: Int!) { registry { messages(first: $n) { totalCount nodes { xid messageid name envelope
  labels { key value } effective declared { description } dataschema { xid } } } } }"""


@dataclass
class Items:
    """The context of the small schema: its pacer (absent: the executor's own path) and a log."""

    pacer: Pacer | None
    log: list[str] = field(default_factory=list)


@strawberry.type
class Item:
    index: int

    @strawberry.field
    def name(self, info: Info, who: str = "?") -> str:
        info.context.log.append(who)
        return f"item {self.index}"


@strawberry.type
class Root:
    @strawberry.field
    def items(self, n: int) -> list[Item]:
        return [Item(index=i) for i in range(n)]


SMALL = strawberry.Schema(query=Root, execution_context_class=GatewayExecutor)
ITEMS = 'query($n: Int!, $who: String! = "?") { items(n: $n) { index name(who: $who) } }'


async def _turns_during(query: Any) -> tuple[Any, int]:
    """The result of ``query`` and how many turns a concurrent coroutine had while it ran."""
    turns = 0
    done = False

    async def other() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(other())
    await asyncio.sleep(0)
    turns = 0
    try:
        result = await query
    finally:
        done = True
        await ticker
    return result, turns


async def test_a_long_list_lets_the_loop_run_while_it_is_completed():
    one_stretch, turns_unpaced = await _turns_during(SMALL.execute(ITEMS, {"n": 2000}, Items(None)))
    paced, turns_paced = await _turns_during(SMALL.execute(ITEMS, {"n": 2000}, Items(Pacer(EVERY_ITEM))))
    assert turns_unpaced == 0  # graphql-core completes the list in one stretch: nothing else runs
    assert turns_paced >= 2000  # at least a turn of the loop for every item
    assert paced.data == one_stretch.data and not paced.errors
    assert paced.data["items"][1999] == {"index": 1999, "name": "item 1999"}


async def test_a_slice_of_zero_turns_pacing_off():
    result, turns = await _turns_during(SMALL.execute(ITEMS, {"n": 500}, Items(Pacer(0))))
    assert turns == 0 and len(result.data["items"]) == 500


async def test_turns_are_given_in_arrival_order_so_long_lists_alternate():
    context = Items(Pacer(EVERY_ITEM))
    given = slicer().turns
    first, second = await asyncio.gather(SMALL.execute(ITEMS, {"n": 40, "who": "a"}, context),
                                         SMALL.execute(ITEMS, {"n": 40, "who": "b"}, context))
    assert not first.errors and not second.errors
    assert context.log.count("a") == context.log.count("b") == 40
    # after the first item of each, one item per turn, in turn: a b a b ...
    middle = context.log[4:-4]
    assert all(x != y for x, y in pairwise(middle)), context.log
    assert slicer().turns - given >= 78


async def test_a_held_loader_keeps_its_batch_open_until_the_hold_is_given_back():
    batches: list[list[int]] = []

    async def load(keys: list[int]) -> list[int]:
        batches.append(keys)
        return [k * 10 for k in keys]

    hold = Hold()
    loader = HeldLoader(load, hold)
    hold.take()
    first = loader.load(1)
    for _ in range(5):  # many loop turns: the batch would have been sent after two
        await asyncio.sleep(0)
    assert batches == []
    second = loader.load(2)  # joins the held batch
    hold.give()
    assert await first == 10 and await second == 20
    assert batches == [[1, 2]]
    assert await loader.load(3) == 30 and batches == [[1, 2], [3]]  # not held: sent as usual


async def test_a_paced_corpus_page_answers_as_in_one_stretch(corpus_db, tmp_path):
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        results = []
        for slice_ms in (0, EVERY_ITEM * 1000):
            settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID, graphql_pacing_slice_ms=slice_ms)
            given = slicer().turns
            results.append(await build_schema(settings).execute(PAGE, {"n": 300},
                                                                Context(settings, sources, REGISTRY_ID)))
            results.append(slicer().turns - given)
    one_stretch, unpaced_turns, paced, paced_turns = results
    assert not one_stretch.errors and not paced.errors
    assert paced.data == one_stretch.data
    assert len(paced.data["registry"]["messages"]["nodes"]) == 300
    assert unpaced_turns == 0 and paced_turns >= 299  # a turn between every two items


async def test_a_large_answer_is_encoded_in_slices_exactly_as_json_dumps():
    page = [{"xid": f"/m/{i}", "name": "ü€\u2028", "labels": [{"key": "k", "value": None}] * 3, "n": i / 3,
             "nested": {"items": list(range(40)), "empty": [], "none": {}}} for i in range(300)]
    body = {"data": {"registry": {"messages": {"totalCount": 300, "nodes": page, "pageInfo": {}}}}, "errors": []}
    expected = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    given = slicer().turns
    assert await encode_paced(body, EVERY_ITEM) == expected
    assert slicer().turns - given >= 300  # a turn of the loop between the page's items
    for small in ([], {}, [1, [2, {}]], "x", None, {"a": []}):
        assert await encode_paced(small, EVERY_ITEM) == json.dumps(small, separators=(",", ":")).encode()
