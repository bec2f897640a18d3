"""The store: one schema (Alembic) for PostgreSQL and SQLite, SQL kept per dialect under ``sql/``."""

from __future__ import annotations

from usenet_indexer.db.database import Database, Fenced, Row, Tx, connect
from usenet_indexer.db.migrate import upgrade

__all__ = ["Database", "Fenced", "Row", "Tx", "connect", "upgrade"]
