"""PostgreSQL: a range's heartbeat and batch rewrite no index (HOT updates), issue 17.

A heartbeat sets ``heartbeat_at``, a batch ``next_id``, ``headers`` and ``heartbeat_at``. Both columns
were in an index (``ranges_live`` kept ``heartbeat_at``, the predicates of ``ranges_lease_pick`` and
``ranges_prefetch`` read ``next_id``), so PostgreSQL wrote every such update as a new row version with a
new entry in each of the table's six indexes: 6 B-tree inserts and ~660 bytes of WAL a heartbeat,
7 inserts and ~910 bytes a batch (pg_waldump, bench/leases.py's database). With neither column in
an index they are heap-only updates: ~190 and ~620 bytes, and no index entry to skip in the lease
pick's index scans afterwards. Every lease writes to a WAL that a grant's commit must flush, and the
flush was most of a lease's latency (docs/PERFORMANCE.md, session 10).

The indexes answer the same queries: ``ranges_live`` finds a group's leased ranges (a few rows, whose
``heartbeat_at`` is read from the row), and the queries on ``ranges_lease_pick`` and
``ranges_prefetch`` all say ``next_id <= end_id`` themselves; the ranges the wider predicate adds
(read to their end, not finished yet) are a few leased ones, passed over as live leases are.

SQLite keeps its indexes: it has no row versions, and rewrites only the indexes whose columns change.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_NEW = (
    "CREATE INDEX ranges_live ON ranges (group_id) WHERE status = 'leased'",
    "CREATE INDEX ranges_lease_pick ON ranges "
    "(group_id, (priority >= 0), (spooled_chunks = 0), priority, id) "
    "WHERE status IN ('planned', 'leased')",
    "CREATE INDEX ranges_prefetch ON ranges ((status <> 'leased'), (spooled_chunks = 0), priority, id) "
    "WHERE status IN ('planned', 'leased') AND stored_at IS NULL",
)
_OLD = (
    "CREATE INDEX ranges_live ON ranges (group_id, heartbeat_at) WHERE status = 'leased'",
    "CREATE INDEX ranges_lease_pick ON ranges "
    "(group_id, (priority >= 0), (spooled_chunks = 0), priority, id) "
    "WHERE status IN ('planned', 'leased') AND next_id <= end_id",
    "CREATE INDEX ranges_prefetch ON ranges ((status <> 'leased'), (spooled_chunks = 0), priority, id) "
    "WHERE status IN ('planned', 'leased') AND next_id <= end_id AND stored_at IS NULL",
)


def _replace(indexes: tuple[str, ...]) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in ("ranges_live", "ranges_lease_pick", "ranges_prefetch"):
        op.execute(f"DROP INDEX IF EXISTS {name}")
    for create in indexes:
        op.execute(create)


def upgrade() -> None:
    _replace(_NEW)


def downgrade() -> None:
    _replace(_OLD)
