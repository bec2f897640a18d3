"""PostgreSQL's functions, one file per version: ``sql/postgresql/functions/NAME.vN.sql``.

A migration applies a version by name (``function_sql("lease_take", 2)``); a version's file never
changes once a migration applies it, so every database that ran a migration runs the same function.
A new version is a new file and a new migration. The lease rules these functions carry are explained
in their files and in leases/ranges.py.
"""

from __future__ import annotations

from importlib import resources


def function_sql(name: str, version: int) -> str:
    """The ``CREATE OR REPLACE FUNCTION`` of ``name`` at ``version``."""
    path = resources.files("usenet_indexer.db").joinpath(
        "sql", "postgresql", "functions", f"{name}.v{version}.sql"
    )
    return path.read_text(encoding="utf-8")
