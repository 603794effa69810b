"""Settings: defaults, environment variables, the YAML file, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from xreg.config import load_settings


def test_defaults_give_an_embedded_store_in_the_data_dir(monkeypatch):
    for name in ("XREG_DATA_DIR", "XREG_STORE_URL", "XREG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings()
    assert s.data_dir == Path("data")
    assert s.effective_store_url == "sqlite:///data/registry.db"
    assert s.anonymous_read is True


def test_environment_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("XREG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("XREG_REGISTRY_ID", "team-a")
    monkeypatch.setenv("XREG_HISTORY_KEEP_REVISIONS", "50")
    monkeypatch.setenv("XREG_API_KEYS", '[{"name": "ci", "sha256": "' + "a" * 64 + '", "scopes": ["read", "write"]}]')
    s = load_settings()
    assert s.effective_store_url == f"sqlite:///{tmp_path / 'registry.db'}"
    assert s.registry_id == "team-a" and s.history_keep_revisions == 50
    assert s.api_keys[0].name == "ci" and s.api_keys[0].scopes == ["read", "write"]


def test_yaml_file_and_precedence(monkeypatch, tmp_path):
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text("registry_id: from-file\nregistry_name: File\nstore_url: mongodb://db:27017/reg\n")
    monkeypatch.setenv("XREG_CONFIG", str(cfg))
    monkeypatch.setenv("XREG_REGISTRY_NAME", "from-env")
    s = load_settings()
    assert s.registry_id == "from-file"
    assert s.registry_name == "from-env"  # the environment wins over the file
    assert s.effective_store_url == "mongodb://db:27017/reg"


@pytest.mark.parametrize("name,value,needle", [
    ("XREG_STORE_URL", "postgres://x", "store_url"),
    ("XREG_HISTORY_KEEP_REVISIONS", "0", "history_keep_revisions"),
    ("XREG_API_KEYS", '[{"name": "x", "sha256": "not-hex"}]', "sha256"),
])
def test_invalid_settings_are_named(monkeypatch, name, value, needle):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as exc:
        load_settings()
    assert needle in str(exc.value)


def test_unknown_keys_in_the_yaml_file_are_rejected(monkeypatch, tmp_path):
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text("registry_idd: typo\n")
    monkeypatch.setenv("XREG_CONFIG", str(cfg))
    with pytest.raises(ValidationError) as exc:
        load_settings()
    assert "registry_idd" in str(exc.value)


def test_missing_yaml_file_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("XREG_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(FileNotFoundError, match=r"nope\.yaml"):
        load_settings()


def test_serve_points_self_urls_at_its_own_port_unless_configured(monkeypatch):
    from gateway.cli import served_settings

    monkeypatch.delenv("XREG_BASE_URL", raising=False)
    assert served_settings(load_settings(), "127.0.0.1", 8091).base_url == "http://127.0.0.1:8091/registry"
    assert served_settings(load_settings(), "0.0.0.0", 9000).base_url == "http://127.0.0.1:9000/registry"
    monkeypatch.setenv("XREG_BASE_URL", "https://registry.example.com/registry")
    assert served_settings(load_settings(), "0.0.0.0", 9000).base_url == "https://registry.example.com/registry"
