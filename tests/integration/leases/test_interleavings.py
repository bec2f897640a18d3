"""The races of issue 14, each driven through the interleaving that broke it, on both dialects.

Each test stops one actor between two of its statements (tests/support/interleave.py), lets another
act, moves the database's clock where a lease must expire meanwhile, and lets the first go on. The
lease audit is the oracle where it can be; otherwise the test checks what the race broke.
"""

from __future__ import annotations

import pytest

from tests.support.interleave import Interleaving, stopped_inside
from tests.support.store import TTL, query
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost, StaleBatch


@pytest.fixture
def third_node(services: Services) -> int:
    return services.nodes.add("worker-c")[0]


def planned_group(services: Services, name: str, high: int) -> int:
    services.groups.add(name)
    services.groups.plan(name, 1, high)
    return int(services.groups.get(name)["id"])


def check_audit(services: Services) -> None:
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    assert report.problems == []


def test_two_plans_of_one_group_tile_its_articles(services: Services, script: Interleaving) -> None:
    """Issue 14.1: the later plan planned from the cursor it read before the first one's lock."""
    group_id = planned_group(services, "alt.binaries.plans", 5_000)
    a = script.spawn("A", services.groups.plan, "alt.binaries.plans", 1, 5_500)
    script.run(a, until="range_insert")  # A holds the group's lock, its ranges not inserted yet
    b = script.spawn("B", services.groups.plan, "alt.binaries.plans", 1, 6_200)
    script.run(b)  # B reads the group and waits on A's lock (or, on SQLite, on A's write lock)
    assert b.state == "blocked"
    script.finish(a)
    script.free(b)
    rows = query(
        services.db,
        "SELECT start_id, end_id FROM ranges WHERE group_id = :g ORDER BY start_id",
        {"g": group_id},
    )
    group = services.groups.get("alt.binaries.plans")
    covered = 1
    for row in rows:
        assert row["start_id"] == covered, rows
        covered = row["end_id"] + 1
    assert covered == group["tail_next"] == 6_201
    check_audit(services)


def test_a_batch_whose_lease_lapses_while_it_waits_is_refused(
    services: Services, script: Interleaving, node: int, other_node: int, third_node: int
) -> None:
    """Issue 14.3: the TTL was checked when the batch read its range, not when it wrote; a batch that
    lapsed while waiting was stored anyway, reviving its lease beside a grant that had counted it dead."""
    planned_group(services, "alt.binaries.cap", 3_999)
    first = services.ranges.lease(node)
    assert first is not None
    services.db.move_clock(0.6 * TTL)
    second = services.ranges.lease(other_node)
    assert second is not None and second.group_id == first.group_id
    batch = script.spawn(
        "A", services.ranges.commit_batch, first.range_id, node, first.epoch, first.next, first.next + 9, 10
    )
    script.run(batch, until="range_advance")
    services.db.move_clock(0.6 * TTL)  # the first lease lapses while its batch waits; the second lives
    grant = script.spawn("C", services.ranges.lease, third_node)
    script.run(grant)
    script.free(batch)
    if not grant.done:
        script.free(grant)
    with pytest.raises(StaleBatch, match="expired"):
        batch.outcome()
    check_audit(services)


def test_a_grant_that_waits_past_its_ttl_is_taken_over_and_its_holder_fenced(
    services: Services, script: Interleaving, node: int, other_node: int
) -> None:
    """A grant slow to commit (waiting on a lock after its writes: SQLite's COMMIT, a row PostgreSQL's
    lease_take updates after the grant) is born lapsed once its TTL passes meanwhile: its heartbeat
    is the grant's start. Another node takes the range over at the next epoch, and the slow grant's
    holder can neither store a batch nor heartbeat it back to life."""
    planned_group(services, "alt.binaries.slow", 999)  # one range
    if services.db.dialect == "sqlite":
        grant = script.spawn("slow grant", services.ranges.lease, node)
        script.run(grant, until="COMMIT")
        services.db.move_clock(TTL + 1)
        slow = script.finish(grant)
    else:
        with stopped_inside(services.db, node, "after the grant"):
            grant = script.run(script.spawn("slow grant", services.ranges.lease, node))
            assert grant.state == "blocked"
            services.db.move_clock(TTL + 1)
        slow = script.free(grant).outcome()
    assert slow is not None
    taken = services.ranges.lease(other_node)
    assert taken is not None and (taken.range_id, taken.epoch) == (slow.range_id, slow.epoch + 1)
    with pytest.raises(StaleBatch):
        services.ranges.commit_batch(slow.range_id, node, slow.epoch, slow.next, slow.next + 9, 10)
    with pytest.raises(LeaseLost):
        services.ranges.heartbeat(slow.range_id, node, slow.epoch)
    services.ranges.commit_batch(taken.range_id, other_node, taken.epoch, taken.next, taken.next + 9, 10)
    check_audit(services)


def test_a_snapshot_from_a_holder_that_just_lost_the_lane_is_refused(
    services: Services, script: Interleaving, node: int, other_node: int
) -> None:
    """Issue 14.2: a lane claim that committed between the snapshot's check and its write left the
    write matching no row, answered 200; the old holder's batch then moved the resume point past a
    window nobody had."""
    group_id = planned_group(services, "alt.binaries.lane", 2_999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    first = services.lanes.next(group_id, node, "history", lane.epoch)
    assert first is not None
    services.db.move_clock(0.6 * TTL)
    services.ranges.heartbeat(first.range_id, node, first.epoch)  # the range lives on, the lane does not
    put = script.spawn(
        "A",
        services.lanes.record_snapshot,
        group_id,
        node,
        "history",
        lane.epoch,
        next=first.end + 1,
        size=10,
        location="snapshots/x",
    )
    script.run(put, until="group_lane_snapshot")
    services.db.move_clock(0.6 * TTL)
    claim = script.spawn("B", services.lanes.lease, other_node, "history")
    script.run(claim)
    script.free(put)
    if not claim.done:
        script.free(claim)
    with pytest.raises(LeaseLost):
        put.outcome()
    new_lane = claim.outcome()
    assert new_lane is not None and new_lane.epoch == lane.epoch + 1
    # The old holder's range lease is still alive, but its range was granted through the lane it lost:
    # its batch would move the resume point past a window nobody holds.
    with pytest.raises(StaleBatch, match="lane"):
        services.ranges.commit_batch(first.range_id, node, first.epoch, first.next, first.end, 5)
    check_audit(services)


def test_a_lane_grant_does_not_overwrite_a_retire(
    services: Services, script: Interleaving, node: int
) -> None:
    """Issue 14.4: the lane picked its next range with a plain read and granted it by id alone."""
    group_id = planned_group(services, "alt.binaries.retire", 2_999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    take = script.spawn("A", services.lanes.next, group_id, node, "history", lane.epoch)
    script.run(take, until="lease_grant")

    def retire() -> None:
        with services.db.transaction() as tx:
            tx.run("ranges_retire", {"group_id": group_id, "low": 10_000, "reason": "retired: expired"})

    retirer = script.spawn("B", retire)
    script.run(retirer)
    script.free(take)
    if not retirer.done:
        script.free(retirer)
    rows = query(services.db, "SELECT status, error FROM ranges WHERE group_id = :g", {"g": group_id})
    for row in rows:
        assert (row["status"] == "failed") == (row["error"] is not None), rows
    granted = take.outcome()
    if granted is not None:
        assert query(services.db, "SELECT status FROM ranges WHERE id = :id", {"id": granted.range_id}) == [
            {"status": "leased"}
        ]
    check_audit(services)
