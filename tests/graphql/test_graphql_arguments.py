"""Arguments the gateway's executor converts itself (``resolvers/arguments.py``) reach the resolver
exactly as strawberry's own conversion hands them over; the types strawberry converts otherwise
are left to it."""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest
import strawberry
from strawberry.relay import GlobalID

from resolvers.arguments import arguments_converter, definition
from resolvers.execution import GatewayExecutor, call_of


@strawberry.enum
class Color(Enum):
    RED = "red"
    BLUE = "blue"


@strawberry.input
class Pair:
    key: str
    the_value: str | None = None
    note: str | None  # no default: None when not given


@strawberry.input
class Wanted:
    name: str | None = None
    tags: list[str] | None = None
    pairs: list[Pair] | None = None
    nested: list[list[Color]] | None = None
    color: Color = Color.RED
    declared: bool = False


@strawberry.type
class Query:
    @strawberry.field
    def echo(self, wanted: Wanted | None = None, colors: list[Color] | None = None, n: int = 3,
             some_name: str | None = None) -> str:
        return repr((wanted, colors, n, some_name))

    @strawberry.field
    def by_id(self, id: GlobalID) -> str:
        return repr(id)

    @strawberry.field
    def maybe(self, x: strawberry.Maybe[int | None] = None) -> str:
        return repr(x)


OURS = strawberry.Schema(query=Query, execution_context_class=GatewayExecutor)
THEIRS = strawberry.Schema(query=Query)

DOCUMENTS: list[tuple[str, dict[str, Any] | None]] = [
    ("{ echo }", None),
    ('{ echo(wanted: {name: "a", tags: ["x", "y"], pairs: [{key: "k"}, {key: "l", theValue: "v"}],'
     ' nested: [[RED], [BLUE, RED]], color: BLUE}, colors: [BLUE], n: 5, someName: "s") }', None),
    ("{ echo(wanted: {}) a: echo(wanted: null, colors: null) }", None),
    ("query($w: Wanted, $c: [Color!]) { echo(wanted: $w, colors: $c) }",
     {"w": {"tags": ["t"], "pairs": [{"key": "k", "theValue": None}], "declared": True}, "c": ["RED", "BLUE"]}),
    ("query($w: Wanted) { echo(wanted: $w) }", {"w": None}),
    ('{ byId(id: "VGhpbmc6MQ==") maybe(x: 3) m2: maybe(x: null) m3: maybe }', None),
]


@pytest.mark.parametrize(("document", "variables"), DOCUMENTS)
async def test_arguments_reach_resolvers_as_strawberry_converts_them(document: str, variables: Any):
    ours = await OURS.execute(document, variable_values=variables)
    theirs = await THEIRS.execute(document, variable_values=variables)
    assert ours.errors == theirs.errors
    assert ours.data == theirs.data


def test_globalid_and_maybe_arguments_are_left_to_strawberry():
    fields = OURS._schema.query_type.fields
    assert call_of(fields["echo"]) is not None
    assert call_of(fields["byId"]) is None
    assert call_of(fields["maybe"]) is None
    assert definition(OURS._schema) is OURS


def test_the_converter_builds_input_objects_itself():
    """No fallback hides a conversion error: the converter builds them (by Python names)."""
    convert = arguments_converter(OURS._schema.query_type.fields["echo"])
    assert convert is not None
    tags = ["x"]
    kwargs = convert({"wanted": {"pairs": [{"key": "k", "theValue": "v", "note": None}], "tags": tags},
                      "someName": "s", "colors": [Color.BLUE]})
    assert kwargs == {"wanted": Wanted(pairs=[Pair(key="k", the_value="v", note=None)], tags=["x"]),
                      "some_name": "s", "colors": [Color.BLUE]}
    assert kwargs["wanted"].tags is not tags  # a list is copied (graphql-core shares defaults)
