"""Helpers for tests that drive the store directly: services on a test database, moving its clock."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from usenet_indexer.coordinator.wiring import Services, open_services
from usenet_indexer.db import Database, Tx
from usenet_indexer.settings import Settings

TTL = 60.0


def test_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "data_dir": data_dir,
        "lease_ttl_seconds": TTL,
        "range_articles": 1000,
        "chunk_articles": 100,
        "era_articles": 10_000,
        "tail_min_articles": 10,
    }
    values.update(overrides)
    return Settings(**values)


ADMIN_PASSWORD = "correct horse battery staple"  # the admin of tests/integration/conftest.py


def services_for(database_url: str, data_dir: Path, **overrides: Any) -> Services:
    return open_services(test_settings(database_url, data_dir, **overrides), migrate=False)


def backdate(db: Database, range_id: int, seconds: float) -> None:
    """Make a range's holder look silent for ``seconds`` longer (instead of sleeping out the TTL)."""
    query(
        db,
        "UPDATE ranges SET heartbeat_at = heartbeat_at - :s WHERE id = :id",
        {"s": seconds, "id": range_id},
    )


def backdate_lane(db: Database, group_id: int, lane: str, seconds: float) -> None:
    query(
        db,
        "UPDATE group_leases SET heartbeat_at = heartbeat_at - :s WHERE group_id = :g AND lane = :l",
        {"s": seconds, "g": group_id, "l": lane},
    )


def query(db: Database, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Literal SQL with ``:name`` parameters in either dialect."""
    with db.transaction() as tx:
        if tx.dialect == "postgresql":
            sql = re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"%(\1)s", sql)
        return tx.sql(sql, params or {})


def insert_group(tx: Tx, name: str) -> int:
    """A group's row with no backfill target, as a test that needs only the row wants it; its id."""
    params = {"name": name, "backfill_articles": None, "backfill_days": None, "backfill_since": None}
    row = tx.one("group_insert", {**params, "capture": False})
    assert row is not None
    return int(row["id"])
