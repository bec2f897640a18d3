"""A dead worker's leases given back on its behalf by its supervisor (issue 17), at statement
boundaries, on both dialects: against the dead worker's batch still in flight at the coordinator, and
against a takeover by another worker of the same node (``edge --processes`` children share a token).

The supervisor names exactly the (range, epoch) the worker recorded; its release is conditional on
node, epoch and status in one statement. What must hold: a batch that read its range before the
release is stored and the release comes after it (the resume point moves, the next holder starts
there); one that reads after is refused; a release of an epoch taken over is refused and leaves the
new holder's lease alone; a range read to its end is finished, never planned past its end. The audit
is the oracle.
"""

from __future__ import annotations

import pytest

from tests.support.interleave import Interleaving
from tests.support.store import TTL, query
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost, StaleBatch
from usenet_indexer.leases.ranges import RangeLease

GROUP = "alt.binaries.reclaim"


def leased(services: Services, node: int, high: int = 999) -> RangeLease:
    services.groups.add(GROUP)
    services.groups.plan(GROUP, 1, high)
    lease = services.ranges.lease(node)
    assert lease is not None
    return lease


def row(services: Services, range_id: int) -> dict[str, object]:
    return query(services.db, "SELECT * FROM ranges WHERE id = :id", {"id": range_id})[0]


def check_audit(services: Services) -> None:
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    assert report.problems == []


def test_a_batch_in_flight_when_the_release_comes_is_stored_first(
    services: Services, script: Interleaving, node: int, other_node: int
) -> None:
    lease = leased(services, node)
    batch = script.spawn(
        "dead worker's batch",
        services.ranges.commit_batch,
        lease.range_id,
        node,
        lease.epoch,
        lease.next,
        lease.next + 99,
        100,
    )
    script.run(batch, until="range_advance")  # its range read and locked (SQLite: the write lock)
    release = script.spawn(
        "supervisor", services.ranges.release, lease.range_id, node, lease.epoch, reclaim=True
    )
    script.run(release)
    assert release.state == "blocked"  # on the batch's lock: it decides nothing on what it saw
    script.finish(batch)
    script.free(release)
    assert release.outcome() == "released"
    assert (row(services, lease.range_id)["status"], row(services, lease.range_id)["next_id"]) == (
        "planned",
        lease.next + 100,
    )
    again = services.ranges.lease(other_node)
    assert again is not None and (again.range_id, again.next) == (lease.range_id, lease.next + 100)
    check_audit(services)


def test_a_batch_that_arrives_after_the_release_is_refused_before_and_after_the_next_grant(
    services: Services, script: Interleaving, node: int, other_node: int
) -> None:
    lease = leased(services, node)
    services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.next + 49, 50)
    late = script.spawn(
        "dead worker's batch",
        services.ranges.commit_batch,
        lease.range_id,
        node,
        lease.epoch,
        lease.next + 50,
        lease.next + 99,
        50,
    )  # stopped before its first statement: it reads the range only after the release
    release = script.spawn(
        "supervisor", services.ranges.release, lease.range_id, node, lease.epoch, reclaim=True
    )
    assert script.finish(release) == "released"
    script.free(late)
    with pytest.raises(StaleBatch, match="released"):
        late.outcome()
    again = services.ranges.lease(other_node)
    assert again is not None and again.next == lease.next + 50  # the resume point the batches moved
    with pytest.raises(StaleBatch, match="taken over"):
        services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next + 50, lease.next + 99, 50)
    services.ranges.commit_batch(lease.range_id, other_node, again.epoch, again.next, again.end, 10)
    services.ranges.finish(lease.range_id, other_node, again.epoch)
    ends = query(services.db, "SELECT epoch, end_reason FROM lease_log ORDER BY epoch")
    assert [(r["epoch"], r["end_reason"]) for r in ends] == [
        (lease.epoch, "reclaimed"),
        (again.epoch, "finished"),
    ]
    check_audit(services)


def test_a_release_of_an_epoch_taken_over_by_a_sibling_of_the_same_node_is_refused(
    services: Services, script: Interleaving, node: int
) -> None:
    """``edge --processes``: the children share one node; only the epoch tells the dead child's lease
    from the one a sibling took over."""
    lease = leased(services, node)
    services.db.move_clock(TTL + 1)  # the dead child's lease lapsed (its supervisor was slow)
    release = script.spawn(
        "supervisor", services.ranges.release, lease.range_id, node, lease.epoch, reclaim=True
    )  # stopped before its first statement
    takeover = script.spawn("sibling", services.ranges.lease, node)
    taken = script.finish(takeover)
    assert taken is not None and (taken.range_id, taken.epoch) == (lease.range_id, lease.epoch + 1)
    script.free(release)
    with pytest.raises(LeaseLost, match="taken over"):
        release.outcome()
    services.ranges.heartbeat(lease.range_id, node, taken.epoch)  # the sibling's lease untouched
    assert (row(services, lease.range_id)["status"], row(services, lease.range_id)["epoch"]) == (
        "leased",
        taken.epoch,
    )
    check_audit(services)


def test_a_takeover_waits_for_a_release_in_flight_and_then_gets_the_range_at_once(
    services: Services, script: Interleaving, node: int, other_node: int
) -> None:
    lease = leased(services, node)
    release = script.spawn(
        "supervisor", services.ranges.release, lease.range_id, node, lease.epoch, reclaim=True
    )
    first = "range_give_back"
    script.run(release, until=first)
    script.step(release)  # the release has run its statement (PostgreSQL: and committed)
    grant = script.spawn("another worker", services.ranges.lease, other_node)
    script.run(grant)
    if not release.done:
        assert grant.state == "blocked"  # SQLite: behind the release's write lock until it commits
        script.free(release)
    if not grant.done:
        script.free(grant)
    assert release.outcome() == "released"
    taken = grant.outcome()
    assert taken is not None and (taken.range_id, taken.took_over) == (lease.range_id, False)
    check_audit(services)


def test_the_last_batch_in_flight_makes_the_release_a_finish(
    services: Services, script: Interleaving, node: int, other_node: int
) -> None:
    """The worker died between its last batch and its finish: released, the range would be planned
    past its end, where nothing leases or finishes it again."""
    lease = leased(services, node)
    batch = script.spawn(
        "dead worker's last batch",
        services.ranges.commit_batch,
        lease.range_id,
        node,
        lease.epoch,
        lease.next,
        lease.end,
        lease.end - lease.next + 1,
    )
    script.run(batch, until="range_advance")
    release = script.spawn(
        "supervisor", services.ranges.release, lease.range_id, node, lease.epoch, reclaim=True
    )
    script.run(release)
    assert release.state == "blocked"
    script.finish(batch)
    script.free(release)
    assert release.outcome() == "finished"
    assert row(services, lease.range_id)["status"] == "done"
    assert services.ranges.lease(other_node) is None  # nothing left in the group
    check_audit(services)
