"""The coordinator's news loops: backfill by date, gaps, fetched chunks.

- ``groups.backfill_days`` / ``groups.backfill_since``: history goes down to the first article posted
  on or after that date (days before now, or a fixed Unix time); ``groups.backfill_article`` caches the
  article number the planner found for it by binary search over article dates (cleared when the
  operator changes the backfill target, so it is searched again).
- ``ranges.gaps``: articles of the range the server did not return (cancelled, expired, never filed).
- ``fetched_chunks``: one row per chunk fetched (not per article: a range of a million articles has
  fifty), so a chunk fetched again (the corrupt path's plain copy, the corpus fill) is counted in
  ``ranges.gaps`` once.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, never batch mode: on SQLite batch mode rebuilds the table from reflection,
    # which skips expression indexes (ranges_lease_pick, ranges_lane_order would silently vanish).
    op.add_column("groups", sa.Column("backfill_days", sa.Double(), nullable=True))
    op.add_column("groups", sa.Column("backfill_since", sa.Double(), nullable=True))
    op.add_column("groups", sa.Column("backfill_article", sa.BigInteger(), nullable=True))
    op.add_column("ranges", sa.Column("gaps", sa.BigInteger(), nullable=False, server_default="0"))
    op.create_table(
        "fetched_chunks",
        sa.Column(
            "range_id", sa.BigInteger(), sa.ForeignKey("ranges.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("chunk_from", sa.BigInteger(), nullable=False),
        sa.Column("chunk_to", sa.BigInteger(), nullable=False),
        sa.Column("lines", sa.BigInteger(), nullable=False),
        sa.Column("gaps", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("encoding", sa.Text(), nullable=False),
        sa.Column("fetched_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("range_id", "chunk_from"),
    )
    # The prefetcher's pick: leased and planned ranges with something left, in lease order.
    op.execute(
        "CREATE INDEX ranges_prefetch ON ranges ((status <> 'leased'), (spooled_chunks = 0), priority, id) "
        "WHERE status IN ('planned', 'leased') AND next_id <= end_id AND stored_at IS NULL"
    )
    # The corpus fill's pick: captured ranges not yet complete in the corpus.
    op.execute("CREATE INDEX ranges_corpus_fill ON ranges (id) WHERE capture AND stored_at IS NULL")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ranges_corpus_fill")
    op.execute("DROP INDEX IF EXISTS ranges_prefetch")
    op.drop_table("fetched_chunks")
    # ALTER TABLE … DROP COLUMN directly (SQLite ≥ 3.35), for the reason given in upgrade().
    for table, column in (
        ("ranges", "gaps"),
        ("groups", "backfill_article"),
        ("groups", "backfill_since"),
        ("groups", "backfill_days"),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
