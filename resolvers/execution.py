"""The executor of the gateway's schema: graphql-core's (a subclass of its public ``Executor``,
given to strawberry as ``execution_context_class``), with compiled plans for the fields most of a
response is made of.

Over 600 lines: one class whose overrides of graphql-core's methods share one execution's state
(the argument conversion it needs is ``resolvers/arguments.py``).

For each selection set (graphql-core collects one per object type and field group, fragments
and ``@skip`` / ``@include`` already applied with the request's variables) the executor builds a
*plan* once per execution: per response key, how the field resolves.

- **Leaf reads.** Attributes (resolver-less fields, read by :func:`resolvers.types.read_field`)
  and small synchronous methods without arguments (``xid``, ``id``, ``totalCount``) of a scalar
  or enum type are read and serialised in place: no ``Path``, no ``GraphQLResolveInfo``, no
  strawberry ``Info``, no argument conversion, no extension chain.
- **Reads of objects and lists** (``nodes``, ``pageInfo``) skip the same wrapping; their value is
  completed by graphql-core.
- **Resolver calls** (connection fields and references: arguments, ``info``, awaiting) call the
  resolver directly: their arguments are coerced and converted once per field node and request
  (:mod:`resolvers.arguments`; the :class:`~resolvers.connections.Paged` extension's ``paging``
  included), the strawberry ``Info`` is built, and the rest of strawberry's wrapping (extension
  chain) is skipped. Not in a schema with exception handlers, nor for arguments strawberry
  converts beyond their GraphQL type (``GlobalID``, ``Maybe``, ``from_input``).

Strawberry's definitions of the schema, its fields and arguments are read from the public
``extensions`` of the graphql-core objects (:func:`resolvers.arguments.definition`); resolvers
get the ``info`` strawberry's own executor builds (:class:`ResolveInfo`).

**Documents without variables.** What an operation without variables collects and plans — each
field group's sub-fields, each selection set's plan — is the same for every request of it (the
parser's cache gives every request the same document), so it is kept with the operation
(:class:`_Constant`) and the next request of it starts from there.

Everything else — fields with other extensions, schema extensions with a ``resolve`` hook,
abstract types, and every error or null in a non-null position — takes graphql-core's own path,
so results and errors are the same as strawberry's own executor (``tests/graphql/
test_graphql_executor.py`` compares them).

**Level by level.** A query executes breadth-first (:meth:`GatewayExecutor.execute_root_grouped_field_set`):
where an object is completed, its awaiting resolvers (connections, references) are called and
their places in its result left open; every one called on a level is awaited together, once, and
their values are completed into those places, which calls the next level's. A resolver marked
with a form for many objects (:func:`resolvers.types.batched`) is called once for all the objects
of a level that ask for it with the same arguments (or, for a form that takes each call's
arguments, once for all its calls on the level: a root field's aliases). An error that would null
an object already completed (a failed non-null field) executes the query again one field at a
time (below), which nulls it exactly as graphql-core does; the errors reported meanwhile are
dropped first.

Otherwise (a mutation, field middleware, ``@stream``; and whatever runs while a level is awaited)
the awaiting fields of an object and the awaiting items of a list are awaited together by
:func:`resolvers.gathering.gather` (inside the request's task, no task per awaitable). When the
response is built, the request's loaders are released (:meth:`~resolvers.loaders.Loaders.release`):
the loaders and the context refer to each other, and without it every entity of the response
would be left to the cycle collector.

Long lists are paced (``resolvers/pacing.py``): with the request's :class:`~resolvers.pacing.Pacer`
on, :meth:`GatewayExecutor.between_chunks` is asked after every item whether the running slice
of the event loop is spent; when it is, the rest of the list is completed in a task that waits
for its turn, holding the request's loaders' batches meanwhile so that they stay whole.
"""

from __future__ import annotations

import asyncio
import functools
import operator
from collections.abc import Callable, Sequence
from time import perf_counter
from types import CoroutineType
from typing import Any, NamedTuple, cast, overload

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLStreamDirective,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    VariableNode,
    is_leaf_type,
)
from graphql.execution import Executor, get_argument_values
from graphql.pyutils import Path, Undefined

from adapters.base import Entity as SourceEntity
from resolvers.arguments import arguments_converter, definition
from resolvers.connections import Paged, paging_of
from resolvers.gathering import gather
from resolvers.loaders import Loaders
from resolvers.pacing import Pacer, Slicer, slicer
from resolvers.types import attribute_reader, read_field

#: ``read(source)`` of a field, its return type, and the leaf type to serialise a value to
#: (``None``: not a scalar or enum).
Plan = tuple[Callable[[Any], Any], Any, Any]

#: A resolver called directly: the strawberry field, the function, whether it takes ``self``,
#: the name of its ``info`` parameter (``None``: it takes none), whether it is :class:`Paged`,
#: whether it is a coroutine function, its form for many objects (:func:`resolvers.types.batched`),
#: and the converter of its coerced arguments (:func:`resolvers.arguments.arguments_converter`).
Call = tuple[Any, Callable[..., Any], bool, "str | None", bool, bool, "Callable[..., Any] | None",
             Callable[[dict[str, Any]], dict[str, Any]]]

_PLANS: dict[int, tuple[GraphQLField, Plan | None]] = {}
_CALLS: dict[int, tuple[GraphQLField, Call | None]] = {}

#: Python types whose values a scalar serialises as they are, checked before trusting a read
#: (anything else takes graphql-core's path).
_PLAIN = frozenset({str, int, float, bool, dict, list})
_FAILED = object()
#: ``Path(prev, key, typename)`` from a tuple, without the named tuple's Python ``__new__``.
_path: Callable[[tuple[Any, Any, Any]], Path] = functools.partial(tuple.__new__, Path)
_NO_DICT: dict[str, Any] = {}
_NOTHING = object()
#: Per list type (by id, kept with it so that the id stays its own): the Python type its items
#: serialise as they are, or ``_NOTHING``.
_LIST_AS_IS: dict[int, tuple[Any, Any]] = {}


def _list_as_is(type_: Any) -> Any:
    """For ``[String!]`` and the like: the Python type whose values the items serialise as they
    are (``_NOTHING``: none; other lists take graphql-core's completion)."""
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if not isinstance(type_, GraphQLList):
        return _NOTHING
    item = type_.of_type.of_type if isinstance(type_.of_type, GraphQLNonNull) else type_.of_type
    return _SERIALIZED_AS_IS.get(item.name, _NOTHING) if isinstance(item, GraphQLScalarType) else _NOTHING


#: Python types of completed values (never awaitable: no ``is_awaitable`` asked).
_COMPLETED = frozenset({dict, list, str, int, bool, float, type(None)})
#: Built-in scalars that serialise a value of this Python type as it is (``serialize`` not called).
_SERIALIZED_AS_IS: dict[str, type] = {"String": str, "ID": str, "Boolean": bool}


