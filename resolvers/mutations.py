"""The mutation root: writes to a writable registry (the gateway's own), with the core's validation.

Every mutation needs the ``write`` scope. ``create…`` fails when the entity exists, ``update…``
when it does not or when ``epoch`` is given and differs from the entity's (``mismatched_epoch``).
Updates merge the given attributes into the entity (``null`` removes one) unless ``replace``
is set. Attributes are the entity's xRegistry serialization; a resource's may carry ``meta``
and ``versions``. Any violation is an error with the spec's type in ``extensions.code``, and
nothing is written.
"""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from adapters.base import WriteOutcome
from resolvers.types.entities import Node
from resolvers.types.nodes import to_node
from resolvers.webhooks import WebhookMutations
from xreg.errors import XRegistryError
from xreg.xid import Xid


@strawberry.type(description="What a write did.")
class WriteResult:
    revision: int | None = strawberry.field(description="The new revision; null when nothing changed.")
    created: list[str]
    updated: list[str]
    deleted: list[str]
    node: Node | None = strawberry.field(description="The written entity as it is now; null after a delete.")


@strawberry.type(description="One rewrite of an older document shape during an import.")
class Normalisation:
    path: str
    rule: str
    detail: str


@strawberry.type(description="What an import did, in numbers.")
class ImportResult:
    revision: int | None = strawberry.field(description="The new revision; null when nothing changed.")
    created: int
    updated: int
    unchanged: int
    normalisations: list[Normalisation]
    rematerialised: int = strawberry.field(description="Messages not in the document whose materialised view "
                                                       "changed because a base of theirs did.")
    dangling: list[str] = strawberry.field(description="Messages whose `basemessageuri` names a message that is not "
                                                       "in the registry (permitted: they show what they declare).")


def _object(value: Any, subject: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise XRegistryError("bad_request", subject, detail="attributes must be a JSON object")
    return value


def _correlated(info: Info, outcome: WriteOutcome) -> None:
    """The write's correlation id goes to the response's ``extensions`` (see ``gateway/graphql_http.py``)."""
    if outcome.correlation_id is not None:
        info.context.correlation_ids.append(outcome.correlation_id)


async def _result(info: Info, registry: str, xid: str, outcome: WriteOutcome) -> WriteResult:
    _correlated(info, outcome)
    node = None
    if xid not in outcome.deleted:
        found = await info.context.source(registry).get_many([xid])
        entity = found.get(xid.lower())
        node = to_node((await info.context.loaders.settle([entity]))[0]) if entity is not None else None
    return WriteResult(revision=outcome.revision, created=outcome.created, updated=outcome.updated,
                       deleted=outcome.deleted, node=node)


def _writable(info: Info, registry: str | None):
    info.context.require("write")
    return info.context.source(registry)


@strawberry.type
class Mutation(WebhookMutations):
    @strawberry.mutation(description="Create a group.")
    async def create_group(
        self, info: Info, group_type: str, group_id: str, attributes: JSON | None = None,
        registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        xid = str(Xid(group_type, group_id))
        outcome = await source.put_group(group_type, group_id, _object(attributes, xid), mode="create", patch=False,
                                         epoch=None)
        return await _result(info, source.id, xid, outcome)

    @strawberry.mutation(description="Update a group's attributes (its collections are not touched).")
    async def update_group(
        self, info: Info, group_type: str, group_id: str, attributes: JSON, epoch: int | None = None,
        replace: bool = False, registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        xid = str(Xid(group_type, group_id))
        outcome = await source.put_group(group_type, group_id, _object(attributes, xid), mode="update",
                                         patch=not replace, epoch=epoch)
        return await _result(info, source.id, xid, outcome)

    @strawberry.mutation(description="Create a resource (and its group, when missing).")
    async def create_resource(
        self, info: Info, group_type: str, group_id: str, resource_type: str, resource_id: str,
        attributes: JSON | None = None, registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        xid = str(Xid(group_type, group_id, resource_type, resource_id))
        outcome = await source.put_resource(group_type, group_id, resource_type, resource_id, _object(attributes, xid),
                                            mode="create", patch=False, epoch=None)
        return await _result(info, source.id, xid, outcome)

    @strawberry.mutation(description="Update a resource: its default version's attributes, `meta`, `versions`; "
                                     "`epoch` is the default version's.")
    async def update_resource(
        self, info: Info, group_type: str, group_id: str, resource_type: str, resource_id: str,
        attributes: JSON, epoch: int | None = None, replace: bool = False, registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        xid = str(Xid(group_type, group_id, resource_type, resource_id))
        outcome = await source.put_resource(group_type, group_id, resource_type, resource_id, _object(attributes, xid),
                                            mode="update", patch=not replace, epoch=epoch)
        return await _result(info, source.id, xid, outcome)

    @strawberry.mutation(description="Create a version of a resource (and the resource, when missing).")
    async def create_version(
        self, info: Info, group_type: str, group_id: str, resource_type: str, resource_id: str, version_id: str,
        attributes: JSON | None = None, registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        xid = str(Xid(group_type, group_id, resource_type, resource_id, version_id))
        outcome = await source.put_version(group_type, group_id, resource_type, resource_id, version_id,
                                           _object(attributes, xid), mode="create", patch=False, epoch=None)
        return await _result(info, source.id, xid, outcome)

    @strawberry.mutation(description="Update a version's attributes.")
    async def update_version(
        self, info: Info, group_type: str, group_id: str, resource_type: str, resource_id: str, version_id: str,
        attributes: JSON, epoch: int | None = None, replace: bool = False, registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        xid = str(Xid(group_type, group_id, resource_type, resource_id, version_id))
        outcome = await source.put_version(group_type, group_id, resource_type, resource_id, version_id,
                                           _object(attributes, xid), mode="update", patch=not replace, epoch=epoch)
        return await _result(info, source.id, xid, outcome)

    @strawberry.mutation(description="Delete a group, resource or version and everything below it; `epoch` "
                                     "(a resource's: its `meta` epoch) must match when given.")
    async def delete_entity(
        self, info: Info, xid: str, epoch: int | None = None, registry: str | None = None,
    ) -> WriteResult:
        source = _writable(info, registry)
        return await _result(info, source.id, xid, await source.delete(xid, epoch=epoch))

    @strawberry.mutation(description="Import an xRegistry document (older shapes are normalised unless `strict`), "
                                     "all or nothing.")
    async def import_document(
        self, info: Info, document: JSON, strict: bool = False, registry: str | None = None,
    ) -> ImportResult:
        source = _writable(info, registry)
        outcome = await source.import_document(_object(document, "/"), strict=strict)
        _correlated(info, outcome)
        return ImportResult(
            revision=outcome.revision, created=len(outcome.created), updated=len(outcome.updated),
            unchanged=len(outcome.unchanged),
            normalisations=[Normalisation(path=p, rule=r, detail=d) for p, r, d in outcome.normalisations],
            rematerialised=len(outcome.rematerialised), dangling=[xid for xid, _ in outcome.dangling],
        )
