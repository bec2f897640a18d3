"""Group lanes (seed 002): lane leases, ranges in article order, snapshots under the lane's epoch."""

from __future__ import annotations

import pytest

from tests.support.store import TTL, backdate, backdate_lane, query
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.leases.groups import BadLane, check_lane


def plan(services: Services, name: str, low: int, high: int) -> int:
    services.groups.add(name)
    services.groups.plan(name, low, high)
    return int(services.groups.get(name)["id"])


def test_a_lane_that_is_not_history_or_tail_names_both(services: Services, node: int) -> None:
    with pytest.raises(BadLane, match="lane: history or tail, not 'sideways'"):
        services.lanes.lease(node, "sideways")
    assert check_lane("tail") == "tail"


def test_lane_holder_takes_the_lanes_ranges_in_article_order(services: Services, node: int) -> None:
    group = plan(services, "alt.binaries.a", 1, 3_999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    assert (lane.group_id, lane.lane, lane.epoch, lane.snapshot_next) == (group, "history", 1, None)
    starts = []
    while (lease := services.lanes.next(group, node, "history", lane.epoch)) is not None:
        starts.append(lease.start)
        services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.end, 1)
        services.ranges.finish(lease.range_id, node, lease.epoch)
    assert starts == [1, 1000, 2000, 3000]
    lanes = query(services.db, "SELECT headers FROM group_leases WHERE lane = 'history'")
    assert lanes[0]["headers"] == 4


def test_held_lane_is_not_given_to_range_leases_or_a_second_holder(
    services: Services, node: int, other_node: int
) -> None:
    group = plan(services, "alt.binaries.a", 1, 1_999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    assert services.ranges.lease(other_node) is None
    assert services.lanes.lease(other_node, "history") is None
    assert services.lanes.lease(other_node, "tail") is None  # no tail ranges
    services.lanes.release(group, node, "history", lane.epoch)
    assert services.ranges.lease(other_node) is not None


def test_silent_lane_is_taken_over_and_resumes_from_its_snapshot(
    services: Services, node: int, other_node: int
) -> None:
    group = plan(services, "alt.binaries.a", 1, 2_999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    first = services.lanes.next(group, node, "history", lane.epoch)
    assert first is not None
    services.ranges.commit_batch(first.range_id, node, first.epoch, first.next, first.end, 1)
    services.ranges.finish(first.range_id, node, first.epoch)
    services.lanes.record_snapshot(
        group, node, "history", lane.epoch, next=first.end + 1, size=123, location="snapshots/1/history"
    )
    assert services.lanes.snapshot(group, node, "history", lane.epoch) is not None
    backdate_lane(services.db, group, "history", TTL - 5)
    assert services.lanes.lease(other_node, "history") is None
    backdate_lane(services.db, group, "history", 10)
    with pytest.raises(LeaseLost, match="expired"):
        services.lanes.heartbeat(group, node, "history", lane.epoch)
    taken = services.lanes.lease(other_node, "history")
    assert taken is not None
    assert (taken.epoch, taken.snapshot_next, taken.snapshot_size) == (2, first.end + 1, 123)
    snapshot = services.lanes.snapshot(group, other_node, "history", taken.epoch)
    assert snapshot is not None
    assert (snapshot.next, snapshot.location) == (first.end + 1, "snapshots/1/history")
    # The old holder is fenced: no snapshot, no range, no heartbeat.
    with pytest.raises(LeaseLost, match="taken over"):
        services.lanes.record_snapshot(group, node, "history", lane.epoch, next=5, size=1, location="x")
    with pytest.raises(LeaseLost, match="taken over"):
        services.lanes.next(group, node, "history", lane.epoch)
    with pytest.raises(LeaseLost, match="taken over"):
        services.lanes.snapshot(group, node, "history", lane.epoch)
    following = services.lanes.next(group, other_node, "history", taken.epoch)
    assert following is not None
    assert following.start == 1_000


def test_lane_heartbeat_and_release(services: Services, node: int) -> None:
    group = plan(services, "alt.binaries.a", 1, 999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    services.lanes.heartbeat(group, node, "history", lane.epoch)
    with pytest.raises(LeaseLost, match="no tail lane"):
        services.lanes.heartbeat(group, node, "tail", lane.epoch)
    services.lanes.release(group, node, "history", lane.epoch)
    with pytest.raises(LeaseLost, match="released"):
        services.lanes.heartbeat(group, node, "history", lane.epoch)


def test_snapshot_needs_a_sane_article(services: Services, node: int) -> None:
    group = plan(services, "alt.binaries.a", 1, 999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    with pytest.raises(ValueError, match="article > 0"):
        services.lanes.record_snapshot(group, node, "history", lane.epoch, next=0, size=1, location="x")


def test_tail_and_history_lanes_have_their_own_holders(
    services: Services, node: int, other_node: int
) -> None:
    group = plan(services, "alt.binaries.a", 1, 999)
    services.groups.plan("alt.binaries.a", 1, 1_500)
    history = services.lanes.lease(node, "history")
    tail = services.lanes.lease(other_node, "tail")
    assert history is not None and tail is not None
    tail_range = services.lanes.next(group, other_node, "tail", tail.epoch)
    assert tail_range is not None
    assert tail_range.lane == "tail"
    history_range = services.lanes.next(group, node, "history", history.epoch)
    assert history_range is not None
    assert history_range.lane == "history"


def test_a_lane_waits_for_its_next_range_rather_than_skipping_it(
    services: Services, node: int, other_node: int
) -> None:
    group = plan(services, "alt.binaries.a", 1, 2_999)
    query(services.db, "UPDATE ranges SET spooled_chunks = 1 WHERE start_id = 1")  # leased first
    held_elsewhere = services.ranges.lease(other_node)  # a plain lease from before the lane was held
    assert held_elsewhere is not None
    assert held_elsewhere.start == 1
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    # Its window must see the ranges in order: the lane does not jump to 1000–1999.
    assert services.lanes.next(group, node, "history", lane.epoch) is None
    backdate(services.db, held_elsewhere.range_id, TTL + 1)
    taken = services.lanes.next(group, node, "history", lane.epoch)
    assert taken is not None
    assert (taken.range_id, taken.start, taken.took_over) == (held_elsewhere.range_id, 1, True)


def test_a_dead_holders_lane_and_range_given_back_go_to_the_next_holder_at_once(
    services: Services, node: int, other_node: int
) -> None:
    """Issue 17: the supervisor of a lane holder that died gives back its range, then its lane; the
    next holder gets both without waiting for the TTL, from the range's resume point."""
    group = plan(services, "alt.binaries.a", 1, 2_999)
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    first = services.lanes.next(group, node, "history", lane.epoch)
    assert first is not None
    assert services.ranges.release(first.range_id, node, first.epoch, reclaim=True) == "released"
    services.lanes.release(group, node, "history", lane.epoch, reclaim=True)
    taken = services.lanes.lease(other_node, "history")
    assert taken is not None and taken.epoch == lane.epoch + 1
    again = services.lanes.next(group, other_node, "history", taken.epoch)
    assert again is not None and (again.range_id, again.next) == (first.range_id, first.next)
    ends = query(services.db, "SELECT epoch, end_reason FROM lane_log ORDER BY epoch")
    assert [(r["epoch"], r["end_reason"]) for r in ends] == [(lane.epoch, "reclaimed"), (taken.epoch, None)]
