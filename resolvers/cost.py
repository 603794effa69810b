"""The estimated cost of a GraphQL operation, counted on its validated document before it runs:
the fields it selects, multiplied by the page sizes of the lists they are in.

``cost(f) = 1 + fan_out(f) × Σ cost(children of f)``, summed over the operation's root fields,
fragments expanded (each spread counts; inline fragments and fragments on other types of an
abstract type all count — an upper bound). The fan-out of a field is

* for the ``nodes`` / ``edges`` of a connection (a field taking ``first``): its page size —
  ``first`` or ``last`` (literal or variable), else the default page size;
* for ``nodes(ids: […])``: the number of ids;
* for introspection's lists (``types``, ``fields``, ``args``, …): their average length in the
  schema;
* for any other list of objects (labels, an endpoint's message groups): :data:`LIST_ESTIMATE`;
* 1 for everything else. ``ofType`` costs 1 whatever it selects: it only unwraps a type
  reference, a chain of a few objects (as for the depth limit).

So ``{ registry { messages(first: 50) { nodes { xid name } } } }`` costs
``1 + (1 + (1 + 50 × 2))`` = 103: about the number of values the answer can hold. The cost is
the operation's price for the per-request ceiling (``graphql_max_cost``, ``QUERY_TOO_COSTLY``)
and for rate limiting (``gateway/ratelimit.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SchemaMetaFieldDef,
    SelectionSetNode,
    TypeMetaFieldDef,
    ValueNode,
    VariableNode,
    get_named_type,
)

#: The assumed length of a list that has no page size (labels, an endpoint's message groups: a few).
LIST_ESTIMATE = 5
#: Fields that only unwrap one object (introspection's type references): 1, whatever they select.
CHAINS = frozenset({"ofType"})
#: The fields of a connection that hold its page.
PAGE_FIELDS = frozenset({"nodes", "edges"})


def _is_list(type_: GraphQLOutputType) -> bool:
    while isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    return isinstance(type_, GraphQLList)


def _value(node: ValueNode | None, variables: Mapping[str, Any]) -> Any:
    """An argument's value as far as the cost needs it: an int, a list's length, or ``None``."""
    if isinstance(node, VariableNode):
        value = variables.get(node.name.value)
        return len(value) if isinstance(value, list) else value
    if isinstance(node, IntValueNode):
        return int(node.value)
    if isinstance(node, ListValueNode):
        return len(node.values)
    return None


@lru_cache(maxsize=8)
def introspection_sizes(schema: GraphQLSchema) -> dict[tuple[str, str], int]:
    """The average length of each list of introspection's types in ``schema`` (rounded up)."""

    def avg(lengths: list[int]) -> int:
        return max(1, math.ceil(sum(lengths) / len(lengths))) if lengths else 1

    types = list(schema.type_map.values())
    fields = [f for t in types if isinstance(t, (GraphQLObjectType, GraphQLInterfaceType)) for f in t.fields.values()]
    return {
        ("__Schema", "types"): len(types),
        ("__Schema", "directives"): len(schema.directives),
        ("__Type", "fields"): avg([len(t.fields) for t in types if isinstance(t, (GraphQLObjectType,
                                                                                  GraphQLInterfaceType))]),
        ("__Type", "inputFields"): avg([len(t.fields) for t in types if isinstance(t, GraphQLInputObjectType)]),
        ("__Type", "enumValues"): avg([len(t.values) for t in types if isinstance(t, GraphQLEnumType)]),
        ("__Type", "interfaces"): avg([len(t.interfaces) for t in types if isinstance(t, GraphQLObjectType)]),
        ("__Type", "possibleTypes"): avg([len(schema.get_possible_types(t)) for t in types
                                          if isinstance(t, (GraphQLInterfaceType, GraphQLUnionType))]),
        ("__Field", "args"): avg([len(f.args) for f in fields]),
        ("__Directive", "args"): avg([len(d.args) for d in schema.directives]),
    }


