"""The Helm chart as the deploy tests read it: rendered and linted by Helm itself.

Helm runs in-process: ``helm-python-sdk`` binds Helm v4's Go SDK (``helm template``'s engine,
``helm lint``, the values schema check) as a library, so no ``helm`` binary is needed and nothing
goes over the network. A case is a release name and a values file, as in
``helm template <release> helm/xreg-gateway -f <values file>``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "xreg-gateway"
TEMPLATES = CHART / "templates"

#: `.Values.a.b` (also `$.Values.a.b`) in a template: the path a template reads.
VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")

#: Custom resources (Prometheus Operator) the offline Kubernetes schemas do not know.
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule"}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def default_values() -> dict[str, Any]:
    return load_yaml(CHART / "values.yaml")


@functools.cache
def _chart() -> helm.Chart:
    return helm.Chart.load(CHART)


def merge_values(override: dict[str, Any] | None = None) -> dict[str, Any]:
    """The values an install with ``override`` uses: Helm's own coalescing over values.yaml."""
    return _chart().merge_values(override or {})


def validate_values(override: dict[str, Any]) -> None:
    """Helm's check of ``override`` (over the defaults) against values.schema.json;
    ``helm.HelmValuesError`` when it does not fit."""
    _chart().validate_schema(merge_values(override))


@dataclass(frozen=True)
class Rendered:
    """What ``helm template`` printed: every document with the template it came from."""

    documents: tuple[tuple[str, dict[str, Any]], ...]
    notes: str

    def manifests(self) -> list[dict[str, Any]]:
        return [doc for _, doc in self.documents]

    def kinds(self) -> list[str]:
        return [doc["kind"] for doc in self.manifests()]

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.manifests() if d["kind"] == kind]

    def one(self, kind: str) -> dict[str, Any]:
        found = self.all(kind)
        assert len(found) == 1, f"{len(found)} {kind} manifests"
        return found[0]

    def pod(self) -> dict[str, Any]:
        return self.one("Deployment")["spec"]["template"]["spec"]

    def container(self, name: str = "gateway") -> dict[str, Any]:
        pod = self.pod()
        found = [c for c in pod["containers"] + pod.get("initContainers", []) if c["name"] == name]
        assert len(found) == 1, f"{len(found)} containers named {name}"
        return found[0]

    def sources(self) -> set[str]:
        return {source for source, _ in self.documents}


def render(override: dict[str, Any] | None = None, release: str = "xreg-gateway",
           namespace: str = "xreg") -> Rendered:
    """``helm template <release> helm/xreg-gateway`` with ``override`` over the defaults."""
    files = _chart().render(override or {}, name=release, namespace=namespace, is_install=True)
    documents = []
    for path, text in sorted(files.items()):
        source = path.removeprefix(f"{CHART.name}/templates/")
        if source == "NOTES.txt":
            continue
        documents += [(source, doc) for doc in yaml.safe_load_all(text) if doc]
    return Rendered(tuple(documents), files.get(f"{CHART.name}/templates/NOTES.txt", ""))


def lint(override: dict[str, Any] | None = None, kube_version: str | None = None) -> list[str]:
    """``helm lint --strict helm/xreg-gateway`` with ``override`` (``--kube-version``: the API
    deprecations of that Kubernetes): every message, warnings and even informational ones included."""
    report = helm.lint(CHART, override or {}, strict=True, kube_version=kube_version)
    return [f"{m['path']}: {m['error'].strip()}" for m in report["messages"]] + report["errors"]


@dataclass(frozen=True)
class Case:
    """A values file of the chart and the release it is rendered for."""

    name: str
    release: str
    values_file: Path | None

    @property
    def overrides(self) -> dict[str, Any]:
        return load_yaml(self.values_file) if self.values_file else {}

    @property
    def values(self) -> dict[str, Any]:
        return merge_values(self.overrides)

    @property
    def rendered(self) -> Rendered:
        return _rendered(self)

    # Shorthands of the rendered objects.
    def manifests(self) -> list[dict[str, Any]]:
        return self.rendered.manifests()

    def one(self, kind: str) -> dict[str, Any]:
        return self.rendered.one(kind)

    def container(self, name: str = "gateway") -> dict[str, Any]:
        return self.rendered.container(name)


@functools.cache
def _rendered(case: Case) -> Rendered:
    return render(case.overrides, release=case.release)


DEFAULT = Case("default", "xreg-gateway", None)
TRIAL = Case("trial", "xreg", CHART / "ci" / "trial-values.yaml")
PRODUCTION = Case("production", "registry", CHART / "ci" / "production-values.yaml")
CASES = [DEFAULT, TRIAL, PRODUCTION]
#: The profiles on the embedded store (the samples imported) and on MongoDB.
TRIAL_CASES = [DEFAULT, TRIAL]


def template_texts() -> dict[str, str]:
    """Every file of templates/ (tests/ included), by its path below templates/."""
    return {p.relative_to(TEMPLATES).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(TEMPLATES.rglob("*")) if p.is_file()}


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
