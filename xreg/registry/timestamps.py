"""RFC 3339 timestamps as the registry writes and compares them."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """The current time as an RFC 3339 UTC timestamp with microseconds (``...Z``)."""
    return format_ts(datetime.now(UTC))


def format_ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (offset required); raises ``ValueError`` otherwise."""
    if not isinstance(value, str) or "T" not in value.upper():
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}")
    moment = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"RFC 3339 timestamp without a time zone offset: {value!r}")
    return moment
