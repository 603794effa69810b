"""The Helm chart (helm/xreg-gateway), checked without helm: YAML lint, the values against
values.schema.json, every value a template reads exists, the expected manifests (what
`helm template` renders for the default and the production example values, written by hand in
tests/deploy/expected/) valid against the Kubernetes API schemas, and consistent with the
templates and the values they were rendered from."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import SchemaNotFoundError
from yamllint import linter
from yamllint.config import YamlLintConfig

from tests.deploy.chart import (
    CASES,
    CHART,
    EXPECTED,
    ROOT,
    TEMPLATES,
    Case,
    default_values,
    load_yaml,
    lookup,
    template_texts,
    values_paths,
)

CASE_IDS = [c.name for c in CASES]

#: The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest the
#: offline schemas of kubernetes-validate know.
KUBERNETES_VERSIONS = ["1.25", kubernetes_validate.utils.latest_version()]

YAMLLINT = YamlLintConfig("""
extends: default
rules:
  line-length: {max: 120}
  document-start: disable
  comments: {min-spaces-from-content: 1}
  indentation: {spaces: 2, indent-sequences: whatever}
  truthy: {check-keys: false}
""")


def schema() -> dict[str, Any]:
    return json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))


def schema_errors(values: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(schema())
    return [f"{'.'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in validator.iter_errors(values)]


# -- YAML lint ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Chart.yaml", "values.yaml", "ci/production-values.yaml",
                                  "../../tests/deploy/expected/default.yaml",
                                  "../../tests/deploy/expected/production.yaml"])
def test_yaml_files_lint_clean(name):
    path = (CHART / name).resolve()
    problems = [f"{path.name}:{p.line}:{p.column}: {p.desc} ({p.rule})"
                for p in linter.run(path.read_text(encoding="utf-8"), YAMLLINT, str(path))]
    assert problems == []


def test_yamllint_reports_a_broken_file():
    """The lint configuration above does find problems (a duplicated key, a tab)."""
    problems = list(linter.run("image:\n  tag: a\n  tag: b\n\tx: 1\n", YAMLLINT))
    assert problems


# -- Chart.yaml -----------------------------------------------------------------------------------

def test_chart_metadata_matches_the_project():
    chart = load_yaml(CHART / "Chart.yaml")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == CHART.name
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert chart["appVersion"] == project["version"]


# -- values.schema.json ---------------------------------------------------------------------------

def test_schema_is_a_valid_draft_7_schema():
    jsonschema.Draft7Validator.check_schema(schema())


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_values_validate_against_the_schema(case: Case):
    assert schema_errors(case.values) == []


def changed(**paths: Any) -> dict[str, Any]:
    """The default values with dotted ``paths`` (``a__b`` for ``a.b``) set."""
    values = copy.deepcopy(default_values())
    for dotted, value in paths.items():
        *heads, last = dotted.split("__")
        node = values
        for head in heads:
            node = node[head]
        node[last] = value
    return values


REFUSED = {
    "a remote token in plain text": changed(config__registries=[
        {"id": "contoso", "kind": "xregistry", "url": "https://c.example/registry", "auth": {"bearer": "t0ken"}}]),
    "a store URL in the settings file": changed(config__settings={"store_url": "mongodb://u:p@a/x"}),
    "a writable root filesystem": changed(securityContext__readOnlyRootFilesystem=False),
    "privilege escalation": changed(securityContext__allowPrivilegeEscalation=True),
    "running as root": changed(podSecurityContext__runAsNonRoot=False),
    "capabilities kept": changed(securityContext__capabilities={"drop": ["NET_RAW"]}),
    "the embedded store with two replicas": changed(store__existingSecret="", replicaCount=2),
    "the embedded store with autoscaling": changed(store__existingSecret="", replicaCount=1,
                                                   autoscaling__enabled=True),
    "both PDB bounds": changed(podDisruptionBudget__minAvailable=1),
    "an unknown top-level value": changed(replicas=3),
    "a log format the gateway does not know": changed(logFormat="xml"),
    "a remote credential without a mode": changed(remoteCredentials=[
        {"registry": "contoso", "existingSecret": "contoso", "key": "token"}]),
    "zero workers": changed(workers=0),
}


@pytest.mark.parametrize("values", REFUSED.values(), ids=REFUSED.keys())
def test_schema_refuses(values):
    assert schema_errors(values)


def test_schema_accepts_the_embedded_store_with_one_replica():
    assert schema_errors(changed(store__existingSecret="", replicaCount=1)) == []


# -- templates and values -------------------------------------------------------------------------

def test_every_value_a_template_reads_exists_in_values_yaml():
    values = default_values()
    missing = sorted(f"{name}: .Values.{'.'.join(path)}"
                     for name, text in template_texts().items() for path in values_paths(text)
                     if not lookup(values, path))
    assert missing == []


def test_every_value_is_read_by_a_template():
    read = {path[0] for text in template_texts().values() for path in values_paths(text)}
    assert sorted(set(default_values()) - read) == []


def test_the_reference_check_finds_a_missing_value():
    assert not lookup(default_values(), ("ingress", "hostz"))
    assert values_paths("{{ $.Values.store.key }} {{ .Values.a.b_c }}") == {("store", "key"), ("a", "b_c")}


# -- the expected manifests -----------------------------------------------------------------------

def validated_manifests() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{case.name}:{doc['kind']}", doc) for case in CASES for doc in case.manifests()
            if doc["kind"] != "ServiceMonitor"]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(("name", "manifest"), validated_manifests(), ids=[n for n, _ in validated_manifests()])
def test_expected_manifest_validates_against_the_kubernetes_schema(name, manifest, version):
    kubernetes_validate.validate(manifest, version, strict=True)


def test_the_kubernetes_schemas_are_checked_offline_and_strictly():
    """A misspelt field fails (strict: no unknown properties), without any network access."""
    bad = copy.deepcopy(CASES[0].one("Deployment"))
    bad["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["paht"] = "/healthz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSIONS[0], strict=True)
    with pytest.raises(SchemaNotFoundError):  # hence the hand-written checks below
        kubernetes_validate.validate(CASES[1].one("ServiceMonitor"), KUBERNETES_VERSIONS[0], strict=True)


def test_the_service_monitor_scrapes_metrics_of_the_service():
    case = CASES[1]
    monitor, service = case.one("ServiceMonitor"), case.one("Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor["metadata"]) == {"name", "labels"}
    assert set(monitor["spec"]) == {"selector", "endpoints"}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert monitor["metadata"]["labels"].items() >= case.values["serviceMonitor"]["labels"].items()
    for key in ("interval", "scrapeTimeout"):
        assert endpoint[key] == case.values["serviceMonitor"][key]


def templates_of_kind() -> dict[str, str]:
    """Template file → the kind it renders."""
    out = {}
    for name, text in template_texts().items():
        kinds = re.findall(r"^kind: (\w+)$", text, flags=re.M)
        if kinds:
            assert len(kinds) == 1, name
            out[name] = kinds[0]
    return out


def enabled_by(name: str) -> str | None:
    """The `.Values.x.enabled` a template is wrapped in, if any."""
    m = re.match(r"\{\{- if \.Values\.(\w+)\.enabled \}\}", template_texts()[name])
    return m.group(1) if m else None


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_expected_manifests_are_those_the_templates_render(case: Case):
    """One document per template whose switch is on in the case's values, in Helm's install
    order, each of the template's kind."""
    kinds = templates_of_kind()
    wanted = {name for name in kinds if enabled_by(name) is None or case.values[enabled_by(name)]["enabled"]}
    assert set(case.sources()) == wanted
    order = ["PodDisruptionBudget", "ConfigMap", "Service", "Deployment", "HorizontalPodAutoscaler", "Ingress",
             "ServiceMonitor"]
    assert [d["kind"] for d in case.manifests()] == [kinds[s] for s in case.sources()]
    assert [d["kind"] for d in case.manifests()] == sorted((kinds[s] for s in wanted), key=order.index)


