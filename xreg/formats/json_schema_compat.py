"""Compatibility of two JSON Schemas, after Confluent Schema Registry's JSON Schema rules.

The question asked is the one Confluent asks: does the *reader* schema accept every document the
*writer* schema accepts? Backward compatibility takes the newer schema as reader and the older as
writer; forward compatibility the other way round. :func:`compare` runs both and returns each
breaking change once, flagged with the direction(s) it breaks. The rules (docs/schema-validation.md
has the full list):

- types: the reader's types must include the writer's (``number`` includes ``integer``);
- ``enum`` / ``const``: the reader's values must include the writer's;
- bounds (``maximum``, ``maxLength``, ``maxItems``, ``maxProperties``, the minimums and the
  exclusive forms): the reader's range must include the writer's; ``multipleOf`` must divide;
  ``pattern``, ``format`` and ``uniqueItems`` may only be dropped, not added or changed;
- properties, by content model: a property the reader no longer lists is fine if the reader is
  open (no ``additionalProperties: false``, no ``patternProperties``), checked against the
  reader's ``patternProperties`` / ``additionalProperties`` schema if partially open, and breaking
  if closed. A property the reader adds is breaking if the writer was open (writer data may hold
  any value for it) unless the new property's schema is empty, checked against the writer's
  pattern / additional schema if partially open, and fine if the writer was closed;
- ``required``: a newly required property breaks unless it has a ``default``;
- ``additionalProperties``: closing breaks; an additional-properties schema is compared;
- arrays: ``items`` / ``prefixItems`` / ``additionalItems`` position by position;
- ``anyOf`` / ``oneOf``: every writer branch must be accepted by some reader branch; ``allOf``
  members are merged into their schema first; local ``$ref`` are followed (recursion-safe);
- any other assertion keyword (``not``, ``if``/``then``/``else``, ``dependencies``,
  ``propertyNames``, ``contains``, ``unevaluated*``, remote ``$ref``) is not analysed: a change to
  it counts as breaking in both directions. Annotations (``title``, ``description``, ``default``,
  ``examples``, ``$comment``, ``deprecated``, …) never break.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any
from urllib.parse import unquote

from xreg.formats import regex
from xreg.formats.base import merge_directions
from xreg.formats.model import Change

ALL_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "example", "$comment", "deprecated", "readOnly", "writeOnly",
    "$id", "id", "$schema", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$defs", "definitions", "$vocabulary",
    "contentMediaType", "contentEncoding",
})
# Keywords this module analyses; every other non-annotation keyword is compared as opaque.
_ANALYSED = frozenset({
    "type", "enum", "const", "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf",
    "maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems", "items", "prefixItems",
    "additionalItems", "properties", "required", "additionalProperties", "patternProperties", "maxProperties",
    "minProperties", "anyOf", "oneOf", "allOf", "$ref",
})
_BOUNDS = (("maxLength", "max"), ("minLength", "min"), ("maxItems", "max"), ("minItems", "min"),
           ("maxProperties", "max"), ("minProperties", "min"))


def compare(older: Any, newer: Any) -> list[Change]:
    """The breaking changes from ``older`` to ``newer`` (JSON Schema documents), each flagged
    with the directions it breaks."""
    return merge_directions(_Diff(older, newer, reversed_=False).run(), _Diff(newer, older, reversed_=True).run())


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


@dataclass
class _Diff:
    """Findings where ``reader`` does not accept all that ``writer`` accepts. ``reversed_`` tells
    whether the writer is the newer schema, so messages always read from older to newer."""

    writer_root: Any
    reader_root: Any
    reversed_: bool
    found: list[tuple[str, str]] = field(default_factory=list)
    _seen: set[tuple[int, int]] = field(default_factory=set)
    # The pairs behind _seen, kept alive so no id in it is reused by a later temporary schema.
    _kept: list[tuple[Any, Any]] = field(default_factory=list)

    def run(self) -> list[tuple[str, str]]:
        self.schema(self.writer_root, self.reader_root, "", "")
        return self.found

    # -- helpers ---------------------------------------------------------------------------
    def report(self, path: str, message: str) -> None:
        if (path, message) not in self.found:
            self.found.append((path, message))

    def old_new(self, writer_value: Any, reader_value: Any) -> tuple[Any, Any]:
        return (reader_value, writer_value) if self.reversed_ else (writer_value, reader_value)

    def changed(self, path: str, what: str, writer_value: Any, reader_value: Any) -> None:
        old, new = self.old_new(writer_value, reader_value)
        self.report(path, f"{what} changed from {_show_opt(old)} to {_show_opt(new)}")

    def resolve(self, node: Any, root: Any) -> Any:
        """Follow local ``$ref`` chains and merge ``allOf`` members into their schema."""
        for _ in range(32):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#")):
                break
            target = pointer_get(root, node["$ref"])
            if target is MISSING:
                break
            node = target
        if node is True:
            return {}
        if isinstance(node, dict) and isinstance(node.get("allOf"), list):
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for member in node["allOf"]:
                member = self.resolve(member, root)
                if not isinstance(member, dict):
                    return node
                for k, v in member.items():
                    if k == "properties" and isinstance(v, dict):
                        merged["properties"] = {**merged.get("properties", {}), **v}
                    elif k == "required" and isinstance(v, list):
                        merged["required"] = [*merged.get("required", []), *v]
                    else:
                        merged.setdefault(k, v)
            return merged
        return node

    # -- the comparison --------------------------------------------------------------------
    def schema(self, writer: Any, reader: Any, path: str, name: str) -> None:
        writer = self.resolve(writer, self.writer_root)
        reader = self.resolve(reader, self.reader_root)
        key = (id(writer), id(reader))
        if key in self._seen:
            return
        self._seen.add(key)
        self._kept.append((writer, reader))
        label = f"'{name}'" if name else "the document"
        if writer is False:
            return
        if reader is False:
            old, new = self.old_new("any value", "no value")
            self.report(path, f"{label} changed from accepting {old} to accepting {new}")
            return
        if not isinstance(writer, dict) or not isinstance(reader, dict) or writer == reader or _is_empty_schema(reader):
            return
        if _branches(writer) or _branches(reader):
            self.union(writer, reader, path, name)
            return
        self.types(writer, reader, path, label)
        self.values(writer, reader, path, label)
        self.bounds(writer, reader, path, label)
        w_types, r_types = _types(writer), _types(reader)
        if "object" in w_types and "object" in r_types:
            self.objects(writer, reader, path, name)
        if "array" in w_types and "array" in r_types:
            self.arrays(writer, reader, path, name)
        self.opaque(writer, reader, path, label)

    def union(self, writer: dict[str, Any], reader: dict[str, Any], path: str, name: str) -> None:
        label = f"'{name}'" if name else "the document"
        w_branches = _branches(writer) or [writer]
        r_branches = _branches(reader) or [reader]
        if len(w_branches) == 1 and len(r_branches) == 1:
            self.schema(w_branches[0], r_branches[0], path, name)
            return
        for i, wb in enumerate(w_branches):
            if any(not self.probe(wb, rb, path, name) for rb in r_branches):
                continue
            if len(r_branches) == 1:
                self.schema(wb, r_branches[0], path, name)
            elif len(w_branches) == 1:
                old, new = self.old_new("a single schema", "a union whose branches do not cover it")
                self.report(path, f"{label} changed from {old} to {new}")
            else:
                what = "removed or narrowed" if not self.reversed_ else "added or widened"
                self.report(f"{path}/{_union_keyword(writer)}/{i}", f"a branch of the union at {label} was {what}")

    def probe(self, writer: Any, reader: Any, path: str, name: str) -> list[tuple[str, str]]:
        """The findings ``schema(writer, reader)`` would report, without reporting them."""
        sub = _Diff(self.writer_root, self.reader_root, self.reversed_)
        sub._seen, sub._kept = set(self._seen), self._kept
        sub.schema(writer, reader, path, name)
        return sub.found

    def types(self, writer: dict[str, Any], reader: dict[str, Any], path: str, label: str) -> None:
        w, r = _types(writer), _types(reader)
        if any(not (t in r or (t == "integer" and "number" in r)) for t in w):
            self.changed(f"{path}/type", f"type of {label}", _type_text(writer), _type_text(reader))

    def values(self, writer: dict[str, Any], reader: dict[str, Any], path: str, label: str) -> None:
        r_values = _enum(reader)
        if r_values is None:
            return
        w_values = _enum(writer)
        if w_values is None:
            old, new = self.old_new("no enumeration", f"enumeration {_show(r_values)}")
            self.report(f"{path}/enum", f"values of {label} changed from {old} to {new}")
            return
        missing = [v for v in w_values if v not in r_values]
        if missing:
            what = "removed from" if not self.reversed_ else "added to"
            self.report(f"{path}/enum", f"values {_show(missing)} {what} the enumeration of {label}")

    def bounds(self, writer: dict[str, Any], reader: dict[str, Any], path: str, label: str) -> None:
        for keyword, kind in _BOUNDS:
            w, r = writer.get(keyword), reader.get(keyword)
            if r is None or not isinstance(r, (int, float)):
                continue
            if w is None or (kind == "max" and r < w) or (kind == "min" and r > w):
                self.changed(f"{path}/{keyword}", f"{keyword} of {label}", w, r)
        for side, name in (("upper", "maximum"), ("lower", "minimum")):
            w_b, r_b = _numeric_bound(writer, side), _numeric_bound(reader, side)
            if r_b is None:
                continue
            wider = w_b is not None and (
                (r_b[0] > w_b[0] if side == "upper" else r_b[0] < w_b[0])
                or (r_b[0] == w_b[0] and (not r_b[1] or w_b[1])))
            if not wider:
                self.changed(f"{path}/{name}", f"{name} of {label}", _bound_text(w_b), _bound_text(r_b))
        w_m, r_m = writer.get("multipleOf"), reader.get("multipleOf")
        if isinstance(r_m, (int, float)) and r_m > 0:
            if not (isinstance(w_m, (int, float)) and w_m > 0 and Fraction(str(w_m)) % Fraction(str(r_m)) == 0):
                self.changed(f"{path}/multipleOf", f"multipleOf of {label}", w_m, r_m)
        for keyword in ("pattern", "format"):
            if keyword in reader and reader[keyword] != writer.get(keyword):
                self.changed(f"{path}/{keyword}", f"{keyword} of {label}", writer.get(keyword), reader[keyword])
        if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
            self.changed(f"{path}/uniqueItems", f"uniqueItems of {label}", writer.get("uniqueItems", False), True)

    def objects(self, writer: dict[str, Any], reader: dict[str, Any], path: str, name: str) -> None:
        label = f"'{name}'" if name else "the document"
        w_props, r_props = _map(writer, "properties"), _map(reader, "properties")
        for prop in [*w_props, *(p for p in r_props if p not in w_props)]:
            sub = f"{path}/properties/{_escape(prop)}"
            full = f"{name}.{prop}" if name else prop
            if prop in w_props and prop in r_props:
                self.schema(w_props[prop], r_props[prop], sub, full)
            elif prop in w_props:  # the reader does not list it
                if _is_open(reader) or w_props[prop] is False:
                    continue
                extra = _extra_schema(reader, prop)
                if extra is None:
                    if self.reversed_:
                        self.report(sub, f"property '{full}' added, but the older schema does not allow it "
                                         "(closed content model)")
                    else:
                        self.report(sub, f"property '{full}' removed from a closed content model")
                else:
                    self.schema(w_props[prop], extra, sub, full)
            else:  # the reader lists a property the writer does not
                if _is_open(writer):
                    if _is_empty_schema(self.resolve(r_props[prop], self.reader_root)):
                        continue
                    if self.reversed_:
                        self.report(sub, f"property '{full}' removed from an open content model: newer data "
                                         "may hold any value for it")
                    else:
                        self.report(sub, f"property '{full}' added to an open content model: older data may "
                                         "hold any value for it")
                    continue
                extra = _extra_schema(writer, prop)
                if extra is not None:
                    self.schema(extra, r_props[prop], sub, full)
        w_req, r_req = _required(writer), _required(reader)
        for prop in r_req:
            if prop in w_req:
                continue
            prop_schema = self.resolve(r_props.get(prop, {}), self.reader_root)
            if isinstance(prop_schema, dict) and "default" in prop_schema:
                continue
            full = f"{name}.{prop}" if name else prop
            state = "now required" if not self.reversed_ else "no longer required"
            self.report(f"{path}/required", f"property '{full}' is {state}")
        self.additional(writer, reader, path, name, label)

    def additional(self, writer: dict[str, Any], reader: dict[str, Any], path: str, name: str, label: str) -> None:
        w_pp, r_pp = _map(writer, "patternProperties"), _map(reader, "patternProperties")
        w_ap, r_ap = writer.get("additionalProperties", True), reader.get("additionalProperties", True)
        for pattern, r_schema in r_pp.items():
            sub = f"{path}/patternProperties/{_escape(pattern)}"
            w_schema = w_pp.get(pattern, w_ap)
            self.schema(w_schema, r_schema, sub, f"{name}.<{pattern}>" if name else f"<{pattern}>")
        for pattern, w_schema in w_pp.items():
            if pattern not in r_pp:
                sub = f"{path}/patternProperties/{_escape(pattern)}"
                self.schema(w_schema, r_ap, sub, f"{name}.<{pattern}>" if name else f"<{pattern}>")
        if r_ap is False and w_ap is not False:
            old, new = self.old_new("allowed", "not allowed")
            self.report(f"{path}/additionalProperties", f"additional properties of {label} changed from {old} to {new}")
        elif w_ap is not False:
            self.schema(w_ap, r_ap, f"{path}/additionalProperties", f"{name}.*" if name else "*")

    def arrays(self, writer: dict[str, Any], reader: dict[str, Any], path: str, name: str) -> None:
        w_tuple, w_rest = _items(writer)
        r_tuple, r_rest = _items(reader)
        for i in range(max(len(w_tuple), len(r_tuple))):
            w_i = w_tuple[i] if i < len(w_tuple) else w_rest
            r_i = r_tuple[i] if i < len(r_tuple) else r_rest
            self.schema(w_i, r_i, f"{path}/items/{i}", f"{name}[{i}]")
        self.schema(w_rest, r_rest, f"{path}/items", f"{name}[]")

    def opaque(self, writer: dict[str, Any], reader: dict[str, Any], path: str, label: str) -> None:
        for keyword in sorted(set(writer) | set(reader)):
            if keyword in _ANNOTATIONS or keyword in _ANALYSED:
                continue
            if writer.get(keyword) != reader.get(keyword):
                self.report(f"{path}/{keyword}", f"'{keyword}' of {label} changed; this keyword is not analysed, "
                                                 "so any change to it counts as breaking")
        w_ref, r_ref = writer.get("$ref"), reader.get("$ref")
        if (w_ref != r_ref) and (isinstance(w_ref, str) or isinstance(r_ref, str)):
            self.changed(f"{path}/$ref", f"reference of {label}", w_ref, r_ref)


def _map(schema: dict[str, Any], keyword: str) -> dict[str, Any]:
    value = schema.get(keyword)
    return value if isinstance(value, dict) else {}


def _show_opt(value: Any) -> str:
    return "none" if value is None else _show(value)


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


MISSING = object()


def pointer_get(root: Any, ref: str) -> Any:
    """The value a local reference (``#`` or ``#/…`` JSON pointer) points at, or :data:`MISSING`."""
    node = root
    fragment = ref[1:]
    if not fragment:
        return root
    if not fragment.startswith("/"):
        return MISSING
    for raw in fragment[1:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


def _types(schema: dict[str, Any]) -> frozenset[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return frozenset({t})
    if isinstance(t, list) and all(isinstance(x, str) for x in t):
        return frozenset(t)
    return ALL_TYPES


def _type_text(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if t is None:
        return "any"
    return t if isinstance(t, str) else " | ".join(str(x) for x in t)


def _enum(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    e = schema.get("enum")
    return list(e) if isinstance(e, list) else None


def _numeric_bound(schema: dict[str, Any], side: str) -> tuple[float, bool] | None:
    """The tightest (value, exclusive) bound on one side, from drafts 4 and 6+ forms alike."""
    inclusive_kw, exclusive_kw = ("maximum", "exclusiveMaximum") if side == "upper" else ("minimum", "exclusiveMinimum")
    candidates: list[tuple[float, bool]] = []
    value, excl = schema.get(inclusive_kw), schema.get(exclusive_kw)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        candidates.append((value, excl is True))
    if isinstance(excl, (int, float)) and not isinstance(excl, bool):
        candidates.append((excl, True))
    if not candidates:
        return None
    if side == "upper":
        return min(candidates, key=lambda c: (c[0], not c[1]))
    return max(candidates, key=lambda c: (c[0], c[1]))


def _bound_text(bound: tuple[float, bool] | None) -> str | None:
    if bound is None:
        return None
    return f"{bound[0]} (exclusive)" if bound[1] else str(bound[0])


def _branches(schema: Any) -> list[Any]:
    if not isinstance(schema, dict):
        return []
    keyword = _union_keyword(schema)
    if not keyword:
        return []
    base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    return [({**base, **b} if isinstance(b, dict) else b) for b in schema[keyword]]


def _union_keyword(schema: dict[str, Any]) -> str:
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            return keyword
    return ""


def _required(schema: dict[str, Any]) -> list[str]:
    r = schema.get("required")
    return [x for x in r if isinstance(x, str)] if isinstance(r, list) else []


def _is_open(schema: dict[str, Any]) -> bool:
    ap = schema.get("additionalProperties", True)
    return not schema.get("patternProperties") and (ap is True or ap == {})


def _extra_schema(schema: dict[str, Any], prop: str) -> Any:
    """The schema an unlisted property ``prop`` is validated against, or ``None`` when the
    content model rejects it."""
    for pattern, sub in (schema.get("patternProperties") or {}).items():
        try:
            if regex.search(pattern, prop):
                return sub
        except regex.UnsupportedPattern:
            continue
    ap = schema.get("additionalProperties", True)
    return None if ap is False else ap


def _is_empty_schema(schema: Any) -> bool:
    return schema is True or (isinstance(schema, dict) and all(k in _ANNOTATIONS for k in schema))


def _items(schema: dict[str, Any]) -> tuple[list[Any], Any]:
    """Positional item schemas and the schema of the items after them."""
    if isinstance(schema.get("prefixItems"), list):
        return list(schema["prefixItems"]), schema.get("items", True)
    items = schema.get("items", True)
    if isinstance(items, list):
        return items, schema.get("additionalItems", True)
    return [], items
