"""Password probes: releases named by their subjects are probed for a password too (issue 16).

- ``probe_queue.archive_message_id``: a password probe's article, the first of the release's first
  archive volume (its headers say whether the archive is passworded); NULL for the probes that name
  releases, which read it with the rest.
- ``probe_queue.priority``: 0 for the probes that name releases, 1 for password probes, taken after
  them (an obfuscated release unnamed is not found at all; a password unknown is an attribute left out).
- ``probe_queue_next`` replaces ``probe_queue_status``: the queue read in that order.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("probe_queue", sa.Column("archive_message_id", sa.Text(), nullable=True))
    op.add_column("probe_queue", sa.Column("priority", sa.Integer(), nullable=False, server_default="0"))
    op.drop_index("probe_queue_status", table_name="probe_queue")
    op.create_index("probe_queue_next", "probe_queue", ["status", "priority", "created_at"])


def downgrade() -> None:
    op.drop_index("probe_queue_next", table_name="probe_queue")
    op.create_index("probe_queue_status", "probe_queue", ["status", "created_at"])
    with op.batch_alter_table("probe_queue") as batch:
        batch.drop_column("priority")
        batch.drop_column("archive_message_id")
