"""What the chart's rendered objects tell the gateway, run for real: the ConfigMap's settings file
and the containers' environment — Secret references filled with what such Secrets hold, mounted
files written where the pod would see them — load in xreg.config and mean what the values say;
the seed initContainer's command imports the samples into the store the server then serves; and
the `helm test` pod's script passes against that live gateway (and fails against a broken one)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from gateway.auth import hash_key
from tests.deploy.chart import CASES, DEFAULT, PRODUCTION, ROOT, TRIAL_CASES, Case, Rendered, render
from tests.support.live import LiveServer
from xreg.config import Settings, load_settings

MONGO = "mongodb://gateway:mongo-password@mongo-a,mongo-b,mongo-c/xreg?replicaSet=rs0"
REDIS = "redis://:redis-password@redis:6379/0"
API_KEYS = json.dumps([{"name": "ci", "sha256": hash_key("ci-key"), "scopes": ["read", "write"]}])

#: What the Secrets the cases name would hold: (secret, key) → value.
SECRETS = {
    ("xreg-mongodb", "url"): MONGO,
    ("xreg-redis", "url"): REDIS,
    ("xreg-api-keys", "api-keys"): API_KEYS,
    ("xreg-test-api-key", "api-key"): "ci-key",
    ("xreg-jwt", "jwt-secret"): "jwt-shared-secret",
    ("contoso-registry", "token"): "contoso-token",
    ("fabrikam-registry", "token"): "fabrikam-token",
    ("partner-registry", "password"): "partner-password",
}

#: Where the image keeps what the chart refers to, and where it is in this repository.
IN_IMAGE = {"/usr/share/xreg-gateway/samples": ROOT / "samples"}


class Pod:
    """A container of a rendered pod, laid out under ``tmp_path``: its mounts are directories
    (ConfigMap keys and Secret items written in them), its environment resolved."""

    def __init__(self, rendered: Rendered, container: dict[str, Any], tmp_path: Path):
        volumes = {v["name"]: v for v in rendered.pod()["volumes"]}
        self.mounted: dict[str, Path] = {}
        for mount in container["volumeMounts"]:
            local = tmp_path / mount["name"]
            local.mkdir(exist_ok=True)
            self.mounted[mount["mountPath"]] = local
            volume = volumes[mount["name"]]
            if "configMap" in volume:
                assert volume["configMap"]["name"] == rendered.one("ConfigMap")["metadata"]["name"]
                for name, text in rendered.one("ConfigMap")["data"].items():
                    (local / name).write_text(text, encoding="utf-8")
            if "secret" in volume:
                for item in volume["secret"]["items"]:
                    (local / item["path"]).write_text(SECRETS[(volume["secret"]["secretName"], item["key"])])
        self.env: dict[str, str] = {}
        for env in container.get("env", []):
            if "valueFrom" in env:
                ref = env["valueFrom"]["secretKeyRef"]
                self.env[env["name"]] = SECRETS[(ref["name"], ref["key"])]
            else:
                self.env[env["name"]] = self.local_path(env["value"])

    def local_path(self, value: str) -> str:
        for path, local in {**self.mounted, **IN_IMAGE}.items():
            if value == path or value.startswith(path + "/"):
                return str(local) + value[len(path):]
        return value

    def settings(self, monkeypatch: pytest.MonkeyPatch) -> Settings:
        """The settings the gateway in this container would load."""
        for name in list(os.environ):
            if name.startswith(("XREG_", "OTEL_")):
                monkeypatch.delenv(name)
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        return load_settings()

    def process_env(self) -> dict[str, str]:
        """The environment of a process started in this container (this Python on PATH)."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("XREG_", "OTEL_"))}
        return {**base, **self.env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"}


def pod_settings(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return Pod(case.rendered, case.container(), tmp_path).settings(monkeypatch)


# -- settings -------------------------------------------------------------------------------------

def test_default_values_give_the_embedded_store_anonymous_reads_and_the_local_registry(tmp_path, monkeypatch):
    settings = pod_settings(DEFAULT, tmp_path, monkeypatch)
    assert settings.effective_store_url == f"sqlite:///{tmp_path / 'data' / 'registry.db'}"
    assert settings.cache_url == "memory://"
    assert settings.anonymous_read is True
    assert settings.api_keys == [] and settings.jwt_secret is None
    assert [r.id for r in settings.federated_registries] == ["xregistry"]
    assert settings.data_dir == tmp_path / "data"
    assert settings.config == tmp_path / "config" / "gateway.yaml"


def test_production_values_configure_everything_from_secrets(tmp_path, monkeypatch):
    settings = pod_settings(PRODUCTION, tmp_path, monkeypatch)
    assert settings.effective_store_url == MONGO
    assert settings.cache_url == REDIS
    assert settings.anonymous_read is False
    assert [(k.name, k.scopes) for k in settings.api_keys] == [("ci", ["read", "write"])]
    assert settings.jwt_secret is not None and settings.jwt_secret.get_secret_value() == "jwt-shared-secret"
    assert (settings.jwt_issuer, settings.jwt_audience) == ("https://login.example.com/", "xreg-gateway")
    assert settings.base_url == "https://xreg.example.com/registry"
    assert settings.registry_id == "main" and settings.history_keep_days == 90
    registries = {r.id: r for r in settings.registries}
    assert list(registries) == ["contoso", "fabrikam-prod", "partner"]
    assert registries["contoso"].cache_ttl == 60 and registries["contoso"].breaker.failures == 5
    # Bearer tokens: one from an environment variable, one from a mounted Secret file.
    assert registries["contoso"].auth.resolved_headers() == {"Authorization": "Bearer contoso-token"}
    assert registries["fabrikam-prod"].auth.bearer_file == tmp_path / "remote-fabrikam-prod" / "token"
    assert registries["fabrikam-prod"].auth.resolved_headers() == {"Authorization": "Bearer fabrikam-token"}
    # HTTP Basic: the user name in the settings file, the password from a Secret (extraEnv).
    basic = base64.b64encode(b"gateway:partner-password").decode()
    assert registries["partner"].auth.resolved_headers() == {"Authorization": f"Basic {basic}"}


def test_the_settings_file_holds_no_secret():
    for case in CASES:
        text = "\n".join(case.one("ConfigMap")["data"].values())
        assert not [v for v in SECRETS.values() if v in text]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_variable_the_chart_sets_is_a_gateway_setting(case: Case):
    """An XREG_* variable the gateway does not know would be ignored silently: a bug."""
    known = {f"XREG_{name.upper()}" for name in Settings.model_fields}
    extra = {e["name"] for e in case.values["extraEnv"]}
    pod = case.rendered.pod()
    for container in pod["containers"] + pod.get("initContainers", []):
        for env in container["env"]:
            name = env["name"]
            if name in extra and not name.startswith("XREG_"):
                continue
            assert name in known or re.fullmatch(r"XREG_REGISTRIES__[A-Z0-9_]+__AUTH__(BEARER|BEARER_FILE|"
                                                 r"BASIC_PASSWORD)", name), name


# -- the seed initContainer and the helm test hook, run -------------------------------------------

def run_seed(pod: Pod, seed: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The initContainer's command, as the container runs it (/bin/sh, its arguments)."""
    args = [pod.local_path(a) for a in seed["args"]]
    return subprocess.run([*seed["command"], *args], env=pod.process_env(), capture_output=True, text=True,
                          timeout=300)


def run_test_hook(rendered: Rendered, port: int, api_key: str | None = None) -> subprocess.CompletedProcess[str]:
    """The `helm test` pod's command, aimed at a gateway on 127.0.0.1:``port``."""
    [container] = rendered.one("Pod")["spec"]["containers"]
    env = {e["name"]: e.get("value", "") for e in container["env"]}
    env["GATEWAY_URL"] = f"http://127.0.0.1:{port}"
    if api_key is not None:
        env["API_KEY"] = api_key
    command = [sys.executable if container["command"][0] == "python" else container["command"][0],
               *container["command"][1:]]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("case", TRIAL_CASES, ids=[c.name for c in TRIAL_CASES])
def test_the_trial_seeds_the_samples_once_and_its_test_hook_passes(case: Case, tmp_path, monkeypatch):
    rendered = case.rendered
    pod = Pod(rendered, rendered.container("seed"), tmp_path)
    first = run_seed(pod, rendered.container("seed"))
    assert first.returncode == 0, first.stderr
    assert "import summary" in first.stdout
    again = run_seed(pod, rendered.container("seed"))  # a restarted pod does not import again
    assert again.returncode == 0 and "already imported" in again.stdout
    # The gateway container, on the same volumes, serves what the seed imported.
    settings = Pod(rendered, rendered.container(), tmp_path).settings(monkeypatch)
    with LiveServer(create_app(settings)) as live:
        hook = run_test_hook(rendered, live.port)
        assert hook.returncode == 0, hook.stderr
        assert "GET /readyz: 200" in hook.stdout and "POST /graphql: registries ['xregistry']" in hook.stdout
        answer = httpx.post(f"http://127.0.0.1:{live.port}/graphql",
                            json={"query": "{ endpoints(first: 100) { totalCount } }"}).json()
    assert answer["data"]["endpoints"]["totalCount"] == 16  # samples/README.md: 16 endpoints


def test_the_test_hook_fails_when_the_gateway_is_not_there(tmp_path):
    with LiveServer(create_app(load_settings(data_dir=tmp_path))) as live:
        port = live.port
    hook = run_test_hook(DEFAULT.rendered, port)
    assert hook.returncode != 0


def test_the_production_test_hook_authenticates_or_fails(tmp_path):
    settings = load_settings(data_dir=tmp_path, anonymous_read=False, api_keys=json.loads(API_KEYS))
    with LiveServer(create_app(settings)) as live:
        assert run_test_hook(PRODUCTION.rendered, live.port, api_key="ci-key").returncode == 0
        refused = run_test_hook(PRODUCTION.rendered, live.port, api_key="wrong-key")
        assert refused.returncode != 0 and "401" in refused.stderr
        # Without a test key and without anonymous reads, the hook expects (and checks) the 401.
        keyless = render({"auth": {"anonymousRead": False}})
        result = run_test_hook(keyless, live.port)
        assert result.returncode == 0 and "401, as configured" in result.stdout
