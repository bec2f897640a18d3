"""Group-lane workers as real processes (`edge --lane history`): one holds the lane and is killed
mid-range; another takes the lane over after the TTL and resumes from the window's snapshot. The
catalog ends equal to one uninterrupted run's."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.e2e.processes import Coordinator, Worker, free_port, settings_env, wait_for
from tests.support.generated import expected_catalog, posting, spool_held, spool_posting, stored_catalog
from tests.support.store import query
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.leases.audit import audit
from usenet_indexer.settings import Settings

GROUP = "alt.binaries.lane.e2e"
TTL = 3.0
SIZES = {
    "lease_ttl_seconds": TTL,
    "range_articles": 2_000,
    "chunk_articles": 500,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,
}


@pytest.mark.postgres
@pytest.mark.slow
def test_a_lane_taken_over_from_its_snapshot(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=pg_url, data_dir=tmp_path / "data", **SIZES)  # type: ignore[arg-type]
    services = open_services(settings, migrate=False)
    services.rules.ensure_default()
    generated = posting(GROUP, releases=200, seed=9)
    held = spool_posting(services, GROUP, generated, hold_back_last=True)
    # The lane's first ranges are spooled whole: the first holder gets through them (snapshots PUT).
    first_ranges = sorted(held)[-3:]  # history ranges are planned downwards: the oldest have the highest ids
    spool_held(services, {r: held.pop(r) for r in first_ranges})
    tokens = [services.nodes.add(f"lane-{i}")[1] for i in range(2)]
    total = int(query(services.db, "SELECT count(*) AS n FROM ranges")[0]["n"])
    env = settings_env(pg_url, tmp_path / "data", **SIZES)
    coordinator = Coordinator(env, free_port(), tmp_path / "coordinator.log")
    coordinator.start()
    args = ("--lane", "history", "--idle-seconds", "0.3")
    first = Worker(env, coordinator.url, tokens[0], tmp_path / "lane-0.log", *args)
    second: Worker | None = None

    def snapshots() -> int:
        rows = query(services.db, "SELECT snapshot_next FROM group_leases WHERE snapshot_next IS NOT NULL")
        return len(rows)

    def done() -> int:
        return int(query(services.db, "SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])

    try:
        wait_for(lambda: done() >= 2 and snapshots() == 1, 60, "the first holder's snapshots")
        time.sleep(1.0)  # in its next range, waiting for a chunk held back
        first.signal(signal.SIGKILL)
        first.process.wait(10)
        second = Worker(env, coordinator.url, tokens[1], tmp_path / "lane-1.log", *args)
        spool_held(services, held)
        wait_for(lambda: done() == total, 120, "every range to finish")
        assert "lane.window_restored" in second.output()
    finally:
        for worker in (first, second):
            if worker is not None and worker.process.poll() is None:
                worker.stop()
        coordinator.stop()
    try:
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
    finally:
        services.close()
