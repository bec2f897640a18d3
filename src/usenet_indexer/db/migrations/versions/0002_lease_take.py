"""PostgreSQL: the range lease grant as one function, called in one statement.

Why a function: the group cap (at most N live leases per group) must be counted after the group is
locked, with a snapshot taken after the lock, or two grants in one group can both count N-1 and
make N+1 (seed 000's query had that race). In one plain SQL statement every part shares the
statement's snapshot, taken before any lock; inside a VOLATILE PL/pgSQL function each query takes a
new snapshot at READ COMMITTED. So: (1) pick the best group and lock it, SKIP LOCKED, so that a
group another grant is busy with is passed over rather than waited for; (2) with a fresh snapshot,
count its live leases and take its best range. The client still sends one statement and waits one
round trip. (REPEATABLE READ with a retry on conflict was tried first: 32 workers all want the
same top group, and the retries ran out.)

SQLite needs none of this: BEGIN IMMEDIATE serializes writers (leases/ranges.py).

The function is sql/postgresql/functions/lease_take.v1.sql; migration 0007 replaces it with v2.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

from usenet_indexer.db.functions import function_sql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(function_sql("lease_take", 1))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS lease_take(bigint, float8, int, boolean)")