#: Items of a list completed between two calls of :meth:`GatewayExecutor.between_chunks`.
LIST_CHUNK = 100


def _objects_of(type_: Any) -> Any:
    """The item type of a list of objects (``[T]``, ``[T!]!``: ``T`` or ``T!``) whose items the
    executor completes itself, else ``None``."""
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if not isinstance(type_, GraphQLList):
        return None
    item = type_.of_type
    named = item.of_type if isinstance(item, GraphQLNonNull) else item
    return item if isinstance(named, GraphQLObjectType) and named.is_type_of is not None else None


def plan_of(field_def: GraphQLField) -> Plan | None:
    """How a field resolves without ``info`` (``None``: it needs graphql-core's path)."""
    cached = _PLANS.get(id(field_def))
    if cached is not None and cached[0] is field_def:
        return cached[1]
    plan = _plan(field_def)
    _PLANS[id(field_def)] = (field_def, plan)
    return plan


def _strawberry_field(field_def: GraphQLField) -> Any:
    """Strawberry's field of a GraphQL field (``None``: not a strawberry field, or a subscription's)."""
    field = definition(field_def)
    return field if field is not None and hasattr(field, "base_resolver") and not field.is_subscription else None


def _plan(field_def: GraphQLField) -> Plan | None:
    field = _strawberry_field(field_def)
    if field is None or field.extensions or field_def.args:
        return None
    read: Callable[[Any], Any]
    resolver = field.base_resolver
    if resolver is None:
        if not getattr(field_def.resolve, "_is_default", False):
            return None
        default, name = field.default_resolver, field.python_name
        read = (attribute_reader(field.origin if isinstance(field.origin, type) else None, name)
                if default is read_field
                else lambda source: default(source, name))
    else:
        if (resolver.is_async or resolver.arguments or resolver.self_parameter is None
                or any(p is not None and p is not resolver.self_parameter
                       for p in resolver.reserved_parameters.values())):
            return None  # it awaits, or takes arguments, info, root or parent
        path = getattr(resolver.wrapped_func, "reads", None)  # ``resolvers.types.reads``
        read = operator.attrgetter(path) if path else cast(Callable[[Any], Any], resolver.wrapped_func)
    type_ = field_def.type
    named = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    return read, type_, named if is_leaf_type(named) else None


def call_of(field_def: GraphQLField) -> Call | None:
    """How a resolver with arguments or ``info`` is called directly (``None``: through strawberry).
    Only for schemas without exception handlers (:attr:`GatewayExecutor.direct_calls`)."""
    cached = _CALLS.get(id(field_def))
    if cached is not None and cached[0] is field_def:
        return cached[1]
    call = _call(field_def)
    _CALLS[id(field_def)] = (field_def, call)
    return call


def _call(field_def: GraphQLField) -> Call | None:
    field = _strawberry_field(field_def)
    if field is None or field.base_resolver is None:
        return None
    paged = [e for e in field.extensions if isinstance(e, Paged)]
    if len(paged) != len(field.extensions) or len(paged) > 1:
        return None  # an extension whose effect is not known here
    resolver = field.base_resolver
    if resolver.parent_parameter is not None or resolver.root_parameter is not None:
        return None
    convert = arguments_converter(field_def)
    if convert is None:
        return None  # arguments strawberry converts otherwise
    info = resolver.info_parameter
    return (field, cast(Callable[..., Any], resolver.wrapped_func), resolver.self_parameter is not None,
            info.name if info is not None else None, bool(paged), resolver.is_async,
            getattr(resolver.wrapped_func, "many", None) if resolver.self_parameter is not None else None,
            convert)


def _pacing_of(context: Any) -> tuple[Pacer, Slicer] | None:
    """The request's pacer and the running loop's turns, when its lists are paced."""
    pacer = getattr(context, "pacer", None)
    if not isinstance(pacer, Pacer) or pacer.slice_seconds <= 0:
        return None
    try:
        return pacer, slicer()
    except RuntimeError:  # no event loop: a synchronous execution has nothing to give turns to
        return None


class _Deferred:
    """An awaiting field of a level (:meth:`GatewayExecutor._run_levels`): the resolver's
    awaitable (then its completion's, when that awaits too), and where its value goes."""

    __slots__ = ("field_details_list", "info", "key", "many", "path", "results", "return_type", "value")

    def __init__(self, value: Any, return_type: Any, field_details_list: Any, info: Any, path: Any,
                 results: Any, key: str | None) -> None:
        self.value, self.return_type, self.field_details_list = value, return_type, field_details_list
        self.info, self.path, self.results, self.key = info, path, results, key
        #: a field resolved with the others of its level: the resolver's form for many objects,
        #: the object, how its strawberry ``info`` is made (class, field) and the arguments
        self.many: tuple[Callable[..., Any], Any, Any, dict[str, Any]] | None = None


#: Converted arguments of field nodes written without variables (by id, kept with the node so
#: that the id stays its own, and the field): the same for every request of a cached document.
#: Resolvers do not change them (a :class:`Paging` is frozen). Emptied when full.
_CONSTANT_ARGUMENTS: dict[int, tuple[Any, GraphQLField, dict[str, Any]]] = {}
_CONSTANT_ARGUMENTS_BOUND = 4096


class _Constant:
    """What executing an operation without variables works out the same for every request of it
    (one schema, the document cached by the parser): each field group's collected sub-fields, by
    object type and field nodes, and the plans of the selection sets so collected. (``@skip`` and
    ``@include`` with literal arguments are constant too; ``@defer`` and ``@stream`` are not kept.)"""

    __slots__ = ("fragments", "grouped", "operation", "plans", "schema", "sub_fields")

    def __init__(self, schema: Any, operation: Any, fragments: Any) -> None:
        #: what the node ids below belong to, kept alive so that the ids stay theirs
        self.schema, self.operation, self.fragments = schema, operation, fragments
        self.sub_fields: dict[tuple[Any, ...], Any] = {}
        #: the selection sets collected above (by id), and their plans (as in ``_selection_plans``)
        self.grouped: dict[int, Any] = {}
        self.plans: dict[int, tuple[Any, GraphQLObjectType, list[tuple[str, Any, Any, Any]]]] = {}


#: Per operation (by id) of the documents run without variables. Emptied when full.
_CONSTANT_OPERATIONS: dict[int, _Constant] = {}
_CONSTANT_OPERATIONS_BOUND = 256


