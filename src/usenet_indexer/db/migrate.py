"""Alembic, run from code: ``usenet-indexer db upgrade`` and every command that needs the store.

Every command that opens the store upgrades it on its way in; a store already at the head is told by
one query, without Alembic: importing Alembic and SQLAlchemy and running its environment cost
``usenet-indexer run`` 0.22 s of CPU at each start (0.2 µs a header of a 1M-header run, issue 17).
"""

from __future__ import annotations

import logging
import re
import sqlite3
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from alembic.config import Config

_REVISION = re.compile(r'^(down_revision|revision)\s*=\s*(?:"([^"]*)"|None)\s*$', re.MULTILINE)


def sqlalchemy_url(url: str) -> str:
    """Our URLs name the dialect; SQLAlchemy also wants the driver (psycopg 3, not psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option(
        "script_location", str(resources.files("usenet_indexer.db").joinpath("migrations"))
    )
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head", *, verbose: bool = False) -> None:
    head = head_revision() if revision == "head" and not verbose else None
    if head is not None and stored_revision(url) == head:
        return
    from alembic import command

    # Alembic narrates every step at INFO; commands that upgrade on their way in keep quiet about it.
    logging.getLogger("alembic").setLevel(logging.INFO if verbose else logging.WARNING)
    command.upgrade(alembic_config(url), revision)


@cache
def head_revision() -> str | None:
    """The one revision no other migration revises, read from the migration files; None when there is
    not exactly one (Alembic then decides)."""
    revisions: set[str] = set()
    revised: set[str] = set()
    folder = Path(str(resources.files("usenet_indexer.db").joinpath("migrations", "versions")))
    for path in folder.glob("*.py"):
        fields = {name: value for name, value in _REVISION.findall(path.read_text(encoding="utf-8"))}
        if "revision" not in fields:
            return None  # a file this reading does not understand
        revisions.add(fields["revision"])
        if fields.get("down_revision"):
            revised.add(fields["down_revision"])
    heads = revisions - revised
    return heads.pop() if len(heads) == 1 else None


def stored_revision(url: str) -> str | None:
    """The revision the store is at (Alembic's ``alembic_version``); None for a new or unreadable
    store. Never creates the database."""
    try:
        if urlparse(url).scheme == "sqlite":
            from usenet_indexer.db.database import sqlite_path

            path = Path(sqlite_path(url))
            if not path.is_file():
                return None
            with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
                rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
            conn.close()
        else:
            import psycopg

            with psycopg.connect(url, connect_timeout=10) as pg:
                rows = pg.execute("SELECT version_num FROM alembic_version").fetchall()
    except Exception:  # any doubt: Alembic looks, and says what is wrong
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def current(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine

    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
