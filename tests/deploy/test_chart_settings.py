"""What the chart's manifests tell the gateway: the expected ConfigMap's settings file and the
Deployment's environment — Secret references filled with what such Secrets hold, mounted files
written where the pod would see them — load in gateway.config and mean what the values say."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from gateway.auth import hash_key
from gateway.config import Settings, load_settings
from tests.deploy.chart import CASES, Case

MONGO = "mongodb://gateway:mongo-password@mongo-a,mongo-b,mongo-c/xreg?replicaSet=rs0"
REDIS = "redis://:redis-password@redis:6379/0"
API_KEYS = json.dumps([{"name": "ci", "sha256": hash_key("ci-key"), "scopes": ["read", "write"]}])

#: What the Secrets the cases name would hold: (secret, key) → value.
SECRETS = {
    ("xreg-gateway-store", "url"): MONGO,
    ("xreg-mongodb", "url"): MONGO,
    ("xreg-redis", "url"): REDIS,
    ("xreg-api-keys", "api-keys"): API_KEYS,
    ("xreg-jwt", "jwt-secret"): "jwt-shared-secret",
    ("contoso-registry", "token"): "contoso-token",
    ("fabrikam-registry", "token"): "fabrikam-token",
    ("partner-registry", "password"): "partner-password",
}


def pod_settings(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The settings the gateway in the case's pod would load."""
    pod = case.one("Deployment")["spec"]["template"]["spec"]
    container = case.container()
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted: dict[str, Path] = {}
    for mount in container["volumeMounts"]:
        local = tmp_path / mount["name"]
        local.mkdir()
        mounted[mount["mountPath"]] = local
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            assert volume["configMap"]["name"] == case.one("ConfigMap")["metadata"]["name"]
            for name, text in case.one("ConfigMap")["data"].items():
                (local / name).write_text(text, encoding="utf-8")
        if "secret" in volume:
            for item in volume["secret"]["items"]:
                (local / item["path"]).write_text(SECRETS[(volume["secret"]["secretName"], item["key"])])

    def local_path(value: str) -> str:
        for path, local in mounted.items():
            if value == path or value.startswith(path + "/"):
                return str(local) + value[len(path):]
        return value

    for name in list(os.environ):
        if name.startswith(("XREG_", "OTEL_")):
            monkeypatch.delenv(name)
    for env in container["env"]:
        if "valueFrom" in env:
            ref = env["valueFrom"]["secretKeyRef"]
            monkeypatch.setenv(env["name"], SECRETS[(ref["name"], ref["key"])])
        else:
            monkeypatch.setenv(env["name"], local_path(env["value"]))
    return load_settings()


def test_default_values_give_mongodb_no_anonymous_reads_and_the_local_registry(tmp_path, monkeypatch):
    settings = pod_settings(CASES[0], tmp_path, monkeypatch)
    assert settings.effective_store_url == MONGO
    assert settings.cache_url == "memory://"
    assert settings.anonymous_read is False
    assert settings.api_keys == [] and settings.jwt_secret is None
    assert [r.id for r in settings.federated_registries] == ["xregistry"]
    assert settings.data_dir == tmp_path / "data"
    assert settings.config == tmp_path / "config" / "gateway.yaml"


def test_production_values_configure_everything_from_secrets(tmp_path, monkeypatch):
    settings = pod_settings(CASES[1], tmp_path, monkeypatch)
    assert settings.effective_store_url == MONGO
    assert settings.cache_url == REDIS
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


def test_the_settings_file_holds_no_secret(tmp_path, monkeypatch):
    for case in CASES:
        text = "\n".join(case.one("ConfigMap")["data"].values())
        assert not [v for v in SECRETS.values() if v in text]