def _constant_of(schema: Any, operation: Any, fragments: dict[str, Any]) -> _Constant | None:
    """The :class:`_Constant` of an operation without variables (``None``: it has some, or a
    fragment does)."""
    if operation.variable_definitions or any(f.variable_definitions for f in fragments.values()):
        return None
    found = _CONSTANT_OPERATIONS.get(id(operation))
    if found is not None and found.operation is operation and found.schema is schema:
        return found
    if len(_CONSTANT_OPERATIONS) >= _CONSTANT_OPERATIONS_BOUND:
        _CONSTANT_OPERATIONS.clear()
    found = _CONSTANT_OPERATIONS[id(operation)] = _Constant(schema, operation, fragments)
    return found


#: Per abstract type (interface, union; the schema's own objects) and class of object: the object
#: type its instances resolve to (``GatewayExecutor.complete_abstract_value``). Emptied when full.
_RUNTIME_TYPES: dict[tuple[Any, type], GraphQLObjectType] = {}
_RUNTIME_TYPES_BOUND = 1024


def _uses_variables(node: Any) -> bool:
    """Whether a field node's arguments refer to a variable (anywhere in their values)."""
    values = [argument.value for argument in node.arguments or ()]
    while values:
        value = values.pop()
        if isinstance(value, VariableNode):
            return True
        if isinstance(value, ListValueNode):
            values.extend(value.values)
        elif isinstance(value, ObjectValueNode):
            values.extend(f.value for f in value.fields)
    return False


def _batches(level: list[_Deferred]) -> list[list[_Deferred]]:
    """A level's fields resolved for many objects at once, grouped by form and arguments."""
    groups: dict[tuple[int, int], list[_Deferred]] = {}
    for deferred in level:
        if deferred.many is not None:
            many, _, _, kwargs = deferred.many
            groups.setdefault((id(many), 0 if getattr(many, "each", False) else id(kwargs)), []).append(deferred)
    return list(groups.values())


def _call_many(batch: list[_Deferred]) -> Any:
    """One call of a field's form for many objects (:func:`resolvers.types.batched`)."""
    calls = [d.many for d in batch if d.many is not None]  # every one: _batches groups those with a form
    many, _, (info_class, field), kwargs = calls[0]
    try:
        infos = _Infos(info_class, field, [d.info for d in batch])
        if getattr(many, "each", False):  # each call's own arguments
            return many([c[1] for c in calls], infos, [c[3] for c in calls])
        return many([c[1] for c in calls], infos, **kwargs)
    except Exception as raw_error:
        return _awaiting_error(raw_error)


class _Infos(Sequence[Any]):
    """The strawberry ``Info`` of each object of a batch, made when first asked for (a form for
    many objects reads the context from one and reports through the others only on errors)."""

    __slots__ = ("_field", "_info_class", "_made", "_raw")

    def __init__(self, info_class: Any, field: Any, raw: list[Any]) -> None:
        self._info_class, self._field, self._raw = info_class, field, raw
        self._made: list[Any] = [None] * len(raw)

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self._raw))[index]]
        made = self._made[index]
        if made is None:
            made = self._made[index] = self._info_class(_raw_info=self._raw[index], _field=self._field)
        return made


def _each(values: Any, count: int) -> list[Any]:
    """One value per object of a batch (a failed call: its error for each)."""
    if isinstance(values, Exception):
        return [values] * count
    if not isinstance(values, list) or len(values) != count:
        return [RuntimeError(f"a batched resolver gave {type(values).__name__} for {count} objects")] * count
    return values


class _Rerun(Exception):
    """A non-null field of an already completed object failed: the query runs again, one field
    at a time."""


async def _awaiting_error(error: Exception) -> Any:
    raise error


async def _settle_all(awaitables: list[Any]) -> list[Any]:
    """Each awaitable's result or exception (:func:`gather` with ``settle``); one alone is
    awaited as it is (the task waits for what it waits for: no gather, no waiter)."""
    if len(awaitables) != 1:
        return await gather(*awaitables, settle=True)
    try:
        return [await awaitables[0]]
    except Exception as exc:
        return [exc]


class ResolveInfo(NamedTuple):
    """The ``info`` graphql-core passes resolvers, as strawberry's executor builds it: the
    variables as a plain dict, and the operation's extensions (``Info.operation_extensions``)."""

    field_name: str
    field_nodes: list[FieldNode]
    return_type: GraphQLOutputType
    parent_type: GraphQLObjectType
    path: Path
    schema: GraphQLSchema
    fragments: dict[str, FragmentDefinitionNode]
    root_value: Any
    operation: OperationDefinitionNode
    variable_values: dict[str, Any]
    context: Any
    is_awaitable: Callable[[Any], bool]
    abort_signal: Any
    async_helpers: Any
    operation_extensions: dict[str, Any] | None


#: Where ``strawberry.cast`` marks the object type it casts an object to.
_CAST_ATTRIBUTE = "__as_strawberry_type__"


