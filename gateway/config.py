"""Gateway settings: one object, from ``XREG_*`` environment variables and an optional YAML file.

Precedence (highest first): explicit keyword arguments, environment variables, the YAML file
named by ``XREG_CONFIG`` (or passed as ``config_file``), then the defaults below. Every field
is documented in README.md ("Configuration").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, YamlConfigSettingsSource


class ApiKey(BaseModel):
    """A static API key, stored as the SHA-256 hex digest of the key (never the key itself)."""

    model_config = {"extra": "forbid"}

    name: str = Field(description="Who holds the key (appears in logs instead of the key).")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="hex SHA-256 of the key")
    scopes: list[str] = Field(default_factory=lambda: ["read"], description="read and/or write")


class Settings(BaseSettings):
    """All settings of the gateway."""

    model_config = SettingsConfigDict(env_prefix="XREG_", extra="forbid", validate_default=True)

    data_dir: Path = Field(Path("./data"), description="Directory for the embedded store and other local state.")
    store_url: str = Field("", description="sqlite:///path/to/file.db (default: <data_dir>/registry.db) or mongodb://…")
    registry_id: str = Field("xregistry", description="The registryid of the local registry.")
    registry_name: str = Field("xRegistry gateway", description="The name of the local registry.")
    base_url: str = Field("http://127.0.0.1:8080/registry", description="Public URL of the xRegistry HTTP API, used in self URLs.")
    history_keep_revisions: int | None = Field(
        None, ge=1, description="Keep superseded states and tombstones for this many revisions (unset: no limit by count)."
    )
    history_keep_days: float | None = Field(
        30.0, gt=0, description="Keep superseded states and tombstones this many days (unset: no limit by age)."
    )
    config: Path | None = Field(None, description="YAML settings file (XREG_CONFIG).")

    # -- HTTP -----------------------------------------------------------------------------------
    registry_prefix: str = Field("/registry", description="Path prefix of the xRegistry HTTP API.")
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="Largest accepted request body.")
    page_size_default: int = Field(100, ge=1, description="Page size when a client asks for pagination without a limit.")
    page_size_max: int = Field(1000, ge=1, description="Largest page a client may ask for.")
    debug: bool = Field(False, description="Show internal error details to clients (never in production).")

    # -- authentication -------------------------------------------------------------------------
    anonymous_read: bool = Field(True, description="Allow reads without credentials.")
    api_keys: list[ApiKey] = Field(default_factory=list, description="Static API keys (hashed).")
    jwt_secret: SecretStr | None = Field(None, description="Shared secret for HS256/384/512 JWTs.")
    jwt_jwks_url: str | None = Field(None, description="JWKS URL for RS/ES-signed JWTs.")
    jwt_jwks_file: Path | None = Field(None, description="JWKS file for RS/ES-signed JWTs.")
    jwt_issuer: str | None = Field(None, description="Required iss claim.")
    jwt_audience: str | None = Field(None, description="Required aud claim.")
    jwt_scope_claim: str = Field("scope", description="Claim holding the space-separated scopes.")

    # -- GraphQL --------------------------------------------------------------------------------
    graphql_max_depth: int = Field(12, ge=1, description="Deepest selection a query may have.")
    graphql_max_tokens: int = Field(4000, ge=10, description="Most tokens a query document may have.")
    graphql_max_aliases: int = Field(30, ge=0, description="Most aliases a query may use.")
    graphql_introspection: bool = Field(True, description="Allow schema introspection.")
    graphql_max_page_size: int = Field(500, ge=1, description="Largest first/last a connection accepts.")

    @field_validator("store_url")
    @classmethod
    def _check_store_url(cls, value: str) -> str:
        if value and not value.startswith(("sqlite:///", "mongodb://", "mongodb+srv://")):
            raise ValueError("store_url must start with sqlite:///, mongodb:// or mongodb+srv://")
        return value

    @property
    def effective_store_url(self) -> str:
        """The store URL, defaulting to an SQLite file in the data directory."""
        return self.store_url or f"sqlite:///{self.data_dir / 'registry.db'}"

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        import os

        path = init_settings.init_kwargs.get("config") if hasattr(init_settings, "init_kwargs") else None
        path = path or os.environ.get("XREG_CONFIG")
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path:
            if not Path(path).is_file():
                raise FileNotFoundError(f"settings file not found: {path}")
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and YAML file), with ``overrides`` on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
