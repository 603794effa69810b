"""Writes of the registry entity: its own attributes, its model (``modelsource``), its capability
settings, and its creation when a registry is opened."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xreg.errors import XRegistryError
from xreg.model.modelsource import STORED_KEY as MODEL_SOURCE_KEY
from xreg.model.modelsource import model_of_source
from xreg.registry.capabilities import STORED_KEY as CAPABILITIES_KEY
from xreg.registry.checker import validate_attributes
from xreg.registry.compliance import check_compliance
from xreg.registry.validation import registry_definitions
from xreg.registry.write_steps.attributes import collection_attrs, merge, strip, user_view

if TYPE_CHECKING:
    from xreg.registry.write_steps.unit import Unit


async def put_registry(cs: Unit, registry_id: str, attrs: dict[str, Any], *, patch: bool) -> None:
    """Update the registry entity's own attributes (name, description, labels, …)."""
    state = await cs.state("/")
    cs.check_epoch("/", attrs.get("epoch"), state.doc)
    kept = {k: v for k, v in (state.doc or {}).items()
            if k in (MODEL_SOURCE_KEY, CAPABILITIES_KEY)}  # not attributes
    base = {k: v for k, v in user_view(state.doc or {}).items() if k not in kept} if patch else {}
    user = merge(base, strip(attrs, set(cs.model.groups) | collection_attrs(cs.model.groups)
                               | {"registryid", "specversion", "model", "capabilities", "modelsource"}),
                  patch)
    ids = {"registryid": registry_id, "xid": "/", **kept}
    if cs.finish(state, "registry", "", user, attrs, ids):
        attributes = {k: v for k, v in state.body.items() if k not in (MODEL_SOURCE_KEY, CAPABILITIES_KEY)}
        cs.errors.extend(validate_attributes(attributes, registry_definitions(cs.model), subject="/",
                                                extensible=True, model=cs.model))


async def put_model_source(cs: Unit, source: dict[str, Any]) -> bool:
    """Make ``source`` (a checked modelsource, ``xreg.model.modelsource``) the registry's
    model, stored in the registry entity's state so it has the registry's revisions. Every
    entity already in the registry must comply with it, else ``model_compliance_error``
    (nothing is changed). Later changes of this changeset are validated against it.
    Returns whether the model changed."""
    state = await cs.state("/")
    if state.doc is None:
        raise XRegistryError("server_error", "/", detail="the registry entity is missing; open the registry first")
    if state.doc.get(MODEL_SOURCE_KEY) == source:
        return False
    model = model_of_source(source)
    await check_compliance(cs.store, cs.model, model)
    doc = {**state.doc, MODEL_SOURCE_KEY: source}
    cs.stamp(doc, {}, state.doc)
    cs.put_state(state, "registry", "", doc)
    cs.model = model
    cs.model_changed = True
    return True


async def put_capabilities(cs: Unit, settings: dict[str, Any]) -> bool:
    """Make ``settings`` (checked by ``xreg.registry.capabilities.update``) the registry's
    capability settings, kept in the registry entity's state; the registry's ``epoch`` and
    ``modifiedat`` move when they change (core/spec.md, Registry entity: "when those attributes
    are modified the Registry entity is considered to be updated"). Returns whether they changed."""
    state = await cs.state("/")
    if state.doc is None:
        raise XRegistryError("server_error", "/", detail="the registry entity is missing; open the registry first")
    if (state.doc.get(CAPABILITIES_KEY) or {}) == settings:
        return False
    doc = {k: v for k, v in state.doc.items() if k != CAPABILITIES_KEY}
    if settings:
        doc[CAPABILITIES_KEY] = settings
    cs.stamp(doc, {}, state.doc)
    cs.put_state(state, "registry", "", doc)
    cs.capabilities_changed = True
    return True


async def ensure_registry(cs: Unit, registry_id: str, name: str | None = None) -> None:
    """Create the registry entity unless it exists."""
    state = await cs.state("/")
    if state.doc is None:
        doc = {"registryid": registry_id, "xid": "/"}
        if name:
            doc["name"] = name
        cs.stamp(doc, {}, None)
        cs.put_state(state, "registry", "", doc)


async def implicit_registry(cs: Unit) -> None:
    """``server_error`` unless the registry entity exists (it is created when a registry is opened)."""
    state = await cs.state("/")
    if state.doc is None:
        raise XRegistryError("server_error", "/", detail="the registry entity is missing; open the registry first")
