"""The Helm chart (helm/xreg-gateway) rendered and linted by Helm itself (tests/deploy/chart.py),
for the default values (the trial profile), ci/trial-values.yaml and ci/production-values.yaml:
`helm lint --strict` clean, every rendered object valid against the Kubernetes API schemas
(offline, strict), and the objects an operator needs there — the seed import, the claim, the
Secret references, HPA, PDB, ServiceAccount, NetworkPolicy, PrometheusRule, the test hook, the
Ingress switches."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import helm_python as helm
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
    CUSTOM_KINDS,
    DEFAULT,
    PRODUCTION,
    ROOT,
    TRIAL_CASES,
    Case,
    default_values,
    lint,
    load_yaml,
    lookup,
    render,
    template_texts,
    validate_values,
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

DATA_DIR = "/var/lib/xreg-gateway"
SAMPLES_IN_IMAGE = "/usr/share/xreg-gateway/samples"


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def secret_names(rendered_docs: list[dict[str, Any]]) -> set[str]:
    """Every Secret a rendered object refers to (env, volumes, image pull Secrets)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "secretKeyRef" in node:
                found.add(node["secretKeyRef"]["name"])
            if "secret" in node and isinstance(node["secret"], dict):
                found.add(node["secret"]["secretName"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(rendered_docs)
    return found


# -- YAML lint ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Chart.yaml", "values.yaml", "ci/production-values.yaml", "ci/trial-values.yaml",
                                  "files/prometheus-rules.yaml"])
def test_yaml_files_lint_clean(name):
    path = CHART / name
    problems = [f"{path.name}:{p.line}:{p.column}: {p.desc} ({p.rule})"
                for p in linter.run(path.read_text(encoding="utf-8"), YAMLLINT, str(path))]
    assert problems == []


def test_yamllint_reports_a_broken_file():
    """The lint configuration above does find problems (a duplicated key, a tab)."""
    problems = list(linter.run("image:\n  tag: a\n  tag: b\n\tx: 1\n", YAMLLINT))
    assert problems


# -- Chart.yaml and helm lint ---------------------------------------------------------------------

def test_chart_metadata_matches_the_project():
    chart = load_yaml(CHART / "Chart.yaml")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == CHART.name
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert chart["appVersion"] == project["version"]
    assert chart["icon"].startswith(("https://", "data:image/svg+xml;base64,"))
    assert chart["kubeVersion"] == f">={KUBERNETES_VERSIONS[0]}.0-0"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_helm_lint_strict_is_clean(case: Case, version):
    assert lint(case.overrides, kube_version=f"v{version}.0") == []


def test_helm_lint_reports_values_that_do_not_fit():
    assert any("replicaCount" in m for m in lint({"replicaCount": "two"}))


def test_helm_is_the_v4_sdk():
    assert helm.helm_sdk_version().startswith("v4.")


# -- values.schema.json (checked by Helm) ---------------------------------------------------------

