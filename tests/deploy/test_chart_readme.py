"""helm/xreg-gateway/README.md is generated from values.yaml's `# --` comments
(helm/chart_readme.py) and kept up to date."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.deploy.chart import CHART, ROOT, default_values


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chart_readme", ROOT / "helm" / "chart_readme.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_up_to_date():
    result = subprocess.run([sys.executable, "helm/chart_readme.py", "--check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_stale_readme_is_reported(tmp_path, monkeypatch):
    module = generator()
    stale = tmp_path / "README.md"
    stale.write_text((CHART / "README.md").read_text(encoding="utf-8").replace("| `replicaCount` | int | `1`",
                                                                               "| `replicaCount` | int | `2`"))
    monkeypatch.setattr(module, "README", stale)
    assert module.main(["chart_readme.py", "--check"]) == 1
    assert module.main(["chart_readme.py"]) == 0  # rewritten
    assert module.main(["chart_readme.py", "--check"]) == 0


def test_descriptions_follow_helm_docs_comments():
    text = """\
# A header, not a description.

# -- Pods.
replicaCount: 1
image:
  # -- The image,
  # pushed to your registry.
  repository: x
  tag: ""
# A plain comment ends nothing documented.
auth:
  jwt:
    # -- Shared secret.
    existingSecret: ""
"""
    assert generator().descriptions(text) == {
        ("replicaCount",): "Pods.", ("image", "repository"): "The image, pushed to your registry.",
        ("auth", "jwt", "existingSecret"): "Shared secret."}


@pytest.mark.parametrize("key", sorted(default_values()))
def test_every_value_is_in_the_readme(key):
    text = (CHART / "README.md").read_text(encoding="utf-8")
    assert f"| `{key}" in text
