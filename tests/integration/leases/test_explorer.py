"""The randomized explorer (tests/support/explorer.py) over seeded schedules, on both dialects.

``USENET_INDEXER_EXPLORE_SECONDS`` (default 150 on PostgreSQL, 20 on SQLite) bounds each run and
``USENET_INDEXER_EXPLORE_SEED`` picks its first seed: a failure names the seed that reproduces it
(``USENET_INDEXER_EXPLORE_SEED=N USENET_INDEXER_EXPLORE_SECONDS=1``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.explorer import explore
from tests.support.store import services_for
from usenet_indexer.coordinator.wiring import Services

SECONDS = {"postgresql": 150.0, "sqlite": 20.0}
LONGEST = float(os.environ.get("USENET_INDEXER_EXPLORE_SECONDS", max(SECONDS.values())))


@pytest.fixture
def explored(database_url: str, tmp_path: Path) -> Iterator[Services]:
    if database_url.startswith("postgresql"):
        # A deadlock between two actors is broken in milliseconds, not the default second.
        name = database_url.rsplit("/", 1)[1]
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {name} SET deadlock_timeout = '20ms'")
    services = services_for(database_url, tmp_path, range_articles=100, chunk_articles=50, era_articles=1_000)
    yield services
    services.close()


@pytest.mark.slow
@pytest.mark.timeout(LONGEST + 240)
def test_random_schedules_keep_every_lease_rule(explored: Services) -> None:
    dialect = explored.db.dialect
    seconds = float(os.environ.get("USENET_INDEXER_EXPLORE_SECONDS", SECONDS[dialect]))
    first = int(os.environ.get("USENET_INDEXER_EXPLORE_SEED", "1"))
    found = explore(explored, range(first, first + 10_000_000), budget_seconds=seconds)
    print(f"explorer on {dialect}, {seconds:.0f} s from seed {first}: {found}")
    assert found.schedules >= 100
    assert found.refusals > 0 and found.blocks > 0 and found.clock_moves > 0, "the schedules must contend"
    failures = found.failures
    assert failures == [], "\n".join(f"seed {f.seed}: {p}" for f in failures[:5] for p in f.problems[:5])
