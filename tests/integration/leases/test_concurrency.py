"""Many workers leasing at once, with stalls, deaths and releases; the audit proves the rules held.

Real time is used here (a TTL of a couple of seconds) so that takeovers happen for real between
threads; the rule tests elsewhere move the clock instead.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.store import query
from usenet_indexer.coordinator.wiring import Services, open_services
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.settings import Settings

RANGE = 1000
BATCH = 250


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    stored: set[tuple[int, int, int]] = field(default_factory=set)  # (range, epoch, from) accepted
    refused: int = 0
    died: int = 0
    stalled: int = 0
    released: int = 0
    finished: int = 0
    errors: list[str] = field(default_factory=list)


def worker(
    services: Services, node_id: int, seed: int, tally: Tally, stop: threading.Event, ttl: float
) -> None:
    rng = random.Random(seed)
    ranges = services.ranges
    while not stop.is_set():
        try:
            lease = ranges.lease(node_id)
        except Exception as error:  # pragma: no cover - reported below
            tally.errors.append(f"lease: {error!r}")
            return
        if lease is None:
            time.sleep(0.05)
            continue
        fate = rng.random()
        position = lease.next
        try:
            while position <= lease.end:
                if fate < 0.03 and position > lease.start:  # dies mid-range: silent for good
                    with tally.lock:
                        tally.died += 1
                    break
                if 0.03 <= fate < 0.06 and position > lease.start:  # stalls past the TTL, then wakes
                    with tally.lock:
                        tally.stalled += 1
                    time.sleep(ttl * 1.3)
                    fate = 1.0
                if 0.06 <= fate < 0.08 and position > lease.start:
                    ranges.release(lease.range_id, node_id, lease.epoch)
                    with tally.lock:
                        tally.released += 1
                    break
                to = min(lease.end, position + BATCH - 1)
                if rng.random() < 0.5:
                    ranges.heartbeat(lease.range_id, node_id, lease.epoch)
                receipt = ranges.commit_batch(
                    lease.range_id, node_id, lease.epoch, position, to, rng.randint(0, to - position + 1)
                )
                with tally.lock:
                    tally.stored.add((lease.range_id, lease.epoch, position))
                assert not receipt.replayed
                position = to + 1
            else:
                ranges.finish(lease.range_id, node_id, lease.epoch)
                with tally.lock:
                    tally.finished += 1
        except LeaseLost:
            with tally.lock:
                tally.refused += 1
        except Exception as error:
            tally.errors.append(f"range {lease.range_id}: {error!r}")
            return


def run(services: Services, workers: int, groups: int, ranges_per_group: int, ttl: float) -> Tally:
    for g in range(groups):
        name = f"alt.binaries.load{g}"
        services.groups.add(name)
        services.groups.plan(name, 1, ranges_per_group * RANGE - 1 + 1)
    total = len(query(services.db, "SELECT id FROM ranges"))
    assert total >= groups * ranges_per_group
    nodes = [services.nodes.add(f"w{i}")[0] for i in range(workers)]
    tally = Tally()
    stop = threading.Event()
    threads = [
        threading.Thread(target=worker, args=(services, node, i, tally, stop, ttl), daemon=True)
        for i, node in enumerate(nodes)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        services.ranges.finish_abandoned()
        left = query(services.db, "SELECT count(*) AS n FROM ranges WHERE status <> 'done'")[0]["n"]
        if left == 0 or tally.errors:
            break
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(30)
    return tally


def check(services: Services, tally: Tally, ttl: float, max_per_group: int) -> None:
    assert tally.errors == []
    assert query(services.db, "SELECT status, count(*) AS n FROM ranges GROUP BY status") == [
        {"status": "done", "n": len(query(services.db, "SELECT id FROM ranges"))}
    ]
    report = audit(services.db, ttl=ttl, max_per_group=max_per_group)
    assert report.problems == []
    logged = {
        (r["range_id"], r["epoch"], r["from_id"]) for r in query(services.db, "SELECT * FROM batch_log")
    }
    # Exactly the batches the workers were told were stored: no refused write slipped in, none lost.
    assert logged == tally.stored
    assert tally.died + tally.stalled > 0, "the run must exercise takeovers"
    takeovers = query(services.db, "SELECT count(*) AS n FROM lease_log WHERE took_over")[0]["n"]
    assert takeovers > 0


def services_for(url: str, tmp: Path, ttl: float, connections: int) -> Services:
    settings = Settings(
        database_url=url,
        data_dir=tmp,
        lease_ttl_seconds=ttl,
        range_articles=RANGE,
        chunk_articles=100,
        era_articles=RANGE * 10,
        tail_min_articles=10,
    )
    return open_services(settings, migrate=False, max_connections=connections)


@pytest.mark.postgres
@pytest.mark.slow
def test_32_workers_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    ttl = 2.0
    services = services_for(pg_url, tmp_path, ttl, connections=40)
    try:
        tally = run(services, workers=32, groups=24, ranges_per_group=45, ttl=ttl)
        check(services, tally, ttl, services.settings.max_leases_per_group)
    finally:
        services.close()


@pytest.mark.slow
def test_8_workers_on_sqlite(sqlite_template, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ttl = 2.0
    with sqlite_template.database(tmp_path) as url:
        services = services_for(url, tmp_path, ttl, connections=8)
        try:
            tally = run(services, workers=8, groups=6, ranges_per_group=40, ttl=ttl)
            check(services, tally, ttl, services.settings.max_leases_per_group)
        finally:
            services.close()
