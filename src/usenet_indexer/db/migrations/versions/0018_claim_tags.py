"""Claim tags: a grant a dead worker never read, given back by its supervisor (issue 17).

A supervised worker writes a random **claim tag** into its held-leases file before it asks for a
lease (edge/held.py) and sends it with the request; the grant records it. When the worker dies with
the answer unread, its file names the tag, and its supervisor revokes it: from then on no grant is
made under that tag, and what was granted under it is given back, fenced by node, epoch and tag.

- ``ranges.claim``, ``group_leases.claim``: the tag the current grant was asked under (NULL: a worker
  that sends none; such a grant is never found by a tag). ``lease_log.claim``, ``lane_log.claim``: the
  same for every grant, for the audit (no grant under a tag after its revoke: leases/audit.py, 8).
- ``claims_revoked``: the tags a supervisor revoked, per node. A grant asked under one is refused. On
  PostgreSQL a grant and a revoke of one tag are serialized by a transaction-level advisory lock on
  the tag, taken before either looks at this table: a grant in flight when the revoke comes is
  committed (and found) before the revoke reads, one that comes after sees the revoke.
- PostgreSQL: ``lease_take`` v3 and ``range_give_back`` v3 take the tag.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from usenet_indexer.db.functions import function_sql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

TABLES = ("ranges", "group_leases", "lease_log", "lane_log")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("claim", sa.Text(), nullable=True))
    op.create_table(
        "claims_revoked",
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("claim", sa.Text(), nullable=False),
        sa.Column("revoked_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("node_id", "claim"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION lease_take(bigint, float8, int, boolean)")
        op.execute(function_sql("lease_take", 3))
        op.execute("DROP FUNCTION range_give_back(bigint, bigint, bigint, float8, text)")
        op.execute(function_sql("range_give_back", 3))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION range_give_back(bigint, bigint, bigint, float8, text, text)")
        op.execute(function_sql("range_give_back", 2))
        op.execute("DROP FUNCTION lease_take(bigint, float8, int, boolean, text)")
        op.execute(function_sql("lease_take", 2))
    op.drop_table("claims_revoked")
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("claim")