class GatewayExecutor(Executor):
    """graphql-core's executor with compiled selection-set plans (see the module). It delivers
    no incremental results: ``@defer`` and ``@stream`` are not the gateway's."""

    def __init__(self, *args: Any, operation_extensions: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.operation_extensions = operation_extensions
        manager = self.middleware_manager
        #: field middleware (a schema extension's ``resolve`` hook) needs every field's info
        self.planned = manager is None or not manager.middlewares
        strawberry_schema = definition(self.schema)
        config = getattr(strawberry_schema, "config", None)
        #: the class of the strawberry ``Info`` resolvers are given
        self.info_class: Any = config.info_class if config is not None else None
        #: resolvers are called directly (:func:`call_of`): not when an exception handler may apply
        self.direct_calls = config is not None and not getattr(strawberry_schema, "exception_handlers", ())
        #: sub-fields collected for an operation without variables, by object type and field group
        self._collected: dict[tuple[Any, int], tuple[Any, Any]] = {}
        #: per selection set (kept alive with its plan, so that its id stays unique) and object type
        self._selection_plans: dict[int, tuple[Any, GraphQLObjectType, list[tuple[str, Any, Any, Any]]]] = {}
        #: per object type (by name): the class of the objects found to be of it
        self._of_type: dict[str, type] = {}
        #: converted arguments per field node of this request
        self._arguments: dict[int, tuple[Any, dict[str, Any]]] = {}
        #: resolve infos per field group (kept alive with it, so that its id stays unique)
        self._infos: dict[int, tuple[Any, GraphQLObjectType, type, tuple[Any, ...], tuple[Any, ...]]] = {}
        #: ``@stream`` is known to the schema (not the gateway's): lists take graphql-core's path
        self.stream_directive = GraphQLStreamDirective in self.schema.directives
        #: what every request of this operation works out the same, when it has no variables
        self._constant = _constant_of(self.schema, self.operation, self.fragment_definitions) \
            if self.planned else None
        #: the request's pacing (``resolvers/pacing.py``): its pacer and the loop's turns, or ``None``
        self._pacing = _pacing_of(self.context_value)
        #: executing level by level (see :meth:`execute_root_grouped_field_set`): the awaiting
        #: resolvers called on the level being completed, else ``None``
        self._level: list[_Deferred] | None = None
        #: values completed on a level that are still awaited (graphql-core's path)
        self._stragglers: list[_Deferred] = []
        #: the rests of the level's paced lists (tasks), each waiting for its turn
        self._paused: list[asyncio.Future[Any]] = []

    def build_resolve_info(
        self, field_def: GraphQLField, field_nodes: list[FieldNode], parent_type: GraphQLObjectType, path: Path,
    ) -> Any:
        """A :class:`ResolveInfo`, as strawberry's executor builds it."""
        return ResolveInfo(
            field_nodes[0].name.value, field_nodes, field_def.type, parent_type, path, self.schema,
            self.fragment_definitions, self.root_value, self.operation, self.variable_values.coerced,
            self.context_value, self.is_awaitable, self.abort_signal, self.async_helpers, self.operation_extensions)

    def build_response(self, data: dict[str, Any] | None) -> Any:
        """graphql-core's, and then the request's loaders are released (:meth:`Loaders.release`)."""
        response = super().build_response(data)
        loaders = getattr(self.context_value, "loaders", None)
        if isinstance(loaders, Loaders):
            loaders.release()
        return response

    # -- level by level -----------------------------------------------------------------------

    def execute_root_grouped_field_set(
        self, root_type: GraphQLObjectType, root_value: Any, grouped_field_set: Any, serially: bool,
        position_context: Any,
    ) -> Any:
        """A query's fields, level by level: each awaiting resolver (connections, references) is
        called where its object is completed, and all those of a level are awaited together, once
        (:meth:`_run_levels`); the values they give are completed in place. Anything else (a
        mutation, field middleware, ``@stream``) takes graphql-core's way, one field at a time."""
        if serially or not self.planned or self.stream_directive or position_context is not None \
                or self.abort_signal is not None:
            return super().execute_root_grouped_field_set(root_type, root_value, grouped_field_set, serially,
                                                          position_context)
        context = self.context_value
        reported = getattr(context, "reported", None)
        mark = len(reported) if isinstance(reported, list) else 0
        self._level = []
        try:
            data = self.execute_fields(root_type, root_value, None, grouped_field_set, None)
        except BaseException:
            self._abandon()
            raise
        if not self._level and not self._stragglers and not self.is_awaitable(data):
            self._level = None
            return data
        return self._run_levels(data, (root_type, root_value, grouped_field_set, mark))

    async def _run_levels(self, data: Any, root: tuple[GraphQLObjectType, Any, Any, int]) -> Any:
        """Await each level's resolvers together and complete their values (which may call the
        next level's); an error that would null an object already completed (a non-null field's)
        executes the query again, one field at a time, which nulls it as graphql-core does."""
        holder = {"data": data}
        if self.is_awaitable(data):
            self._stragglers.append(_Deferred(data, None, None, None, None, holder, "data"))
        try:
            while self._level or self._stragglers or self._paused:
                while self._paused:  # the rests of paced lists first: their fields join this level
                    paused, self._paused = self._paused, []
                    await gather(*paused, settle=True)
                # while a level is awaited, what else runs (graphql-core's path) runs one field at a time
                level, self._level = self._level or [], None
                stragglers, self._stragglers = self._stragglers, []
                singles = [d for d in level if d.many is None]
                batches = _batches(level)
                values = await _settle_all([*(d.value for d in singles), *(_call_many(b) for b in batches),
                                            *(d.value for d in stragglers)])
                self._level = []
                for deferred, value in zip(singles, values, strict=False):
                    deferred.value = value
                for batch, value in zip(batches, values[len(singles):], strict=False):
                    for deferred, one in zip(batch, _each(value, len(batch)), strict=True):
                        deferred.value = one
                for done, deferred in enumerate(level):
                    if done and self._pacing is not None and self._slice_spent():  # a long level is paced too
                        pause = self.between_chunks(deferred.path, done, len(level))
                        if pause is not None:
                            try:
                                await pause
                            finally:
                                self._pacing[0].hold.give()  # taken by between_chunks
                    self._complete_deferred(deferred, deferred.value)
                for deferred, value in zip(stragglers, values[len(singles) + len(batches):], strict=True):
                    self._place(deferred, value)
        except _Rerun:
            self._abandon()
            self.collected_errors = type(self.collected_errors)()
            reported = getattr(self.context_value, "reported", None)
            if isinstance(reported, list):
                del reported[root[3]:]
            again = super().execute_root_grouped_field_set(root[0], root[1], root[2], False, None)
            return await again if self.is_awaitable(again) else again
        except BaseException:
            self._abandon()
            raise
        self._level = None
        return holder["data"]

    def _defer(
        self, call: Call, field_def: GraphQLField, parent_type: GraphQLObjectType, source: Any,
        field_details_list: Any, path: Path,
    ) -> _Deferred | None:
        """Call an awaiting resolver for :meth:`_run_levels` to await with the rest of its level
        (``None``: its arguments are bad; graphql-core's path reports them)."""
        field, func, takes_self, info_name, _, _, _, _ = call
        try:
            arguments = self._arguments_of(call, field_def, field_details_list[0])
        except Exception:
            return None
        info = self._resolve_info(field_def, field_details_list, parent_type, path)
        many = call[6]
        if many is not None:  # called with the rest of the level's (_run_levels)
            deferred = _Deferred(None, field_def.type, field_details_list, info, path, None, None)
            deferred.many = (many, source, (self.info_class, field), arguments)
        else:
            kwargs = dict(arguments)
            if info_name is not None:
                kwargs[info_name] = self.info_class(_raw_info=info, _field=field)
            try:
                value = func(source, **kwargs) if takes_self else func(**kwargs)
            except Exception as raw_error:
                value = _awaiting_error(raw_error)
            deferred = _Deferred(value, field_def.type, field_details_list, info, path, None, None)
        assert self._level is not None
        self._level.append(deferred)
        return deferred

    def _complete_deferred(self, deferred: _Deferred, value: Any) -> None:
        """A level's resolved value completed into its place (errors handled as graphql-core does)."""
        return_type = deferred.return_type
        try:
            if isinstance(value, Exception):
                raise value
            completed = self.complete_value(return_type, deferred.field_details_list, deferred.info, deferred.path,
                                            value, None)
        except Exception as raw_error:
            self._field_error(raw_error, deferred)
            completed = None
        deferred.results[deferred.key] = completed
        if completed.__class__ is CoroutineType or (completed.__class__ not in _COMPLETED
                                                    and self.is_awaitable(completed)):
            deferred.value = completed
            self._stragglers.append(deferred)

    def _place(self, deferred: _Deferred, value: Any) -> None:
        """An awaited completion put in its place."""
        if isinstance(value, Exception):
            if deferred.return_type is None:  # the root's own fields: the operation fails
                raise value
            self._field_error(value, deferred)
            value = None
        deferred.results[deferred.key] = value

    def _field_error(self, raw_error: Exception, deferred: _Deferred) -> None:
        """A level's field failed: null and reported; where it is non-null, the object around it
        (already completed) would be nulled: :class:`_Rerun`."""
        if isinstance(deferred.return_type, GraphQLNonNull):
            raise _Rerun from raw_error
        self.handle_field_error(raw_error, deferred.return_type, deferred.field_details_list, deferred.path)

    def _abandon(self) -> None:
        """Close the resolvers of a level that will not be awaited."""
        for deferred in (*(self._level or ()), *self._stragglers):
            if deferred.value.__class__ is CoroutineType:
                deferred.value.close()
        for task in self._paused:
            task.cancel()
        self._level = None
        self._stragglers = []
        self._paused = []

    # -- selection sets -----------------------------------------------------------------------

    def _selection_plan(
        self, parent_type: GraphQLObjectType, grouped_field_set: Any,
    ) -> list[tuple[str, Any, Any, Any]]:
        """``(response key, field group, leaf, other)`` per field of a selection set; ``leaf`` is
        ``(read, serialize, nullable, field definition, the Python type serialised as it is, the
        entity attribute it reads)`` for a leaf read, else ``None``; ``other``, for the other
        fields :meth:`execute_field` plans, ``(field definition, read plan, call)``."""
        cached = self._selection_plans.get(id(grouped_field_set))
        if cached is not None and cached[0] is grouped_field_set and cached[1] is parent_type:
            return cached[2]
        constant = self._constant  # kept with the operation when the selection set is (collect_subfields)
        shared = constant if constant is not None and \
            constant.grouped.get(id(grouped_field_set)) is grouped_field_set else None
        if shared is not None:
            cached = shared.plans.get(id(grouped_field_set))
            if cached is not None and cached[1] is parent_type:
                self._selection_plans[id(grouped_field_set)] = cached
                return cached[2]
        plan = []
        for response_name, field_details_list in grouped_field_set.items():
            field_def = parent_type.fields.get(field_details_list[0].node.name.value)
            field_plan = plan_of(field_def) if field_def is not None else None
            leaf = None
            if field_plan is not None and field_plan[2] is not None:
                read, return_type, named = field_plan
                leaf = (read, named.serialize, not isinstance(return_type, GraphQLNonNull), field_def,
                        _SERIALIZED_AS_IS.get(named.name), getattr(read, "entity_attribute", None))
            # any other field: how :meth:`execute_field` would take it, decided once here
            other = None
            if leaf is None and field_def is not None and self.planned:
                call = call_of(field_def) if field_plan is None and self.direct_calls else None
                if field_plan is not None or call is not None:
                    other = (field_def, field_plan, call, _objects_of(field_def.type) if field_plan else None)
            plan.append((response_name, field_details_list, leaf, other))
        self._selection_plans[id(grouped_field_set)] = (grouped_field_set, parent_type, plan)
        if shared is not None:
            shared.plans[id(grouped_field_set)] = (grouped_field_set, parent_type, plan)
        return plan

    def collect_subfields(self, return_type: GraphQLObjectType, field_details_list: Any) -> Any:
        """graphql-core's, and for an operation without variables, what an earlier request of it
        collected for the same object type and field nodes (:class:`_Constant`)."""
        constant = self._constant
        if constant is None:
            return super().collect_subfields(return_type, field_details_list)
        mine = self._collected.get((return_type, id(field_details_list)))
        if mine is not None:
            return mine[1]
        key = (return_type, *[id(details.node) for details in field_details_list])
        collected = constant.sub_fields.get(key)
        if collected is None:
            collected = super().collect_subfields(return_type, field_details_list)
            if not collected.new_defer_usages and not collected.forbidden_directive_instances and all(
                    details.defer_usage is None and details.fragment_variable_values is None
                    for details in field_details_list):
                constant.sub_fields[key] = collected
                constant.grouped[id(collected.grouped_field_set)] = collected.grouped_field_set
        self._collected[(return_type, id(field_details_list))] = (field_details_list, collected)
        return collected

    def execute_fields(
        self, parent_type: GraphQLObjectType, source_value: Any, path: Path | None, grouped_field_set: Any,
        position_context: Any, on_error: tuple[Any, Any] | None = None,
    ) -> Any:
        """graphql-core's, with the selection set's plan; ``on_error``: ``(return type, field
        group)`` of the position the object is in (a list item's), where an error raised while
        awaiting the fields is handled (at ``path``) instead of raised."""
        if not self.planned:
            return super().execute_fields(parent_type, source_value, path, grouped_field_set, position_context)
        results: dict[str, Any] = {}
        is_awaitable = self.is_awaitable
        awaitable_fields: list[str] = []
        plain = _PLAIN
        level = self._level
        try:
            cached = self._selection_plans.get(id(grouped_field_set))  # ``_selection_plan``, inlined
            selection_plan = (cached[2] if cached is not None and cached[0] is grouped_field_set
                              and cached[1] is parent_type else self._selection_plan(parent_type, grouped_field_set))
            entity = getattr(source_value, "__dict__", _NO_DICT).get("entity")
            if not isinstance(entity, SourceEntity):
                entity = None
            for response_name, field_details_list, leaf, other in selection_plan:
                if leaf is not None:  # read and serialise in place; anything unusual goes the long way
                    read, serialize, nullable, field_def, as_is, attribute = leaf
                    try:  # an attribute of the object's entity read straight from it
                        value = entity.attribute(attribute) if attribute is not None and entity is not None \
                            else read(source_value)
                    except Exception:  # graphql-core's path raises it again, located
                        value = _FAILED
                    else:
                        if value is None:
                            if nullable:
                                results[response_name] = None
                                continue
                        elif value.__class__ is as_is:
                            results[response_name] = value
                            continue
                        elif value.__class__ in plain:
                            try:
                                serialized = serialize(value)
                            except Exception:  # completing it again raises it, located
                                serialized = None
                            if serialized is not None and serialized is not Undefined:
                                results[response_name] = serialized
                                continue
                    field_path = _path((path, response_name, parent_type.name))
                    if value is _FAILED:
                        result = self.execute_field(parent_type, source_value, field_details_list, field_path,
                                                    position_context)
                    else:
                        result = self._complete_read(field_def, parent_type, field_details_list, field_path, value,
                                                     position_context)
                elif other is not None:  # as :meth:`execute_field` would, its decisions taken once
                    field_def, field_plan, call, objects = other
                    field_path = _path((path, response_name, parent_type.name))
                    if objects is not None and position_context is None:  # a list of objects read (``nodes``)
                        result = self._read_objects(objects, field_def, field_plan, parent_type, source_value,
                                                    field_details_list, field_path)
                        if result is not _FAILED:
                            results[response_name] = result
                            if result is not None and result.__class__ is not list:  # awaited (paused)
                                awaitable_fields.append(response_name)
                            continue
                    if level is not None and call is not None and call[5] and position_context is None:
                        deferred = self._defer(call, field_def, parent_type, source_value, field_details_list,
                                               field_path)
                        if deferred is not None:  # completed with the rest of its level, in place
                            deferred.results, deferred.key = results, response_name
                            results[response_name] = None
                            continue
                    result = self._execute_planned(field_def, field_plan, call, parent_type, source_value,
                                                   field_details_list, field_path, position_context)
                else:
                    result = self.execute_field(parent_type, source_value, field_details_list,
                                                _path((path, response_name, parent_type.name)), position_context)
                if result is not Undefined:
                    results[response_name] = result
                    if result.__class__ is CoroutineType or (result.__class__ not in _COMPLETED
                                                             and is_awaitable(result)):
                        awaitable_fields.append(response_name)
        except Exception:
            if awaitable_fields:
                self.settle_in_background([results[field] for field in awaitable_fields])
            raise
        if not awaitable_fields:
            return results
        return self._gather_fields(results, awaitable_fields, path, on_error)

    async def _gather_fields(
        self, results: dict[str, Any], awaitable_fields: list[str], path: Path | None = None,
        on_error: tuple[Any, Any] | None = None,
    ) -> dict[str, Any] | None:
        try:
            if len(awaitable_fields) == 1:
                field = awaitable_fields[0]
                results[field] = await results[field]
            else:
                awaited = await gather(*(results[field] for field in awaitable_fields))
                results.update(zip(awaitable_fields, awaited, strict=True))
        except Exception as raw_error:
            if on_error is None:
                raise
            assert path is not None
            self.handle_field_error(raw_error, on_error[0], on_error[1], path)
            return None
        return results

    def complete_value(
        self, return_type: Any, field_details_list: Any, info: Any, path: Path, result: Any, position_context: Any,
    ) -> Any:
        """graphql-core's, straight to the completion of a (non-null) object, list or plain string
        or boolean; anything else (nulls, errors, abstract types) takes graphql-core's path."""
        if result is not None and position_context is None:
            type_ = return_type.of_type if return_type.__class__ is GraphQLNonNull else return_type
            kind = type_.__class__
            if kind is GraphQLObjectType and not isinstance(result, Exception):
                return self.complete_object_value(type_, field_details_list, info, path, result, None)
            if kind is GraphQLList:
                if result.__class__ is list:
                    return self.complete_iterable_value(type_.of_type, field_details_list, info, path, result, None)
            elif kind is GraphQLScalarType and result.__class__ is _SERIALIZED_AS_IS.get(type_.name):
                return result
        return super().complete_value(return_type, field_details_list, info, path, result, position_context)

    def complete_object_value(
        self, return_type: GraphQLObjectType, field_details_list: Any, info: Any, path: Path, result: Any,
        position_context: Any,
    ) -> Any:
        is_type_of = return_type.is_type_of
        if position_context is None and (is_type_of is None or self._of_type.get(return_type.name) is result.__class__
                                         or self._accepts(return_type, result, info)):
            grouped_field_set, new_defer_usages, _ = self.collect_subfields(return_type, field_details_list)
            if not new_defer_usages:
                return self.execute_fields(return_type, result, path, grouped_field_set, None)
        return super().complete_object_value(return_type, field_details_list, info, path, result, position_context)

    def complete_abstract_value(
        self, return_type: Any, field_details_list: Any, info: Any, path: Path, result: Any, position_context: Any,
    ) -> Any:
        """graphql-core's, with the object type an interface or union resolves to remembered per
        class (:data:`_RUNTIME_TYPES`): an instance of a (non-generic) strawberry type, not cast
        with ``strawberry.cast``, is of its class's type."""
        key = (return_type, result.__class__)
        runtime = _RUNTIME_TYPES.get(key) if getattr(result, _CAST_ATTRIBUTE, None) is None else None
        if runtime is None:
            runtime = self._class_type(return_type, field_details_list, info, result)
            if runtime is None:  # cast, generic, or resolved otherwise: strawberry's own way
                return super().complete_abstract_value(return_type, field_details_list, info, path, result,
                                                       position_context)
            if len(_RUNTIME_TYPES) >= _RUNTIME_TYPES_BOUND:
                _RUNTIME_TYPES.clear()
            _RUNTIME_TYPES[key] = runtime
        return self.complete_object_value(runtime, field_details_list, info, path, result, position_context)

    def _class_type(self, return_type: Any, field_details_list: Any, info: Any, result: Any) -> Any:
        """The object type ``result`` resolves to when it is its class's own (``None``: a cast or
        generic object, or a type resolver that answers otherwise)."""
        definition = getattr(result.__class__, "__strawberry_definition__", None)
        if definition is None or definition.is_graphql_generic or getattr(result, _CAST_ATTRIBUTE, None) is not None:
            return None
        name = (return_type.resolve_type or self.type_resolver)(result, info, return_type)
        if self.is_awaitable(name) or name != definition.name:
            if name.__class__ is CoroutineType:
                name.close()
            return None
        return self.ensure_valid_runtime_type(name, return_type, field_details_list, info, result)

    def _accepts(self, object_type: GraphQLObjectType, result: Any, info: Any) -> bool:
        """``is_type_of`` of an object type, remembered per class for the request's other objects
        and list items (the gateway never casts with ``strawberry.cast``: an object's class decides
        its type)."""
        assert object_type.is_type_of is not None
        if object_type.is_type_of(result, info) is not True:
            return False
        self._of_type[object_type.name] = result.__class__
        return True

    # -- lists --------------------------------------------------------------------------------

    def complete_iterable_value(
        self, item_type: Any, field_details_list: Any, info: Any, path: Path, items: Any, position_context: Any,
    ) -> Any:
        """A list's items completed in chunks of :data:`LIST_CHUNK`, objects straight into their
        selection set; between chunks :meth:`between_chunks` may pause the completion."""
        if self.stream_directive or not isinstance(items, list | tuple) or position_context is not None:
            return super().complete_iterable_value(item_type, field_details_list, info, path, items,
                                                   position_context)
        completed: list[Any] = []
        awaitable_indices: list[int] = []
        if items and self._pacing is not None and self._slice_spent():  # a list may begin in a spent slice
            pause = self.between_chunks(path, 0, len(items))
            if pause is not None:
                return self._paused_rest(self._resume_items(
                    pause, item_type, field_details_list, info, path, items, 0, completed, awaitable_indices))
        try:
            return self._complete_items(item_type, field_details_list, info, path, items, 0, completed,
                                        awaitable_indices)
        except Exception:
            if awaitable_indices:
                self.settle_in_background([completed[i] for i in awaitable_indices])
            raise

    def _slice_spent(self) -> bool:
        """Whether the running slice of paced work may be spent (:meth:`between_chunks` decides;
        without a running slice it starts one)."""
        assert self._pacing is not None
        pacer, turns = self._pacing
        return not turns.marked or perf_counter() - turns.started >= pacer.slice_seconds

    def between_chunks(self, path: Path, done: int, total: int) -> Any:
        """Called between two chunks of a list's items (``done`` of ``total`` completed): an
        awaitable to complete the rest after it, or ``None`` to go on at once. Paced (after every
        item): once the running slice is spent, the request's loaders are held and the rest waits
        for its turn (the hold is given back by :meth:`_resume_items`)."""
        if self._pacing is None:
            return None
        pacer, turns = self._pacing
        if not turns.spent(pacer.slice_seconds):
            return None
        pacer.hold.take()
        return turns.turn()

    def _complete_items(
        self, item_type: Any, field_details_list: Any, info: Any, path: Path, items: Any, start: int,
        completed: list[Any], awaitable_indices: list[int],
    ) -> Any:
        """Complete ``items[start:]`` into ``completed``; the list, or an awaitable of it."""
        is_awaitable = self.is_awaitable
        nullable = not isinstance(item_type, GraphQLNonNull)
        object_type = item_type if nullable else item_type.of_type
        selection = None
        of_type: type | None = None  # the class of the objects found to be of ``object_type``
        if isinstance(object_type, GraphQLObjectType) and object_type.is_type_of is not None:
            grouped_field_set, new_defer_usages, _ = self.collect_subfields(object_type, field_details_list)
            selection = None if new_defer_usages else grouped_field_set
            of_type = self._of_type.get(object_type.name)
        position = (item_type, field_details_list)  # where an item's error is handled
        total = len(items)
        index = start
        paced = self._pacing is not None
        if paced:  # the slice's clock is read after every item (``_slice_spent``, inlined)
            turns, budget = self._pacing[1], self._pacing[0].slice_seconds  # type: ignore[index]
        while index < total:
            stop = min(total, index + LIST_CHUNK)
            for item in items[index:stop]:
                if paced and index > start and (not turns.marked or perf_counter() - turns.started >= budget):
                    break  # the slice may be spent: :meth:`between_chunks` decides
                item_path = _path((path, index, None))
                if selection is not None and item is not None and (
                        item.__class__ is of_type or self._accepts(object_type, item, info)):
                    of_type = item.__class__
                    try:
                        value = self.execute_fields(object_type, item, item_path, selection, None, position)
                    except Exception as raw_error:
                        self.handle_field_error(raw_error, item_type, field_details_list, item_path)
                        value = None
                    else:
                        if value.__class__ is CoroutineType or (value.__class__ is not dict and is_awaitable(value)):
                            if not self.planned:  # graphql-core's awaitable: its errors are handled here
                                value = self._await_completed(value, item_type, field_details_list, item_path)
                            awaitable_indices.append(index)
                    completed.append(value)
                elif is_awaitable(item):
                    completed.append(self.complete_awaitable_list_item_value(
                        item, item_type, field_details_list, info, item_path, None))
                    awaitable_indices.append(index)
                elif self.complete_list_item_value(item, completed, item_type, field_details_list, info, item_path,
                                                   None):
                    awaitable_indices.append(index)
                index += 1
            if index < total and (not paced or self._slice_spent()):
                pause = self.between_chunks(path, index, total)
                if pause is not None:  # a task: it runs (and gives a pacing hold back) whoever awaits it
                    return self._paused_rest(self._resume_items(
                        pause, item_type, field_details_list, info, path, items, index, completed,
                        awaitable_indices))
        if not awaitable_indices:
            return completed
        return self._gather_items(completed, awaitable_indices)

    def _paused_rest(self, resume: Any) -> asyncio.Future[Any]:
        """The task completing a paced list's rest (executing level by level, awaited before the
        level's resolvers: the fields it calls join them)."""
        task = asyncio.ensure_future(resume)
        if self._level is not None:
            self._paused.append(task)
        return task

    async def _resume_items(
        self, pause: Any, item_type: Any, field_details_list: Any, info: Any, path: Path, items: Any, start: int,
        completed: list[Any], awaitable_indices: list[int],
    ) -> list[Any]:
        try:
            await pause
            rest = self._complete_items(item_type, field_details_list, info, path, items, start, completed,
                                        awaitable_indices)
        except Exception:
            if awaitable_indices:
                self.settle_in_background([completed[i] for i in awaitable_indices])
            raise
        finally:
            if self._pacing is not None:
                self._pacing[0].hold.give()  # taken by between_chunks; a further pause took its own
        return await rest if self.is_awaitable(rest) else rest

    @staticmethod
    async def _gather_items(completed: list[Any], awaitable_indices: list[int]) -> list[Any]:
        if len(awaitable_indices) == 1:
            index = awaitable_indices[0]
            completed[index] = await completed[index]
        else:
            awaited = await gather(*(completed[index] for index in awaitable_indices))
            for index, value in zip(awaitable_indices, awaited, strict=True):
                completed[index] = value
        return completed

    # -- fields -------------------------------------------------------------------------------

    def execute_field(
        self, parent_type: GraphQLObjectType, source: Any, field_details_list: Any, path: Path,
        position_context: Any,
    ) -> Any:
        field_def = parent_type.fields.get(field_details_list[0].node.name.value)
        if field_def is None or not self.planned:
            return super().execute_field(parent_type, source, field_details_list, path, position_context)
        plan = plan_of(field_def)
        call = call_of(field_def) if plan is None and self.direct_calls else None
        if plan is None and call is None:
            return super().execute_field(parent_type, source, field_details_list, path, position_context)
        return self._execute_planned(field_def, plan, call, parent_type, source, field_details_list, path,
                                     position_context)

    def _read_objects(
        self, item_type: Any, field_def: GraphQLField, plan: Plan, parent_type: GraphQLObjectType, source: Any,
        field_details_list: Any, path: Path,
    ) -> Any:
        """A read list of objects completed straight into its items (``_FAILED``: not a plain
        list; the caller takes :meth:`_execute_planned`)."""
        try:
            items = plan[0](source)
        except Exception:
            return _FAILED  # read again there, and its error located
        if items.__class__ is not list or self.stream_directive:
            return _FAILED
        info = self._resolve_info(field_def, field_details_list, parent_type, path)
        try:
            completed = self.complete_iterable_value(item_type, field_details_list, info, path, items, None)
        except Exception as raw_error:
            self.handle_field_error(raw_error, field_def.type, field_details_list, path)
            return None
        if completed.__class__ is list:
            return completed
        return self._await_completed(completed, field_def.type, field_details_list, path)

    def _execute_planned(
        self, field_def: GraphQLField, plan: Plan | None, call: Call | None, parent_type: GraphQLObjectType,
        source: Any, field_details_list: Any, path: Path, position_context: Any,
    ) -> Any:
        """A planned field: its resolver called directly (``call``), or its value read (``plan``)."""
        if call is not None:
            return self._call_field(call, field_def, parent_type, source, field_details_list, path, position_context)
        assert plan is not None
        try:
            result = plan[0](source)
        except Exception as raw_error:
            self.handle_field_error(raw_error, field_def.type, field_details_list, path)
            return None
        return self._complete_read(field_def, parent_type, field_details_list, path, result, position_context)

    def _resolve_info(self, field_def: GraphQLField, field_details_list: Any, parent_type: GraphQLObjectType,
                      path: Path) -> Any:
        """``build_resolve_info``'s, built once per field group and parent type of the request and
        copied with each path (every other part is the same)."""
        cached = self._infos.get(id(field_details_list))
        if cached is not None and cached[0] is field_details_list and cached[1] is parent_type:
            return tuple.__new__(cached[2], (*cached[3], path, *cached[4]))
        info = self.build_resolve_info(field_def, [details.node for details in field_details_list], parent_type,
                                       path)
        parts = tuple(info)
        at = info._fields.index("path")
        self._infos[id(field_details_list)] = (field_details_list, parent_type, type(info), parts[:at], parts[at + 1:])
        return info

    def _complete_read(
        self, field_def: GraphQLField, parent_type: GraphQLObjectType, field_details_list: Any, path: Path,
        result: Any, position_context: Any,
    ) -> Any:
        """Complete the value a planned field read (graphql-core's completion, errors located)."""
        _, return_type, leaf = plan_of(field_def)  # type: ignore[misc]  # a planned field
        try:
            if leaf is not None and result is not None and not isinstance(result, Exception) \
                    and not self.is_awaitable(result):
                serialized = leaf.serialize(result)
                if serialized is not None and serialized is not Undefined:
                    return serialized
            if result.__class__ is list and position_context is None:  # a list of plain strings (``usage``)
                cached = _LIST_AS_IS.get(id(return_type))
                if cached is None or cached[0] is not return_type:
                    cached = _LIST_AS_IS[id(return_type)] = (return_type, _list_as_is(return_type))
                as_is = cached[1]
                if as_is is not _NOTHING and all(item.__class__ is as_is for item in result):
                    return list(result)
            info = self._resolve_info(field_def, field_details_list, parent_type, path)
            return self._complete_result(return_type, field_details_list, info, path, result, position_context)
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None

    def _call_field(
        self, call: Call, field_def: GraphQLField, parent_type: GraphQLObjectType, source: Any,
        field_details_list: Any, path: Path, position_context: Any,
    ) -> Any:
        """A resolver called directly (see the module); its arguments converted once per request."""
        field, func, takes_self, info_name, _, _, _, _ = call
        try:
            arguments = self._arguments_of(call, field_def, field_details_list[0])
        except Exception:  # graphql-core's path raises it again, located
            return super().execute_field(parent_type, source, field_details_list, path, position_context)
        return_type = field_def.type
        info = self._resolve_info(field_def, field_details_list, parent_type, path)
        try:
            kwargs = dict(arguments)
            if info_name is not None:
                kwargs[info_name] = self.info_class(_raw_info=info, _field=field)
            result = func(source, **kwargs) if takes_self else func(**kwargs)
            return self._complete_result(return_type, field_details_list, info, path, result, position_context)
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None

    def _complete_result(
        self, return_type: Any, field_details_list: Any, info: Any, path: Path, result: Any, position_context: Any,
    ) -> Any:
        """A resolved value completed by graphql-core (an awaitable one awaited first); errors
        are the caller's to locate."""
        if result.__class__ is CoroutineType or (result.__class__ not in _COMPLETED and self.is_awaitable(result)):
            return self.complete_awaitable_value(return_type, field_details_list, info, path, result, position_context)
        completed = self.complete_value(return_type, field_details_list, info, path, result, position_context)
        if completed.__class__ is CoroutineType or (completed.__class__ not in _COMPLETED
                                                    and self.is_awaitable(completed)):
            return self._await_completed(completed, return_type, field_details_list, path)
        return completed

    def _arguments_of(self, call: Call, field_def: GraphQLField, details: Any) -> dict[str, Any]:
        """A field's converted arguments (:meth:`_convert_arguments`), once per field node and
        request; arguments written without variables once per field node of a cached document."""
        cached = self._arguments.get(id(details))
        if cached is not None and cached[0] is details:
            return cached[1]
        node = details.node
        constant = _CONSTANT_ARGUMENTS.get(id(node))
        if constant is not None and constant[0] is node and constant[1] is field_def:
            kwargs = constant[2]
        else:
            kwargs = self._convert_arguments(call, field_def, details)
            if not details.fragment_variable_values and not _uses_variables(node):
                if len(_CONSTANT_ARGUMENTS) >= _CONSTANT_ARGUMENTS_BOUND:
                    _CONSTANT_ARGUMENTS.clear()
                _CONSTANT_ARGUMENTS[id(node)] = (node, field_def, kwargs)
        self._arguments[id(details)] = (details, kwargs)
        return kwargs

    def _convert_arguments(self, call: Call, field_def: GraphQLField, details: Any) -> dict[str, Any]:
        """A field's arguments as strawberry hands them to the resolver (``paging`` for a
        :class:`Paged` field), without ``info``."""
        field, _, _, _, paged, _, _, _ = call
        node = details.node
        raw = (get_argument_values(field_def, node, self.variable_values, details.fragment_variable_values,
                                   self.hide_suggestions)
               if field_def.args or node.arguments else {})
        kwargs = call[7](raw)
        for extension in field.extensions:
            kwargs = extension.map_arguments(kwargs)
        if paged:
            kwargs["paging"] = paging_of(kwargs)
        return kwargs

    async def complete_awaitable_value(
        self, return_type: Any, field_details_list: Any, info: Any, path: Path, result: Any, position_context: Any,
    ) -> Any:
        """graphql-core's, without the abort-signal wrapper (one coroutine less per awaited resolver)
        when the execution has no abort signal."""
        if self.abort_signal is not None:
            return await super().complete_awaitable_value(return_type, field_details_list, info, path, result,
                                                          position_context)
        try:
            completed = self.complete_value(return_type, field_details_list, info, path, await result,
                                            position_context)
            if completed.__class__ is CoroutineType or (completed.__class__ not in _COMPLETED
                                                        and self.is_awaitable(completed)):
                completed = await completed
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            completed = None
        return completed

    async def _await_completed(self, completed: Any, return_type: Any, field_details_list: Any, path: Path) -> Any:
        try:
            return await completed
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None