def test_every_template_with_a_kind_is_rendered_in_some_expected_case():
    rendered = {s for case in CASES for s in case.sources()}
    assert set(templates_of_kind()) == rendered


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_names_and_labels(case: Case):
    name = case.release if "xreg-gateway" in case.release else f"{case.release}-xreg-gateway"
    selector = {"app.kubernetes.io/name": "xreg-gateway", "app.kubernetes.io/instance": case.release}
    chart = load_yaml(CHART / "Chart.yaml")
    for doc in case.manifests():
        assert doc["metadata"]["name"] == name
        assert doc["metadata"]["labels"].items() >= {
            **selector, "helm.sh/chart": f"xreg-gateway-{chart['version']}",
            "app.kubernetes.io/version": chart["appVersion"], "app.kubernetes.io/managed-by": "Helm"}.items()
    deployment = case.one("Deployment")
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    assert deployment["spec"]["template"]["metadata"]["labels"].items() >= selector.items()
    assert case.one("Service")["spec"]["selector"] == selector
    if case.values["podDisruptionBudget"]["enabled"]:
        assert case.one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_deployment_follows_the_values(case: Case):
    values, deployment, container = case.values, case.one("Deployment"), case.container()
    pod = deployment["spec"]["template"]["spec"]
    if values["autoscaling"]["enabled"]:
        assert "replicas" not in deployment["spec"]
    else:
        assert deployment["spec"]["replicas"] == values["replicaCount"]
    assert deployment["spec"]["strategy"] == values["updateStrategy"]
    tag = values["image"]["tag"] or load_yaml(CHART / "Chart.yaml")["appVersion"]
    assert container["image"] == f"{values['image']['repository']}:{tag}"
    assert container["resources"] == values["resources"]
    assert container["securityContext"] == values["securityContext"]
    assert pod["securityContext"] == values["podSecurityContext"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["terminationGracePeriodSeconds"] == values["terminationGracePeriodSeconds"]
    assert container["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", str(values["preStopSleepSeconds"])]
    workers = ["--workers", str(values["workers"])] if values["workers"] > 1 else []
    assert container["command"] + container["args"] == [
        "xreg-gateway", "serve", "--host", "0.0.0.0", "--port", "8080", *workers]
    for probe, path in (("startup", "/healthz"), ("liveness", "/healthz"), ("readiness", "/readyz")):
        rendered = dict(container[f"{probe}Probe"])
        assert rendered.pop("httpGet") == {"path": path, "port": "http"}
        assert rendered == values["probes"][probe]
    for key in ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints"):
        assert pod.get(key, type(values[key])()) == values[key]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_deployment_matches_the_template_text(case: Case):
    """What the template writes literally — probe paths, the port, the env names, the mounts —
    is what the expected Deployment has."""
    text = template_texts()["deployment.yaml"]
    container = case.container()
    assert {p["httpGet"]["path"] for p in (container["livenessProbe"], container["readinessProbe"])} == \
        set(re.findall(r"path: (/\w+)", text))
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == \
        [(n, int(v)) for n, v in re.findall(r"- name: (\w+)\n\s+containerPort: (\d+)", text)]
    literal = set(re.findall(r"- name: (XREG_[A-Z_]+)$", text, flags=re.M))
    per_registry = set(re.findall(r"__AUTH__(\w+)$", text, flags=re.M))
    extra = {e["name"] for e in case.values["extraEnv"]}
    for env in container["env"]:
        if env["name"] in extra:
            continue
        if env["name"].startswith("XREG_REGISTRIES__"):
            assert env["name"].rsplit("__AUTH__", 1)[1] in per_registry
        else:
            assert env["name"] in literal
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert set(re.findall(r"mountPath: (/[\w/-]+)$", text, flags=re.M)) <= mounts
    for key in ("readOnlyRootFilesystem", "allowPrivilegeEscalation", "runAsNonRoot"):
        assert key in container["securityContext"]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_writable_paths_are_volumes_and_secrets_are_references(case: Case):
    values, container = case.values, case.container()
    pod = case.one("Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert all(m["name"] in volumes for m in mounts.values())
    env = {e["name"]: e for e in container["env"]}
    # A read-only root filesystem: the data directory and /tmp are emptyDirs.
    assert "emptyDir" in volumes[mounts[env["XREG_DATA_DIR"]["value"]]["name"]]
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    # XREG_CONFIG names a key of the ConfigMap, mounted read-only as a directory (updates reach the pod).
    config_dir, config_file = env["XREG_CONFIG"]["value"].rsplit("/", 1)
    config_mount = mounts[config_dir]
    assert config_mount["readOnly"] is True and "subPath" not in config_mount
    assert volumes[config_mount["name"]]["configMap"]["name"] == case.one("ConfigMap")["metadata"]["name"]
    assert config_file in case.one("ConfigMap")["data"]
    # Secrets: references to the Secrets the values name, never values.
    refs = {name: e["valueFrom"]["secretKeyRef"] for name, e in env.items() if "valueFrom" in e}
    assert all("value" not in e for e in env.values() if "valueFrom" in e)
    wanted = {"XREG_STORE_URL": values["store"], "XREG_CACHE_URL": values["cache"],
              "XREG_API_KEYS": values["auth"]["apiKeys"], "XREG_JWT_SECRET": values["auth"]["jwt"]}
    for name, ref in wanted.items():
        if ref["existingSecret"]:
            assert refs.pop(name) == {"name": ref["existingSecret"], "key": ref["key"]}
        else:
            assert name not in env
    for cred in values["remoteCredentials"]:
        key = re.sub(r"[^A-Z0-9]", "_", cred["registry"].upper())
        if cred["mountAs"] == "env":
            assert refs.pop(f"XREG_REGISTRIES__{key}__AUTH__BEARER") == {
                "name": cred["existingSecret"], "key": cred["key"]}
        else:
            path = env[f"XREG_REGISTRIES__{key}__AUTH__BEARER_FILE"]["value"]
            mount = mounts[path.rsplit("/", 1)[0]]
            assert mount["readOnly"] is True
            assert volumes[mount["name"]]["secret"]["secretName"] == cred["existingSecret"]
    for extra in values["extraEnv"]:
        if "valueFrom" in extra:
            assert refs.pop(extra["name"]) == extra["valueFrom"]["secretKeyRef"]
    assert refs == {}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_config_map_holds_the_settings_and_registries(case: Case):
    data = case.one("ConfigMap")["data"]
    settings = yaml.safe_load(data["gateway.yaml"]) or {}
    wanted = dict(case.values["config"]["settings"])
    if case.values["config"]["registries"]:
        wanted["registries"] = case.values["config"]["registries"]
    assert settings == wanted


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_service_ingress_and_autoscaler_point_at_the_gateway(case: Case):
    values, service, container = case.values, case.one("Service"), case.container()
    [port] = service["spec"]["ports"]
    assert port["port"] == values["service"]["port"] and service["spec"]["type"] == values["service"]["type"]
    assert port["targetPort"] in {p["name"] for p in container["ports"]}
    docs = {d["kind"]: d for d in case.manifests()}
    if "Ingress" in docs:
        ingress = docs["Ingress"]["spec"]
        assert ingress["ingressClassName"] == values["ingress"]["className"]
        assert [r["host"] for r in ingress["rules"]] == [h["host"] for h in values["ingress"]["hosts"]]
        assert ingress["tls"] == values["ingress"]["tls"]
        for rule in ingress["rules"]:
            for path in rule["http"]["paths"]:
                assert path["backend"]["service"] == {"name": service["metadata"]["name"], "port": {"name": port["name"]}}
    if "HorizontalPodAutoscaler" in docs:
        hpa = docs["HorizontalPodAutoscaler"]["spec"]
        assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                         "name": case.one("Deployment")["metadata"]["name"]}
        assert (hpa["minReplicas"], hpa["maxReplicas"]) == (values["autoscaling"]["minReplicas"],
                                                            values["autoscaling"]["maxReplicas"])
        targets = {m["resource"]["name"]: m["resource"]["target"]["averageUtilization"] for m in hpa["metrics"]}
        assert targets["cpu"] == values["autoscaling"]["targetCPUUtilizationPercentage"]
        assert targets.get("memory") == values["autoscaling"]["targetMemoryUtilizationPercentage"]
        assert "cpu" in container["resources"]["requests"]  # utilisation is relative to the request


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_shutdown_fits_in_the_termination_grace_period(case: Case):
    values = case.values
    assert values["preStopSleepSeconds"] + values["shutdownGraceSeconds"] < values["terminationGracePeriodSeconds"]
    env = {e["name"]: e.get("value") for e in case.container()["env"]}
    assert float(env["XREG_SHUTDOWN_GRACE_SECONDS"]) == values["shutdownGraceSeconds"]


def test_expected_directory_holds_only_the_cases():
    assert sorted(p.name for p in EXPECTED.iterdir()) == sorted(c.expected_file.name for c in CASES)
    assert (TEMPLATES / "NOTES.txt").is_file() and (TEMPLATES / "_helpers.tpl").is_file()