class CostCounter:
    """Counts operations of one document against one schema."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any] | None,
                 default_page_size: int, max_page_size: int) -> None:
        self.schema = schema
        self.variables = variables or {}
        self.default_page = default_page_size
        self.max_page = max_page_size
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self._memo: dict[tuple[str, int | None], int] = {}

    def _field(self, parent: Any, name: str) -> GraphQLField | None:
        if parent is self.schema.query_type and name in ("__schema", "__type"):
            return SchemaMetaFieldDef if name == "__schema" else TypeMetaFieldDef
        if isinstance(parent, (GraphQLObjectType, GraphQLInterfaceType)):
            return parent.fields.get(name)
        return None  # __typename, or a field the validation rules reported

    def _argument(self, node: FieldNode, field: GraphQLField, name: str) -> Any:
        given = next((a.value for a in node.arguments or () if a.name.value == name), None)
        value = _value(given, self.variables) if given is not None else None
        if value is None and name in field.args:
            default = field.args[name].default_value
            value = default if isinstance(default, int) else None
        return value

    def _page_size(self, node: FieldNode, field: GraphQLField) -> int | None:
        """The page size of a connection field (``None``: not a connection)."""
        if "first" not in field.args:
            return None
        size = self._argument(node, field, "first") or self._argument(node, field, "last")
        if not isinstance(size, int) or size < 0:
            size = self.default_page
        return min(size, self.max_page)

    def selection(self, node: SelectionSetNode, parent: Any, page: int | None) -> int:
        """The cost of a selection set on ``parent``; ``page``: the page size of the connection
        whose fields these are."""
        total = 0
        for sel in node.selections:
            if isinstance(sel, FieldNode):
                total += self.field(sel, parent, page)
            elif isinstance(sel, InlineFragmentNode):
                cond = self.schema.get_type(sel.type_condition.name.value) if sel.type_condition else parent
                total += self.selection(sel.selection_set, cond, page)
            elif isinstance(sel, FragmentSpreadNode):
                total += self._spread(sel.name.value, page)
        return total

    def _spread(self, name: str, page: int | None) -> int:
        key = (name, page)
        if key not in self._memo:
            fragment = self.fragments.get(name)
            self._memo[key] = 0  # a cycle (refused by validation) costs nothing more
            if fragment is not None:
                cond = self.schema.get_type(fragment.type_condition.name.value)
                self._memo[key] = self.selection(fragment.selection_set, cond, page)
        return self._memo[key]

    def field(self, node: FieldNode, parent: Any, page: int | None) -> int:
        """The cost of one field: 1, plus its children times its fan-out."""
        field = self._field(parent, node.name.value)
        if field is None or node.selection_set is None or node.name.value in CHAINS:
            return 1
        fan_out = 1
        if _is_list(field.type):
            ids = self._argument(node, field, "ids") if "ids" in field.args else None
            if page is not None and node.name.value in PAGE_FIELDS:
                fan_out = page
            elif isinstance(ids, int):
                fan_out = ids
            elif parent.name.startswith("__"):
                fan_out = introspection_sizes(self.schema).get((parent.name, node.name.value), LIST_ESTIMATE)
            else:
                fan_out = LIST_ESTIMATE
        children_page = self._page_size(node, field)
        return 1 + fan_out * self.selection(node.selection_set, get_named_type(field.type), children_page)

    def operation(self, op: OperationDefinitionNode) -> int:
        root = self.schema.get_root_type(op.operation)
        return self.selection(op.selection_set, root, None)


#: Costs of operations run without variables, per parsed document (by id, kept with it so that
#: the id stays its own): a cached document costs the same every time. Emptied when full.
_CONSTANT_COSTS: dict[tuple[int, int, str | None, int, int], tuple[DocumentNode, int]] = {}
_CONSTANT_COSTS_BOUND = 1024


def operation_cost(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None,
                   variables: Mapping[str, Any] | None, *, default_page_size: int, max_page_size: int) -> int:
    """The cost of the operation a request runs (the named one, else the only one; 0 when none
    matches — execution reports that); remembered per document run without variables."""
    if variables:
        return _operation_cost(schema, document, operation_name, variables, default_page_size, max_page_size)
    key = (id(schema), id(document), operation_name, default_page_size, max_page_size)
    known = _CONSTANT_COSTS.get(key)
    if known is not None and known[0] is document:
        return known[1]
    cost = _operation_cost(schema, document, operation_name, None, default_page_size, max_page_size)
    if len(_CONSTANT_COSTS) >= _CONSTANT_COSTS_BOUND:
        _CONSTANT_COSTS.clear()
    _CONSTANT_COSTS[key] = (document, cost)
    return cost


def _operation_cost(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None,
                    variables: Mapping[str, Any] | None, default_page_size: int, max_page_size: int) -> int:
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        ops = [o for o in ops if o.name is not None and o.name.value == operation_name]
    if len(ops) != 1:
        return 0
    return CostCounter(schema, document, variables, default_page_size, max_page_size).operation(ops[0])
