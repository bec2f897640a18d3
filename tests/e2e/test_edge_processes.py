"""The distributed part with real processes on loopback (issue 4): a coordinator on PostgreSQL, three
edge workers, and everything that goes wrong in production — a worker stopped mid-range (SIGTERM), one
killed (SIGKILL), the coordinator killed and restarted, a worker paused past the TTL. At the end every
article is counted exactly once and the catalog equals a single uninterrupted run's."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.e2e.processes import Coordinator, Worker, free_port, settings_env
from tests.support.generated import expected_catalog, posting, spool_held, spool_posting, stored_catalog
from tests.support.store import query
from usenet_indexer.coordinator.services import open_services
from usenet_indexer.leases.audit import audit
from usenet_indexer.settings import Settings

GROUP = "alt.binaries.e2e"
TTL = 3.0
SIZES = {
    "lease_ttl_seconds": TTL,
    "range_articles": 2_000,
    "chunk_articles": 250,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,  # keepalives heartbeat a waiting stream: well inside the TTL
}


def wait_for(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.postgres
@pytest.mark.slow
def test_workers_survive_stops_kills_pauses_and_a_coordinator_restart(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=pg_url, data_dir=tmp_path / "data", **SIZES)  # type: ignore[arg-type]
    services = open_services(settings, migrate=False)
    services.rules.ensure_default()
    generated = posting(GROUP, releases=700, seed=11)
    # Every range's last chunk is held back (a prefetcher running late): the first workers wait in
    # mid-range for it, which is where the stop and the kill below must find them.
    held = spool_posting(services, GROUP, generated, hold_back_last=True)
    tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(4)]
    env = settings_env(pg_url, tmp_path / "data", **SIZES)
    coordinator = Coordinator(env, free_port(), tmp_path / "coordinator.log")
    coordinator.start()
    args = ("--batch-articles", "500", "--idle-seconds", "0.3")
    workers = [Worker(env, coordinator.url, tokens[i], tmp_path / f"worker-{i}.log", *args) for i in range(3)]

    def done() -> int:
        return int(query(services.db, "SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])

    def ranges_of(node_index: int) -> set[int]:
        rows = query(
            services.db,
            "SELECT r.id FROM ranges r JOIN nodes n ON n.id = r.node_id "
            "WHERE r.status = 'leased' AND n.name = :name",
            {"name": f"edge-{node_index}"},
        )
        return {int(row["id"]) for row in rows}

    try:
        total = int(query(services.db, "SELECT count(*) AS n FROM ranges")[0]["n"])

        # Which worker plays which part is decided by which one holds a range first: on a loaded
        # machine the three start seconds apart, and two of them can hold the group's two leases
        # before the third asks.
        def holder(candidates: list[int]) -> int | None:
            return next((i for i in candidates if ranges_of(i)), None)

        # 1. SIGTERM mid-range: the range is given back and another worker finishes it.
        wait_for(lambda: holder([0, 1, 2]) is not None, 30, "a worker to hold a range")
        stopped = holder([0, 1, 2])
        assert stopped is not None
        workers[stopped].signal(signal.SIGTERM)
        assert workers[stopped].process.wait(30) == 0
        # 2. SIGKILL mid-range: taken over after the TTL, resumed from its last stored batch.
        others = [i for i in (0, 1, 2) if i != stopped]
        wait_for(lambda: holder(others) is not None, 30, "another worker to hold a range")
        killed = holder(others)
        assert killed is not None
        workers[killed].signal(signal.SIGKILL)
        workers[killed].process.wait(10)
        (paused_worker,) = (i for i in others if i != killed)
        spool_held(services, held)
        wait_for(lambda: done() >= 3, 60, "ranges to finish once their chunks are spooled")
        # 3. The coordinator killed and started again: workers retry and go on.
        coordinator.kill()
        before_restart = ranges_of(paused_worker)
        time.sleep(1.5)
        coordinator.start()
        # 4. A worker paused past the TTL: its range is taken over; awake, it is refused (409). It is
        # paused in a range leased after the restart (the stream of one it held across the restart was
        # cut, which ends that range another way), and the worker that takes over starts only then:
        # started before, it did every range left (a tenth of a second each) while the other was still
        # backing off from the restart.
        wait_for(
            lambda: ranges_of(paused_worker) - before_restart, 60, "the third worker to hold a new range"
        )
        workers[paused_worker].signal(signal.SIGSTOP)
        workers.append(Worker(env, coordinator.url, tokens[3], tmp_path / "worker-3.log", *args))
        time.sleep(TTL * 2.5)
        workers[paused_worker].signal(signal.SIGCONT)
        wait_for(lambda: done() == total, 240, "every range to finish")
        # The workers that were not killed went on through the coordinator's restart.
        survivors = [workers[paused_worker], workers[3]]
        assert [w.process.poll() for w in survivors] == [None, None]
        assert [w.stop() for w in survivors] == [0, 0]
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.stop()
        coordinator.stop()
        services.close()
    logs = {i: w.output() for i, w in enumerate(workers)}
    assert "range.give_back" in logs[stopped]
    assert "range.lease_lost" in logs[paused_worker], logs[paused_worker][-3000:]
    services = open_services(settings, migrate=False)
    try:
        ends = {r["end_reason"] for r in query(services.db, "SELECT DISTINCT end_reason FROM lease_log")}
        assert {"released", "finished"} <= ends
        # The killed and the paused worker's ranges: taken over, or finished as abandoned when the
        # worker had stored its last batch already.
        assert ends & {"expired", "abandoned"}
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
    finally:
        services.close()
