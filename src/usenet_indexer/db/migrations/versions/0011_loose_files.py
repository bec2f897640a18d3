"""Releases of per-file random names joined, and named from their bodies (issue 16).

- ``release_aliases``: the keys of loose releases (one file each, catalog/grouping.py) joined into one
  release, mapped to its key. The batch store looks every fragment's key up in it, so that a member's
  fragment indexed again merges into the joined release instead of bringing the member back.
- ``releases.loose_settled``: a loose release whose burst is final and that nothing joins; the
  grouping loop does not look at it again.
- ``releases_loose``: the grouping loop's reading of loose releases, by group and poster.
- ``releases.file_names``: the real names the probe found for files posted under random ones, as JSON
  (posted name → real name). The segment blob carries the real names; a fragment indexed again is
  renamed by this map before it merges, so that its files meet theirs.
- ``probe_queue.articles``, ``probe_queue.bytes``: what each probe fetched (/metrics, the dashboard).

Revision ID: 0011
Revises: 0009 (0010 is another change of issue 16: whichever merges second revises the other)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None

LOOSE = "files_seen = 1 AND file_total > 1 AND obfuscated AND NOT loose_settled"


def upgrade() -> None:
    op.create_table(
        "release_aliases",
        sa.Column("member_key", sa.Text(), primary_key=True),
        sa.Column("release_key", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_index("release_aliases_release", "release_aliases", ["release_key"])
    op.add_column(
        "releases", sa.Column("loose_settled", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("releases", sa.Column("file_names", sa.Text(), nullable=True))
    columns = "group_name, poster, file_total, first_article"
    op.execute(f"CREATE INDEX releases_loose ON releases ({columns}) WHERE {LOOSE}")
    op.add_column("probe_queue", sa.Column("articles", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("probe_queue", sa.Column("bytes", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("probe_queue") as batch:
        batch.drop_column("bytes")
        batch.drop_column("articles")
    op.execute("DROP INDEX IF EXISTS releases_loose")
    with op.batch_alter_table("releases") as batch:
        batch.drop_column("file_names")
        batch.drop_column("loose_settled")
    op.drop_index("release_aliases_release", table_name="release_aliases")
    op.drop_table("release_aliases")
