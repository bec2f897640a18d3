"""Group-lane workers (seed 002): ranges in article order with a window carried across them, a
takeover from a snapshot, and a holder that died between its snapshot and its batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.generated import expected_catalog, posting, spool_posting, stored_catalog
from tests.support.live import live_coordinator
from tests.support.store import query, services_for
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.lanes import restore_window, run_lane_range, run_lanes
from usenet_indexer.edge.worker import EdgeWorker
from usenet_indexer.indexing import RangeIndexer
from usenet_indexer.leases.audit import audit

GROUP = "alt.binaries.lanes"
TTL = 60.0


@pytest.fixture
def setup(database_url: str, tmp_path: Path) -> Iterator[tuple[Services, str, object]]:
    services = services_for(database_url, tmp_path, range_articles=2_000, chunk_articles=500)
    services.rules.ensure_default()
    generated = posting(GROUP, releases=40, seed=3)
    spool_posting(services, GROUP, generated)
    with live_coordinator(services) as url:
        yield services, url, generated
    services.close()


def worker(services: Services, url: str, name: str) -> EdgeWorker:
    return EdgeWorker(NodeClient(url, services.nodes.add(name)[1]), idle_seconds=0.1)


def abandon(services: Services) -> None:
    """The holder goes silent: the database's clock moves past the TTL, its lane and range are dead."""
    services.db.move_clock(TTL + 1)


def test_a_lane_worker_indexes_the_whole_lane(setup: tuple[Services, str, object]) -> None:
    services, url, generated = setup
    w = worker(services, url, "lane-a")
    assert run_lanes(w, "history", max_ranges=100) > 1
    w.close()
    w.client.close()
    assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
    assert stored_catalog(services.db) == expected_catalog(GROUP, generated)  # type: ignore[arg-type]
    assert audit(services.db, ttl=TTL, max_per_group=2).problems == []


@pytest.mark.parametrize("dies_after_snapshot", [False, True])
def test_takeover_from_a_snapshot_ends_in_the_same_catalog(
    setup: tuple[Services, str, object], dies_after_snapshot: bool
) -> None:
    services, url, generated = setup
    first = worker(services, url, "lane-first")
    held = first.client.lease_group("history")
    assert held is not None
    group_id, epoch = held["group"]["id"], held["group"]["epoch"]
    window = None
    for _ in range(2):
        lease = first.client.next_range(group_id, "history", epoch)
        assert lease is not None
        if window is None:
            window = restore_window(first.client, group_id, GROUP, "history", epoch, lease)
        window = run_lane_range(first, lease, window, group_id, "history", epoch)
        assert window is not None
    if dies_after_snapshot:
        # A third range read and its snapshot PUT, then death before its batch is stored.
        lease = first.client.next_range(group_id, "history", epoch)
        assert lease is not None
        indexer = RangeIndexer(
            lease.group, lease.start, lease.end, lease.next, first.rules(lease.rule_version)
        )
        batches: list[object] = []
        first._index(lease, indexer, batches.append, batch_articles=2**62, emit_partial=False)
        assert window is not None
        window.absorb(batches[0])  # type: ignore[arg-type]
        first.client.put_snapshot(group_id, "history", epoch, window.position, window.snapshot())
    first.close()
    first.client.close()
    abandon(services)
    second = worker(services, url, "lane-second")
    run_lanes(second, "history", max_ranges=100)
    second.close()
    second.client.close()
    assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
    assert stored_catalog(services.db) == expected_catalog(GROUP, generated)  # type: ignore[arg-type]
    assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
