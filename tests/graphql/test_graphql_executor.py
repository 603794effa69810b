"""The gateway's executor (``resolvers.execution``) answers exactly as strawberry's own: same
data, same errors at the same paths — it only takes a shorter path to them."""

from __future__ import annotations

from typing import Any

import pytest
import strawberry
from strawberry.schema.config import StrawberryConfig

from adapters.local import LocalSource
from gateway.config import Settings
from resolvers.context import Context
from resolvers.execution import GatewayExecutor, plan_of
from resolvers.mutations import Mutation
from resolvers.queries import Query
from resolvers.reported import ReportedErrors
from resolvers.scalars import SCALARS
from resolvers.schema import GatewaySchema, build_schema
from resolvers.types import TYPES, read_field
from tests.graphql.conftest import REGISTRY_ID, open_registry

WIDE = """query($n: Int!) { registry { registryid specversion epoch
  endpoints(first: $n) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { __typename id xid self entityid name protocol usage createdat labels { key value } } }
    nodes { xid ... on Endpoint { endpointid envelope protocoloptions }
      messagegroups { xid messagegroupid  envelope format: protocol
        messages(first: 5) { totalCount nodes { xid messageid versionid isdefault envelopemetadata dataschemaformat
          dataschemauri unresolvedBase inheritedFrom { attribute xid } dataschema { format uri xid document }
          meta { xid defaultversionid readonly } } } } } } } }"""


def _plain_schema() -> GatewaySchema:
    """The gateway's schema on strawberry's own executor."""
    return GatewaySchema(query=Query, mutation=Mutation, types=list(TYPES), extensions=[ReportedErrors],
                         config=StrawberryConfig(scalar_map=SCALARS, default_resolver=read_field))


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
    theirs = strawberry.Schema(query=Things)
    a, b = await ours.execute(query), await theirs.execute(query)

    def errors(result: Any) -> list:
        return [(e.message, e.path, [(loc.line, loc.column) for loc in e.locations or []]) for e in result.errors or []]

    assert a.data == b.data
    assert a.data and a.data["things"][0] is not None  # an error nulls its item only
    assert errors(a) == errors(b)
    assert errors(a)  # every case fails somewhere
