"""GraphQL errors as clients see them: ``extensions.code`` on every error, internals masked.

* registry errors (:class:`~xreg.errors.XRegistryError`): the spec's error type
  (``mismatched_epoch``, ``invalid_attribute``, …) plus the problem details of the HTTP binding;
* authentication and authorisation: ``unauthorized`` / ``forbidden``;
* GraphQL arguments no spec type covers (cursors, node ids, page sizes): ``BAD_USER_INPUT``;
* documents: ``GRAPHQL_PARSE_FAILED``, ``GRAPHQL_VALIDATION_FAILED``, or the limit that was
  exceeded (``QUERY_TOO_DEEP``, ``TOO_MANY_ALIASES``, ``TOO_MANY_TOKENS``);
* anything else is a bug: ``INTERNAL_SERVER_ERROR`` with a fixed message, unless debugging.

An operation a transport cannot run (:class:`OperationNotFound`, :class:`OperationNotAllowed`)
is raised for the transport to answer (an HTTP status, a WebSocket close code).
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError, OperationType

from xreg.errors import GatewayError, ValidationErrors, XRegistryError

INTERNAL = "INTERNAL_SERVER_ERROR"
INTERNAL_MESSAGE = "Internal server error."


def _cause(error: GraphQLError) -> BaseException | None:
    original = error.original_error
    while isinstance(original, GraphQLError) and original.original_error is not None:
        original = original.original_error
    return original


def is_internal(error: GraphQLError) -> bool:
    """Whether ``error`` comes from a bug rather than from the request."""
    cause = _cause(error)
    return cause is not None and not isinstance(cause, (GatewayError, GraphQLError))


def format_error(error: GraphQLError, *, debug: bool = False) -> dict[str, Any]:
    """The JSON of one error in a response."""
    cause = _cause(error)
    message = error.message
    extensions: dict[str, Any] = dict(error.extensions or {})
    if isinstance(cause, XRegistryError):
        message = cause.title
        extensions.update(code=cause.type, **cause.to_problem())
        if cause.type == "server_busy" and "retry_after" in cause.args_map:
            extensions["retryAfter"] = cause.args_map["retry_after"]  # as too_many_requests has it
        if isinstance(cause, ValidationErrors) and len(cause.errors) > 1:
            extensions["errors"] = [e.to_problem() for e in cause.errors]
    elif isinstance(cause, GatewayError):
        message = str(cause)
        extensions["code"] = cause.code
    elif is_internal(error):
        message = f"{INTERNAL_MESSAGE} {type(cause).__name__}: {cause}" if debug else INTERNAL_MESSAGE
        extensions = {"code": INTERNAL}
    elif "code" not in extensions:
        if isinstance(error, GraphQLSyntaxError):
            extensions["code"] = "GRAPHQL_PARSE_FAILED"
        elif error.path is None:
            extensions["code"] = "GRAPHQL_VALIDATION_FAILED"
        else:
            extensions["code"] = INTERNAL
    out: dict[str, Any] = {"message": message}
    if error.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    if error.path is not None:
        out["path"] = list(error.path)
    out["extensions"] = extensions
    return out


class OperationNotFound(GatewayError):
    """The document holds no operation to run: none at all, or none by the name asked for. The
    transport answers it (HTTP 400; a WebSocket closes with 4400)."""

    code = "BAD_REQUEST"
    status = 400

    def __init__(self, operation_name: str | None) -> None:
        self.operation_name = operation_name
        super().__init__("Can't get GraphQL operation type" if operation_name is None
                         else f'Unknown operation named "{operation_name}".')


class OperationNotAllowed(GatewayError):
    """An operation of a type the transport does not run (a mutation over ``GET``, a subscription
    without a streaming transport); :attr:`operation` is its type. The transport answers it."""

    code = "METHOD_NOT_ALLOWED"
    status = 405

    def __init__(self, operation: OperationType) -> None:
        self.operation = operation
        super().__init__(f"{operation.value} operations are not allowed here")

    def reason(self, method: str) -> str:
        """The sentence answering a request made with ``method``."""
        plural = {"query": "queries", "mutation": "mutations", "subscription": "subscriptions"}[self.operation.value]
        return f"{plural} are not allowed when using {method}"
