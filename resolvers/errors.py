"""GraphQL errors as clients see them: ``extensions.code`` on every error, internals masked.

* registry errors (:class:`~xreg.errors.XRegistryError`): the spec's error type
  (``mismatched_epoch``, ``invalid_attribute``, …) plus the problem details of the HTTP binding;
* authentication and authorisation: ``unauthorized`` / ``forbidden``;
* GraphQL arguments no spec type covers (cursors, node ids, page sizes): ``BAD_USER_INPUT``;
* documents: ``GRAPHQL_PARSE_FAILED``, ``GRAPHQL_VALIDATION_FAILED``, or the limit that was
  exceeded (``QUERY_TOO_DEEP``, ``TOO_MANY_ALIASES``, ``TOO_MANY_TOKENS``);
* anything else is a bug: ``INTERNAL_SERVER_ERROR`` with a fixed message, unless debugging.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError

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
