"""Almanac configuration: environment variables ``ALMANAC_*`` and an optional TOML file.

Precedence: explicit arguments > environment > TOML file (``ALMANAC_CONFIG`` or
``./almanac.toml``) > defaults. Only ``server/`` reads settings; library code receives objects.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "almanac"


class Settings(BaseSettings):
    """Every setting, with its environment variable in the description."""

    model_config = SettingsConfigDict(env_prefix="ALMANAC_", extra="forbid")

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="ALMANAC_DATA_DIR: models, the default SQLite store, exports.",
    )
    store_url: str | None = Field(
        default=None,
        description="ALMANAC_STORE_URL: knowledge store URL; default sqlite:///<data_dir>/knowledge.db",
    )
    log_level: str = Field(default="INFO", description="ALMANAC_LOG_LEVEL")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = Path(os.environ.get("ALMANAC_CONFIG", "almanac.toml"))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file))

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite:///{self.data_dir / 'knowledge.db'}"


def load_settings(**overrides: Any) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
