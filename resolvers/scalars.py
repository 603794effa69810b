"""The schema's custom scalars."""

from __future__ import annotations

from typing import NewType

import strawberry

Timestamp = NewType("Timestamp", str)
#: Custom scalars, for ``StrawberryConfig.scalar_map``.
SCALARS = {Timestamp: strawberry.scalar(name="Timestamp", description="An RFC 3339 timestamp.",
                                        serialize=str, parse_value=str)}
