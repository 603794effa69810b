"""CPU-heavy GraphQL work kept off the event loop, so one large answer does not hold up every
other request (health probes included) while it is encoded.

:func:`json_response` encodes the answer of a costly operation (at least :data:`LARGE_COST`,
``resolvers/cost.py``) in a worker thread; cheap answers are encoded at once (a thread hop would
cost them more than it saves). The store decodes large pages and the registry builds many views
in worker threads the same way (``gateway/storage/sqlite.py``, ``gateway/registry/reads.py``).
``bench/bench_load.py`` measures what this buys: ``/healthz`` latency while heavy pages run.

Completing long lists in steps (yielding between items) was tried and left out: every yield
lets the per-request loaders dispatch a partial batch, so a page's nested loads would cost one
store call per step instead of one per level of the query.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.responses import Response

#: Answers of operations costing at least this much are encoded in a worker thread.
LARGE_COST = 2000


def _encode(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None,
                        *, media_type: str = "application/json", large: bool = False) -> Response:
    """A JSON response; ``large`` bodies are encoded in a worker thread."""
    content = await asyncio.to_thread(_encode, body) if large else _encode(body)
    return Response(content, status, headers, media_type=media_type)
