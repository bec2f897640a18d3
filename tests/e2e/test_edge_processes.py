"""The distributed part with real processes on loopback (issue 4): a coordinator on PostgreSQL, three
edge workers, and everything that goes wrong in production — a worker stopped mid-range (SIGTERM), one
killed (SIGKILL), the coordinator killed and restarted, a worker paused past the TTL. At the end every
article is counted exactly once and the catalog equals a single uninterrupted run's."""

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

GROUP = "alt.binaries.e2e"
TTL = 3.0
SIZES = {
    "lease_ttl_seconds": TTL,
    "range_articles": 2_000,
    "chunk_articles": 250,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,  # keepalives heartbeat a waiting stream: well inside the TTL
}


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
    workers: list[Worker] = []

    def start_worker() -> Worker:
        i = len(workers)
        workers.append(Worker(env, coordinator.url, tokens[i], tmp_path / f"worker-{i}.log", *args))
        return workers[-1]

    def done() -> int:
        return int(query(services.db, "SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])

    def leased_by(node_index: int) -> bool:
        rows = query(
            services.db,
            "SELECT count(*) AS n FROM ranges r JOIN nodes n ON n.id = r.node_id "
            "WHERE r.status = 'leased' AND n.name = :name",
            {"name": f"edge-{node_index}"},
        )
        return int(rows[0]["n"]) > 0

    try:
        total = int(query(services.db, "SELECT count(*) AS n FROM ranges")[0]["n"])
        # 1. SIGTERM mid-range (waiting for its last chunk): the range is given back.
        start_worker()
        wait_for(lambda: leased_by(0), 30, "worker 0 to hold a range")
        workers[0].signal(signal.SIGTERM)
        assert workers[0].process.wait(30) == 0
        # 2. SIGKILL mid-range: taken over after the TTL, resumed from its last stored batch.
        start_worker()
        wait_for(lambda: leased_by(1), 30, "worker 1 to hold a range")
        workers[1].signal(signal.SIGKILL)
        workers[1].process.wait(10)
        # 3. A worker paused past the TTL: its range is taken over; awake, it is refused (409).
        start_worker()
        wait_for(lambda: leased_by(2), 30, "worker 2 to hold a range")
        workers[2].signal(signal.SIGSTOP)
        start_worker()
        time.sleep(TTL * 2)
        spool_held(services, held)
        # 4. The coordinator killed and started again: workers retry and go on.
        wait_for(lambda: done() >= 2, 60, "ranges to finish once their chunks are spooled")
        coordinator.kill()
        time.sleep(1.5)
        coordinator.start()
        # Woken only once its range was taken over. While a stream waits for a chunk, the coordinator
        # heartbeats the lease for its worker (a keepalive), stopped or not: worker 2's lease lapses only
        # after its stream ended (its last chunk sent, or the coordinator killed), and woken before the
        # TTL passed after that it went on with its range, never refused (failed once, session 15).
        wait_for(lambda: not leased_by(2), 120, "worker 2's range to be taken over")
        workers[2].signal(signal.SIGCONT)
        wait_for(lambda: done() == total, 240, "every range to finish")
        # The workers that were not killed went on through the coordinator's restart.
        assert [w.process.poll() for w in workers[2:]] == [None, None]
        assert [w.stop() for w in workers[2:]] == [0, 0]
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.signal(signal.SIGCONT)
                worker.stop()
        coordinator.stop()
        services.close()
    logs = {i: w.output() for i, w in enumerate(workers)}
    assert "range.give_back" in logs[0]
    # No 500 along the way (a batch's UPDATE ... RETURNING once read another statement's result).
    assert "Exception in ASGI application" not in (tmp_path / "coordinator.log").read_text(errors="replace")
    assert "range.lease_lost" in logs[2], logs[2][-3000:]
    services = open_services(settings, migrate=False)
    try:
        ends = {r["end_reason"] for r in query(services.db, "SELECT DISTINCT end_reason FROM lease_log")}
        assert {"released", "finished"} <= ends
        assert "expired" in ends  # the killed worker's range was taken over
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
    finally:
        services.close()
