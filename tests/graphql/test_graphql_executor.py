"""The gateway's executor (``resolvers.execution``) answers exactly as strawberry's own: same
data, same errors at the same paths — it only takes a shorter path to them."""

from __future__ import annotations

from collections.abc import Iterator
from inspect import CORO_CREATED, getcoroutinestate, iscoroutine
from typing import Any

import pytest
import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.schema.config import StrawberryConfig

from adapters.local import LocalSource
from resolvers.context import Context
from resolvers.execution import GatewayExecutor, plan_of
from resolvers.mutations import Mutation
from resolvers.queries import Query
from resolvers.reported import with_reported
from resolvers.scalars import SCALARS
from resolvers.schema import GatewaySchema, build_schema
from resolvers.types import TYPES, batched, read_field
from tests.graphql.conftest import REGISTRY_ID, open_registry
from xreg.config import Settings

WIDE = """query($n: Int!) { registry { registryid specversion epoch
  endpoints(first: $n) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { __typename id xid self entityid name protocol usage createdat labels { key value } } }
    nodes { xid ... on Endpoint { endpointid envelope protocoloptions }
      messagegroups { xid messagegroupid  envelope format: protocol
        messages(first: 5) { totalCount nodes { xid messageid versionid isdefault envelopemetadata dataschemaformat
          dataschemauri unresolvedBase inheritedFrom { attribute xid } dataschema { format uri xid document }
          meta { xid defaultversionid readonly } } } } } } } }"""


