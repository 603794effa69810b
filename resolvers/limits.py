"""What a GraphQL document may ask for, checked before anything executes; parse and validation
results are cached.

The operation pipeline (``resolvers/operation.py``) parses with :func:`parse_document` and
asks :func:`refusals` before it executes anything. Parsing stops after ``max_tokens`` tokens
(``TOO_MANY_TOKENS``). Before the standard validation rules run, the operation's depth
(``QUERY_TOO_DEEP``) and its aliases (``TOO_MANY_ALIASES``) are measured with fragments
expanded — an alias inside a fragment spread ten times counts ten times — so a depth or alias
bomb is refused without being validated or executed. With introspection switched off,
``__schema`` and ``__type`` are refused (``INTROSPECTION_DISABLED``). Once the document is
valid, the operation's cost (``resolvers/cost.py``, with the request's variables) must not
exceed ``max_cost`` (``QUERY_TOO_COSTLY``), and it is charged to the caller's rate limit
(the context's :class:`~resolvers.context.Budget`, ``gateway/ratelimit.py``; refused with
``too_many_requests``, answered 429).

Depth counts fields from the operation's root (``{ a { b } }`` has depth 2); ``ofType`` does
not count, as it only unwraps a type reference (one object, no fan-out) and GraphiQL's
introspection query nests it nine times.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
    validate,
)
from graphql.validation import NoSchemaIntrospectionCustomRule, specified_rules

from resolvers.context import Context
from resolvers.cost import operation_cost

#: How many distinct documents the parse and validation caches keep.
CACHE_SIZE = 256
#: Fields that do not add to the depth.
DEPTH_FREE = frozenset({"ofType"})


@dataclass(frozen=True)
class QueryLimits:
    """The limits of one schema."""

    max_depth: int
    max_tokens: int
    max_aliases: int
    introspection: bool = True
    max_cost: int | None = None
    default_page_size: int = 100
    max_page_size: int = 500


class _NoIntrospection(NoSchemaIntrospectionCustomRule):
    """``__schema`` / ``__type`` refused, with ``extensions.code``."""

    def report_error(self, error: GraphQLError) -> None:
        super().report_error(GraphQLError(error.message, error.nodes, extensions={"code": "INTROSPECTION_DISABLED"}))


@lru_cache(maxsize=CACHE_SIZE)
def parse_document(query: str, max_tokens: int | None) -> DocumentNode:
    """The parsed document (cached); raises ``GraphQLError`` with a code on bad syntax or size."""
    try:
        return parse(query, max_tokens=max_tokens)
    except GraphQLError as exc:
        if "tokens" in exc.message and "Parsing aborted" in exc.message:
            raise GraphQLError(f"The document has more than {max_tokens} tokens.",
                               extensions={"code": "TOO_MANY_TOKENS"}) from None
        raise


def measure(document: DocumentNode) -> Iterator[tuple[OperationDefinitionNode, int, int]]:
    """``(operation, depth, aliases)`` for each operation, fragments expanded."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    memo: dict[str, tuple[int, int]] = {}

    def walk(node: SelectionSetNode, visiting: frozenset[str]) -> tuple[int, int]:
        depth = aliases = 0
        for sel in node.selections:
            if isinstance(sel, FieldNode):
                d, a = walk(sel.selection_set, visiting) if sel.selection_set else (0, 0)
                depth = max(depth, d + (sel.name.value not in DEPTH_FREE))
                aliases += a + (sel.alias is not None)
            elif isinstance(sel, InlineFragmentNode):
                d, a = walk(sel.selection_set, visiting)
                depth, aliases = max(depth, d), aliases + a
            elif isinstance(sel, FragmentSpreadNode):
                name = sel.name.value
                if name in visiting or name not in fragments:
                    continue  # cycles and unknown fragments are the validation rules' to report
                if name not in memo:
                    memo[name] = walk(fragments[name].selection_set, visiting | {name})
                d, a = memo[name]
                depth, aliases = max(depth, d), aliases + a
        return depth, aliases

    for op in document.definitions:
        if isinstance(op, OperationDefinitionNode):
            yield (op, *walk(op.selection_set, frozenset()))


def limit_errors(document: DocumentNode, limits: QueryLimits) -> list[GraphQLError]:
    """One error per operation and limit exceeded."""
    errors = []
    for op, depth, aliases in measure(document):
        name = f'"{op.name.value}"' if op.name else "The operation"
        if depth > limits.max_depth:
            errors.append(GraphQLError(f"{name} is {depth} levels deep; the limit is {limits.max_depth}.", op,
                                       extensions={"code": "QUERY_TOO_DEEP"}))
        if aliases > limits.max_aliases:
            errors.append(GraphQLError(f"{name} uses {aliases} aliases; the limit is {limits.max_aliases}.", op,
                                       extensions={"code": "TOO_MANY_ALIASES"}))
    return errors


@lru_cache(maxsize=CACHE_SIZE)
def check_document(schema: GraphQLSchema, query: str, limits: QueryLimits | None) -> tuple[GraphQLError, ...]:
    """Limit errors, else the standard validation errors of a document (cached; without limits,
    only the validation rules)."""
    document = parse_document(query, limits.max_tokens if limits else None)
    errors = limit_errors(document, limits) if limits else []
    if errors:
        return tuple(errors)
    rules = tuple(specified_rules) if limits is None or limits.introspection else (*specified_rules, _NoIntrospection)
    return tuple(validate(schema, document, rules))


async def refusals(schema: GraphQLSchema, query: str, document: DocumentNode, operation_name: str | None,
                   variables: dict[str, Any] | None, limits: QueryLimits | None,
                   context: Any) -> list[GraphQLError]:
    """Why the operation may not run: its document's errors (:func:`check_document`), else its
    cost over the ceiling, else the caller's rate limit, charged the cost. Empty: it may run."""
    errors = check_document(schema, query, limits)
    if errors:
        return list(errors)
    budget = context.budget if isinstance(context, Context) else None
    if limits is None or (limits.max_cost is None and budget is None):
        return []
    cost = operation_cost(schema, document, operation_name, variables,
                          default_page_size=limits.default_page_size, max_page_size=limits.max_page_size)
    if isinstance(context, Context):
        context.cost = cost
    if limits.max_cost is not None and cost > limits.max_cost:
        return [GraphQLError(f"The operation's estimated cost is {cost}; the limit is {limits.max_cost} "
                             "(fields × page sizes: ask for smaller pages or fewer fields).",
                             extensions={"code": "QUERY_TOO_COSTLY", "cost": cost, "maxCost": limits.max_cost})]
    decision = await budget.charge(cost) if budget is not None else None
    if decision is not None and not decision.allowed:
        return [GraphQLError(f"Rate limit exceeded: the operation costs {cost} points; "
                             f"retry in {decision.retry_after} s.",
                             extensions={"code": "too_many_requests", "cost": cost,
                                         "retryAfter": decision.retry_after})]
    return []
