"""The executor of the gateway's schema: graphql-core's, with a cheaper path for the fields most
of a response is made of.

Most fields of a response are attributes read from an entity (resolver-less fields, resolved
by :func:`resolvers.types.read_field`) or small synchronous methods without arguments
(``xid``, ``id``, ``pageInfo``, ``totalCount``). For each of them graphql-core builds a
``GraphQLResolveInfo`` and strawberry wraps it in its ``Info``, converts the (absent) arguments
and runs the field's extension chain — several times the cost of reading the value. The
executor decides once per field definition whether it can skip all that (a *plan*), and then
calls the value's reader directly and serialises a scalar result in place. Everything else —
fields with arguments, ``info``, extensions or awaiting resolvers, and every error or null in
a non-null position — takes graphql-core's own path, so results and errors are the same.

Lists are completed by the request's pacer (``resolvers/pacing.py``): in slices of a few
milliseconds, so that a long page does not keep the event loop from everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from graphql import GraphQLField, GraphQLNonNull, GraphQLObjectType, is_leaf_type
from graphql.execution.executor import to_nodes
from graphql.pyutils import Path, Undefined
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

#: ``read(source)`` of a field, its return type, and the leaf type to serialise a value to
#: (``None``: not a scalar or enum).
Plan = tuple[Callable[[Any], Any], Any, Any]

_PLANS: dict[int, tuple[GraphQLField, Plan | None]] = {}


def plan_of(field_def: GraphQLField) -> Plan | None:
    """How a field resolves without ``info`` (``None``: it needs graphql-core's path)."""
    cached = _PLANS.get(id(field_def))
    if cached is not None and cached[0] is field_def:
        return cached[1]
    plan = _plan(field_def)
    _PLANS[id(field_def)] = (field_def, plan)
    return plan


def _plan(field_def: GraphQLField) -> Plan | None:
    field = (field_def.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(field, StrawberryField) or field.extensions or field.is_subscription or field_def.args:
        return None
    read: Callable[[Any], Any]
    resolver = field.base_resolver
    if resolver is None:
        if not getattr(field_def.resolve, "_is_default", False):
            return None
        default, name = field.default_resolver, field.python_name
        read = lambda source: default(source, name)  # noqa: E731
    else:
        if (resolver.is_async or resolver.arguments or resolver.self_parameter is None
                or any(p is not None and p is not resolver.self_parameter
                       for p in resolver.reserved_parameters.values())):
            return None  # it awaits, or takes arguments, info, root or parent
        read = cast(Callable[[Any], Any], resolver.wrapped_func)
    type_ = field_def.type
    named = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    return read, type_, named if is_leaf_type(named) else None


class GatewayExecutor(StrawberryGraphQLCoreExecutionContext):
    """graphql-core's executor with the planned fields resolved in place (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        manager = self.middleware_manager
        #: field middleware (a schema extension's ``resolve`` hook) needs every field's info
        self.planned = manager is None or manager._middleware_resolvers is None

    def execute_field(
        self, parent_type: GraphQLObjectType, source: Any, field_details_list: Any, path: Path,
        position_context: Any,
    ) -> Any:
        field_def = parent_type.fields.get(field_details_list[0].node.name.value)
        plan = plan_of(field_def) if field_def is not None and self.planned else None
        if plan is None:
            return super().execute_field(parent_type, source, field_details_list, path, position_context)
        read, return_type, leaf = plan
        try:
            result = read(source)
            if leaf is not None and result is not None and not isinstance(result, Exception) \
                    and not self.is_awaitable(result):
                serialized = leaf.serialize(result)
                if serialized is not None and serialized is not Undefined:
                    return serialized
            info = self.build_resolve_info(field_def, to_nodes(field_details_list), parent_type, path)
            if self.is_awaitable(result):
                return self.complete_awaitable_value(return_type, field_details_list, info, path, result,
                                                     position_context)
            completed = self.complete_value(return_type, field_details_list, info, path, result, position_context)
            if self.is_awaitable(completed):
                return self._await_completed(completed, return_type, field_details_list, path)
            return completed
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None

    def complete_iterable_value(
        self, item_type: Any, field_details_list: Any, info: Any, path: Path, items: Any, position_context: Any,
    ) -> Any:
        """A list's items, completed by the request's pacer (``resolvers/pacing.py``) unless
        the context has none or the list is streamed."""
        pacer = getattr(self.context_value, "pacer", None)
        if pacer is None or self.get_stream_usage(field_details_list, path) is not None:
            return super().complete_iterable_value(item_type, field_details_list, info, path, items, position_context)
        return pacer.complete_list(self, item_type, field_details_list, info, path, items, position_context)

    async def _await_completed(self, completed: Any, return_type: Any, field_details_list: Any, path: Path) -> Any:
        try:
            return await completed
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None
