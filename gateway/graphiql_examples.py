"""The example queries GraphiQL offers: what analysts ask of a message catalogue.

One place for them: the page (:mod:`gateway.graphiql`) opens them as its first tabs and lists
them as share links in its "Examples" pane, and the tests run each one against the 117-feed
corpus (``tests/data/xreg``), where every one must answer data and no error. The variables hold
values of that corpus; an analyst edits them in the page's "Variables" pane.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Example:
    """One query: ``name`` is its operation name (GraphiQL's tab title)."""

    name: str
    title: str
    description: str
    query: str
    variables: dict[str, Any] = field(default_factory=dict)

    def variables_json(self) -> str:
        """The variables as GraphiQL's Variables pane shows them ("" when there are none)."""
        return json.dumps(self.variables, indent=2) if self.variables else ""


ENDPOINTS = Example(
    name="Endpoints",
    title="Endpoints and their messages",
    description="The registry's endpoints, the message groups each one uses, and their messages.",
    query="""\
# Endpoints of the registry, the message groups each one uses,
# and their messages.
# Run: Ctrl-Enter or the ▶ button. Schema: the Docs pane.
# More examples: the Examples pane; build a query by clicking
# fields: the Explorer pane; list results as a table: Table.
#
# Need credentials? Open "Headers" below and paste
#   {"Authorization": "Bearer <token>"}
# (headers stay in this tab; they are never stored).

query Endpoints {
  registry {
    name
    endpoints(first: 5) {
      totalCount
      edges {
        node {
          endpointid
          protocol
          usage
          messagegroups {
            messagegroupid
            messages(first: 3) {
              totalCount
              edges {
                node {
                  messageid
                  envelope
                  dataschemaformat
                }
              }
            }
          }
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}
""",
)

ENDPOINTS_BY_PROTOCOL = Example(
    name="EndpointsByProtocol",
    title="Endpoints by protocol",
    description="Endpoints speaking one protocol (KAFKA, MQTT/5.0, AMQP/1.0, HTTP), with their messages.",
    query="""\
# Endpoints speaking one protocol, and the messages sent or received there.
query EndpointsByProtocol($protocol: String!) {
  registry {
    endpoints(filter: {protocol: $protocol}, first: 25) {
      totalCount
      edges {
        node {
          endpointid
          protocol
          usage
          envelope
          messagegroups {
            messagegroupid
            messages(first: 10) {
              totalCount
              nodes {
                messageid
                protocol
              }
            }
          }
        }
      }
    }
  }
}
""",
    variables={"protocol": "KAFKA"},
)

MESSAGES_BY_PROTOCOL = Example(
    name="MessagesByProtocol",
    title="Messages by protocol",
    description="Messages of one protocol across the registry, with their envelope and payload format.",
    query="""\
# Messages of one protocol, across message groups and endpoints.
# Switch to the Table pane to see them as rows, and download a CSV.
query MessagesByProtocol($protocol: String!) {
  registry {
    messages(filter: {protocol: $protocol}, first: 50) {
      totalCount
      edges {
        node {
          xid
          messageid
          protocol
          envelope
          dataschemaformat
          datacontenttype
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}
""",
    variables={"protocol": "MQTT/5.0"},
)

BY_SCHEMA_FORMAT = Example(
    name="BySchemaFormat",
    title="Messages and schemas by schema format",
    description="Messages whose payload schema has one format, and the schemas of that format ('*' matches any tail).",
    query="""\
# Messages whose payload schema has a format, and the schemas
# of that format. A trailing * matches any version of the format.
query BySchemaFormat($format: String!) {
  registry {
    messages(filter: {format: $format}, first: 25) {
      totalCount
      nodes {
        xid
        dataschemaformat
        dataschema {
          xid
        }
      }
    }
    schemas(filter: {format: $format}, first: 25) {
      totalCount
      nodes {
        xid
        format
        versionid
      }
    }
  }
}
""",
    variables={"format": "JsonStructure*"},
)

DERIVED_MESSAGES = Example(
    name="DerivedMessages",
    title="What inherits from this base message",
    description="The messages whose basemessageuri names one base message, and what each takes from it.",
    query="""\
# The messages built on one base message (their `basemessageuri`),
# and which attributes each one inherits from where.
# `derived` is an xRegistry filter expression on what each message
# declares itself; `base` is the base message's XID.
query DerivedMessages($base: String!, $derived: String!) {
  registry {
    base: lookup(xid: $base) {
      ... on Message {
        xid
        name
        dataschemaformat
      }
    }
    messages(filter: {raw: [$derived], declared: true}, first: 50) {
      totalCount
      nodes {
        xid
        basemessageuri
        inheritedFrom {
          attribute
          xid
        }
      }
    }
  }
}
""",
    variables={
        "base": "/messagegroups/uk.gov.tfl.road.disruptions/messages/uk.gov.tfl.road.RoadDisruption",
        "derived": "basemessageuri=/messagegroups/uk.gov.tfl.road.disruptions/messages/uk.gov.tfl.road.RoadDisruption",
    },
)

CHANGES_SINCE = Example(
    name="ChangesSince",
    title="What changed since revision N",
    description="The change feed: every entity written after a revision (follow pageInfo.endCursor with `after`).",
    query="""\
# Everything written after revision `since`: the change feed.
# Keep `revision` and `instanceId` as the checkpoint of the next read.
query ChangesSince($since: Int!) {
  registry {
    revision
    instanceId
    changes(since: $since, first: 50) {
      totalCount
      nodes {
        xid
        kind
        collection
        type
        revision
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}
""",
    variables={"since": 0},
)

SCHEMA_VALIDATION = Example(
    name="SchemaValidation",
    title="Schema versions that failed validation",
    description="Schema versions whose format or compatibility check did not pass (with the reason), "
                "and how many passed.",
    query="""\
# Schema versions whose format check (`formatvalidated`) or
# compatibility check (`compatibilityvalidated`) did not pass,
# with the reasons. `validated` counts those that passed.
query SchemaValidation {
  registry {
    validated: versions(resourceType: "schemas", first: 0,
                        filter: {raw: ["formatvalidated=true"]}) {
      totalCount
    }
    failed: versions(resourceType: "schemas", first: 50,
                     filter: {raw: ["formatvalidated=false", "compatibilityvalidated=false"]}) {
      totalCount
      edges {
        node {
          xid
          versionid
          ... on SchemaVersion {
            format
            formatvalidated
            formatvalidatedreason
            compatibilityvalidated
            compatibilityvalidatedreason
          }
        }
      }
    }
  }
}
""",
)

#: Every example, in the order the page offers them (the first is the page's first tab).
EXAMPLES: tuple[Example, ...] = (
    ENDPOINTS,
    ENDPOINTS_BY_PROTOCOL,
    MESSAGES_BY_PROTOCOL,
    BY_SCHEMA_FORMAT,
    DERIVED_MESSAGES,
    CHANGES_SINCE,
    SCHEMA_VALIDATION,
)
