"""PostgreSQL: a range's grant need not wait for its WAL flush, its epoch made unique by the server's
run (issue 17).

A grant's commit waiting for the WAL flush was most of a lease's latency (docs/PERFORMANCE.md,
sessions 10 and 11): the grant had to be durable because a grant lost in a crash would have its
epoch issued again, and a holder the crash forgot would have its writes accepted at it. Here the
epoch is made unique another way, and lease_take commits with ``synchronous_commit off``:

- ``lease_boot`` (logged, one row) counts the server's runs, and ``lease_boot_alive`` (UNLOGGED, one
  row: crash recovery empties it) holds the current run's number; ``lease_boot()`` begins a new run,
  durably, at its first call after a crash.
- ``ranges.granted_boot``: the run in which the range's epoch was last bumped (0: before this
  migration, run 0 being the one it starts).
- The trigger ``ranges_epoch_unique`` skips one epoch a run missed at every bump, and makes a
  takeover durable (the reasoning is in sql/postgresql/functions/ranges_epoch_unique.v1.sql).

Until a crash nothing changes: epochs go up by one as before. SQLite is untouched (its commits are
in its WAL file when they return).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

from usenet_indexer.db.functions import function_sql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE TABLE lease_boot (id int PRIMARY KEY CHECK (id = 1), boot bigint NOT NULL)")
    op.execute("INSERT INTO lease_boot (id, boot) VALUES (1, 0)")
    op.execute(
        "CREATE UNLOGGED TABLE lease_boot_alive (id int PRIMARY KEY CHECK (id = 1), boot bigint NOT NULL)"
    )
    op.execute("INSERT INTO lease_boot_alive (id, boot) VALUES (1, 0)")
    op.execute("ALTER TABLE ranges ADD COLUMN granted_boot bigint NOT NULL DEFAULT 0")
    op.execute(function_sql("lease_boot", 1))
    op.execute(function_sql("ranges_epoch_unique", 1))
    op.execute(
        "CREATE TRIGGER ranges_epoch_unique BEFORE UPDATE OF epoch ON ranges FOR EACH ROW "
        "WHEN (NEW.epoch <> OLD.epoch) EXECUTE FUNCTION ranges_epoch_unique()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER ranges_epoch_unique ON ranges")
    op.execute("DROP FUNCTION ranges_epoch_unique()")
    op.execute("DROP FUNCTION lease_boot()")
    op.execute("ALTER TABLE ranges DROP COLUMN granted_boot")
    op.execute("DROP TABLE lease_boot_alive")
    op.execute("DROP TABLE lease_boot")
