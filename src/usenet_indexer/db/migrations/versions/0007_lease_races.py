"""The lease engine under interleavings (issue 14): what its writes are checked against, and its logs.

- ``ranges.lane_epoch`` (and ``lease_log.lane_epoch``): the group lane's epoch a range was granted
  under (NULL for a plain range lease). A batch of such a range is stored only while its holder still
  holds that lane at that epoch: the lane's next holder resumes from the lane's snapshot, and a batch
  from a holder that lost the lane would move the resume point past a window nobody has.
- ``batch_log.lease_expires_at``, ``snapshot_log``, ``lane_log``: what the lease audit needs to prove
  that no write was accepted from a holder whose lease had lapsed at the write's own clock, that one
  holder at a time held a lane, and that a lane's snapshot chain has no hole (leases/audit.py).
- PostgreSQL: ``lease_now()``, the clock every lease is measured by; ``group_live_leases``, the group
  cap counted without missing a write in flight; lease_take v2 and range_heartbeat v2; ``range_finish``
  and ``range_give_back`` as functions that lock before they check; ``ownership_hold``, the check a
  loop's write transaction starts with. Each is a file under sql/postgresql/functions/.
- ``plain_chunks.plain_crc``: the CRC-32 of the plain copy the prefetcher stored of a chunk reported
  corrupt; a second report fails the range only when it names that copy (leases/ranges.py).
- SQLite: ``lease_clock``, the anchor of its lease clock (db/clock.py).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from usenet_indexer.db.functions import function_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

FUNCTIONS = (
    ("lease_now", 1),
    ("group_live_leases", 1),
    ("lease_take", 2),
    ("range_heartbeat", 2),
    ("range_finish", 1),
    ("range_give_back", 1),
    ("ownership_hold", 1),
)


def lane_lease_columns() -> list[sa.Column[object]]:
    """What a lane's log rows start with: which lane, under which epoch, held by which node."""
    return [
        sa.Column("id", BIG, primary_key=True, autoincrement=True),
        sa.Column(
            "group_id", sa.BigInteger(), sa.ForeignKey("groups.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("lane", sa.Text(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
    ]


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.add_column("ranges", sa.Column("lane_epoch", sa.BigInteger(), nullable=True))
    op.add_column("lease_log", sa.Column("lane_epoch", sa.BigInteger(), nullable=True))
    # NULL for batches stored before this migration (the audit skips them).
    op.add_column("batch_log", sa.Column("lease_expires_at", sa.Double(), nullable=True))
    op.add_column("plain_chunks", sa.Column("plain_crc", sa.BigInteger(), nullable=True))
    op.create_table(
        "lane_log",
        *lane_lease_columns(),
        sa.Column("granted_at", sa.Double(), nullable=False),
        sa.Column("took_over", sa.Boolean(), nullable=False),
        sa.Column("ended_at", sa.Double(), nullable=True),
        sa.Column("end_reason", sa.Text(), nullable=True),
        sa.UniqueConstraint("group_id", "lane", "epoch", name="lane_log_once"),
    )
    op.create_table(
        "snapshot_log",
        *lane_lease_columns(),
        sa.Column("next", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("recorded_at", sa.Double(), nullable=False),
        sa.Column("lease_expires_at", sa.Double(), nullable=False),
    )
    op.create_index("snapshot_log_lane", "snapshot_log", ["group_id", "lane", "epoch", "next"])
    if postgres:
        for name, version in FUNCTIONS:
            op.execute(function_sql(name, version))
    else:
        op.create_table(
            "lease_clock",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
            sa.Column("boot_id", sa.Text(), nullable=False),
            sa.Column("offset_seconds", sa.Double(), nullable=False),
            sa.CheckConstraint("id = 1", name="lease_clock_one_row"),
        )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS ownership_hold(text, text, bigint, float8)")
        op.execute("DROP FUNCTION IF EXISTS range_give_back(bigint, bigint, bigint, float8)")
        op.execute("DROP FUNCTION IF EXISTS range_finish(bigint, bigint, bigint, float8)")
        op.execute(function_sql("range_heartbeat", 1))
        op.execute(function_sql("lease_take", 1))
        op.execute("DROP FUNCTION IF EXISTS group_live_leases(bigint, float8, bigint)")
        op.execute("DROP FUNCTION IF EXISTS lease_now()")
    else:
        op.drop_table("lease_clock")
    op.drop_index("snapshot_log_lane", table_name="snapshot_log")
    op.drop_table("snapshot_log")
    op.drop_table("lane_log")
    with op.batch_alter_table("batch_log") as batch:
        batch.drop_column("lease_expires_at")
    with op.batch_alter_table("plain_chunks") as batch:
        batch.drop_column("plain_crc")
    with op.batch_alter_table("lease_log") as batch:
        batch.drop_column("lane_epoch")
    with op.batch_alter_table("ranges") as batch:
        batch.drop_column("lane_epoch")
