"""Users of the newznab API and the web UI: API keys (hashes only), daily request and download counts,
admin sessions; on PostgreSQL a stored search vector for the catalog's full-text search.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Text(), nullable=False, unique=True),
        # SHA-256 of the key: keys are 128 random bits, no dictionary to slow down.
        sa.Column("api_key_hash", sa.Text(), nullable=False, unique=True),
        sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        # NULL: no limit.
        sa.Column("requests_per_day", sa.Integer(), nullable=True),
        sa.Column("downloads_per_day", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("last_seen_at", sa.Double(), nullable=True),
    )
    # One row per user and UTC day (unix seconds // 86400 of the database's clock).
    op.create_table(
        "api_usage",
        sa.Column("user_id", sa.BigInteger(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("downloads", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("user_id", "day"),
    )
    # The web UI's admin sessions: the cookie's hash, its CSRF token, when it ends.
    op.create_table(
        "web_sessions",
        sa.Column("token_hash", sa.Text(), primary_key=True),
        sa.Column("csrf", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
    )
    op.create_index("web_sessions_expires", "web_sessions", ["expires_at"])
    # The dashboard's headers/s per worker: a node's batches of the last minutes.
    op.create_index("batch_log_node_stored", "batch_log", ["node_id", "stored_at"])
    if op.get_bind().dialect.name == "postgresql":
        # The vector stored instead of computed per row: a search that walks releases newest first
        # (a frequent word, few rows to find) tests each row's vector, and to_tsvector costs ~10 µs.
        op.execute(
            "ALTER TABLE releases ADD COLUMN search_vector tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', search_name)) STORED"
        )
        op.execute("DROP INDEX IF EXISTS releases_search")
        op.execute("CREATE INDEX releases_search ON releases USING gin (search_vector)")
    # Newest first with a tie-break on id: the order search pages in, stable across pages.
    op.execute("DROP INDEX IF EXISTS releases_posted")
    op.create_index("releases_posted", "releases", ["posted_at", "id"])


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS releases_posted")
    op.create_index("releases_posted", "releases", ["posted_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS releases_search")
        op.execute("ALTER TABLE releases DROP COLUMN search_vector")
        op.execute("CREATE INDEX releases_search ON releases USING gin (to_tsvector('simple', search_name))")
    op.drop_index("batch_log_node_stored", "batch_log")
    op.drop_table("web_sessions")
    op.drop_table("api_usage")
    op.drop_table("users")
