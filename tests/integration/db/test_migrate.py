"""``upgrade`` skips Alembic for a store already at the head, and only then (issue 17: importing and
running Alembic cost every ``run`` 0.22 s of CPU)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.databases import PostgresTemplate, SqliteTemplate, pg_url
from usenet_indexer.db.migrate import head_revision, stored_revision, upgrade


def test_the_head_read_from_the_files_is_alembics() -> None:
    from alembic.script import ScriptDirectory

    from usenet_indexer.db.migrate import alembic_config

    assert (
        head_revision()
        == ScriptDirectory.from_config(alembic_config("sqlite:///unused.db")).get_current_head()
    )


def test_a_store_at_the_head_is_not_upgraded_again(sqlite_template: SqliteTemplate, tmp_path: Path) -> None:
    with sqlite_template.database(tmp_path) as url:
        assert stored_revision(url) == head_revision()
        upgrade(url)  # nothing to do, told by one query


def test_a_store_behind_the_head_is_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0009")
    assert stored_revision(url) == "0009"
    upgrade(url)
    assert stored_revision(url) == head_revision()
    with sqlite3.connect(tmp_path / "old.db") as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(releases)")}
    assert "file_names" in columns  # 0010's
    conn.close()


def test_a_missing_sqlite_file_is_not_made_by_looking(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    assert stored_revision(f"sqlite:///{path}") is None
    assert not path.exists()
    upgrade(f"sqlite:///{path}")
    assert stored_revision(f"sqlite:///{path}") == head_revision()


@pytest.mark.postgres
def test_postgresql_at_the_head_is_read(pg_template: PostgresTemplate) -> None:
    assert stored_revision(pg_url(pg_template.name)) == head_revision()


def test_the_run_path_imports_no_alembic(sqlite_template: SqliteTemplate, tmp_path: Path) -> None:
    with sqlite_template.database(tmp_path) as url:
        upgrade(url)
    code = (
        "import sys; from usenet_indexer.db import upgrade; "
        f"upgrade({url!r}); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_releases_inserted_past_the_search_index_are_indexed_by_0015(tmp_path: Path) -> None:
    """Before 0015 a joined burst and a probe's split were inserted without their search entry: search
    missed them, and their next update broke the index. 0015 builds it again from the releases."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0013")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute(
            "INSERT INTO releases (key, name, search_name, poster, group_name, groups, file_total,"
            " files_seen, files_expected, parts_seen, parts_expected, completion, complete, size,"
            " first_article, last_article, posted_at, obfuscated, category, segments, created_at, updated_at)"
            " VALUES ('k', 'Some.Show.S01E01', 'some show s01e01', 'p', 'g', 'g', 1, 1, 1, 1, 1, 1.0, 1, 1,"
            " 1, 1, 0, 0, 0, x'', 0, 0)"
        )
        missed = conn.execute("SELECT count(*) FROM releases_fts WHERE releases_fts MATCH 'show'").fetchone()
    conn.close()
    assert missed == (0,)
    upgrade(url)
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("INSERT INTO releases_fts (releases_fts, rank) VALUES ('integrity-check', 1)")
        found = conn.execute("SELECT count(*) FROM releases_fts WHERE releases_fts MATCH 'show'").fetchone()
        conn.execute("UPDATE releases SET search_name = 'other name' WHERE key = 'k'")
        conn.execute("INSERT INTO releases_fts (releases_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
    assert found == (1,)
