"""A range's grant lost in a crash (issue 17): its epoch is never issued again, nothing is lost and
nothing is stored twice.

On PostgreSQL ``lease_take`` commits with ``synchronous_commit off`` (leases/ranges.py ``lease``): the
worker holds its epoch before the grant reaches the disk. The claim (migration 0017,
sql/postgresql/functions/ranges_epoch_unique.v1.sql): the next grant of the range skips one epoch for
each server run since its epoch was last bumped, so a holder the crash forgot — the same node
included — has every call at its epoch refused; a takeover and a run's first grant are durable.
Here a real server crashes (``pg_ctl stop -m immediate``, the WAL writer stopped) three times: a
grant lost, a grant lost in the run after, a takeover kept; each time the test first proves what
was lost or kept. Then the ranges are read to their ends and the audit is the oracle. A backend's
crash, after which the postmaster replays the WAL without restarting, is checked too.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.integration.leases.test_lost_finish import (
    CHUNK_ARTICLES,
    GROUP,
    RANGE_ARTICLES,
    assert_indexed_once,
    range_row,
    settings,
    store_chunks,
)
from tests.support.generated import posting
from tests.support.pg_crash import PrivateCluster, private_cluster
from tests.support.store import TTL, query, services_for
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import upgrade
from usenet_indexer.leases.errors import LeaseLost, StaleBatch

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    with private_cluster() as running:
        yield running


@pytest.fixture
def url(cluster: PrivateCluster) -> str:
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE store")
    upgrade(cluster.url("store"))
    return cluster.url("store")


def restarted(cluster: PrivateCluster, services: Services, url: str, tmp_path: Path) -> Services:
    services.close()
    cluster.start()
    assert "database system was interrupted" in cluster.server_log()  # crash recovery ran
    return services_for(url, tmp_path, **settings())


def lease_log(services: Services, range_id: int) -> list[tuple[int, int]]:
    rows = query(
        services.db,
        "SELECT epoch, node_id FROM lease_log WHERE range_id = :id ORDER BY epoch",
        {"id": range_id},
    )
    return [(int(r["epoch"]), int(r["node_id"])) for r in rows]


def test_a_grant_lost_in_a_postgresql_crash_never_has_its_epoch_issued_again(
    cluster: PrivateCluster, url: str, tmp_path: Path
) -> None:
    services = services_for(url, tmp_path, **settings())
    generated = posting(GROUP, releases=12, seed=17)
    services.groups.add(GROUP)
    assert generated.first == 1 and generated.last < 2 * RANGE_ARTICLES, "the posting must fit two ranges"
    services.groups.plan(GROUP, 1, 2 * RANGE_ARTICLES - 1)
    worker_a, _ = services.nodes.add("worker-a")
    worker_b, _ = services.nodes.add("worker-b")

    # 1. A's grant and a heartbeat under it, both visible, lost in a crash.
    with cluster.hold_wal_writer():
        lost = services.ranges.lease(worker_a)
        assert lost is not None
        services.ranges.heartbeat(lost.range_id, worker_a, lost.epoch)
        seen = range_row(services, lost.range_id)
        assert (seen["status"], seen["node_id"], seen["epoch"]) == ("leased", worker_a, lost.epoch)
        cluster.crash()
    services = restarted(cluster, services, url, tmp_path)
    gone = range_row(services, lost.range_id)
    assert (gone["status"], gone["node_id"], gone["epoch"]) == ("planned", None, lost.epoch - 1)
    assert lease_log(services, lost.range_id) == []

    # A's calls at the lost epoch are refused; the range's next grant, to A itself, skips that epoch.
    with pytest.raises(LeaseLost):
        services.ranges.heartbeat(lost.range_id, worker_a, lost.epoch)
    with pytest.raises(StaleBatch):
        services.ranges.commit_batch(lost.range_id, worker_a, lost.epoch, lost.next, lost.next + 9, 1)
    again = services.ranges.lease(worker_a)
    assert again is not None and again.range_id == lost.range_id
    assert again.epoch == lost.epoch + 1  # one run missed: one epoch skipped
    with pytest.raises(LeaseLost):  # the forgotten holder, same node, same range: still refused
        services.ranges.heartbeat(lost.range_id, worker_a, lost.epoch)
    with pytest.raises(StaleBatch):
        services.ranges.commit_batch(lost.range_id, worker_a, lost.epoch, lost.next, lost.next + 9, 1)

    # 2. In the run after, B's grant of the other range lost: the next skips one epoch a run missed.
    with cluster.hold_wal_writer():
        lost_b = services.ranges.lease(worker_b)
        assert lost_b is not None and lost_b.range_id != lost.range_id
        cluster.crash()
    services = restarted(cluster, services, url, tmp_path)
    assert range_row(services, lost_b.range_id)["status"] == "planned"
    taken_b = services.ranges.lease(worker_b)
    assert taken_b is not None and taken_b.range_id == lost_b.range_id
    assert taken_b.epoch > lost_b.epoch > lost.epoch - 1
    assert range_row(services, again.range_id)["epoch"] == again.epoch  # made durable by the new run
    with pytest.raises(StaleBatch):
        services.ranges.commit_batch(lost_b.range_id, worker_b, lost_b.epoch, lost_b.next, lost_b.next + 9, 1)

    # 3. B reads its range and finishes it (not durable); A stores half of its range and goes silent;
    # B takes it over with the WAL writer stopped: the takeover is durable, and flushed the finish too.
    store_chunks(services, taken_b, worker_b, generated, taken_b.end)
    services.ranges.finish(taken_b.range_id, worker_b, taken_b.epoch)
    resume = chunk_spans(again.start, again.end, CHUNK_ARTICLES)[1].last + 1
    store_chunks(services, again, worker_a, generated, resume - 1)
    services.db.move_clock(TTL + 1)
    with cluster.hold_wal_writer():
        over = services.ranges.lease(worker_b)
        assert over is not None
        assert (over.range_id, over.took_over, over.next) == (again.range_id, True, resume)
        cluster.crash()
    services = restarted(cluster, services, url, tmp_path)
    services.db.move_clock(TTL + 1)  # the clock B's takeover was granted at, for its batches
    kept = range_row(services, over.range_id)
    assert (kept["status"], kept["node_id"], kept["epoch"]) == ("leased", worker_b, over.epoch)
    assert over.epoch == again.epoch + 1 + 1  # one run missed since A's grant
    assert range_row(services, taken_b.range_id)["status"] == "done"

    store_chunks(services, over, worker_b, generated, over.end)
    services.ranges.finish(over.range_id, worker_b, over.epoch)
    with pytest.raises(LeaseLost):
        services.ranges.finish(again.range_id, worker_a, again.epoch)

    assert_indexed_once(services, generated)
    assert lease_log(services, again.range_id) == [(again.epoch, worker_a), (over.epoch, worker_b)]
    assert lease_log(services, taken_b.range_id) == [(taken_b.epoch, worker_b)]
    services.close()


def test_two_first_grants_after_a_crash_begin_one_run(url: str) -> None:
    """lease_boot() called by two transactions at once after a crash (its UNLOGGED row gone, as crash
    recovery leaves it): the second waits on lease_boot's row, then reads the run the first began;
    if the first rolls back, the second begins it."""
    with psycopg.connect(url, autocommit=True) as admin:
        for first_commits, expected in ((True, 1), (False, 2)):
            admin.execute("TRUNCATE lease_boot_alive")
            with psycopg.connect(url) as first, psycopg.connect(url) as second:
                assert first.execute("SELECT lease_boot()").fetchone() == (expected,)
                got: list[object] = []

                def call(
                    conn: psycopg.Connection[tuple[object, ...]] = second, into: list[object] = got
                ) -> None:
                    into.append(conn.execute("SELECT lease_boot()").fetchone())

                waiter = threading.Thread(target=call)
                waiter.start()
                pid = second.info.backend_pid
                deadline = time.monotonic() + 30
                while admin.execute(
                    "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
                ).fetchone() != ("Lock",):
                    assert time.monotonic() < deadline, "the second call never waited on the first"
                    time.sleep(0.01)
                if first_commits:
                    first.commit()
                else:
                    first.rollback()
                waiter.join(30)
                assert got == [(expected,)]
                second.commit()
            assert admin.execute("SELECT boot FROM lease_boot").fetchone() == (expected,)
            assert admin.execute("SELECT boot FROM lease_boot_alive").fetchone() == (expected,)


def quit_pending(pid: int) -> bool:
    """SIGQUIT pending for ``pid`` (a stopped process acts on no signal until it runs again)."""
    status = Path(f"/proc/{pid}/status").read_text()
    pending = 0
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return bool(pending & (1 << (signal.SIGQUIT - 1)))


def test_a_backend_crash_begins_a_new_run(cluster: PrivateCluster, url: str, tmp_path: Path) -> None:
    """A backend killed (SIGKILL) makes the postmaster reset shared memory and replay the WAL, which
    can lose asynchronous commits as a server crash does, with the postmaster's start time unchanged:
    its crash recovery empties lease_boot_alive too, so the next grant skips an epoch."""
    services = services_for(url, tmp_path, **settings())
    services.groups.add(GROUP)
    services.groups.plan(GROUP, 1, RANGE_ARTICLES - 1)
    worker, _ = services.nodes.add("worker-a")
    with cluster.hold_wal_writer() as walwriter:
        lost = services.ranges.lease(worker)
        assert lost is not None
        with psycopg.connect(url, autocommit=True) as victim:
            os.kill(victim.info.backend_pid, signal.SIGKILL)
            # Held stopped until the postmaster has told it to quit (SIGQUIT pending), so that it
            # quits without a round of writing the WAL when it runs again.
            deadline = time.monotonic() + 60
            while not quit_pending(walwriter):
                assert time.monotonic() < deadline, "the postmaster never told the WAL writer to quit"
                time.sleep(0.01)
    deadline = time.monotonic() + 60
    while "all server processes terminated; reinitializing" not in cluster.server_log():
        assert time.monotonic() < deadline, "the postmaster did not reinitialize"
        time.sleep(0.05)
    services.close()
    services = services_for(url, tmp_path, **settings())
    deadline = time.monotonic() + 60
    while True:  # the postmaster accepts connections again once its crash recovery is done
        try:
            gone = range_row(services, lost.range_id)
            break
        except Exception:
            assert time.monotonic() < deadline, "the server did not come back"
            time.sleep(0.1)
    assert (gone["status"], gone["epoch"]) == ("planned", lost.epoch - 1)  # the grant was lost
    again = services.ranges.lease(worker)
    assert again is not None and again.epoch == lost.epoch + 1
    assert query(services.db, "SELECT boot FROM lease_boot")[0]["boot"] == 1
    services.close()
