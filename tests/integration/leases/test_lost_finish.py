"""A range's finish lost in a crash (issue 17): nothing is lost and nothing is stored twice.

On PostgreSQL a finish commits with ``synchronous_commit off`` (leases/ranges.py ``finish``): the
worker is told its range is done before the commit reaches the disk. The claim: a finish lost in a
crash leaves the range leased and read to its end — its resume point moved with every batch, each
durable — and ``finish_abandoned`` finishes it once the lease lapses; the old holder's late calls at
its epoch are refused. Here a real server crashes (``pg_ctl stop -m immediate``) with the finish in
its WAL buffers only, and the test first proves the finish was really lost.

SQLite has no such path (``durable`` is PostgreSQL's only): every commit is in the WAL file when it
returns, and with ``synchronous=NORMAL`` only a power loss drops commits, the newest first, in order.
The second test makes that loss (the store's files as they were before the finish) and checks the
same recovery.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.generated import expected_catalog, posting, stored_catalog
from tests.support.pg_crash import PrivateCluster, private_cluster
from tests.support.store import TTL, query, services_for
from usenet_indexer.articles import chunk_spans
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.coordinator.loops.cleanup import SpoolCleanup
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Row, Tx, upgrade
from usenet_indexer.indexing import RangeIndexer, unpack_segments
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.indexing.sample import Posting, chunk_text, overview_line
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost, StaleBatch
from usenet_indexer.leases.ranges import RangeLease

GROUP = "alt.binaries.crash"
RANGE_ARTICLES = 1000
CHUNK_ARTICLES = 250


def settings() -> dict[str, Any]:
    return {"range_articles": RANGE_ARTICLES, "chunk_articles": CHUNK_ARTICLES}


def store_chunks(services: Services, lease: RangeLease, node: int, generated: Posting, upto: int) -> None:
    """The holder's batches, one per chunk, from its resume point to article ``upto``: each stores
    its releases and moves the resume point in one (durable) transaction, as the node API does."""
    lines = {a.number: overview_line(a) for a in generated.articles}
    indexer = RangeIndexer(GROUP, lease.start, lease.end, lease.next, default_rules())
    for span in chunk_spans(lease.start, lease.end, CHUNK_ARTICLES):
        if span.last < lease.next or span.first > upto:
            continue
        indexer.add_text(
            chunk_text([lines[n] for n in range(span.first, span.last + 1) if n in lines]), span.last + 1
        )
        batch = indexer.take()

        def store(tx: Tx, row: Row, batch: Any = batch) -> dict[str, Any]:
            return dict(store_batch(tx, int(row["group_id"]), GROUP, batch))

        services.ranges.commit_batch(
            lease.range_id, node, lease.epoch, batch.from_id, batch.to_id, batch.headers, store
        )


def range_row(services: Services, range_id: int) -> dict[str, Any]:
    return query(services.db, "SELECT * FROM ranges WHERE id = :id", {"id": range_id})[0]


def lost_finish_then_recovery(
    open_services: Callable[[], Services], crash: Callable[[Services, Callable[[], None]], Services]
) -> None:
    """Worker A holds both ranges of a group; it reads the first to its end and finishes it, and
    half of the second. ``crash`` runs the finish and brings the store back as a crash leaves it."""
    services = open_services()
    generated = posting(GROUP, releases=12, seed=17)
    services.groups.add(GROUP)
    assert generated.first == 1 and generated.last < 2 * RANGE_ARTICLES, "the posting must fit two ranges"
    services.groups.plan(GROUP, 1, 2 * RANGE_ARTICLES - 1)  # [1, 999] and [1000, 1999]
    worker_a, _ = services.nodes.add("worker-a")
    worker_b, _ = services.nodes.add("worker-b")
    read = services.ranges.lease(worker_a)
    half = services.ranges.lease(worker_a)
    assert read is not None and half is not None
    store_chunks(services, read, worker_a, generated, read.end)
    resume_half = chunk_spans(half.start, half.end, CHUNK_ARTICLES)[1].last + 1
    store_chunks(services, half, worker_a, generated, resume_half - 1)  # two chunks of four
    assert int(range_row(services, half.range_id)["next_id"]) == resume_half

    def finish() -> None:
        done = services.ranges.finish(read.range_id, worker_a, read.epoch)
        assert done.range_id == read.range_id
        # Committed and visible before the crash: the worker was told its range is done.
        assert range_row(services, read.range_id)["status"] == "done"

    services = crash(services, finish)

    # The finish is gone: leased at A's epoch, not counted, its lease never ended.
    lost = range_row(services, read.range_id)
    assert (lost["status"], lost["node_id"], lost["epoch"]) == ("leased", worker_a, read.epoch)
    assert lost["done_at"] is None
    assert int(lost["next_id"]) == read.end + 1  # the resume point, stored with the last batch
    ended = query(services.db, "SELECT ended_at FROM lease_log WHERE range_id = :id", {"id": read.range_id})
    assert [r["ended_at"] for r in ended] == [None]
    counted = query(
        services.db, "SELECT headers_history, headers_tail FROM groups WHERE name = :g", {"g": GROUP}
    )
    assert (counted[0]["headers_history"], counted[0]["headers_tail"]) == (0, 0)
    assert int(range_row(services, half.range_id)["next_id"]) == resume_half

    # Within the TTL nothing is abandoned, and a range read to its end is never leased again.
    cleanup = SpoolCleanup(services)
    assert cleanup.finish_abandoned() == []
    services.db.move_clock(TTL + 1)  # A stays silent past the TTL (time moved, not slept)
    assert [d.range_id for d in cleanup.finish_abandoned()] == [read.range_id]
    taken = services.ranges.lease(worker_b)
    assert taken is not None
    # PostgreSQL skips an epoch for the server run the range missed (the crash; migration 0017).
    missed = 1 if services.db.dialect == "postgresql" else 0
    assert (taken.range_id, taken.took_over, taken.epoch, taken.next) == (
        half.range_id,
        True,
        half.epoch + 1 + missed,
        resume_half,
    )
    assert services.ranges.lease(worker_b) is None  # the finished range is not handed out again

    # A's late calls at its old epochs are refused, and store nothing.
    with pytest.raises(LeaseLost):
        services.ranges.finish(read.range_id, worker_a, read.epoch)
    last = read.end - CHUNK_ARTICLES + 1
    with pytest.raises(StaleBatch):  # a retry of its last batch, its reply lost in the crash
        services.ranges.commit_batch(read.range_id, worker_a, read.epoch, last, read.end, 1)
    with pytest.raises(StaleBatch):
        services.ranges.commit_batch(half.range_id, worker_a, half.epoch, resume_half, resume_half + 9, 1)

    store_chunks(services, taken, worker_b, generated, taken.end)
    services.ranges.finish(taken.range_id, worker_b, taken.epoch)
    with pytest.raises(LeaseLost):
        services.ranges.finish(half.range_id, worker_a, half.epoch)

    assert_indexed_once(services, generated)
    reasons = query(services.db, "SELECT range_id, epoch, end_reason FROM lease_log ORDER BY range_id, epoch")
    assert [(r["range_id"], r["epoch"], r["end_reason"]) for r in reasons] == [
        (read.range_id, read.epoch, "abandoned"),
        (half.range_id, half.epoch, "expired"),
        (half.range_id, taken.epoch, "finished"),
    ]
    services.close()


def assert_indexed_once(services: Services, generated: Posting) -> None:
    """After a crash and its recovery: both ranges done, the audit clean with the eight batches each
    stored once, the headers counted once, every article in exactly one release's segments, and the
    catalog an uninterrupted run makes."""
    report = audit(services.db, ttl=TTL, max_per_group=2)
    assert report.problems == []
    assert report.batches == 8  # four chunks a range, each stored once
    rows = query(services.db, "SELECT status, headers FROM ranges ORDER BY id")
    assert [r["status"] for r in rows] == ["done", "done"]
    headers = len(generated.articles)
    assert sum(int(r["headers"]) for r in rows) == headers
    counted = query(
        services.db, "SELECT headers_history, headers_tail FROM groups WHERE name = :g", {"g": GROUP}
    )
    assert int(counted[0]["headers_history"]) + int(counted[0]["headers_tail"]) == headers  # counted once
    articles: list[int] = []
    for row in query(services.db, "SELECT segments FROM releases"):
        for f in unpack_segments(bytes(row["segments"])):
            articles.extend(f.articles)
    assert len(articles) == len(set(articles))
    assert stored_catalog(services.db) == expected_catalog(GROUP, generated)


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    with private_cluster() as running:
        yield running


@pytest.mark.postgres
@pytest.mark.slow
def test_a_finish_lost_in_a_postgresql_crash_is_finished_as_abandoned(
    cluster: PrivateCluster, tmp_path: Path
) -> None:
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE store")
    url = cluster.url("store")
    upgrade(url)

    def crash(services: Services, finish: Callable[[], None]) -> Services:
        with cluster.hold_wal_writer():
            finish()
            cluster.crash()
        services.close()
        cluster.start()
        assert "database system was interrupted" in cluster.server_log()  # crash recovery ran
        return services_for(url, tmp_path, **settings())

    lost_finish_then_recovery(lambda: services_for(url, tmp_path, **settings()), crash)


def test_a_finish_lost_to_sqlite_power_loss_is_finished_as_abandoned(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)

    def crash(services: Services, finish: Callable[[], None]) -> Services:
        # The files as a power loss may leave them: every commit up to the finish's, which is the
        # newest (WAL frames are appended in commit order; synchronous=NORMAL syncs at checkpoints).
        for suffix in ("", "-wal"):
            source = tmp_path / f"store.db{suffix}"
            if source.exists():
                shutil.copyfile(source, tmp_path / f"crashed.db{suffix}")
        finish()
        services.close()
        return services_for(f"sqlite:///{tmp_path / 'crashed.db'}", tmp_path, **settings())

    lost_finish_then_recovery(lambda: services_for(url, tmp_path, **settings()), crash)
