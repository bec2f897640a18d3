"""The schema a migrated database has, as SQL, per dialect: ``db/sql/<dialect>/schema.sql``.

The files are what every migration together makes; tests/integration/db/test_schema.py migrates an
empty database of each dialect and compares. After a new migration, write them again:

    scripts/uv.sh run python -m tests.support.schema

PostgreSQL's is ``pg_dump --schema-only`` (the same major version as the server), without its
comments, settings and session keys; SQLite's is ``sqlite_master``'s statements in name order.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from usenet_indexer.db import upgrade
from usenet_indexer.db.database import sqlite_path

SQL = Path(__file__).resolve().parents[2] / "src" / "usenet_indexer" / "db" / "sql"
HEADER = (
    "-- The schema every migration together makes ({dialect}), written by tests/support/schema.py;\n"
    "-- tests/integration/db/test_schema.py checks that a migrated database has exactly this.\n\n"
)
# pg_dump's lines that say nothing about the schema: settings, its own comments, the random key of
# its \\restrict guard (pg_dump 15.14 and later).
NOISE = re.compile(r"^(--.*|SET .*|SELECT pg_catalog\.set_config.*|\\(un)?restrict .*)$")


def schema_file(dialect: str) -> Path:
    return SQL / dialect / "schema.sql"


def dump(url: str) -> str:
    """The schema of the database at ``url`` as SQL, normalized."""
    if url.startswith("sqlite"):
        with sqlite3.connect(sqlite_path(url)) as conn:
            rows = conn.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                "ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, name"
            ).fetchall()
        return HEADER.format(dialect="sqlite") + "".join(f"{sql};\n\n" for (sql,) in rows).rstrip() + "\n"
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        raise RuntimeError("pg_dump is missing: install PostgreSQL's client (postgresql-client)")
    done = subprocess.run(
        [pg_dump, "--schema-only", "--no-owner", "--no-privileges", "--dbname", url],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in done.stdout.splitlines() if not NOISE.match(line)]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return HEADER.format(dialect="postgresql") + text + "\n"


def write() -> None:
    """Migrate an empty database of each dialect and write its schema file."""
    from tests.support.databases import PostgresTemplate, pg_url

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/schema.db"
        upgrade(url)
        schema_file("sqlite").write_text(dump(url), encoding="utf-8")
    template = PostgresTemplate()
    try:
        schema_file("postgresql").write_text(dump(pg_url(template.name)), encoding="utf-8")
    finally:
        template.drop()


if __name__ == "__main__":
    write()
    print(f"wrote {schema_file('sqlite')} and {schema_file('postgresql')}")
