"""The catalog: releases (one row each, segments in one compressed blob) and the probe queue.

Never a row per part: the part tables of older indexers reach tens of millions of rows. A release's
files and segments live in ``segments`` (indexing/merge.py's blob), with the totals beside it.

Search: PostgreSQL full text over ``search_name`` (GIN), SQLite FTS5 (an external-content table kept
by triggers).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "releases",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column("key", sa.Text(), nullable=False, unique=True),
        sa.Column("name", sa.Text(), nullable=False),
        # Where the name came from: the subjects, or a probe of the PAR2/NFO (then merges keep it).
        sa.Column("name_source", sa.Text(), nullable=False, server_default="subject"),
        sa.Column("search_name", sa.Text(), nullable=False),
        sa.Column("poster", sa.Text(), nullable=False),
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("groups", sa.Text(), nullable=False),
        sa.Column("file_total", sa.Integer(), nullable=False),
        sa.Column("files_seen", sa.Integer(), nullable=False),
        sa.Column("files_expected", sa.Integer(), nullable=False),
        sa.Column("parts_seen", sa.BigInteger(), nullable=False),
        sa.Column("parts_expected", sa.BigInteger(), nullable=False),
        sa.Column("completion", sa.Float(), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("first_article", sa.BigInteger(), nullable=False),
        sa.Column("last_article", sa.BigInteger(), nullable=False),
        sa.Column("first_date", sa.BigInteger(), nullable=True),
        sa.Column("last_date", sa.BigInteger(), nullable=True),
        # What the newznab API sorts and filters by: the post date, else when it was first stored.
        sa.Column("posted_at", sa.Double(), nullable=False),
        sa.Column("obfuscated", sa.Boolean(), nullable=False),
        sa.Column("request_id", sa.Text(), nullable=True),
        sa.Column("password", sa.Boolean(), nullable=True),
        sa.Column("category", sa.Integer(), nullable=False),
        sa.Column("season", sa.Integer(), nullable=True),
        sa.Column("episode", sa.Integer(), nullable=True),
        sa.Column("year", sa.Integer(), nullable=True),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.Column("imdb", sa.Text(), nullable=True),
        sa.Column("tvdbid", sa.BigInteger(), nullable=True),
        sa.Column("segments", sa.LargeBinary(), nullable=False),
        sa.Column("grabs", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_index("releases_posted", "releases", ["posted_at"])
    op.create_index("releases_category_posted", "releases", ["category", "posted_at"])
    op.create_index("releases_group_posted", "releases", ["group_name", "posted_at"])
    op.create_table(
        "probe_queue",
        sa.Column("release_key", sa.Text(), primary_key=True),
        sa.Column("par2_message_id", sa.Text(), nullable=False),
        sa.Column("nfo_message_id", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), nullable=False, server_default="queued"),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.CheckConstraint("status IN ('queued', 'working', 'done', 'failed')", name="probe_queue_status"),
    )
    op.create_index("probe_queue_status", "probe_queue", ["status", "created_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX releases_search ON releases USING gin (to_tsvector('simple', search_name))")
    else:
        op.execute(
            "CREATE VIRTUAL TABLE releases_fts USING fts5("
            "search_name, content='releases', content_rowid='id', tokenize='unicode61')"
        )
        op.execute(
            "CREATE TRIGGER releases_fts_insert AFTER INSERT ON releases BEGIN "
            "INSERT INTO releases_fts (rowid, search_name) VALUES (new.id, new.search_name); END"
        )
        op.execute(
            "CREATE TRIGGER releases_fts_delete AFTER DELETE ON releases BEGIN "
            "INSERT INTO releases_fts (releases_fts, rowid, search_name) "
            "VALUES ('delete', old.id, old.search_name); END"
        )
        op.execute(
            "CREATE TRIGGER releases_fts_update AFTER UPDATE OF search_name ON releases BEGIN "
            "INSERT INTO releases_fts (releases_fts, rowid, search_name) "
            "VALUES ('delete', old.id, old.search_name); "
            "INSERT INTO releases_fts (rowid, search_name) VALUES (new.id, new.search_name); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        for trigger in ("releases_fts_insert", "releases_fts_delete", "releases_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS releases_fts")
    op.drop_table("probe_queue")
    op.drop_table("releases")
