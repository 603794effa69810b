"""The registries: list of the settings — YAML, environment overrides, secrets, clear errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.federation.conftest import data_file
from xreg.config import Settings, load_settings

CONTOSO = data_file("contoso-erp-jsons07.xreg.json")


def test_yaml_registries_and_the_implicit_local_registry(monkeypatch, tmp_path):
    (tmp_path / "doc.json").write_text(CONTOSO.read_text())
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(
        "registry_id: main\n"
        "cache_url: redis://cache.internal:6380/2\n"
        "registries:\n"
        "  - {id: contoso, kind: xregistry, url: 'https://contoso.example/registry/', cache_ttl: 5, priority: 10,\n"
        "     timeouts: {connect: 1, read: 3}, auth: {bearer_env: CONTOSO_TOKEN}}\n"
        "  - {id: spec, kind: file, path: doc.json, base_url: 'https://spec.example/reg'}\n")
    monkeypatch.setenv("XREG_CONFIG", str(cfg))
    s = load_settings()
    assert s.cache_url == "redis://cache.internal:6380/2"
    ids = [(r.id, r.kind) for r in s.federated_registries]
    assert ids == [("main", "local"), ("contoso", "xregistry"), ("spec", "file")]
    contoso = s.registries[0]
    assert contoso.url == "https://contoso.example/registry" and contoso.timeouts.read == 3 and contoso.priority == 10
    assert s.registries[1].path == tmp_path / "doc.json"  # relative to the settings file
    assert s.federated_registries[0].base_url == s.base_url


def test_environment_overrides_one_field_of_a_listed_registry(monkeypatch, tmp_path):
    monkeypatch.setenv("XREG_REGISTRIES", '[{"id": "team-a.prod", "kind": "xregistry", "url": "http://a.example/r"}]')
    monkeypatch.setenv("XREG_REGISTRIES__TEAM_A_PROD__URL", "http://a-internal.example/r")
    monkeypatch.setenv("XREG_REGISTRIES__TEAM_A_PROD__TIMEOUTS__READ", "7.5")
    monkeypatch.setenv("XREG_REGISTRIES__TEAM_A_PROD__AUTH__BEARER", "s3cret")
    s = load_settings()
    (entry,) = s.registries
    assert entry.url == "http://a-internal.example/r" and entry.timeouts.read == 7.5
    assert entry.auth.resolved_headers() == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(s)  # secrets stay out of logs


def test_an_override_for_an_unlisted_registry_is_an_error(monkeypatch):
    monkeypatch.setenv("XREG_REGISTRIES__GHOST__URL", "http://x.example/r")
    with pytest.raises(ValidationError) as exc:
        load_settings()
    assert "XREG_REGISTRIES__GHOST__URL names no listed registry" in str(exc.value)


def test_secrets_from_a_file_and_from_the_environment(monkeypatch, tmp_path):
    token = tmp_path / "token"
    token.write_text("from-file\n")
    monkeypatch.setenv("REMOTE_TOKEN", "from-env")
    s = Settings(registries=[
        {"id": "a", "kind": "xregistry", "url": "http://a.example/r", "auth": {"bearer_file": str(token)}},
        {"id": "b", "kind": "xregistry", "url": "http://b.example/r", "auth": {"bearer_env": "REMOTE_TOKEN"}},
        {"id": "c", "kind": "xregistry", "url": "http://c.example/r",
         "auth": {"basic_username": "u", "basic_password": "p", "headers": {"X-Tenant": "t1"}}},
    ])
    a, b, c = (r.auth.resolved_headers() for r in s.registries)
    assert a == {"Authorization": "Bearer from-file"} and b == {"Authorization": "Bearer from-env"}
    assert c == {"X-Tenant": "t1", "Authorization": "Basic dTpw"}


@pytest.mark.parametrize("entry,needle", [
    ({"id": "x", "kind": "ftp", "url": "http://x.example"}, "kind"),
    ({"id": "x", "kind": "xregistry"}, "needs url"),
    ({"id": "x", "kind": "xregistry", "url": "file:///etc/passwd"}, "not an http(s) URL"),
    ({"id": "x", "kind": "xregistry", "url": "http://x.example/r?q=1"}, "no query"),
    ({"id": "x y", "kind": "xregistry", "url": "http://x.example"}, "registry id"),
    ({"id": "x", "kind": "file"}, "exactly one of path or url"),
    ({"id": "x", "kind": "file", "path": "/nonexistent/doc.json"}, "does not exist"),
    ({"id": "x", "kind": "local"}, "the local registry is"),
    ({"id": "xregistry", "kind": "xregistry", "url": "http://x.example"}, "local registry's id"),
    ({"id": "x", "kind": "xregistry", "url": "http://x.example", "auth": {"bearer": "t", "forward": True}}, "choose one"),
    ({"id": "x", "kind": "xregistry", "url": "http://x.example", "colour": "red"}, "colour"),
])
def test_invalid_entries_are_named(entry, needle):
    with pytest.raises(ValidationError) as exc:
        Settings(registries=[entry])
    assert needle in str(exc.value)


def test_duplicate_ids_and_cache_urls():
    with pytest.raises(ValidationError) as exc:
        Settings(registries=[{"id": "a", "kind": "xregistry", "url": "http://a.example"},
                             {"id": "A", "kind": "xregistry", "url": "http://b.example"}])
    assert "listed twice" in str(exc.value)
    with pytest.raises(ValidationError) as exc:
        Settings(cache_url="memcached://x")
    assert "cache_url" in str(exc.value)
