"""Alembic, run from code: ``usenet-indexer db upgrade`` and every command that needs the store.

Every command that opens the store upgrades it on its way in; a store already at the head is told by
one query, without Alembic: importing Alembic and SQLAlchemy and running its environment cost
``usenet-indexer run`` 0.22 s of CPU at each start (0.2 µs a header of a 1M-header run, issue 17).

A new SQLite store is made at the head in one transaction from ``sql/sqlite/schema.sql`` (what every
migration together makes, rows included; tests/integration/db/test_schema.py checks both ways), as
Alembic's cookbook builds a database from scratch: replaying every migration cost a new user's first
``run`` 0.5 s of a core before anything was planned (issue 17). A store that holds anything, and every
upgrade of an older one, goes through Alembic.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from contextlib import closing
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
    if head is not None and (stored_revision(url) == head or made_at_head(url, head)):
        return
    migrate(url, revision, verbose=verbose)


def migrate(url: str, revision: str = "head", *, verbose: bool = False) -> None:
    """Alembic's upgrade, migration by migration, whatever the store holds."""
    from alembic import command

    # Alembic narrates every step at INFO; commands that upgrade on their way in keep quiet about it.
    logging.getLogger("alembic").setLevel(logging.INFO if verbose else logging.WARNING)
    command.upgrade(alembic_config(url), revision)


def made_at_head(url: str, head: str) -> bool:
    """Whether ``url`` was a new SQLite store (no file, or a file without a table) and is now made at
    ``head`` from ``sql/sqlite/schema.sql``. False, and nothing written, for PostgreSQL, a store that
    holds anything, or a schema file of another revision (a checkout whose file was not written again
    after a new migration: Alembic then migrates, and the schema test says to write it)."""
    if urlparse(url).scheme != "sqlite":
        return False
    from usenet_indexer.db.database import sqlite_path

    script = resources.files("usenet_indexer.db").joinpath("sql", "sqlite", "schema.sql").read_text("utf-8")
    if f"INSERT INTO alembic_version VALUES('{head}');" not in script:
        return False
    # Closed without its COMMIT (a store already made, a statement that fails), the transaction is
    # rolled back: nothing is written.
    with closing(sqlite3.connect(sqlite_path(url), isolation_level=None, timeout=60.0)) as conn:
        # Two processes making one store at once: the second waits here, then finds the tables.
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None:
            return False
        for statement in schema_statements(script):
            conn.execute(statement)
        conn.execute("COMMIT")
        return True


def schema_statements(script: str) -> list[str]:
    """The statements of a SQLite script, one by one (a trigger's body holds semicolons)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise ValueError(f"the schema script ends inside a statement: {pending.strip()[:200]!r}")
    return statements


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
