"""Releases as clients sync them (issue 18).

- ``releases.listed_at``: when a release was listed in the index, or listed again on becoming
  complete. Feeds without a query (what Sonarr and Radarr sync from, stopping at the last item they
  saw) are ordered by it, and it is their ``pubDate``: a big release that completed hours after its
  first part was posted comes at the top when it can be downloaded, not among releases already read.
- ``releases.episode_last``: the last episode of a multi-episode name (S01E01E02: 1 to 2), so a search
  for either episode finds it.
- Indexes for the id searches and for caps, which asks whether any release carries an id.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("releases", sa.Column("listed_at", sa.Double(), nullable=True))
    op.add_column("releases", sa.Column("episode_last", sa.Integer(), nullable=True))
    # Releases already stored: listed when last updated if complete, when first stored otherwise.
    op.execute("UPDATE releases SET listed_at = CASE WHEN complete THEN updated_at ELSE created_at END")
    op.create_index("releases_listed", "releases", ["listed_at", "id"])
    op.create_index("releases_category_listed", "releases", ["category", "listed_at"])
    op.execute("CREATE INDEX releases_imdb ON releases (imdb) WHERE imdb IS NOT NULL")
    op.execute("CREATE INDEX releases_tvdbid ON releases (tvdbid) WHERE tvdbid IS NOT NULL")


def downgrade() -> None:
    for index in ("releases_tvdbid", "releases_imdb", "releases_category_listed", "releases_listed"):
        op.execute(f"DROP INDEX IF EXISTS {index}")
    with op.batch_alter_table("releases") as batch:
        batch.drop_column("episode_last")
        batch.drop_column("listed_at")
