// A small client of the generated types: it compiles with `tsc --strict` only if the documented
// codegen mapping gives every field a real type (no `any`, no `unknown`) and non-null where the
// gateway promises it.
import type { ChangesQuery, JsonValue, MessagesOverKafkaQuery, SchemaValidationQuery } from "./graphql";

export interface Row {
  registry: string;
  xid: string;
  modified: Date | null;
  attributes: JsonValue;
  document: JsonValue | null;
}

export function rows(data: MessagesOverKafkaQuery): Row[] {
  const registry: string = data.registry.registryid; // `registry` is non-null: no check
  return (data.registry.messages?.nodes ?? []).map((node) => ({
    registry: node.registry.registryid,
    xid: node.xid,
    modified: node.modifiedat === null ? null : new Date(node.modifiedat), // Timestamp: an RFC 3339 string
    attributes: node.attributes,
    document: node.dataschema?.document ?? null,
  })).filter((row) => row.registry === registry);
}

export function invalid(data: SchemaValidationQuery): string[] {
  return (data.registry.schemas?.nodes ?? [])
    .filter((s) => s.defaultversion?.formatvalidated === false)
    .map((s) => `${s.xid}: ${s.defaultversion?.formatvalidatedreason ?? "no reason given"}`);
}

export function lastRevision(data: ChangesQuery): number {
  const feed = data.registry.changes;
  const kinds: ("UPSERTED" | "DELETED")[] = (feed?.nodes ?? []).map((n) => n.type);
  return kinds.length && feed ? feed.nodes[feed.nodes.length - 1].revision : 0;
}

export function keys(value: JsonValue): string[] {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? Object.keys(value) : [];
}

export function notAny(data: MessagesOverKafkaQuery): void {
  const node = data.registry.messages?.nodes[0];
  if (node === undefined) return;
  // @ts-expect-error JSON is JsonValue, not `any`: it is no number without a check
  const n: number = node.attributes;
  // @ts-expect-error Timestamp is a string
  const t: number = node.modifiedat ?? 0;
  void n;
  void t;
}
