"""docs/operations.md stays true to the chart: its values example validates against the chart's
schema (checked by Helm), and its alert rules use only the metrics its table lists."""

from __future__ import annotations

import re

import yaml

from tests.deploy.chart import ROOT, validate_values

DOC = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")


def yaml_blocks() -> list[object]:
    blocks = re.findall(r"^( *)```yaml\n(.*?)^\1```", DOC, flags=re.M | re.S)
    return [yaml.safe_load("\n".join(line[len(indent):] for line in body.splitlines())) for indent, body in blocks]


def test_the_values_example_fits_the_chart():
    values = next(b for b in yaml_blocks() if isinstance(b, dict) and "store" in b)
    validate_values(values)  # Helm's own check against values.schema.json
    assert values["store"]["existingSecret"] in DOC  # the Secret the example creates


def test_alert_rules_use_the_documented_metrics():
    rules = next(b for b in yaml_blocks() if isinstance(b, dict) and "groups" in b)
    table = set(re.findall(r"^\| `(xreg_\w+)` \|", DOC, flags=re.M))
    assert len(table) == 12
    used = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "labels", "annotations"} <= set(rule)
            used |= {re.sub(r"_(bucket|sum|count)$", "", m) for m in re.findall(r"\bxreg_\w+", rule["expr"])}
    assert used and used <= table
