"""Models of the security tests and of ``bench/bench_openapi.py``: the built-in groups plus
``n`` more, each with a resource whose attributes refer to other entities (``xid`` values whose
schema names every type of the model: what made the OpenAPI description quadratic)."""

from __future__ import annotations

import copy
from typing import Any

from xreg.model.registry_model import RegistryModel


def extra_group(i: int) -> dict[str, Any]:
    """Group type ``g<i>s`` with resource type ``items``."""
    return {"plural": f"g{i}s", "singular": f"g{i}", "attributes": {"owner": {"type": "string"}},
            "resources": {"items": {
                "plural": "items", "singular": "item", "hasdocument": False,
                "attributes": {"size": {"type": "uinteger"}, "parent": {"type": "xid"},
                               "peers": {"type": "array", "item": {"type": "xid"}},
                               "*": {"type": "any"}}}}}


def wide_model(n: int) -> dict[str, Any]:
    """A modelsource: the built-in groups plus ``n`` groups of :func:`extra_group`."""
    doc = RegistryModel.default().to_json()
    groups = copy.deepcopy(doc["groups"])
    groups.update({f"g{i}s": extra_group(i) for i in range(n)})
    return {"groups": groups}
