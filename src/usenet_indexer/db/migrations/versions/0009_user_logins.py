"""Users sign in to the web UI (issue 18: the catalog is private unless ``public_catalog``).

- ``users.password_hash``: a user's own password for the web UI (scrypt, as the admin's), set with
  ``users add --password`` or ``users passwd``; NULL: the user has only an API key.
- ``web_sessions.user_id``: whose session it is; NULL is the admin's (the only kind there was).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("password_hash", sa.Text(), nullable=True))
    op.add_column("web_sessions", sa.Column("user_id", sa.Integer(), nullable=True))
    op.create_index("web_sessions_user", "web_sessions", ["user_id"])


def downgrade() -> None:
    op.drop_index("web_sessions_user", table_name="web_sessions")
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_column("user_id")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("password_hash")
