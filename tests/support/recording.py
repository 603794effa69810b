"""A stand-in for an object (a MongoDB collection, say) that records each method call made on it
before it runs: in order with its arguments, and counted by name (each a round trip)."""

from __future__ import annotations

from collections import Counter
from typing import Any


class Recorded:
    """Wraps ``inner``; ``log`` holds each call's ``(name, args)``, ``calls`` counts them by name.
    Attributes that are not methods pass through unrecorded."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.log: list[tuple[str, tuple[Any, ...]]] = []
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.log.append((name, args))
            self.calls[name] += 1
            return attr(*args, **kwargs)
        return call
