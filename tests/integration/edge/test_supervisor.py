"""The edge supervisor giving back a dead child's leases (issue 17), against a live coordinator, with
real child processes that die at start (a worker without a COORDINATOR_URL exits 1 at once)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.support.live import live_coordinator
from tests.support.store import query, services_for
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.supervisor import supervise


def lease_ends(services: Services) -> dict[int, str | None]:
    rows = query(services.db, "SELECT range_id, end_reason FROM lease_log")
    return {int(r["range_id"]): r["end_reason"] for r in rows}


def supervise_dying_child(url: str, token: str, *, own_nodes: bool, until: threading.Event) -> int:
    """One child that dies at every start, until ``until``; the supervisor's exit code."""
    return supervise(
        1,
        [],
        stop=until,
        until_done=False,
        env_for=lambda slot: {"COORDINATOR_URL": "", "NODE_TOKEN": token},
        output_for=lambda slot: None,
        client_for=lambda slot: NodeClient(url, token, retries=1),
        own_nodes=own_nodes,
    )


@pytest.mark.parametrize("own_nodes", [True, False])
def test_a_dead_childs_node_leases_are_given_back_only_when_the_node_was_its_alone(
    database_url: str, tmp_path: Path, own_nodes: bool
) -> None:
    """``run`` (a node per worker): a grant the worker died before reading — its file cannot name it —
    is given back too, from the node's leases. ``edge --processes`` (a node shared): only what the
    file names; the node's other leases are its siblings' and stay."""
    services = services_for(database_url, tmp_path, range_articles=1_000, chunk_articles=500)
    try:
        services.groups.add("alt.binaries.supervised")
        services.groups.plan("alt.binaries.supervised", 1, 1_999)
        node, token = services.nodes.add("edge-1")
        unread = services.ranges.lease(node)  # granted; its answer never read by the child
        assert unread is not None
        stop = threading.Event()
        with live_coordinator(services) as url:
            result: list[int] = []
            thread = threading.Thread(
                target=lambda: result.append(
                    supervise_dying_child(url, token, own_nodes=own_nodes, until=stop)
                )
            )
            thread.start()
            try:
                deadline = time.monotonic() + 20
                while own_nodes and lease_ends(services).get(unread.range_id) is None:
                    assert time.monotonic() < deadline, "the node's lease was not given back"
                    time.sleep(0.05)
                if not own_nodes:
                    time.sleep(5)  # several deaths and restarts
            finally:
                stop.set()
                thread.join(30)
        row = query(services.db, "SELECT status, epoch FROM ranges WHERE id = :r", {"r": unread.range_id})[0]
        if own_nodes:
            assert lease_ends(services)[unread.range_id] == "reclaimed"
            assert row["status"] == "planned"
        else:
            assert lease_ends(services)[unread.range_id] is None
            assert (row["status"], row["epoch"]) == ("leased", unread.epoch)
    finally:
        services.close()
