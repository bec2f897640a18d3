"""The edge supervisor giving back a dead child's leases (issue 17), against a live coordinator, with
real child processes that die at start (a worker without a COORDINATOR_URL exits 1 at once)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.processes import environment
from tests.support.live import live_coordinator
from tests.support.store import query, services_for
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.held import read_held
from usenet_indexer.edge.supervisor import supervise
from usenet_indexer.leases.ranges import RangeLease


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
    file names (leases, and the claim tags of requests not answered yet); the node's other leases are
    its siblings' and stay, this one too (granted under no tag, as to an older worker)."""
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


def test_a_grant_a_killed_child_never_read_is_given_back_on_a_shared_node_and_a_siblings_is_not(
    database_url: str, tmp_path: Path
) -> None:
    """``edge --processes``: the children share one node. A child asks for a lease and is killed
    after the grant committed, before its answer came (the coordinator holds the answer back here):
    its file names no (range, epoch), only the claim tag it wrote before asking. The supervisor
    revokes the tag and gives the grant back within seconds, not the TTL; the lease a sibling holds
    on the same node stays."""
    services = services_for(database_url, tmp_path, range_articles=1_000, chunk_articles=500)
    try:
        services.groups.add("alt.binaries.supervised")
        services.groups.plan("alt.binaries.supervised", 1, 3_999)
        node, token = services.nodes.add("edge-shared")
        sibling = services.ranges.lease(node, "5151" * 8)  # a live sibling's, under its own tag
        assert sibling is not None
        granted: list[RangeLease] = []
        answered, answer = threading.Event(), threading.Event()
        lease = services.ranges.lease

        def held_back(node_id: int, claim: str | None = None) -> RangeLease | None:
            """The first grant committed, its answer held back until the test lets it go."""
            result = lease(node_id, claim)
            if result is not None and not granted:
                granted.append(result)
                answered.set()
                answer.wait(30)
            return result

        services.ranges.lease = held_back  # type: ignore[method-assign]
        pids: list[int] = []
        stop = threading.Event()
        with live_coordinator(services) as url:
            thread = threading.Thread(
                target=supervise,
                args=(1, ["--idle-seconds", "0.2"]),
                kwargs={
                    "stop": stop,
                    "until_done": False,
                    "env_for": lambda slot: {"COORDINATOR_URL": url, "NODE_TOKEN": token},
                    "client_for": lambda slot: NodeClient(url, token, retries=1),
                    "on_start": lambda slot, pid: pids.append(pid),
                },
            )
            thread.start()
            try:
                assert answered.wait(30), "the child asked for no lease"
                unread = granted[0]
                claims = read_held(Path(environment(pids[0])["EDGE_HELD_FILE"])).claims
                row = query(services.db, "SELECT claim FROM ranges WHERE id = :r", {"r": unread.range_id})
                assert claims == {row[0]["claim"]}  # written ahead, and recorded with the grant
                killed = time.monotonic()
                os.kill(pids[0], signal.SIGKILL)
                deadline = killed + 20
                while lease_end(services, unread) is None:
                    assert time.monotonic() < deadline, "the unread grant was not given back"
                    time.sleep(0.02)
                seconds = time.monotonic() - killed
                answer.set()  # written to a dead socket
            finally:
                answer.set()
                stop.set()
                thread.join(30)
        assert lease_end(services, unread) == "reclaimed"
        assert seconds < PROMPT_SECONDS, f"given back after {seconds:.2f} s"
        print(f"unread grant given back {seconds:.3f} s after the kill (TTL {services.ranges.ttl:.0f} s)")
        assert lease_end(services, sibling) is None
        services.ranges.heartbeat(sibling.range_id, node, sibling.epoch)  # still the sibling's
    finally:
        services.close()


PROMPT_SECONDS = 5.0  # seen: well under 1 s


def lease_end(services: Services, lease: RangeLease) -> str | None:
    rows = query(
        services.db,
        "SELECT end_reason FROM lease_log WHERE range_id = :r AND epoch = :e",
        {"r": lease.range_id, "e": lease.epoch},
    )
    return None if rows[0]["end_reason"] is None else str(rows[0]["end_reason"])
