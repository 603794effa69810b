"""The schema's custom scalars."""

from __future__ import annotations

from typing import Any, NewType

import strawberry

Timestamp = NewType("Timestamp", str)
#: Custom scalars, for ``StrawberryConfig.scalar_map``.
SCALARS: dict[object, Any] = {
    Timestamp: strawberry.scalar(name="Timestamp", description="An RFC 3339 timestamp.", serialize=str,
                                 parse_value=str),
}
