"""Settings from flags, environment variables (``USENET_INDEXER_*``) and an optional TOML file.

Precedence, highest first: command-line flags, environment, the TOML file (``--config`` or
``USENET_INDEXER_CONFIG``, else ``./usenet-indexer.toml`` when it exists), the defaults here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_CONFIG_FILE = Path("usenet-indexer.toml")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="USENET_INDEXER_", extra="forbid")

    data_dir: Path = Field(default=Path("data"), description="Where the SQLite file, spool and corpus live")
    database_url: str = Field(
        default="",
        description="postgresql://user@host/db or sqlite:///path (default: a SQLite file in data_dir)",
    )
    log_format: Literal["auto", "console", "json"] = "auto"
    log_level: str = "INFO"

    # Leases. The TTL is how long a worker may stay silent before its range is taken over; workers
    # heartbeat after every chunk, so it only has to outlast the slowest chunk plus a retried post.
    lease_ttl_seconds: float = Field(default=120.0, gt=0)
    max_leases_per_group: int = Field(default=2, ge=1)
    catalog_cap_bytes: int | None = Field(
        default=None, ge=0, description="At this size only priority<0 leases"
    )

    # Planning.
    range_articles: int = Field(default=1_000_000, ge=1)
    chunk_articles: int = Field(default=20_000, ge=1)
    era_articles: int = Field(default=10_000_000, ge=1)
    tail_min_articles: int = Field(default=10_000, ge=1)

    # The chunk stream and what workers send.
    stream_chunk_wait_seconds: float = Field(
        default=3600.0, gt=0, description="Give up on a chunk after this"
    )
    stream_keepalive_seconds: float = Field(default=20.0, gt=0)
    batch_max_bytes: int = Field(default=64 << 20, ge=1024, description="Cap on a posted batch, compressed")
    batch_max_inflated_bytes: int = Field(default=768 << 20, ge=1024, description="… and inflated")
    snapshot_max_bytes: int = Field(default=1 << 30, ge=1024)

    # The coordinator's HTTP server.
    host: str = "127.0.0.1"
    port: int = Field(default=8710, ge=0, le=65535)
    public_url: str = Field(
        default="",
        description="The coordinator's address as clients reach it (links in API results); "
        "default: the address each request came to",
    )

    # The web UI's admin login. Give the hash (``usenet-indexer admin hash-password``); a plain
    # ``admin_password`` (e.g. from USENET_INDEXER_ADMIN_PASSWORD) is hashed when settings load and
    # not kept. Neither: the admin pages say how to set one and refuse every login.
    admin_password_hash: str = ""
    admin_password: str = Field(default="", repr=False)
    web_session_hours: float = Field(default=12.0, gt=0)

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_dir / 'usenet-indexer.db').as_posix()}"
        if self.admin_password:
            from usenet_indexer.coordinator.passwords import hash_password

            if not self.admin_password_hash:
                self.admin_password_hash = hash_password(self.admin_password)
            self.admin_password = ""
        if self.range_articles % self.chunk_articles:
            # Ranges are cut into chunks aligned like the ranges themselves (articles.py).
            raise ValueError(
                f"range_articles ({self.range_articles}) must be a multiple of "
                f"chunk_articles ({self.chunk_articles})"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config = _config_file()
        if config is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config))
        return tuple(sources)


def _config_file() -> Path | None:
    named = os.environ.get("USENET_INDEXER_CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise FileNotFoundError(f"USENET_INDEXER_CONFIG names {path}, which is not a file")
        return path
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Settings with the flags given on the command line (``None`` means "not given")."""
    if config is not None:
        os.environ["USENET_INDEXER_CONFIG"] = str(config)
    return Settings(**{key: value for key, value in overrides.items() if value is not None})
