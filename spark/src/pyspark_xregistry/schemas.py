"""The fixed Spark schema of each entity type the ``xregistry`` data source reads, and how a row
is made from an entity's xRegistry JSON view.

Every entity type starts with the same columns::

    registry STRING NOT NULL   registryid of the registry the row comes from
    xid      STRING NOT NULL   the entity's XID (/messagegroups/g/messages/m)
    group    STRING NOT NULL   id of the group (a group's own id for group types)
    id       STRING NOT NULL   the entity's own id (group, resource or version id)
    epoch    BIGINT            xRegistry epoch
    revision BIGINT            gateway revision that wrote this state of the entity
    name, description, documentation STRING; labels MAP<STRING,STRING>;
    createdat, modifiedat TIMESTAMP

then typed domain columns (:data:`DOMAIN_COLUMNS`), then ``entity STRING``: the whole entity as
JSON. For messages, every column but ``entity`` holds the materialised value (the message's
``basemessageuri`` chain merged, as the gateway serves it); ``entity`` is what the message declares
itself, its xRegistry serialization. A change feed (``sinceRevision``) adds ``change STRING``
(``upserted`` / ``deleted``) in front. A user-supplied schema is honoured column by column: a
known column name gets its value (converted to the requested type), any other name is looked up
as a top-level attribute of the entity.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

#: The entity types and their xRegistry collection types (messages live in message groups and,
#: inline, in endpoints: both are read, told apart by ``grouptype``).
ENTITIES: dict[str, tuple[str, ...]] = {
    "endpoints": ("endpoints",),
    "messagegroups": ("messagegroups",),
    "messages": ("messagegroups/messages", "endpoints/messages"),
    "schemagroups": ("schemagroups",),
    "schemas": ("schemagroups/schemas",),
    "schemaversions": ("schemagroups/schemas/versions",),
}

#: The column a change feed adds in front of an entity's columns.
CHANGE_COLUMN = "change"
#: The column holding the whole entity as JSON.
ENTITY_COLUMN = "entity"

STR = StringType()
LONG = LongType()
TS = TimestampType()
STR_LIST = ArrayType(StringType(), containsNull=True)

HEAD = [
    StructField("registry", STR, False),
    StructField("xid", STR, False),
    StructField("group", STR, False),
    StructField("id", STR, False),
    StructField("epoch", LONG),
    StructField("revision", LONG),
    StructField("name", STR),
    StructField("description", STR),
    StructField("documentation", STR),
    StructField("labels", MapType(StringType(), StringType(), valueContainsNull=True)),
    StructField("createdat", TS),
    StructField("modifiedat", TS),
]

#: Typed domain columns of each entity type, between the common ones and ``entity``.
DOMAIN_COLUMNS: dict[str, list[StructField]] = {
    "endpoints": [
        StructField("usage", STR_LIST), StructField("protocol", STR), StructField("envelope", STR),
        StructField("channel", STR), StructField("messagegroups", STR_LIST), StructField("deployed", BooleanType()),
        StructField("endpointurls", STR_LIST),
    ],
    "messagegroups": [
        StructField("protocol", STR), StructField("envelope", STR), StructField("messagescount", LONG),
    ],
    "messages": [
        StructField("grouptype", STR, False), StructField("versionid", STR), StructField("protocol", STR),
        StructField("envelope", STR),
        StructField("dataschemaformat", STR), StructField("dataschemauri", STR), StructField("dataschemaxid", STR),
        StructField("datacontenttype", STR), StructField("basemessageuri", STR),
        StructField("versionscount", LONG),
    ],
    "schemagroups": [
        StructField("format", STR), StructField("schemascount", LONG),
    ],
    "schemas": [
        StructField("versionid", STR), StructField("format", STR), StructField("contenttype", STR),
        StructField("versionscount", LONG),
    ],
    "schemaversions": [
        StructField("schemaid", STR, False), StructField("versionid", STR), StructField("isdefault", BooleanType()),
        StructField("format", STR), StructField("contenttype", STR), StructField("ancestor", STR),
        StructField("schemauri", STR), StructField("schema", STR),
    ],
}

#: Columns whose equality / IN filters the data source pushes to the gateway (a message's
#: ``dataschemaformat`` is its ``format``).
PUSHABLE = ("registry", "group", "id", "protocol", "envelope", "format", "dataschemaformat")


def schema_for(entity: str, *, changes: bool = False) -> StructType:
    """The fixed schema of ``entity`` (a key of :data:`ENTITIES`); ``changes`` adds ``change``."""
    if entity not in ENTITIES:
        raise ValueError(f"unknown entity {entity!r} (one of: {', '.join(ENTITIES)})")
    head = [StructField(CHANGE_COLUMN, STR, False)] if changes else []
    return StructType([*head, *HEAD, *DOMAIN_COLUMNS[entity], StructField(ENTITY_COLUMN, STR)])


# -- rows -----------------------------------------------------------------------------------------

def _protocol_options(e: dict[str, Any]) -> dict[str, Any]:
    opts = e.get("protocoloptions")
    return opts if isinstance(opts, dict) else {}


def _endpoint_urls(e: dict[str, Any]) -> list[Any] | None:
    eps = _protocol_options(e).get("endpoints")
    if not isinstance(eps, list):
        return None
    return [x.get("uri") if isinstance(x, dict) else x for x in eps]


def _schema_text(e: dict[str, Any]) -> str | None:
    value = e.get("schema")
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


#: Values that are not plain top-level attributes of the entity's view.
DERIVED: dict[str, Callable[[dict[str, Any]], Any]] = {
    "deployed": lambda e: _protocol_options(e).get("deployed"),
    "endpointurls": _endpoint_urls,
    "schema": _schema_text,
    "ancestor": lambda e: e.get("ancestor" + "id", e.get("ancestor")),
    "schemauri": lambda e: e.get("schemaurl", e.get("schemauri")),  # served as rc4's schemaurl
}


def xid_parts(xid: str) -> tuple[str, str | None, str | None, str]:
    """``(group id, resource id or None, version id or None, own id)`` of a group/resource/version XID."""
    parts = xid.strip("/").split("/")
    group = parts[1]
    resource = parts[3] if len(parts) >= 4 else None
    version = parts[5] if len(parts) >= 6 else None
    return group, resource, version, parts[-1]


def row_values(
    entity: str, registry: str, view: dict[str, Any], revision: int | None, attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every column of ``entity`` (fixed schema) for one entity's xRegistry view, by name, as
    Python values (timestamps still as RFC 3339 strings; :func:`converter` converts). For a
    message, ``attributes`` are its materialised attributes: the typed columns read them, while
    the ``entity`` column keeps what the message declares (``view``)."""
    xid = view["xid"]
    group, resource, _version, own = xid_parts(xid)
    out: dict[str, Any] = {"registry": registry, "xid": xid, "group": group, "id": own, "revision": revision}
    if entity == "schemaversions":
        out["schemaid"] = resource
    elif entity == "messages":
        out["grouptype"] = xid.strip("/").split("/")[0]
    shown = {**view, **attributes} if attributes else view
    for field in HEAD[4:] + DOMAIN_COLUMNS[entity]:
        name = field.name
        if name in out:
            continue
        out[name] = DERIVED[name](shown) if name in DERIVED else shown.get(name)
    out[ENTITY_COLUMN] = json.dumps(view, separators=(",", ":"), ensure_ascii=False)
    return out


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware UTC datetime (``None`` when absent or unparseable)."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        text = str(value).strip().replace("z", "Z")
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _text(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _integer(value: Any) -> Any:
    if value is None or type(value) is int:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _boolean(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def converter(dtype: DataType) -> Callable[[Any], Any]:
    """A function turning an attribute value into what Arrow expects for the Spark type
    ``dtype`` (``None`` when it cannot), so that columns of a user-supplied schema whose types
    differ from the fixed ones still read: objects become JSON text, numbers text, and so on."""
    if isinstance(dtype, StringType):
        return _text
    if isinstance(dtype, (LongType, IntegerType)):
        return _integer
    if isinstance(dtype, BooleanType):
        return _boolean
    if isinstance(dtype, TimestampType):
        return parse_timestamp
    if isinstance(dtype, ArrayType):
        item = converter(dtype.elementType)
        return lambda v: None if v is None else [item(x) for x in (v if isinstance(v, list) else [v])]
    if isinstance(dtype, MapType):
        key, val = converter(dtype.keyType), converter(dtype.valueType)
        return lambda v: [(key(k), val(x)) for k, x in v.items()] if isinstance(v, dict) else None
    return lambda v: v
