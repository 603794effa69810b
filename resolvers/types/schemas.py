"""The schema domain's GraphQL types: schema groups, schemas and their versions (the attributes
of a schema document, its format and compatibility checks).
"""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from resolvers.connections import Connection, Paging, paged_field
from resolvers.filters import Filter, SchemaFilter, SortBy
from resolvers.types.entities import Group, Resource, Version, VersionConnection, VersionEdge, version_connection
from resolvers.types.fields import attr, batched
from resolvers.types.nodes import load_node, stands_for
from resolvers.types.pages import collection, nested
from xreg.xid import Xid

#: The form for many schema groups of their ``schemas`` connections.
schemas_of = nested("schemas")


@strawberry.interface(description="The attributes of a schema document (schema domain).")
class SchemaDefinition:
    format: str | None = attr("e.g. `JsonSchema/draft-07`, `Avro/1.9`.")
    schema: JSON | None = attr("The schema document, when stored inline.")
    schemauri: str | None = attr()
    schemaurl: str | None = attr()
    schemabase64: str | None = attr()
    formatvalidated: bool | None = attr("Whether the document was checked against its `format` and found valid "
                                        "(false: not valid, or not checked — `formatvalidatedreason` says which).")
    formatvalidatedreason: str | None = attr("Why `formatvalidated` is false: the violations found, or why the "
                                             "document was not checked.")
    compatibilityvalidated: bool | None = attr("Whether the version was checked against the schema's "
                                               "`compatibility` rule and keeps it.")
    compatibilityvalidatedreason: str | None = attr("Why `compatibilityvalidated` is false: what breaks the rule, "
                                                    "or why it was not checked.")


@stands_for("resource", "schemas")
@strawberry.type(description="A schema: its default version's document, and its versions.")
class Schema(Resource, SchemaDefinition):
    schemaid: str = attr("The schema's id.")

    @paged_field("The schema's versions.")
    async def versions(
        self, info: Info, filter: Filter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> SchemaVersionConnection | None:
        return await version_connection(info, self.entity, filter, sort, paging, SchemaVersionConnection)

    @strawberry.field(description="The default version.")
    async def defaultversion(self, info: Info) -> SchemaVersion | None:
        vid = self.entity.view.get("versionid")
        return await load_node(info, self.entity, str(Xid.parse(self.entity.xid).version(str(vid)))) if vid else None


@stands_for("version", "schemas")
@strawberry.type(description="A version of a schema.")
class SchemaVersion(Version, SchemaDefinition):
    schemaid: str = attr("The schema's id.")


@stands_for("group", "schemagroups")
@strawberry.type(description="A group of schemas.")
class SchemaGroup(Group):
    schemagroupid: str = attr("The schema group's id.")
    format: str | None = attr()

    @paged_field("The group's schemas.")
    @batched(schemas_of)
    async def schemas(
        self, info: Info, filter: SchemaFilter | None = None, sort: SortBy | None = None,
        *, paging: Paging,
    ) -> Connection[Schema] | None:
        return await collection(info, self.entity, (f"{self.entity.ctype}/schemas",), filter, sort, paging)


@strawberry.type(description="A schema version and its cursor.")
class SchemaVersionEdge(VersionEdge):
    node: SchemaVersion


@strawberry.type(description="A page of schema versions.")
class SchemaVersionConnection(VersionConnection):
    @strawberry.field(description="The page's nodes.")
    def nodes(self) -> list[SchemaVersion]:
        return self.page.nodes

    @strawberry.field(description="The page's nodes with their cursors.")
    def edges(self) -> list[SchemaVersionEdge]:
        return self._edges(SchemaVersionEdge)

