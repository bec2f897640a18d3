"""Faults, each ending with the catalog equal to a fault-free run's (issue 8).

- The database drops every connection mid-run (this test database's backends terminated): the
  coordinator reconnects, workers retry, an in-flight batch is stored once.
- PostgreSQL itself restarted mid-run (pg_ctlcluster, fast mode: every session of every database cut,
  the server away for a few seconds).
- The coordinator killed with SIGKILL while batches are being posted.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from tests.e2e.processes import Coordinator, Worker, free_port, settings_env
from tests.support.databases import PG_ADMIN_URL
from tests.support.generated import expected_catalog, posting, spool_posting, stored_catalog
from tests.support.store import query
from usenet_indexer.coordinator.services import open_services
from usenet_indexer.leases.audit import audit
from usenet_indexer.settings import Settings

GROUP = "alt.binaries.faults"
TTL = 4.0
SIZES = {
    "lease_ttl_seconds": TTL,
    "range_articles": 2_000,
    "chunk_articles": 250,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,
}


def restart_postgresql() -> None:
    """The machine's PostgreSQL cluster, restarted (as root, the way this machine kind starts it)."""
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart", "--mode", "fast"],
        check=True,
        capture_output=True,
        timeout=120,
    )


def terminate_backends(database: str) -> int:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
    return len(rows)


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("fault", ["database-drops-connections", "database-restart", "coordinator-sigkill"])
def test_the_catalog_survives(fault: str, pg_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=pg_url, data_dir=tmp_path / "data", **SIZES)  # type: ignore[arg-type]
    services = open_services(settings, migrate=False)
    services.rules.ensure_default()
    generated = posting(GROUP, releases=500, seed=5)
    spool_posting(services, GROUP, generated)
    tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(2)]
    total = int(query(services.db, "SELECT count(*) AS n FROM ranges")[0]["n"])
    services.close()
    env = settings_env(pg_url, tmp_path / "data", **SIZES)
    coordinator = Coordinator(env, free_port(), tmp_path / "coordinator.log")
    coordinator.start()
    args = ("--batch-articles", "250", "--idle-seconds", "0.3")
    workers = [
        Worker(env, coordinator.url, t, tmp_path / f"worker-{i}.log", *args) for i, t in enumerate(tokens)
    ]
    database = pg_url.rsplit("/", 1)[1]

    def done() -> int:
        try:
            with psycopg.connect(pg_url, autocommit=True, connect_timeout=5) as conn:
                row = conn.execute("SELECT count(*) FROM ranges WHERE status = 'done'").fetchone()
        except psycopg.OperationalError:
            return -1  # the server is restarting
        return int(row[0]) if row else 0

    rounds = 2 if fault == "database-restart" else 4
    try:
        deadline = time.monotonic() + 240
        faults = 0
        dropped = 0
        while done() < total and time.monotonic() < deadline:
            time.sleep(0.7)
            if faults < rounds and done() >= 1 + faults * 2:
                faults += 1
                if fault == "database-drops-connections":
                    dropped += terminate_backends(database)
                elif fault == "database-restart":
                    restart_postgresql()
                else:
                    coordinator.kill()
                    time.sleep(0.5)
                    coordinator.start()
        assert done() == total, f"{done()} of {total} ranges done"
        assert faults == rounds
        assert fault != "database-drops-connections" or dropped > 0
    finally:
        for worker in workers:
            worker.stop()
        coordinator.stop()
    services = open_services(settings, migrate=False)
    try:
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
    finally:
        services.close()
    assert all(w.process.returncode == 0 for w in workers), [w.output()[-2000:] for w in workers]
