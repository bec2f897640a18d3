"""Ranges given back on a dead worker's behalf (issue 17).

PostgreSQL: ``range_give_back`` v2 takes the reason its lease log records (``released`` by the holder,
``reclaimed`` by the supervisor of a holder that died) and refuses a range read to its end, which the
caller finishes instead: planned past its end, a range was never leased or finished again. SQLite's
statement is in sql/sqlite/leases.sql.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

from usenet_indexer.db.functions import function_sql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS range_give_back(bigint, bigint, bigint, float8)")
        op.execute(function_sql("range_give_back", 2))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS range_give_back(bigint, bigint, bigint, float8, text)")
        op.execute(function_sql("range_give_back", 1))
