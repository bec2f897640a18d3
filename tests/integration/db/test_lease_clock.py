"""SQLite's lease clock: a step of the host's wall clock moves no lease (issue 14).

SQLite has no server, so the host is its clock. It was ``time.time``: a step forward refused every live
lease at once, a step back delayed every takeover by the step, and after a +31 s step a second process
claimed the planner's ownership lease while the first still held it. Here a second process runs
under ``faketime`` (its wall clock stepped an hour either way, its boot clock left alone, as a real
step leaves it) against the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.databases import SqliteTemplate
from tests.support.store import services_for
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.clock import anchored_clock
from usenet_indexer.leases.ownership import OwnershipLeases
from usenet_indexer.leases.ranges import RangeLease

ROOT = Path(__file__).resolve().parents[3]


def stepped(url: str, step: str, *call: str) -> dict[str, object]:
    """``tests/support/clock_step.py`` in a process whose wall clock is ``step`` away (faketime)."""
    faketime = shutil.which("faketime")
    assert faketime is not None, "faketime is missing: scripts/setup-system.sh installs it"
    env = {**os.environ, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    done = subprocess.run(
        [faketime, "-f", step, sys.executable, "-m", "tests.support.clock_step", url, *call],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_boot_clock_is_anchored_once_per_boot(tmp_path: Path, sqlite_template: SqliteTemplate) -> None:
    with sqlite_template.database(tmp_path) as url:
        path = url.removeprefix("sqlite:///")
        walls = iter([1_000_000.0, 5_000_000.0])
        first = anchored_clock(sqlite3.connect(path), boot="boot-a", wall=lambda: next(walls))
        # A later process of the same boot, whatever its wall clock says, reads the same clock.
        second = anchored_clock(sqlite3.connect(path), boot="boot-a", wall=lambda: next(walls))
        assert second.offset == first.offset
        assert abs(second.now() - first.now()) < 0.1
        # A new boot anchors again, from the wall clock of that moment.
        third = anchored_clock(sqlite3.connect(path), boot="boot-b", wall=lambda: 9_000_000.0)
        assert abs(third.now() - 9_000_000.0) < 1.0


def leased(services: Services) -> tuple[RangeLease, int, int]:
    """A group of one range, leased to a node; the lease, its holder and another node."""
    services.groups.add("alt.binaries.clock")
    services.groups.plan("alt.binaries.clock", 1, 999)
    holder, _ = services.nodes.add("worker-a")
    other, _ = services.nodes.add("worker-b")
    lease = services.ranges.lease(holder)
    assert lease is not None
    return lease, holder, other


@pytest.mark.parametrize("step", ["+1h", "-1h"])
def test_a_wall_clock_step_neither_refuses_nor_gives_away_a_live_lease(
    tmp_path: Path, sqlite_template: SqliteTemplate, step: str
) -> None:
    with sqlite_template.database(tmp_path) as url:
        services = services_for(url, tmp_path, lease_ttl_seconds=60.0)
        try:
            lease, holder, other = leased(services)
            owner = OwnershipLeases(services.db, "coordinator-1", ttl_seconds=30.0, renew_seconds=10.0)
            assert owner.acquire("planner").ok
            # Another process, its wall clock an hour away: the planner stays ours, the range too.
            assert stepped(url, step, "own", "planner", "coordinator-2", "30")["ok"] is False
            assert stepped(url, step, "lease", str(other), "60")["range"] is None
            assert stepped(
                url, step, "heartbeat", str(lease.range_id), str(holder), str(lease.epoch), "60"
            ) == {"ok": True}
            assert owner.renew("planner")
        finally:
            services.close()


def test_a_wall_clock_step_back_does_not_delay_a_takeover(
    tmp_path: Path, sqlite_template: SqliteTemplate
) -> None:
    with sqlite_template.database(tmp_path) as url:
        services = services_for(url, tmp_path, lease_ttl_seconds=1.0)
        try:
            lease, _, other = leased(services)
            time.sleep(1.3)  # the holder is silent past its TTL, by any steady clock
            taken = stepped(url, "-1h", "lease", str(other), "1")
            assert taken == {"range": lease.range_id, "epoch": lease.epoch + 1, "took_over": True}
        finally:
            services.close()
