"""Writes helm/xreg-gateway/README.md: helm/chart-readme.md.tmpl with the table of the chart's
values, read from values.yaml and its helm-docs style comments (`# -- description` above a key,
continued on the `#` lines below it; a documented map is one row, others are listed leaf by leaf).

    python helm/chart_readme.py            # rewrite the README
    python helm/chart_readme.py --check    # exit 1 when the README is stale
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CHART = HERE / "xreg-gateway"
TEMPLATE = HERE / "chart-readme.md.tmpl"
README = CHART / "README.md"

KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w-]*):(?: |$)")
DESCRIPTION = re.compile(r"^ *# -- ?(?P<text>.*)$")
CONTINUATION = re.compile(r"^ *#(?: (?P<text>.*))?$")


def descriptions(text: str) -> dict[tuple[str, ...], str]:
    """The `# --` description of each key path of a values file."""
    found: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if m := DESCRIPTION.match(line):
            pending = [m.group("text")]
        elif pending is not None and (m := CONTINUATION.match(line)):
            pending.append(m.group("text") or "")
        elif m := KEY.match(line):
            indent = len(m.group("indent"))
            stack = [(i, k) for i, k in stack if i < indent] + [(indent, m.group("key"))]
            if pending is not None:
                found[tuple(k for _, k in stack)] = " ".join(p.strip() for p in pending).strip()
            pending = None
        else:
            pending = None
    return found


def type_name(value: Any) -> str:
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "string"), (list, "list"),
                       (dict, "object")):
        if isinstance(value, kind):
            return name
    return "null"


def rows(values: dict[str, Any], described: dict[tuple[str, ...], str],
         prefix: tuple[str, ...] = ()) -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) of every documented key and every undocumented leaf."""
    out = []
    for key, value in values.items():
        path = (*prefix, key)
        if path not in described and isinstance(value, dict) and value:
            out += rows(value, described, path)
        else:
            out.append((".".join(path), type_name(value), json.dumps(value), described.get(path, "")))
    return out


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    text = (CHART / "values.yaml").read_text(encoding="utf-8")
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    table = ["| Key | Type | Default | Description |", "|-----|------|---------|-------------|"]
    table += [f"| `{key}` | {kind} | `{cell(default)}` | {cell(description)} |"
              for key, kind, default, description in rows(yaml.safe_load(text), descriptions(text))]
    out = TEMPLATE.read_text(encoding="utf-8")
    for name in ("version", "appVersion", "kubeVersion"):
        out = out.replace("{{ " + name + " }}", str(chart[name]))
    return out.replace("{{ values }}", "\n".join(table))


def main(argv: list[str]) -> int:
    wanted = render()
    if argv[1:] == ["--check"]:
        if README.read_text(encoding="utf-8") != wanted:
            print(f"{README} is stale: run python helm/chart_readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
