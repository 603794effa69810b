"""Errors that do not fail their field: a reference that does not resolve, a registry that is
down. Resolvers hand them to :meth:`resolvers.context.Context.report` and return what they
have; :class:`ReportedErrors` adds them to the response's ``errors`` (with the field's path)."""

from __future__ import annotations

from collections.abc import Iterator

from strawberry.extensions import SchemaExtension


class ReportedErrors(SchemaExtension):
    """Appends the errors reported during execution to the result's errors."""

    def on_execute(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        reported = getattr(self.execution_context.context, "reported", None)
        if reported and result is not None:
            result.errors = [*(result.errors or []), *reported]
