"""Errors that do not fail their field: a reference that does not resolve, a registry that is
down. Resolvers hand them to :meth:`resolvers.context.Context.report` and return what they
have; :func:`with_reported` adds them to the response's ``errors`` (with the field's path)."""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError


def with_reported(errors: list[GraphQLError] | None, context: Any) -> list[GraphQLError] | None:
    """The execution's ``errors`` followed by those reported to ``context`` during it."""
    reported = getattr(context, "reported", None)
    return [*(errors or []), *reported] if reported else errors
