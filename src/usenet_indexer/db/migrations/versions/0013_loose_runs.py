"""Loose articles: binary-sized posts under fully random subjects, kept until grouped (issue 16).

- ``loose_runs``: one row per run (indexing/runs.py: a poster's loose articles within one block of
  article numbers of a group), its articles as a segment blob, one file per article. The grouping
  loop (catalog/grouping.py) joins the runs of a final burst into one release of the catalog, which
  the probe splits into files and names, and deletes the runs; a run's key is then kept as an alias of
  that release (``release_aliases``), so that the run indexed again is dropped, not stored again.
  Runs live apart from ``releases`` so that text and spam never show as releases.
- ``loose_runs_group``: the grouping loop's reading, by group and first article.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # as 0001: SQLite's INTEGER is 64-bit


def upgrade() -> None:
    op.create_table(
        "loose_runs",
        sa.Column("key", sa.Text(), primary_key=True),
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("groups", sa.Text(), nullable=False),
        sa.Column("poster", sa.Text(), nullable=False),
        sa.Column("first_article", BIG, nullable=False),
        sa.Column("last_article", BIG, nullable=False),
        sa.Column("first_date", sa.BigInteger(), nullable=True),
        sa.Column("last_date", sa.BigInteger(), nullable=True),
        sa.Column("articles", sa.Integer(), nullable=False),
        sa.Column("max_size", sa.BigInteger(), nullable=False),
        sa.Column("segments", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_index("loose_runs_group", "loose_runs", ["group_name", "first_article"])


def downgrade() -> None:
    op.drop_index("loose_runs_group", table_name="loose_runs")
    op.drop_table("loose_runs")
