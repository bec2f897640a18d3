"""Edge workers against a live coordinator: generated overview in the spool ends in the catalog."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

from tests.support.generated import expected_catalog, posting, spool_posting, stored_catalog
from tests.support.live import live_coordinator
from tests.support.store import query, services_for
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.worker import EdgeWorker
from usenet_indexer.leases.audit import audit

GROUP = "alt.binaries.generated"


def test_workers_index_spooled_ranges_into_the_catalog(database_url: str, tmp_path: Path) -> None:
    services = services_for(database_url, tmp_path, range_articles=2_000, chunk_articles=500)
    services.rules.ensure_default()
    try:
        generated = posting(GROUP, releases=40)
        spool_posting(services, GROUP, generated)
        tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(3)]
        with live_coordinator(services) as url:
            workers = [
                EdgeWorker(NodeClient(url, token), batch_articles=1_000, idle_seconds=0.1) for token in tokens
            ]
            run_to_end(workers)
        assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
        assert services.spool.ranges() == []  # finished ranges leave nothing behind
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
        report = audit(services.db, ttl=services.settings.lease_ttl_seconds, max_per_group=2)
        assert report.problems == []
    finally:
        services.close()


def test_a_worker_completing_first_never_holds_two_of_its_groups_leases(
    database_url: str, tmp_path: Path
) -> None:
    """Issue 17: a worker that leased its next range while its last one was being completed held both
    of its group's leases, and the other worker was turned away range after range. With
    ``complete_first`` (what `run` sets for several workers) each holds one at a time."""
    services = services_for(database_url, tmp_path, range_articles=2_000, chunk_articles=500)
    services.rules.ensure_default()
    try:
        generated = posting(GROUP, releases=40)
        spool_posting(services, GROUP, generated)
        tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(2)]
        with live_coordinator(services) as url:
            workers = [
                EdgeWorker(NodeClient(url, t), batch_articles=1_000, idle_seconds=0.1, complete_first=True)
                for t in tokens
            ]
            run_to_end(workers)
        assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
        leases = query(services.db, "SELECT node_id, granted_at, ended_at FROM lease_log ORDER BY granted_at")
        assert len(leases) > 2
        for node in {int(row["node_id"]) for row in leases}:
            held = [(float(r["granted_at"]), float(r["ended_at"])) for r in leases if r["node_id"] == node]
            for (_, ended), (granted, _) in itertools.pairwise(held):
                assert ended <= granted, f"node {node} held two leases at once: {held}"
        report = audit(services.db, ttl=services.settings.lease_ttl_seconds, max_per_group=2)
        assert report.problems == []
    finally:
        services.close()


def run_to_end(workers: list[EdgeWorker]) -> None:
    """Each worker on a thread of its own until it finds nothing more to lease, then closed."""
    threads = [threading.Thread(target=w.run, kwargs={"max_ranges": 100}) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for w in workers:
        w.close()
        w.client.close()
