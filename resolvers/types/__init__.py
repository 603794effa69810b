"""The GraphQL object types, one module a concept:

* :mod:`~resolvers.types.fields` — the executor's field markers (``attr``, ``read_field``,
  ``reads``, ``batched``, ``attribute_reader``);
* :mod:`~resolvers.types.nodes` — which object type stands for a source entity (``to_node``);
* :mod:`~resolvers.types.pages` — connections over an entity's collections, through the loaders;
* :mod:`~resolvers.types.entities` — the interfaces of every entity, ``Meta``, the generic types
  of group and resource types known only from a registry's model, version connections;
* :mod:`~resolvers.types.messages`, :mod:`~resolvers.types.endpoints`,
  :mod:`~resolvers.types.schemas` — the typed domains;
* :mod:`~resolvers.types.registry` — the registry, its collections and its change feed.

Importing the package defines them all (and so declares every object type to
:func:`~resolvers.types.nodes.to_node`); :data:`TYPES` lists those the schema must be given.
"""

from __future__ import annotations

from resolvers.types.endpoints import Endpoint, messagegroups_of
from resolvers.types.entities import (
    Entity,
    GenericGroup,
    GenericResource,
    GenericVersion,
    GenericVersionConnection,
    GenericVersionEdge,
    Group,
    Label,
    Meta,
    Node,
    Resource,
    Version,
    VersionConnection,
    VersionEdge,
)
from resolvers.types.fields import attr, attribute_reader, batched, read_field, reads
from resolvers.types.messages import (
    DataSchema,
    DeclaredMessage,
    Inherited,
    Message,
    MessageDefinition,
    MessageGroup,
    MessageVersion,
    MessageVersionConnection,
    MessageVersionEdge,
    dataschema_targets,
    dataschemas_of,
    messages_of,
)
from resolvers.types.nodes import bare_registry, node_of, to_node
from resolvers.types.pages import collection, collections
from resolvers.types.registry import Change, ChangeFeed, ChangeOrder, ChangeType, Registry
from resolvers.types.schemas import (
    Schema,
    SchemaDefinition,
    SchemaGroup,
    SchemaVersion,
    SchemaVersionConnection,
    SchemaVersionEdge,
    schemas_of,
)

#: Every object type (some are reachable only through interfaces).
TYPES = (Registry, Endpoint, MessageGroup, SchemaGroup, Message, MessageVersion, Schema, SchemaVersion,
         GenericGroup, GenericResource, GenericVersion, Meta, Change, MessageVersionConnection, SchemaVersionConnection,
         GenericVersionConnection, MessageVersionEdge, SchemaVersionEdge, GenericVersionEdge)

__all__ = [
    "TYPES",
    "Change",
    "ChangeFeed",
    "ChangeOrder",
    "ChangeType",
    "DataSchema",
    "DeclaredMessage",
    "Endpoint",
    "Entity",
    "GenericGroup",
    "GenericResource",
    "GenericVersion",
    "GenericVersionConnection",
    "GenericVersionEdge",
    "Group",
    "Inherited",
    "Label",
    "Message",
    "MessageDefinition",
    "MessageGroup",
    "MessageVersion",
    "MessageVersionConnection",
    "MessageVersionEdge",
    "Meta",
    "Node",
    "Registry",
    "Resource",
    "Schema",
    "SchemaDefinition",
    "SchemaGroup",
    "SchemaVersion",
    "SchemaVersionConnection",
    "SchemaVersionEdge",
    "Version",
    "VersionConnection",
    "VersionEdge",
    "attr",
    "attribute_reader",
    "bare_registry",
    "batched",
    "collection",
    "collections",
    "dataschema_targets",
    "dataschemas_of",
    "messagegroups_of",
    "messages_of",
    "node_of",
    "read_field",
    "reads",
    "schemas_of",
    "to_node",
]
