"""``upgrade`` skips Alembic for a store already at the head, and makes a new SQLite store from its
schema file, and only then (issue 17: importing and running Alembic cost every ``run`` 0.22 s of CPU,
and migrating a new store 0.5 s)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.databases import PostgresTemplate, SqliteTemplate, pg_url
from tests.support.schema import ONE_RELEASE
from usenet_indexer.db.migrate import head_revision, made_at_head, schema_statements, stored_revision, upgrade


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
        conn.execute(ONE_RELEASE)
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


def test_a_new_sqlite_store_is_made_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    code = (
        "import sys; from usenet_indexer.db import upgrade; "
        f"upgrade({url!r}); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert stored_revision(url) == head_revision()


def test_an_empty_file_is_made_at_the_head(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    assert made_at_head(f"sqlite:///{path}", head_revision() or "")
    assert stored_revision(f"sqlite:///{path}") == head_revision()


def test_a_store_that_holds_anything_is_left_to_alembic(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    assert not made_at_head(f"sqlite:///{path}", head_revision() or "")
    with closing(sqlite3.connect(path)) as conn:
        assert [n for (n,) in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_a_schema_file_of_another_revision_is_not_used(tmp_path: Path) -> None:
    """A checkout with a new migration whose schema file was not written again: Alembic migrates."""
    path = tmp_path / "new.db"
    assert not made_at_head(f"sqlite:///{path}", "not-the-files-revision")
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
    upgrade(f"sqlite:///{path}")
    assert stored_revision(f"sqlite:///{path}") == head_revision()


def test_two_makers_of_one_new_store_make_it_once(tmp_path: Path) -> None:
    """Two coordinators starting at once on a new file: one makes it, the other waits and finds it."""
    url = f"sqlite:///{tmp_path / 'raced.db'}"
    start = threading.Barrier(4)
    made: list[bool] = []
    errors: list[BaseException] = []

    def make() -> None:
        start.wait()
        try:
            made.append(made_at_head(url, head_revision() or ""))
        except BaseException as error:  # pragma: no cover - what the test would report
            errors.append(error)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(made) == [False, False, False, True]
    assert stored_revision(url) == head_revision()


def test_a_schema_script_is_split_into_statements_triggers_whole() -> None:
    script = (
        "-- a header\n\nCREATE TABLE a (x);\n\n"
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  INSERT INTO a VALUES (1);\n  SELECT 1;\nEND;\n"
        "INSERT INTO a VALUES('x;y');\n"
    )
    statements = schema_statements(script)
    assert len(statements) == 3
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")
    assert statements[2] == "INSERT INTO a VALUES('x;y');"
    with pytest.raises(ValueError, match="ends inside a statement"):
        schema_statements("CREATE TABLE b (x")


def test_a_store_whose_making_fails_is_left_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement of the schema file that fails leaves no table behind: the next start makes it."""
    import usenet_indexer.db.migrate as migrate_module

    url = f"sqlite:///{tmp_path / 'broken.db'}"
    statements = schema_statements
    monkeypatch.setattr(
        migrate_module, "schema_statements", lambda script: [*statements(script)[:5], "CREATE TABLE broken ("]
    )
    with pytest.raises(sqlite3.OperationalError):
        made_at_head(url, head_revision() or "")
    with closing(sqlite3.connect(tmp_path / "broken.db")) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
    monkeypatch.undo()
    assert made_at_head(url, head_revision() or "")
