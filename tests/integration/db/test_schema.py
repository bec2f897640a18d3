"""A migrated database has exactly the schema of ``db/sql/<dialect>/schema.sql``: the migrations and
the file that shows the current schema in one place cannot drift apart."""

from __future__ import annotations

import difflib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.databases import PostgresTemplate, pg_url
from tests.support.schema import ONE_RELEASE, dump, schema_file
from usenet_indexer.db.migrate import head_revision, made_at_head, migrate


def compare(dialect: str, url: str) -> None:
    migrated, kept = dump(url), schema_file(dialect).read_text(encoding="utf-8")
    if migrated != kept:
        diff = "".join(
            difflib.unified_diff(
                kept.splitlines(True), migrated.splitlines(True), "schema.sql", "migrated", n=1
            )
        )
        pytest.fail(
            f"the migrated {dialect} schema differs from {schema_file(dialect)}; if a migration changed it, "
            f"write the file again (scripts/uv.sh run python -m tests.support.schema):\n{diff[:6000]}"
        )


def test_a_migrated_sqlite_database_is_schema_sql(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'migrated.db'}"
    migrate(url)  # every migration, as Alembic runs them (a new store is made from the file instead)
    compare("sqlite", url)


def test_a_new_sqlite_store_is_what_migrating_makes(tmp_path: Path) -> None:
    """``upgrade`` makes a new SQLite store from schema.sql (db/migrate.py): the same schema, and, once a
    release is written to each, the same rows in every table, the search index's shadow tables included.
    (Before the first write they differ in one record: FTS5 writes its empty averages record at the
    first write, and migration 0015's rebuild wrote it early on a migrated store.)"""
    made, migrated = tmp_path / "made.db", tmp_path / "migrated.db"
    assert made_at_head(f"sqlite:///{made}", head_revision() or "")
    migrate(f"sqlite:///{migrated}")
    compare("sqlite", f"sqlite:///{made}")
    assert contents_after_a_write(made) == contents_after_a_write(migrated)


def contents_after_a_write(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table of the SQLite database at ``path``, sorted, after one release and its
    search entry are written and the search index checked."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(ONE_RELEASE)
        conn.execute("INSERT INTO releases_fts (rowid, search_name) SELECT id, search_name FROM releases")
        conn.execute("INSERT INTO releases_fts (releases_fts, rank) VALUES ('integrity-check', 1)")
        conn.commit()
        names = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in names}


@pytest.mark.postgres
def test_a_migrated_postgresql_database_is_schema_sql(pg_template: PostgresTemplate) -> None:
    compare("postgresql", pg_url(pg_template.name))
