"""The Helm chart as the deploy tests read it: its files, its values (merged as Helm merges them)
and the hand-written manifests that `helm template` is expected to render for them.

No helm binary (and no Go template engine) is used: the templates are read as text, the values
and expected manifests as YAML.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "xreg-gateway"
TEMPLATES = CHART / "templates"
EXPECTED = Path(__file__).resolve().parent / "expected"

#: `.Values.a.b` (also `$.Values.a.b`) in a template: the path a template reads.
VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def default_values() -> dict[str, Any]:
    return load_yaml(CHART / "values.yaml")


def merge_values(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of a values file over the chart's defaults: maps merge key by key,
    anything else (lists included) is replaced, and a null removes the default."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class Case:
    """A set of values and the manifests `helm template <release> helm/xreg-gateway` renders."""

    name: str
    release: str
    values_file: Path | None

    @property
    def values(self) -> dict[str, Any]:
        base = default_values()
        return merge_values(base, load_yaml(self.values_file)) if self.values_file else base

    @property
    def expected_file(self) -> Path:
        return EXPECTED / f"{self.name}.yaml"

    def manifests(self) -> list[dict[str, Any]]:
        return [d for d in yaml.safe_load_all(self.expected_file.read_text(encoding="utf-8")) if d]

    def sources(self) -> list[str]:
        """The template each rendered document came from (helm's `# Source:` lines), in order."""
        return re.findall(r"^# Source: xreg-gateway/templates/(\S+)$", self.expected_file.read_text(encoding="utf-8"),
                          flags=re.M)

    def one(self, kind: str) -> dict[str, Any]:
        found = [d for d in self.manifests() if d["kind"] == kind]
        assert len(found) == 1, f"{self.name}: {len(found)} {kind} manifests"
        return found[0]

    def container(self) -> dict[str, Any]:
        containers = self.one("Deployment")["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in containers] == ["gateway"]
        return containers[0]


CASES = [
    Case("default", "xreg-gateway", None),
    Case("production", "registry", CHART / "ci" / "production-values.yaml"),
]


def template_texts() -> dict[str, str]:
    """Every file of templates/, by name."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(TEMPLATES.iterdir()) if p.is_file()}


def values_paths(text: str) -> set[tuple[str, ...]]:
    """The `.Values` paths a template reads."""
    return {tuple(m.group(1).lstrip(".").split(".")) for m in VALUES_REF.finditer(text)}


def lookup(values: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether ``path`` names a key (of any value, null included) in ``values``."""
    node: Any = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True
