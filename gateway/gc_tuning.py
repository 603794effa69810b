"""Garbage-collector settings for a serving process.

A GraphQL response allocates thousands of short-lived objects (result dicts, paths, views), and
each young collection that promotes survivors eventually leads to a full collection, which walks
everything loaded at start-up (modules, the schema, the model) again. :func:`tune` moves what
exists after start-up into the permanent generation (``gc.freeze()``: never scanned again) and
optionally sets the gen-0 threshold (larger: rarer collections, but more cyclic garbage alive
between them, so more memory).
"""

from __future__ import annotations

import gc


def tune(*, freeze: bool, gen0_threshold: int | None) -> None:
    """Freeze the objects alive now (``freeze``) and set the gen-0 threshold (``None``: left as it is)."""
    if freeze:
        gc.collect()
        gc.freeze()
    if gen0_threshold is not None:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(gen0_threshold, gen1, gen2)
