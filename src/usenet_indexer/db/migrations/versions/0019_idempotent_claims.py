"""A lease request is idempotent under its claim tag (issue 17).

A lease request whose grant committed but whose answer was lost (a timeout, a connection reset after
the commit) was retried by the worker (edge/client.py) and granted a second lease; the first stayed
leased to the node until its TTL (120 s by default) and counted against the group's cap of live
leases meanwhile. Now a request under a tag with a live grant of this node is answered with that
grant (leases/claims.py says which grants count for each kind of request).

- ``ranges_claim``: finds a node's live range lease by tag, which every tagged request looks for.
  Partial on ``status = 'leased'`` and keyed by ``claim``: both change only when a range is granted
  or ends, so a heartbeat and a batch stay heap-only updates (migration 0016). ``group_leases`` has a
  row per group and lane, read whole by a lane's candidates already: no index.
- PostgreSQL: ``lease_take`` v4 answers a retry with the grant it made (and says ``replayed``).

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import op

from usenet_indexer.db.functions import function_sql

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX ranges_claim ON ranges (claim) WHERE status = 'leased'")
    if op.get_bind().dialect.name == "postgresql":
        # v4 returns one more column: a new function, not a replacement.
        op.execute("DROP FUNCTION lease_take(bigint, float8, int, boolean, text)")
        op.execute(function_sql("lease_take", 4))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION lease_take(bigint, float8, int, boolean, text)")
        op.execute(function_sql("lease_take", 3))
    op.execute("DROP INDEX ranges_claim")