class _Reported(SchemaExtension):
    """The errors resolvers reported, appended as the gateway's operations do."""

    def on_execute(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None:
            result.errors = with_reported(result.errors, self.execution_context.context)


@strawberry.type
class _Probe:
    probe: int = 0


#: strawberry's own executor: a schema's default ``execution_context_class``
_STRAWBERRYS: Any = strawberry.Schema(query=_Probe).execution_context_class


class StrawberrysExecutor(_STRAWBERRYS):
    """Strawberry's own executor (the comparison), closing the resolver coroutines it abandons.

    When a non-null field fails, graphql-core cancels its siblings' completions; one cancelled
    before it started never awaits the resolver coroutine it holds, which then warns "coroutine
    ... was never awaited". Once the response is built nothing will await them: they are closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._resolving: list[Any] = []
        check = self.is_awaitable

        def is_awaitable(value: Any) -> Any:
            if iscoroutine(value):
                self._resolving.append(value)
            return check(value)

        self.is_awaitable = is_awaitable  # type: ignore[method-assign]

    def build_response(self, data: Any) -> Any:
        for coroutine in self._resolving:
            if getcoroutinestate(coroutine) == CORO_CREATED:
                coroutine.close()
        self._resolving.clear()
        return super().build_response(data)


def _plain_schema() -> strawberry.Schema:
    """The gateway's types on strawberry's own schema: its operation steps and its executor."""
    return strawberry.Schema(query=Query, mutation=Mutation, types=list(TYPES), extensions=[_Reported],
                             config=StrawberryConfig(scalar_map=SCALARS, default_resolver=read_field),
                             execution_context_class=StrawberrysExecutor)


async def test_corpus_page_is_the_same_as_strawberrys(corpus_db, tmp_path):
    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    gateway, plain = build_schema(settings), _plain_schema()
    assert gateway.execution_context_class is GatewayExecutor
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        ours = await gateway.execute(WIDE, {"n": 40}, Context(settings, sources, REGISTRY_ID))
        theirs = await plain.execute(WIDE, {"n": 40}, Context(settings, sources, REGISTRY_ID))
    assert ours.data == theirs.data
    assert [(e.message, e.path) for e in ours.errors or []] == [(e.message, e.path) for e in theirs.errors or []]
    assert len(ours.data["registry"]["endpoints"]["nodes"]) == 40
    # the attribute and method fields of that page are planned; connection fields are not
    fields = gateway._schema.type_map["Message"].fields
    assert plan_of(fields["xid"]) and plan_of(fields["envelope"]) and plan_of(fields["isdefault"])
    assert plan_of(fields["versions"]) is None and plan_of(fields["unresolvedBase"]) is None


def test_node_of_makes_the_object_its_class_makes():
    """``node_of`` skips the dataclass ``__init__``: the object still equals the class's own, reads
    every field the same, and the gateway's schema takes no schema extensions (its operations
    run their own steps)."""
    from dataclasses import fields

    from adapters.base import Entity as SourceEntity
    from resolvers.types import node_of

    entity = SourceEntity(REGISTRY_ID, "/messagegroups/g/messages/m", "resource", "messagegroups/messages", {}, None)
    wrapping = [t for t in TYPES if any(f.name == "entity" for f in fields(t)) and len(fields(t)) > 1]
    assert len(wrapping) >= 10
    for cls in wrapping:
        made, own = node_of(cls, entity), cls(entity=entity)
        assert type(made) is cls and made == own and made.entity is entity
        values = [f.name for f in fields(cls) if not callable(getattr(own, f.name))]  # not the resolvers
        assert len(values) > 3 and all(getattr(made, name) == getattr(own, name) for name in values)
    with pytest.raises(ValueError, match="schema extensions"):
        GatewaySchema(query=Query, extensions=[_Reported])


@strawberry.type
class Thing:
    name: str | None = None
    required: str = "x"
    count: int | None = None

    @strawberry.field
    def shout(self) -> str:
        if self.name == "boom":
            raise ValueError("no shouting")
        return (self.name or "").upper()

    @strawberry.field
    async def later(self) -> str | None:
        return self.name


@strawberry.type
class Things:
    @strawberry.field
    def things(self) -> list[Thing | None]:
        return [Thing(name="a", count=1), Thing(name=None, required=None, count=2),  # type: ignore[arg-type]
                Thing(name="boom", count="three"), Thing(name="b", count=2**40)]  # type: ignore[arg-type]


@pytest.mark.parametrize("query", [
    "{ things { name shout later count } }",
    "{ things { name required } }",
    "{ things { alias: shout n: name ...F } } fragment F on Thing { count __typename }",
])
async def test_errors_and_nulls_are_the_same_as_strawberrys(query: str):
    ours = strawberry.Schema(query=Things, execution_context_class=GatewayExecutor)
    theirs = strawberry.Schema(query=Things, execution_context_class=StrawberrysExecutor)
    a, b = await ours.execute(query), await theirs.execute(query)

    def errors(result: Any) -> list:
        return [(e.message, e.path, [(loc.line, loc.column) for loc in e.locations or []]) for e in result.errors or []]

    assert a.data == b.data
    assert a.data and a.data["things"][0] is not None  # an error nulls its item only
    assert errors(a) == errors(b)
    assert errors(a)  # every case fails somewhere


@strawberry.interface
class Shape:
    name: str


@strawberry.type
class Circle(Shape):
    radius: float


@strawberry.type
class Square(Shape):
    side: float


@strawberry.type
class Shapes:
    @strawberry.field
    def shapes(self) -> list[Shape]:
        # the third is a Circle cast to Square: an instance's cast wins over its class
        cast = Circle(name="c", radius=3.0)
        cast.side = 3.0  # type: ignore[attr-defined]
        return [Circle(name="a", radius=1.0), Square(name="b", side=2.0), strawberry.cast(Square, cast),
                Circle(name="d", radius=4.0)]

    @strawberry.field
    def first(self) -> Shape:
        return Circle(name="e", radius=5.0)


async def test_interfaces_resolve_as_strawberrys_casts_included():
    """The object type an interface resolves to is remembered per class, except for a cast object."""
    query = "{ first { __typename name } shapes { __typename name ... on Circle { radius } ... on Square { side } } }"
    ours = strawberry.Schema(query=Shapes, types=[Circle, Square], execution_context_class=GatewayExecutor)
    theirs = strawberry.Schema(query=Shapes, types=[Circle, Square], execution_context_class=StrawberrysExecutor)
    for _ in range(2):  # the second time, the classes' types are known
        a, b = await ours.execute(query), await theirs.execute(query)
        assert a.data == b.data and not a.errors and not b.errors
    assert a.data is not None
    assert [s["__typename"] for s in a.data["shapes"]] == ["Circle", "Square", "Square", "Circle"]


# -- compiled plans: fragments, aliases, directives, variables, arguments, abstract types --------

PLANNED = """query($n: Int!, $m: Int, $skip: Boolean!, $more: Boolean!, $proto: String, $after: String) {
  registry { xid
    endpoints(first: $n, after: $after, filter: {protocol: $proto}) { totalCount pageInfo { endCursor }
      nodes { ...E alias: name xid @skip(if: $skip) name @include(if: $more)
        messagegroups { xid ... on MessageGroup { few: messages(first: 1) { totalCount nodes { xid } }
                                                  more: messages(first: $m) { nodes { ...M } } } } } }
    lookup(xid: "/messagegroups/IO.AISstream") { __typename xid ... on MessageGroup { name } ... on Endpoint { usage } }
    messages(first: 3, sort: {attribute: "name", order: DESC}) { edges { cursor node { ...M } } } } }
