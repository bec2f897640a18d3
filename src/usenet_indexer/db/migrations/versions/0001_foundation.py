"""Foundation: groups, ranges, nodes, rule sets, group, range and ownership leases, batch and lease logs.

Every ``*_at`` column holds Unix seconds (double precision) taken from the database's clock, in both
dialects: lease arithmetic is then the same subtraction everywhere and never meets a worker's clock.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite's INTEGER is 64-bit and the rowid


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Text(), nullable=False, unique=True),
        sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("capture", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("backfill_articles", sa.BigInteger(), nullable=True),
        sa.Column("low_water", sa.BigInteger(), nullable=True),
        sa.Column("high_water", sa.BigInteger(), nullable=True),
        # Planning cursors: the next tail article to plan, the lowest article planned for history.
        sa.Column("tail_next", sa.BigInteger(), nullable=True),
        sa.Column("history_low", sa.BigInteger(), nullable=True),
        sa.Column("headers_history", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("headers_tail", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_table(
        "nodes",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Text(), nullable=False, unique=True),
        sa.Column("token_hash", sa.Text(), nullable=False, unique=True),
        sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("last_seen_at", sa.Double(), nullable=True),
    )
    op.create_table(
        "rule_sets",
        sa.Column("version", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("rules", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False, server_default=""),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_table(
        "ranges",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column(
            "group_id", sa.BigInteger(), sa.ForeignKey("groups.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("start_id", sa.BigInteger(), nullable=False),
        sa.Column("end_id", sa.BigInteger(), nullable=False),
        sa.Column("next_id", sa.BigInteger(), nullable=False),
        # Lower is leased first: the tail and stored ranges negative, history by era, oldest first.
        sa.Column("priority", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False, server_default="planned"),
        sa.Column("node_id", sa.BigInteger(), sa.ForeignKey("nodes.id"), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("rule_version", sa.Integer(), nullable=True),
        sa.Column("spooled_chunks", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("capture", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("stored_at", sa.Double(), nullable=True),
        sa.Column("leased_at", sa.Double(), nullable=True),
        sa.Column("heartbeat_at", sa.Double(), nullable=True),
        sa.Column("done_at", sa.Double(), nullable=True),
        sa.Column("headers", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.CheckConstraint("start_id <= end_id", name="ranges_bounds"),
        sa.CheckConstraint("next_id BETWEEN start_id AND end_id + 1", name="ranges_next_inside"),
        sa.CheckConstraint("status IN ('planned', 'leased', 'done', 'failed')", name="ranges_status"),
        sa.UniqueConstraint("group_id", "start_id", name="ranges_group_start"),
    )
    # The lease pick probes each group's best candidate per lane; this index answers each probe with
    # one descent, however many planned ranges the group has (seed 000's query scanned them in order).
    op.execute(
        "CREATE INDEX ranges_lease_pick ON ranges "
        "(group_id, (priority >= 0), (spooled_chunks = 0), priority, id) "
        "WHERE status IN ('planned', 'leased') AND next_id <= end_id"
    )
    op.execute("CREATE INDEX ranges_live ON ranges (group_id, heartbeat_at) WHERE status = 'leased'")
    op.execute("CREATE INDEX ranges_lane_order ON ranges (group_id, (priority >= 0), start_id)")
    op.create_table(
        "plain_chunks",
        sa.Column(
            "range_id", sa.BigInteger(), sa.ForeignKey("ranges.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("chunk_from", sa.BigInteger(), nullable=False),
        sa.Column("reports", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("fetched_plain_at", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("range_id", "chunk_from"),
    )
    op.create_table(
        "group_leases",
        sa.Column(
            "group_id", sa.BigInteger(), sa.ForeignKey("groups.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("lane", sa.Text(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), sa.ForeignKey("nodes.id"), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("leased_at", sa.Double(), nullable=True),
        sa.Column("heartbeat_at", sa.Double(), nullable=True),
        sa.Column("range_id", sa.BigInteger(), nullable=True),
        sa.Column("snapshot_next", sa.BigInteger(), nullable=True),
        sa.Column("snapshot_size", sa.BigInteger(), nullable=True),
        sa.Column("snapshot_location", sa.Text(), nullable=True),
        sa.Column("snapshot_at", sa.Double(), nullable=True),
        # The snapshot before the last: the lane's next holder resumes from the one standing at its
        # range's resume point, and a snapshot is PUT before the batch that moves that point.
        sa.Column("previous_next", sa.BigInteger(), nullable=True),
        sa.Column("previous_size", sa.BigInteger(), nullable=True),
        sa.Column("previous_location", sa.Text(), nullable=True),
        sa.Column("headers", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("group_id", "lane"),
        sa.CheckConstraint("lane IN ('history', 'tail')", name="group_leases_lane"),
    )
    op.create_table(
        "ownership_leases",
        sa.Column("name", sa.Text(), primary_key=True),
        sa.Column("holder", sa.Text(), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("acquired_at", sa.Double(), nullable=True),
        sa.Column("renewed_at", sa.Double(), nullable=True),
        sa.Column("expires_at", sa.Double(), nullable=True),
        sa.Column("meta", sa.Text(), nullable=False, server_default="{}"),
    )
    op.create_table(
        "batch_log",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column(
            "range_id", sa.BigInteger(), sa.ForeignKey("ranges.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("from_id", sa.BigInteger(), nullable=False),
        sa.Column("to_id", sa.BigInteger(), nullable=False),
        sa.Column("headers", sa.BigInteger(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("stored_at", sa.Double(), nullable=False),
        sa.UniqueConstraint("range_id", "epoch", "from_id", name="batch_log_once"),
    )
    op.create_table(
        "lease_log",
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column(
            "range_id", sa.BigInteger(), sa.ForeignKey("ranges.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("group_id", sa.BigInteger(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("granted_at", sa.Double(), nullable=False),
        sa.Column("took_over", sa.Boolean(), nullable=False),
        sa.Column("ended_at", sa.Double(), nullable=True),
        sa.Column("end_reason", sa.Text(), nullable=True),
        sa.UniqueConstraint("range_id", "epoch", name="lease_log_once"),
    )


def downgrade() -> None:
    for table in (
        "lease_log",
        "batch_log",
        "ownership_leases",
        "group_leases",
        "plain_chunks",
        "ranges",
        "rule_sets",
        "nodes",
        "groups",
    ):
        op.drop_table(table)
