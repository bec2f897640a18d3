"""The schema a migrated database has, as SQL, per dialect: ``db/sql/<dialect>/schema.sql``.

The files are what every migration together makes; tests/integration/db/test_schema.py migrates an
empty database of each dialect and compares. After a new migration, write them again:

    scripts/uv.sh run python -m tests.support.schema

PostgreSQL's is ``pg_dump --schema-only`` (the same major version as the server), without its
comments, settings and session keys; SQLite's is ``sqlite_master``'s statements in name order (a
virtual table's shadow tables left out), then the rows its tables hold: db/migrate.py makes a new
SQLite store by running it.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import tempfile
from contextlib import closing
from pathlib import Path

from usenet_indexer.db.database import sqlite_path
from usenet_indexer.db.migrate import migrate

SQL = Path(__file__).resolve().parents[2] / "src" / "usenet_indexer" / "db" / "sql"
HEADER = (
    "-- The schema every migration together makes ({dialect}), written by tests/support/schema.py;\n"
    "-- tests/integration/db/test_schema.py checks that a migrated database has exactly this.\n\n"
)
# pg_dump's lines that say nothing about the schema: settings, its own comments, the random key of
# its \\restrict guard (pg_dump 15.14 and later).
NOISE = re.compile(r"^(--.*|SET .*|SELECT pg_catalog\.set_config.*|\\(un)?restrict .*)$")

# One release row, written by hand (no search entry): what the schema tests write to a store.
ONE_RELEASE = (
    "INSERT INTO releases (key, name, search_name, poster, group_name, groups, file_total,"
    " files_seen, files_expected, parts_seen, parts_expected, completion, complete, size,"
    " first_article, last_article, posted_at, obfuscated, category, segments, created_at, updated_at)"
    " VALUES ('k', 'Some.Show.S01E01', 'some show s01e01', 'p', 'g', 'g', 1, 1, 1, 1, 1, 1.0, 1, 1,"
    " 1, 1, 0, 0, 0, x'', 0, 0)"
)


def schema_file(dialect: str) -> Path:
    return SQL / dialect / "schema.sql"


def sqlite_statements(conn: sqlite3.Connection) -> list[str]:
    """What makes this SQLite database again, in an order that can be run (db/migrate.py made_at_head
    runs it to make a new store): its tables and virtual tables by name, then indexes and triggers by
    name, then every row its tables hold (alembic_version's, and what migrations inserted). A virtual
    table's shadow tables are left out: the virtual table makes them."""
    # "table", "view", "virtual" or "shadow" (a virtual table's own), by table name.
    kinds = {name: kind for _, name, kind, *_ in conn.execute("PRAGMA table_list")}
    objects = [
        (name, sql)
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, name"
        )
        if kinds.get(name) != "shadow"
    ]
    out = [sql for _, sql in objects]
    for name, _ in objects:
        if kinds.get(name) != "table":
            continue
        columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')]
        values = " || ',' || ".join(f'quote("{column}")' for column in columns)
        order = ", ".join(f'"{column}"' for column in columns)
        for (row,) in conn.execute(f'SELECT {values} FROM "{name}" ORDER BY {order}'):
            out.append(f"INSERT INTO {name} VALUES({row})")
    return out


def dump(url: str) -> str:
    """The schema of the database at ``url`` as SQL, normalized."""
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(sqlite_path(url))) as conn:
            statements = sqlite_statements(conn)
        return HEADER.format(dialect="sqlite") + "".join(f"{sql};\n\n" for sql in statements).rstrip() + "\n"
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
        migrate(url)
        schema_file("sqlite").write_text(dump(url), encoding="utf-8")
    template = PostgresTemplate()
    try:
        schema_file("postgresql").write_text(dump(pg_url(template.name)), encoding="utf-8")
    finally:
        template.drop()


if __name__ == "__main__":
    write()
    print(f"wrote {schema_file('sqlite')} and {schema_file('postgresql')}")
