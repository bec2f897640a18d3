"""SQLite's full-text index of releases rebuilt (issue 16).

Two inserts of releases went around ``insert_releases`` (catalog/batch_store.py), which indexes them
since migration 0012: a burst of loose runs joined by the grouping loop, and a release the probe split
from a burst. Neither was indexed, so search did not find it by name, and its next update or delete
(the triggers remove the old entry first) broke the index: "database disk image is malformed" on the
next write to those releases (found by tests/integration/catalog/test_grouping_interleavings.py). The
index is built again from the releases. PostgreSQL's vector is a generated column: nothing to do.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("INSERT INTO releases_fts (releases_fts) VALUES ('rebuild')")


def downgrade() -> None:
    pass  # the index rebuilt is the index as it should have been
