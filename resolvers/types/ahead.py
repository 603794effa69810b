"""Reading ahead: the references a query will follow, loaded from remote registries as soon as
their XIDs are known.

A query executes level by level (``resolvers/execution.py``): a reference field (a message's
``dataschema``, an endpoint's ``messagegroups``) is resolved once every object of its level is
complete, a step later than the page that holds it was read — and a message's page is complete
only once its ``basemessageuri`` chains are followed. A remote read that waits for that costs a
round trip more than the data needs. So a reference field can be marked with a *look-ahead*
(:func:`ahead`): ``form(context, entities, field_nodes, fragments)`` names, from the entities
alone, the ``(registry, as_of, XID)`` its resolver will load for them (``field_nodes``: the
field as the query selects it). When a page is read for a connection (``resolvers/types/pages.py``),
the look-aheads of the fields its nodes select are asked (:func:`page_ahead`) and their loads of
remote registries started at once, as a batch of their own, not awaited
(:meth:`~adapters.batching.EntityBatcher.read_ahead`: nothing the request's loaders hold their
batches for — the executor's paced work — delays them): they go out beside the page's other
loads (its messages' bases), and the resolver, a level later, finds them loaded or under way.
A message whose chain is still to be followed is asked twice: for what it declares itself as
soon as the page is read (when its chain's first base is read ahead too,
:meth:`~resolvers.loaders.Loaders.settle`), and for what it inherits as soon as its own chain is
in (with the others completed in the same loop turn: one remote's answer does not wait for
another's).

Only loads from remote registries (:attr:`~adapters.base.RegistrySource.round_trip`) are read
ahead: a round trip saved is worth it; a read of the gateway's own store is not, and keeps its
level (the store calls per level stay as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode
from strawberry.types import Info

from adapters.base import Entity as SourceEntity
from resolvers.types.nodes import node_class

#: ``(registry, as_of, XID as written)``: a load of the request's entity loader.
Key = tuple[str, "int | None", str]
#: A look-ahead: the loads a field's resolver will make for ``entities``.
Form = Callable[[Any, Sequence[SourceEntity], Sequence[FieldNode], dict[str, Any]], list[Key]]

F = TypeVar("F", bound=Callable[..., Any])


def ahead(form: Form) -> Callable[[F], F]:
    """Marks a reference field's resolver method with its look-ahead (see the module)."""
    def mark(method: F) -> F:
        method.ahead = form  # type: ignore[attr-defined]
        return method
    return mark


#: Per object type: its fields' look-aheads by GraphQL and Python name.
_FORMS: dict[type, dict[str, Form]] = {}


def _forms(cls: type) -> dict[str, Form]:
    found = _FORMS.get(cls)
    if found is None:
        found = {}
        definition = getattr(cls, "__strawberry_definition__", None)
        for field in getattr(definition, "fields", ()):
            resolver = getattr(field, "base_resolver", None)
            form = getattr(getattr(resolver, "wrapped_func", None), "ahead", None)
            if form is not None:
                for name in (field.python_name, field.graphql_name):
                    if name:
                        found[name] = form
        _FORMS[cls] = found
    return found


def fields_under(nodes: Sequence[FieldNode], fragments: dict[str, Any], *,
                 conditional: bool = False) -> dict[str, list[FieldNode]]:
    """The fields selected directly under ``nodes`` (through fragments), by name; a field or
    fragment with a directive (``@skip``, ``@include``) is left out — it may not be read — unless
    ``conditional``."""
    out: dict[str, list[FieldNode]] = {}
    spread: set[str] = set()
    pending = [n.selection_set for n in nodes if n.selection_set is not None]
    while pending:
        for selection in pending.pop().selections:
            if selection.directives and not conditional:
                continue
            if isinstance(selection, FieldNode):
                out.setdefault(selection.name.value, []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                fragment = fragments.get(selection.name.value)
                if fragment is not None:
                    pending.append(fragment.selection_set)
    return out


def _node_fields(connection: Sequence[FieldNode], fragments: dict[str, Any]) -> dict[str, list[FieldNode]]:
    """The fields a connection's query selects on its nodes (``nodes``, ``edges { node }``)."""
    under = fields_under(connection, fragments)
    nodes = list(under.get("nodes", ()))
    edges = under.get("edges")
    if edges:
        nodes += fields_under(edges, fragments).get("node", [])
    return fields_under(nodes, fragments) if nodes else {}


def page_ahead(info: Info) -> Callable[[Sequence[SourceEntity]], None] | None:
    """For a connection field: what reads ahead for the entities of a page read for it (the
    loads of the look-aheads of the fields its nodes select, from remote registries; given it,
    :meth:`~resolvers.loaders.Loaders.settle` reads the first bases of the page's chains ahead
    too); ``None`` when no registry is remote."""
    ctx = info.context
    sources = ctx.sources
    if not any(s.round_trip for s in sources.values()):
        return None
    raw = info._raw_info
    fragments = raw.fragments
    selected = _node_fields(raw.field_nodes, fragments)

    def read(entities: Sequence[SourceEntity]) -> None:
        if not selected:
            return
        by_class: dict[type, list[SourceEntity]] = {}
        for entity in entities:
            by_class.setdefault(node_class(entity), []).append(entity)
        keys: list[Key] = []
        for cls, members in by_class.items():
            forms = _forms(cls)
            for name, nodes in selected.items():
                form = forms.get(name)
                if form is not None:
                    keys += form(ctx, members, nodes, fragments)
        if keys:
            ctx.loaders.batcher.read_ahead(keys)

    return read
