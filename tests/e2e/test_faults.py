"""Faults, each ending with the catalog equal to a fault-free run's (issue 8).

- The database drops every connection mid-run (this test database's backends terminated): the
  coordinator reconnects, workers retry, an in-flight batch is stored once.
- PostgreSQL itself restarted mid-run (pg_ctlcluster, fast mode: every session of every database cut,
  the server away for a few seconds).
- The coordinator killed with SIGKILL while batches are being posted.
- The news server restarted while the prefetcher fetches a group's ranges from INN2: a test-owned nnrpd
  reader SIGKILLed with every connection it serves (replies cut mid-way), refusing connections for a
  while, then started again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from tests.e2e.processes import Coordinator, Worker, free_port, settings_env
from tests.support import inn2 as support
from tests.support.databases import PG_ADMIN_URL
from tests.support.generated import (
    expected_catalog,
    overview_catalog,
    posting,
    spool_posting,
    stored_catalog,
)
from tests.support.store import query
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.leases.audit import audit
from usenet_indexer.nntp.client import NNTPClient
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


async def read_overview(port: int, group: str) -> tuple[int, int, bytes]:
    """The group's watermarks and whole overview, in one OVER: what a run without faults reads."""
    async with NNTPClient(support.HOST, port, timeout=30.0) as client:
        info = await client.group(group)
        chunk = await client.over_chunk(info.low, info.high)
    return info.low, info.high, chunk.plain()


@pytest.mark.postgres
@pytest.mark.slow
def test_the_catalog_survives_a_news_server_restart(inn2: None, pg_url: str, tmp_path: Path) -> None:
    """`serve` plans and prefetches a group from a reader daemon of its own; it is SIGKILLed twice
    mid-fetch (the daemon and every child serving a connection) and started again after a while.
    Fetches cut short are retried; the catalog is the one a single uninterrupted OVER gives."""
    releases, files = 120, 50  # 6,000 articles: 6 ranges of 1,000, 120 chunks of 50
    sizes = {**SIZES, "range_articles": 1_000, "chunk_articles": 50}
    group = support.new_group("alt.binaries.faults")
    articles = [
        support.yenc_article(i, collection=f"faults.nnrpd.release{r:03d}", parts=files)
        for r in range(releases)
        for i in range(1, files + 1)
    ]
    assert support.post_articles(group, articles) == len(articles)
    reader = support.ReaderDaemon(free_port(), tmp_path / "nnrpd.log")
    reader.start()
    try:
        low, high, overview = asyncio.run(read_overview(reader.port, group))
        assert (low, high) == (1, len(articles))
        chunks = len(articles) // 50 + 1  # aligned like the ranges: 1–49, 50–99, …, 6000

        settings = Settings(database_url=pg_url, data_dir=tmp_path / "data", **sizes)  # type: ignore[arg-type]
        services = open_services(settings, migrate=False)
        services.rules.ensure_default()
        services.groups.add(group)
        tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(2)]
        services.close()
        env = settings_env(
            pg_url,
            tmp_path / "data",
            **sizes,
            nntp_host=support.HOST,
            nntp_port=reader.port,
            nntp_connections=2,
            nntp_timeout=10,
            planner_period_seconds=0.5,
            prefetch_round_seconds=2,
            prefetch_idle_seconds=0.3,
        )
        coordinator = Coordinator(env, free_port(), tmp_path / "coordinator.log")
        coordinator.start()
        args = ("--batch-articles", "250", "--idle-seconds", "0.3")
        workers = [
            Worker(env, coordinator.url, t, tmp_path / f"worker-{i}.log", *args) for i, t in enumerate(tokens)
        ]
        with psycopg.connect(pg_url, autocommit=True) as conn:

            def count(sql: str) -> int:
                row = conn.execute(sql).fetchone()
                return int(row[0]) if row else 0

            def fetched() -> int:
                return count("SELECT count(DISTINCT (range_id, chunk_from)) FROM fetched_chunks")

            try:
                at_kill: list[tuple[int, int]] = []  # (chunks fetched, connections cut)
                for threshold in (5, chunks // 2):
                    deadline = time.monotonic() + 120
                    while fetched() < threshold and time.monotonic() < deadline:
                        time.sleep(0.02)
                    cut = reader.kill()
                    at_kill.append((fetched(), cut))
                    time.sleep(2.0)  # away for a while: connections are refused meanwhile
                    reader.start()
                # Each restart came mid-fetch: chunks were still to fetch and connections open.
                assert all(n < chunks and cut >= 1 for n, cut in at_kill), (at_kill, chunks)
                deadline = time.monotonic() + 180
                ranges = count("SELECT count(*) FROM ranges")
                while time.monotonic() < deadline and not (
                    ranges and count("SELECT count(*) FROM ranges WHERE status = 'done'") == ranges
                ):
                    time.sleep(0.3)
                    ranges = count("SELECT count(*) FROM ranges")
                assert ranges == len(articles) // 1_000 + 1  # aligned: 1–999, 1000–1999, …, 6000
                assert count("SELECT count(*) FROM ranges WHERE status = 'done'") == ranges
            finally:
                for worker in workers:
                    worker.stop()
                coordinator.stop()
    finally:
        reader.stop()
    services = open_services(settings, migrate=False)
    try:
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == overview_catalog(group, low, high, overview)
        in_catalog: Counter[str] = Counter(
            mid
            for release in stored_catalog(services.db).values()
            for _, ids in release["files"]
            for mid in ids
        )
        assert set(in_catalog) == {a.message_id.strip("<>") for a in articles}
        assert set(in_catalog.values()) == {1}  # every article exactly once
    finally:
        services.close()
    assert all(w.process.returncode == 0 for w in workers), [w.output()[-2000:] for w in workers]