fragment E on Endpoint { protocol usage ... on Node { id } }
fragment M on Message { xid name envelope @include(if: $more) dataschemaformat meta { xid readonly } }"""


def _errors(result: Any) -> list:
    return [(e.message, e.path, [(loc.line, loc.column) for loc in e.locations or []],
             (e.extensions or {}).get("code")) for e in result.errors or []]


@pytest.mark.parametrize("variables", [
    {"n": 7, "m": 4, "skip": False, "more": True},
    {"n": 3, "m": None, "skip": True, "more": False, "proto": "MQTT*"},
    {"n": 2, "m": 2, "skip": False, "more": True, "after": "not a cursor"},  # an error with a path
    {"n": 2, "m": 100000, "skip": False, "more": False},  # an error in every nested connection
])
async def test_planned_selections_are_the_same_as_strawberrys(corpus_db, tmp_path, variables):
    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    gateway, plain = build_schema(settings), _plain_schema()
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        ours = await gateway.execute(PLANNED, variables, Context(settings, sources, REGISTRY_ID))
        theirs = await plain.execute(PLANNED, variables, Context(settings, sources, REGISTRY_ID))
    assert ours.data == theirs.data
    assert _errors(ours) == _errors(theirs)
    if variables.get("after") or variables["m"] == 100000:
        assert ours.errors
    else:
        assert not ours.errors and ours.data["registry"]["endpoints"]["nodes"]


ROOT_LOOKUPS = """query($id: ID!) {
  a: lookup(xid: "/messagegroups/IO.AISstream/messages/IO.AISstream.PositionReport") {
    xid ... on Message { name dataschema { xid } } }
  b: lookup(xid: "/messagegroups/io.aisstream") { __typename xid }
  missing: lookup(xid: "/endpoints/nope") { xid }
  bad: lookup(xid: "endpoints") { xid }
  nowhere: lookup(xid: "/endpoints", registry: "nowhere") { xid }
  ahead: lookup(xid: "/messagegroups/IO.AISstream", asOf: 100000000) { xid }
  n: node(id: $id) { xid } badNode: node(id: "%%%") { xid } }"""


async def test_root_lookups_read_together_are_the_same_as_strawberrys(corpus_db, tmp_path):
    """``lookup`` and ``node`` under several aliases: the gateway calls their form for many
    objects once for the level, strawberry calls the resolver once per alias."""
    from resolvers.ids import global_id

    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    gateway, plain = build_schema(settings), _plain_schema()
    variables = {"id": global_id(REGISTRY_ID, "/messagegroups/IO.AISstream")}
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        ours = await gateway.execute(ROOT_LOOKUPS, variables, Context(settings, sources, REGISTRY_ID))
        theirs = await plain.execute(ROOT_LOOKUPS, variables, Context(settings, sources, REGISTRY_ID))
    assert ours.data == theirs.data
    assert sorted(_errors(ours)) == sorted(_errors(theirs))  # the same errors (their order is the executors')
    assert ours.data is not None and ours.data["a"]["dataschema"]["xid"] and ours.data["n"]["xid"]
    assert {e[1][0] for e in _errors(ours)} == {"bad", "nowhere", "ahead", "badNode"}


async def test_arguments_are_converted_per_field_node(corpus_db, tmp_path):
    """Two aliases of one connection field with different arguments keep their own arguments."""
    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    query = "{ registry { a: endpoints(first: 1) { nodes { xid } } b: endpoints(first: 2) { nodes { xid } } } }"
    async with open_registry(corpus_db) as reg:
        result = await build_schema(settings).execute(
            query, context_value=Context(settings, {REGISTRY_ID: LocalSource(reg)}, REGISTRY_ID))
    assert not result.errors
    assert [len(result.data["registry"][k]["nodes"]) for k in "ab"] == [1, 2]


async def test_arguments_written_without_variables_are_converted_once_per_document(corpus_db, tmp_path):
    """Constant arguments are converted once per field node of a cached document; arguments that
    use variables are converted for every request (and so follow them)."""
    from resolvers import execution

    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    schema = build_schema(settings)
    constant = "{ registry { endpoints(first: 2, filter: {protocol: \"MQTT*\"}) { nodes { xid protocol } } } }"
    variable = "query($n: Int!) { registry { endpoints(first: $n) { nodes { xid } } } }"
    converted: list[str] = []
    convert = execution.GatewayExecutor._convert_arguments

    def counting(self, call, field_def, details):
        converted.append(details.node.name.value)
        return convert(self, call, field_def, details)

    execution.GatewayExecutor._convert_arguments = counting  # type: ignore[method-assign]
    try:
        async with open_registry(corpus_db) as reg:
            sources = {REGISTRY_ID: LocalSource(reg)}
            answers = [await schema.execute(constant, context_value=Context(settings, sources, REGISTRY_ID))
                       for _ in range(3)]
            after_constant = list(converted)
            sized = [await schema.execute(variable, {"n": n}, Context(settings, sources, REGISTRY_ID)) for n in (1, 3)]
    finally:
        execution.GatewayExecutor._convert_arguments = convert  # type: ignore[method-assign]
    assert after_constant.count("endpoints") == 1  # once for the three requests
    assert all(a.data == answers[0].data and not a.errors for a in answers)
    assert all(n["protocol"].startswith("MQTT") for n in answers[0].data["registry"]["endpoints"]["nodes"])
    assert converted[len(after_constant):].count("endpoints") == 2  # per request with variables
    assert [len(r.data["registry"]["endpoints"]["nodes"]) for r in sized] == [1, 3]


async def test_a_document_without_variables_is_collected_once(corpus_db, tmp_path, monkeypatch):
    """The sub-fields of a document without variables are collected by its first request only
    (``@include`` with a literal included); a document with variables is collected for every
    request, so that ``@include`` follows them."""
    from graphql.execution import Executor

    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    schema = build_schema(settings)
    constant = """{ registry { endpoints(first: 3) { nodes { xid name @include(if: false)
      messagegroups { xid messages(first: 2) { nodes { xid } } } } } } }"""
    variable = """query($named: Boolean!) { registry { endpoints(first: 3) { nodes { xid name @include(if: $named)
      messagegroups { xid messages(first: 2) { nodes { xid } } } } } } }"""
    collected: list[str] = []
    collect = Executor.collect_subfields

    def counting(self, return_type, field_details_list):
        collected.append(return_type.name)
        return collect(self, return_type, field_details_list)

    monkeypatch.setattr(Executor, "collect_subfields", counting)
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        answers, counts = [], []
        for _ in range(3):
            answers.append(await schema.execute(constant, context_value=Context(settings, sources, REGISTRY_ID)))
            counts.append(len(collected))
        named = [await schema.execute(variable, {"named": flag}, Context(settings, sources, REGISTRY_ID))
                 for flag in (True, False, True)]
    assert counts[0] >= 5 and counts[1] == counts[2] == counts[0]  # nothing collected after the first
    assert all(a.data == answers[0].data and not a.errors for a in answers)
    nodes = answers[0].data["registry"]["endpoints"]["nodes"]
    assert len(nodes) == 3 and all("name" not in n and n["messagegroups"] is not None for n in nodes)
    assert len(collected) - counts[2] >= 3 * 5  # every request with variables collects
    assert [all("name" in n for n in r.data["registry"]["endpoints"]["nodes"]) for r in named] == [True, False, True]


@strawberry.interface
class Named:
    name: str | None


@strawberry.type
class Leaf(Named):
    name: str | None = None
    size: int = 0


@strawberry.type
class Other(Named):
    name: str | None = None


@strawberry.type
class Tree:
    @strawberry.field
    def leaves(self, n: int, fail_at: int | None = None) -> list[Leaf]:  # non-null items: an error nulls the list
        return [Leaf(name=f"l{i}", size=None if i == fail_at else i) for i in range(n)]  # type: ignore[arg-type]

    @strawberry.field
    async def later(self, info: strawberry.Info, n: int) -> list[Leaf | None]:
        assert info.path.key == info.field_name or info.path.key  # the info of the field
        if n < 0:
            raise ValueError("n must not be negative")
        # item 4 fails a non-null field: the error nulls that item only
        return [Leaf(name=f"a{i}", size=None if i == 4 else i) if i % 3 else None  # type: ignore[arg-type]
                for i in range(n)]

    @strawberry.field
    def named(self) -> list[Named]:
        return [Leaf(name="x", size=1), Other(name="y")]

    @strawberry.field
    def either(self) -> list[Leaf | Other]:
        return [Other(name="o"), Leaf(name="l", size=2)]

    @strawberry.field
    def strict(self) -> Leaf:
        return Leaf(name="s", size=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", [
    "{ leaves(n: 5) { name size } }",
    "{ leaves(n: 5, failAt: 3) { name size } other: leaves(n: 2) { size } }",  # null bubbling to the list
    "{ later(n: 7) { name s: size } }",
    "{ later(n: -1) { name } leaves(n: 1) { name } }",  # an awaited resolver with arguments fails
    "{ named { __typename name ... on Leaf { size } } either { ... on Other { name } ... on Leaf { size } } }",
    "{ strict { name size } }",  # null bubbling to the root
    "query($n: Int!, $s: Boolean!) { leaves(n: $n) { name size @skip(if: $s) } }",
])
async def test_nulls_errors_and_abstract_types_are_the_same_as_strawberrys(query: str, monkeypatch):
    from resolvers import execution

    monkeypatch.setattr(execution, "LIST_CHUNK", 2)  # lists of several chunks
    ours = strawberry.Schema(query=Tree, types=[Leaf, Other], execution_context_class=GatewayExecutor)
    theirs = strawberry.Schema(query=Tree, types=[Leaf, Other], execution_context_class=StrawberrysExecutor)
    variables = {"n": 4, "s": True}
    a, b = await ours.execute(query, variables), await theirs.execute(query, variables)
    assert a.data == b.data
    assert _errors(a) == _errors(b)


@strawberry.interface
class Shape:
    name: str | None


@strawberry.type
class Box(Shape):  # implements an interface: an is_type_of of its own, as the gateway's nodes have
    name: str | None = None
    size: int = 0


@strawberry.type
class Shelf:
    boxes: list[Box]  # read lists of objects: completed straight into their items
    maybe: list[Box | None] | None = None


@strawberry.type
class Shelves:
    @strawberry.field
    def shelf(self) -> Shelf | None:
        return Shelf(boxes=[Box(name="a", size=1), Box(name="b", size=None)],  # type: ignore[arg-type]
                     maybe=[Box(name="c", size=None), None, Box(name="d", size=2)])  # type: ignore[arg-type]

    @strawberry.field
    def whole(self) -> Shelf:
        return Shelf(boxes=[Box(name="e", size=3)], maybe=None)


@pytest.mark.parametrize("query", [
    "{ shelf { boxes { name size } } whole { boxes { name } } }",  # a non-null item's error nulls the shelf
    "{ shelf { maybe { name size } boxes { name } } }",  # nullable items: only the failing one
    "{ whole { boxes { __typename name ... on Shape { name } } maybe { size } } }",
])
async def test_read_lists_of_objects_are_the_same_as_strawberrys(query: str):
    ours = strawberry.Schema(query=Shelves, types=[Box], execution_context_class=GatewayExecutor)
    theirs = strawberry.Schema(query=Shelves, types=[Box], execution_context_class=StrawberrysExecutor)
    a, b = await ours.execute(query), await theirs.execute(query)
    assert a.data == b.data
    assert _errors(a) == _errors(b)


# -- level by level: awaiting fields of a level resolved together ------------------------------

MANY_CALLS = {"many": 0, "one": 0}


async def _sizes(parts: list[Any], infos: list[Any], factor: int = 1) -> list[Any]:
    """The form for many parts of ``Part.size``: one call per level (an error for a bad part)."""
    MANY_CALLS["many"] += 1
    assert len(infos) == len(parts) and all(i.field_name == "size" for i in infos)
    return [ValueError("no size") if p.name == "bad" else len(p.name) * factor for p in parts]


@strawberry.type
class Part:
    name: str

    @strawberry.field
    @batched(_sizes)
    async def size(self, info: strawberry.Info, factor: int = 1) -> int | None:
        MANY_CALLS["one"] += 1
        value = (await _sizes([self], [info], factor))[0]
        if isinstance(value, Exception):
            raise value
        return value

    @strawberry.field
    async def note(self, info: strawberry.Info) -> str | None:  # reported without failing, as resolvers do
        info.context.reported.append(f"note on {self.name}")
        return f"note {self.name}"

    @strawberry.field
    async def must(self) -> str:  # non-null: its error nulls the part, completed a level earlier
        if self.name == "bad":
            raise ValueError("a bad part")
        return self.name.upper()

    @strawberry.field
    async def inner(self) -> list[Part]:
        return [Part(name=self.name + "-x"), Part(name=self.name + "-y")]


@strawberry.type
class Parts:
    @strawberry.field
    async def parts(self, names: list[str]) -> list[Part | None]:
        return [Part(name=n) for n in names]


@pytest.mark.parametrize("query", [
    '{ parts(names: ["a", "bad", "cc"]) { name size(factor: 2) inner { name size } } }',
    '{ parts(names: ["a", "bad", "cc"]) { name note must inner { size must } } }',  # a completed part nulled
    '{ parts(names: ["a", "cc"]) { note inner { note must inner { must size } } } }',
])
async def test_levels_answer_as_strawberrys_with_one_call_per_level_and_reports_once(query: str):
    from types import SimpleNamespace

    ours = strawberry.Schema(query=Parts, execution_context_class=GatewayExecutor)
    theirs = strawberry.Schema(query=Parts, execution_context_class=StrawberrysExecutor)
    MANY_CALLS.update(many=0, one=0)
    mine = SimpleNamespace(reported=[])
    a = await ours.execute(query, context_value=mine)
    counted = dict(MANY_CALLS)
    other = SimpleNamespace(reported=[])
    b = await theirs.execute(query, context_value=other)
    assert a.data == b.data
    assert _errors(a) == _errors(b)
    assert sorted(mine.reported) == sorted(other.reported)  # a query run again reports once
    if "size" in query and "bad" not in query.split("must")[0]:  # not run again: no single calls
        assert counted["one"] == 0  # only the form for many parts, once per level that asks
        assert 1 <= counted["many"] <= query.count("size")
        assert MANY_CALLS["one"] > 0  # strawberry's own executor: one call per part
    if "must" in query and "bad" in query:
        assert a.data["parts"][1] is None and a.data["parts"][0] is not None


class PausingExecutor(GatewayExecutor):
    """Yields to the event loop between the chunks of every list (as paced completion would)."""

    pauses = 0

    def between_chunks(self, path: Any, done: int, total: int) -> Any:
        import asyncio

        assert 0 < done < total
        PausingExecutor.pauses += 1
        return asyncio.sleep(0)


async def test_a_paused_list_completion_gives_the_same_answer(corpus_db, tmp_path, monkeypatch):
    from resolvers import execution

    monkeypatch.setattr(execution, "LIST_CHUNK", 3)
    # not paced by the clock: only this executor's pauses, between chunks of 3
    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID, graphql_pacing_slice_ms=0)
    paused = GatewaySchema(query=Query, mutation=Mutation, types=list(TYPES), execution_context_class=PausingExecutor,
                           config=StrawberryConfig(scalar_map=SCALARS, default_resolver=read_field))
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        ours = await paused.execute(WIDE, {"n": 12}, Context(settings, sources, REGISTRY_ID))
        theirs = await _plain_schema().execute(WIDE, {"n": 12}, Context(settings, sources, REGISTRY_ID))
    assert PausingExecutor.pauses > 4
    assert ours.data == theirs.data
    assert _errors(ours) == _errors(theirs)


async def test_a_response_leaves_its_entities_to_reference_counting_not_the_cycle_collector(corpus_db, tmp_path):
    """The request's loaders and context refer to each other; once the response is built the
    loaders are released, so the entities, pages and loads of the response are freed at once
    instead of waiting for (and burdening) the cycle collector."""
    import gc

    from adapters.base import Entity, SourcePage

    settings = Settings(data_dir=tmp_path, registry_id=REGISTRY_ID)
    schema = build_schema(settings)
    async with open_registry(corpus_db) as reg:
        sources = {REGISTRY_ID: LocalSource(reg)}
        await schema.execute(WIDE, {"n": 20}, Context(settings, sources, REGISTRY_ID))  # warm caches
        gc.collect()
        gc.disable()
        try:
            result = await schema.execute(WIDE, {"n": 20}, Context(settings, sources, REGISTRY_ID))
            assert not result.errors and len(result.data["registry"]["endpoints"]["nodes"]) == 20
            del result
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            cyclic = [o for o in gc.garbage if isinstance(o, Entity | SourcePage)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert cyclic == []


def _seen(info: strawberry.Info, n: int) -> str:
    raw = info._raw_info
    return repr((n, info.variable_values, type(raw.variable_values), info.input_extensions, info.field_name,
                 info.path.as_list(),
                 info.python_name, [f.name for f in info.selected_fields], str(raw.return_type),
                 raw.parent_type.name, raw.fragments, raw.root_value))


@strawberry.type
class Asks:
    @strawberry.field
    def seen(self, info: strawberry.Info, n: int) -> str:
        return _seen(info, n)

    @strawberry.field
    async def later(self, info: strawberry.Info, n: int) -> str:
        return _seen(info, n)


async def test_resolvers_get_the_info_strawberrys_executor_builds():
    """Variables as a plain dict, the operation's extensions, the field's place: as strawberry's."""
    ours = strawberry.Schema(query=Asks, execution_context_class=GatewayExecutor)
    theirs = strawberry.Schema(query=Asks, execution_context_class=StrawberrysExecutor)
    query = "query($n: Int!) { seen(n: $n) a: seen(n: 2) later(n: $n) }"
    for extensions in (None, {"trace": "t1"}):
        mine = await ours.execute(query, variable_values={"n": 1}, operation_extensions=extensions)
        strawberrys = await theirs.execute(query, variable_values={"n": 1}, operation_extensions=extensions)
        assert mine.errors is None
        assert mine.data == strawberrys.data
        assert "{'n': 1}" in mine.data["seen"] and str(extensions) in mine.data["seen"]  # type: ignore[index]
