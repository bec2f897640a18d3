"""The store: one schema (Alembic) for PostgreSQL and SQLite, SQL kept per dialect under ``sql/``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from usenet_indexer.db.database import Database, Row, Tx, connect
from usenet_indexer.leases.errors import Fenced

if TYPE_CHECKING:
    from usenet_indexer.db.migrate import upgrade

__all__ = ["Database", "Fenced", "Row", "Tx", "connect", "upgrade"]


def __getattr__(name: str) -> object:
    # Imported when asked for: Alembic and SQLAlchemy take ~0.7 s of a core to import, and an edge
    # worker, which never migrates, imports this package for its errors (leases/errors.py). Under
    # `run` every worker paid it at start, while the first chunks waited (issue 17).
    if name == "upgrade":
        from usenet_indexer.db.migrate import upgrade

        return upgrade
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
