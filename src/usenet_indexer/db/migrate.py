"""Alembic, run from code: ``usenet-indexer db upgrade`` and every command that needs the store."""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config


def sqlalchemy_url(url: str) -> str:
    """Our URLs name the dialect; SQLAlchemy also wants the driver (psycopg 3, not psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option(
        "script_location", str(resources.files("usenet_indexer.db").joinpath("migrations"))
    )
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def current(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine

    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
