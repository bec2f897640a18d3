"""SQLite's full-text index of new releases filled per statement, not per row (issue 17).

The trigger ``releases_fts_insert`` indexed every inserted release on its own: 17 µs a release, half of
what inserting it cost (bench of the batch store: 34 µs a release with it, 17.6 with the same rows
indexed by one ``INSERT … SELECT`` after them). Every insert of releases now goes through
``catalog/batch_store.py`` ``insert_releases``, which indexes them after inserting (the queries
``releases_search_mark`` and ``releases_search_index``). The update and delete triggers stay: updates
and deletes are few. PostgreSQL's vector is a generated column: nothing changes there.

Revision ID: 0012
Revises: 0011 (issue 16's branch adds an 0011 too: whichever merges second renumbers and revises the
other)
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS releases_fts_insert")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER releases_fts_insert AFTER INSERT ON releases BEGIN "
            "INSERT INTO releases_fts (rowid, search_name) VALUES (new.id, new.search_name); END"
        )