def test_schema_is_a_valid_draft_7_schema():
    jsonschema.Draft7Validator.check_schema(json.loads((CHART / "values.schema.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_values_validate_against_the_schema(case: Case):
    validate_values(case.overrides)


REFUSED = {
    "a remote token in plain text": {"config": {"registries": [
        {"id": "contoso", "kind": "xregistry", "url": "https://c.example/registry", "auth": {"bearer": "t0ken"}}]}},
    "a store URL in the settings file": {"config": {"settings": {"store_url": "mongodb://u:p@a/x"}}},
    "a writable root filesystem": {"securityContext": {"readOnlyRootFilesystem": False}},
    "privilege escalation": {"securityContext": {"allowPrivilegeEscalation": True}},
    "running as root": {"podSecurityContext": {"runAsNonRoot": False}},
    "capabilities kept": {"securityContext": {"capabilities": {"drop": ["NET_RAW"]}}},
    "the embedded store with two replicas": {"replicaCount": 2},
    "the embedded store with autoscaling": {"autoscaling": {"enabled": True}},
    "the seed import on MongoDB": {"store": {"existingSecret": "xreg-mongodb"}},
    "both PDB bounds": {"podDisruptionBudget": {"enabled": True, "minAvailable": 1}},
    "an unknown top-level value": {"replicas": 3},
    "a log format the gateway does not know": {"logFormat": "xml"},
    "a remote credential without a mode": {"remoteCredentials": [
        {"registry": "contoso", "existingSecret": "contoso", "key": "token"}]},
    "zero workers": {"workers": 0},
    "a poll interval of zero": {"eventsPollSeconds": 0},
    "ingress paths of the old shape": {"ingress": {"hosts": [{"host": "x.example", "paths": [{"path": "/"}]}]}},
    "a seed path with a quote": {"seed": {"paths": ["/a'; rm -rf /"]}},
}


@pytest.mark.parametrize("override", REFUSED.values(), ids=REFUSED.keys())
def test_schema_refuses(override):
    with pytest.raises(helm.HelmValuesError):
        validate_values(override)


def test_schema_accepts_mongodb_without_the_seed_and_several_replicas():
    validate_values({"store": {"existingSecret": "xreg-mongodb"}, "seed": {"enabled": False}, "replicaCount": 3})


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


def test_every_template_renders_in_some_case():
    rendered = {s for case in CASES for s in case.rendered.sources()}
    with_objects = {name for name in template_texts() if name.endswith(".yaml")}
    assert rendered == with_objects


# -- Kubernetes API schemas -----------------------------------------------------------------------

def validated_manifests() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{case.name}:{doc['kind']}", doc) for case in CASES for doc in case.manifests()
            if doc["kind"] not in CUSTOM_KINDS]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(("name", "manifest"), validated_manifests(), ids=[n for n, _ in validated_manifests()])
def test_rendered_manifest_validates_against_the_kubernetes_schema(name, manifest, version):
    kubernetes_validate.validate(manifest, version, strict=True)


def test_the_kubernetes_schemas_are_checked_offline_and_strictly():
    """A misspelt field fails (strict: no unknown properties), without any network access."""
    bad = copy.deepcopy(DEFAULT.one("Deployment"))
    bad["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["paht"] = "/healthz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSIONS[0], strict=True)
    for kind in CUSTOM_KINDS:  # hence the checks of these below
        with pytest.raises(SchemaNotFoundError):
            kubernetes_validate.validate(PRODUCTION.one(kind), KUBERNETES_VERSIONS[0], strict=True)


# -- names and labels -----------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_names_and_labels(case: Case):
    name = case.release if "xreg-gateway" in case.release else f"{case.release}-xreg-gateway"
    selector = {"app.kubernetes.io/name": "xreg-gateway", "app.kubernetes.io/instance": case.release}
    chart = load_yaml(CHART / "Chart.yaml")
    for doc in case.manifests():
        if doc["kind"] == "Pod":
            continue
        assert doc["metadata"]["name"] == name
        assert doc["metadata"]["labels"].items() >= {
            **selector, "helm.sh/chart": f"xreg-gateway-{chart['version']}",
            "app.kubernetes.io/version": chart["appVersion"], "app.kubernetes.io/managed-by": "Helm"}.items()
    deployment = case.one("Deployment")
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    assert deployment["spec"]["template"]["metadata"]["labels"].items() >= selector.items()
    assert case.one("Service")["spec"]["selector"] == selector
    for kind in ("PodDisruptionBudget", "NetworkPolicy"):
        for doc in case.rendered.all(kind):
            key = "selector" if kind == "PodDisruptionBudget" else "podSelector"
            assert doc["spec"][key]["matchLabels"] == selector


# -- the Deployment -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_deployment_follows_the_values(case: Case):
    values, deployment, container = case.values, case.one("Deployment"), case.container()
    pod = deployment["spec"]["template"]["spec"]
    if values["autoscaling"]["enabled"]:
        assert "replicas" not in deployment["spec"]
    else:
        assert deployment["spec"]["replicas"] == values["replicaCount"]
    tag = values["image"]["tag"] or load_yaml(CHART / "Chart.yaml")["appVersion"]
    assert container["image"] == f"{values['image']['repository']}:{tag}"
    assert container["resources"] == values["resources"]
    assert container["securityContext"] == values["securityContext"]
    assert pod["securityContext"] == values["podSecurityContext"]
    assert pod["terminationGracePeriodSeconds"] == values["terminationGracePeriodSeconds"]
    assert container["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", str(values["preStopSleepSeconds"])]
    workers = ["--workers", str(values["workers"])] if values["workers"] > 1 else []
    assert container["command"] + container["args"] == [
        "xreg-gateway", "serve", "--host", "0.0.0.0", "--port", "8080", *workers]
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [("http", 8080)]
    for probe, path in (("startup", "/healthz"), ("liveness", "/healthz"), ("readiness", "/readyz")):
        rendered = dict(container[f"{probe}Probe"])
        assert rendered.pop("httpGet") == {"path": path, "port": "http"}
        assert rendered == values["probes"][probe]
    for key in ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints"):
        assert pod.get(key, type(values[key])()) == values[key]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_writable_paths_are_volumes_and_the_settings_file_a_config_map(case: Case):
    pod, container = case.rendered.pod(), case.container()
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert all(m["name"] in volumes for m in mounts.values())
    env = env_of(container)
    assert env["XREG_DATA_DIR"]["value"] == DATA_DIR
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    # XREG_CONFIG names a key of the ConfigMap, mounted read-only as a directory (updates reach the pod).
    config_dir, config_file = env["XREG_CONFIG"]["value"].rsplit("/", 1)
    config_mount = mounts[config_dir]
    assert config_mount["readOnly"] is True and "subPath" not in config_mount
    assert volumes[config_mount["name"]]["configMap"]["name"] == case.one("ConfigMap")["metadata"]["name"]
    assert config_file in case.one("ConfigMap")["data"]


@pytest.mark.parametrize("case", TRIAL_CASES, ids=[c.name for c in TRIAL_CASES])
def test_trial_keeps_the_embedded_store_on_a_claim(case: Case):
    pod, container = case.rendered.pod(), case.container()
    claim = case.one("PersistentVolumeClaim")
    volumes = {v["name"]: v for v in pod["volumes"]}
    data = next(m for m in container["volumeMounts"] if m["mountPath"] == DATA_DIR)
    assert volumes[data["name"]]["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"]}
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"] == case.values["persistence"]["size"]
    # One pod owns the SQLite file: no MongoDB URL, one replica, never two pods at once.
    assert "XREG_STORE_URL" not in env_of(container)
    assert case.one("Deployment")["spec"]["replicas"] == 1
    assert case.one("Deployment")["spec"]["strategy"] == {"type": "Recreate"}
    assert not case.rendered.all("HorizontalPodAutoscaler")


@pytest.mark.parametrize("case", TRIAL_CASES, ids=[c.name for c in TRIAL_CASES])
def test_trial_imports_the_samples_before_serving(case: Case):
    pod = case.rendered.pod()
    [seed] = pod["initContainers"]
    gateway = case.container()
    assert seed["image"] == gateway["image"]
    assert seed["command"][:2] == ["/bin/sh", "-c"] and "xreg-gateway import" in seed["command"][2]
    assert seed["args"] == [SAMPLES_IN_IMAGE]
    # The same settings and store as the server: same environment, same mounts.
    assert seed["env"] == gateway["env"]
    assert seed["volumeMounts"] == gateway["volumeMounts"]
    assert seed["securityContext"] == gateway["securityContext"]


def test_the_seed_imports_a_config_map_of_documents_too():
    rendered = render({"seed": {"existingConfigMap": "my-documents"}})
    seed = rendered.container("seed")
    volumes = {v["name"]: v for v in rendered.pod()["volumes"]}
    mounts = {m["mountPath"]: m for m in seed["volumeMounts"]}
    assert seed["args"] == [SAMPLES_IN_IMAGE, "/etc/xreg-gateway/seed"]
    assert mounts["/etc/xreg-gateway/seed"]["readOnly"] is True
    assert volumes[mounts["/etc/xreg-gateway/seed"]["name"]]["configMap"] == {"name": "my-documents"}
    assert "/etc/xreg-gateway/seed" not in {m["mountPath"] for m in rendered.container()["volumeMounts"]}


def test_an_existing_claim_is_used_as_it_is_and_no_seed_without_asking():
    rendered = render({"persistence": {"existingClaim": "registry-data"}, "seed": {"enabled": False}})
    assert not rendered.all("PersistentVolumeClaim")
    assert "initContainers" not in rendered.pod()
    data = {v["name"]: v for v in rendered.pod()["volumes"]}["data"]
    assert data["persistentVolumeClaim"] == {"claimName": "registry-data"}


def test_notes_tell_what_to_do_next():
    trial, production = DEFAULT.rendered.notes, PRODUCTION.rendered.notes
    assert "helm test xreg-gateway" in trial and "kubectl create secret" not in trial
    assert "embedded SQLite store on the claim xreg-gateway" in trial and "imported" in trial
    for secret in secret_names(PRODUCTION.manifests()):
        assert f"kubectl create secret generic {secret} " in production


@pytest.mark.parametrize("case", TRIAL_CASES, ids=[c.name for c in TRIAL_CASES])
def test_trial_allows_anonymous_reads_and_needs_no_secret(case: Case):
    env = env_of(case.container())
    assert env["XREG_ANONYMOUS_READ"] == {"name": "XREG_ANONYMOUS_READ", "value": "true"}
    # The chart creates no Secret, so a trial must not refer to any.
    assert secret_names(case.manifests()) == set()
    assert "Secret" not in case.rendered.kinds()


def test_production_reads_every_secret_from_the_values():
    values, container = PRODUCTION.values, PRODUCTION.container()
    env = env_of(container)
    refs = {name: e["valueFrom"]["secretKeyRef"] for name, e in env.items() if "valueFrom" in e}
    assert all("value" not in e for e in env.values() if "valueFrom" in e)
    wanted = {"XREG_STORE_URL": values["store"], "XREG_CACHE_URL": values["cache"],
              "XREG_API_KEYS": values["auth"]["apiKeys"], "XREG_JWT_SECRET": values["auth"]["jwt"]}
    for name, ref in wanted.items():
        assert refs.pop(name) == {"name": ref["existingSecret"], "key": ref["key"]}
    pod = PRODUCTION.rendered.pod()
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
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
    assert env["XREG_ANONYMOUS_READ"]["value"] == "false"


def test_production_scales_on_mongodb_without_claim_or_seed():
    rendered, values = PRODUCTION.rendered, PRODUCTION.values
    pod = rendered.pod()
    assert "initContainers" not in pod
    assert not rendered.all("PersistentVolumeClaim")
    data = next(m for m in rendered.container()["volumeMounts"] if m["mountPath"] == DATA_DIR)
    assert "emptyDir" in {v["name"]: v for v in pod["volumes"]}[data["name"]]
    assert rendered.one("Deployment")["spec"]["strategy"] == values["updateStrategy"]
    hpa = rendered.one("HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": rendered.one("Deployment")["metadata"]["name"]}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (3, 10)
    targets = {m["resource"]["name"]: m["resource"]["target"]["averageUtilization"] for m in hpa["metrics"]}
    assert targets == {"cpu": 70, "memory": 80}
    assert "cpu" in rendered.container()["resources"]["requests"]  # utilisation is relative to the request
    assert rendered.one("PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_shutdown_fits_in_the_termination_grace_period(case: Case):
    values = case.values
    assert values["preStopSleepSeconds"] + values["shutdownGraceSeconds"] < values["terminationGracePeriodSeconds"]
    env = env_of(case.container())
    assert float(env["XREG_SHUTDOWN_GRACE_SECONDS"]["value"]) == values["shutdownGraceSeconds"]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_config_map_holds_the_settings_and_registries(case: Case):
    data = case.one("ConfigMap")["data"]
    settings = yaml.safe_load(data["gateway.yaml"]) or {}
    wanted = dict(case.values["config"]["settings"])
    if case.values["config"]["registries"]:
        wanted["registries"] = case.values["config"]["registries"]
    assert settings == wanted


# -- ServiceAccount, NetworkPolicy ----------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_pods_run_as_their_service_account_without_its_token(case: Case):
    account, pod = case.one("ServiceAccount"), case.rendered.pod()
    assert account["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert pod["automountServiceAccountToken"] is False


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_network_policy_opens_only_the_gateway_port(case: Case):
    policy = case.one("NetworkPolicy")["spec"]
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    test_pod = case.one("Pod")["metadata"]["labels"]
    if "from" in rule:  # restricted peers: the test pod is still let in
        assert any(p.get("podSelector", {}).get("matchLabels", {}).items() <= test_pod.items() and "podSelector" in p
                   for p in rule["from"])
    restrict = case.values["networkPolicy"]["egress"]["restrict"]
    assert ("Egress" in policy["policyTypes"]) == restrict == ("egress" in policy)


def test_production_network_policy_restricts_both_ways():
    policy = PRODUCTION.one("NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert len(policy["ingress"][0]["from"]) == len(PRODUCTION.values["networkPolicy"]["ingressFrom"]) + 1
    dns, *others = policy["egress"]
    assert {(p["port"], p["protocol"]) for p in dns["ports"]} == {(53, "UDP"), (53, "TCP")}
    assert others == PRODUCTION.values["networkPolicy"]["egress"]["to"]


# -- monitoring -----------------------------------------------------------------------------------

def documented_alert_rules() -> dict[str, Any]:
    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    [block] = re.findall(r"^```yaml\n(groups:\n.*?)^```", doc, flags=re.M | re.S)
    return yaml.safe_load(block)


def test_the_prometheus_rule_ships_exactly_the_documented_alerts():
    rule = PRODUCTION.one("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["labels"].items() >= PRODUCTION.values["prometheusRule"]["labels"].items()
    assert rule["spec"] == documented_alert_rules()
    names = [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(names) == 11 and "XregGatewayDown" in names
    # Prometheus' own templates reach the rule untouched (not expanded by Helm).
    summaries = " ".join(r["annotations"]["summary"] for g in rule["spec"]["groups"] for r in g["rules"])
    assert "{{ $labels.registry }}" in summaries


def test_the_service_monitor_scrapes_metrics_of_the_service():
    monitor, service = PRODUCTION.one("ServiceMonitor"), PRODUCTION.one("Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor["spec"]) == {"selector", "endpoints"}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert monitor["metadata"]["labels"].items() >= PRODUCTION.values["serviceMonitor"]["labels"].items()


def test_monitoring_objects_are_off_by_default():
    assert not {"ServiceMonitor", "PrometheusRule"} & set(DEFAULT.rendered.kinds())


# -- the helm test hook ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_test_hook_asks_the_service(case: Case):
    pod, service = case.one("Pod"), case.one("Service")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    # The Service must not route traffic to the test pod.
    assert not service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    [container] = pod["spec"]["containers"]
    env = env_of(container)
    assert env["GATEWAY_URL"]["value"] == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}"
    assert "/readyz" in container["command"][2] and "/graphql" in container["command"][2]
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert container["securityContext"] == case.values["securityContext"]
    expect = "data" if case.values["auth"]["anonymousRead"] or case.values["helmTest"]["apiKey"]["existingSecret"] \
        else "401"
    assert env["EXPECT"]["value"] == expect


def test_production_test_hook_sends_its_api_key():
    env = env_of(PRODUCTION.one("Pod")["spec"]["containers"][0])
    assert env["API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "xreg-test-api-key", "key": "api-key"}
    assert env["EXPECT"]["value"] == "data"


# -- the Ingress ----------------------------------------------------------------------------------

def ingress_paths(override: dict[str, Any]) -> dict[str, str]:
    ingress = render({"ingress": {"enabled": True, **override}}).one("Ingress")["spec"]
    [rule] = ingress["rules"]
    return {p["path"]: p["pathType"] for p in rule["http"]["paths"]}


def gateway_routes(data_dir: Path) -> set[str]:
    """The paths the real gateway app serves (a route's path up to its first parameter, or its prefix)."""
    from gateway.app import create_app
    from xreg.config import load_settings

    app = create_app(load_settings(data_dir=data_dir))
    return {getattr(r, "prefix", None) or re.sub(r"/\{.*$", "", r.path) for r in app.routes}


@pytest.mark.parametrize(("graphiql", "metrics"), [(True, False), (False, False), (True, True), (False, True)])
def test_ingress_routes_the_public_paths_and_obeys_the_switches(graphiql, metrics, tmp_path):
    paths = ingress_paths({"graphiql": graphiql, "metrics": metrics})
    assert ("/graphiql" in paths) is graphiql
    assert ("/metrics" in paths) is metrics
    assert not {"/healthz", "/readyz", "/"} & set(paths)
    # Everything else the gateway serves is routed; nothing it does not serve is.
    served = {p for p in gateway_routes(tmp_path) - {"/healthz", "/readyz", "/graphiql/assets"}
              if not p.startswith("/registry/")}  # under the /registry prefix rule
    wanted = served - ({"/graphiql"} if not graphiql else set()) - ({"/metrics"} if not metrics else set())
    assert set(paths) == wanted
    assert paths["/registry"] == "Prefix" and paths["/graphql"] == "Exact"


def test_ingress_defaults_keep_metrics_off_and_follow_the_registry_prefix():
    assert default_values()["ingress"]["metrics"] is False
    assert "/metrics" not in ingress_paths({})
    paths = render({"ingress": {"enabled": True}, "config": {"settings": {"registry_prefix": "/api/xreg/"}}})
    [rule] = paths.one("Ingress")["spec"]["rules"]
    assert "/api/xreg" in {p["path"] for p in rule["http"]["paths"]}


def test_production_ingress_hides_graphiql_and_metrics():
    ingress = PRODUCTION.one("Ingress")["spec"]
    assert ingress["ingressClassName"] == "nginx"
    assert ingress["tls"] == PRODUCTION.values["ingress"]["tls"]
    for rule in ingress["rules"]:
        paths = {p["path"] for p in rule["http"]["paths"]}
        assert not {"/graphiql", "/metrics"} & paths
        for path in rule["http"]["paths"]:
            assert path["backend"]["service"] == {"name": PRODUCTION.one("Service")["metadata"]["name"],
                                                  "port": {"name": "http"}}


@pytest.mark.parametrize("poll", [None, 0.05, 30])
def test_the_event_log_poll_interval_follows_the_values(poll):
    rendered = render({} if poll is None else {"eventsPollSeconds": poll})
    expected = default_values()["eventsPollSeconds"] if poll is None else poll
    for container in ("gateway", "seed"):  # the same environment in both
        env = env_of(rendered.container(container))
        assert float(env["XREG_EVENTS_POLL_SECONDS"]["value"]) == expected
