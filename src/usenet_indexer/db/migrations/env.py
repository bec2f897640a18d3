"""Alembic environment: online migrations only, one at a time per database."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

# Two coordinators starting at once both upgrade: on PostgreSQL the second waits on this lock and then
# finds nothing left to do. (SQLite serializes writers by itself.)
MIGRATION_LOCK = 7_274_611_190


def run_migrations_online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            connection.commit()
        try:
            context.configure(connection=connection, target_metadata=None, render_as_batch=not postgres)
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if postgres:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
                connection.commit()
    engine.dispose()


run_migrations_online()
