"""The schema's custom scalars."""

from __future__ import annotations

from typing import NewType

import strawberry
from strawberry.types.scalar import ScalarDefinition

Timestamp = NewType("Timestamp", str)
#: Custom scalars, for ``StrawberryConfig.scalar_map``.
SCALARS: dict[object, ScalarDefinition] = {
    Timestamp: strawberry.scalar(name="Timestamp", description="An RFC 3339 timestamp.", serialize=str,
                                 parse_value=str),
}
