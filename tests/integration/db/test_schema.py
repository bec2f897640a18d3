"""A migrated database has exactly the schema of ``db/sql/<dialect>/schema.sql``: the migrations and
the file that shows the current schema in one place cannot drift apart."""

from __future__ import annotations

import difflib

import pytest

from tests.support.databases import PostgresTemplate, SqliteTemplate, pg_url
from tests.support.schema import dump, schema_file


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


def test_a_migrated_sqlite_database_is_schema_sql(sqlite_template: SqliteTemplate) -> None:
    compare("sqlite", f"sqlite:///{sqlite_template.path}")


@pytest.mark.postgres
def test_a_migrated_postgresql_database_is_schema_sql(pg_template: PostgresTemplate) -> None:
    compare("postgresql", pg_url(pg_template.name))
