"""A dead worker's grant it never read, given back through its claim tag (issue 17, leases/claims.py),
at statement boundaries, on both dialects.

The supervisor revokes the tag its dead child's file names, then gives back what the revoke found,
fenced by node, epoch and tag. What must hold whatever lands between their statements: a grant under
the tag in flight when the revoke comes is committed first and found (or sees the revoke and grants
nothing) — never granted after the revoke looked; a sibling of the same node (``edge --processes``
children share one node token) keeps every lease of its own; a holder that is only slow cannot write
after the give-back. The audit is the oracle, with the lease and lane logs.
"""

from __future__ import annotations

import pytest

from tests.support.interleave import Interleaving
from tests.support.store import TTL, backdate, query
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost, StaleBatch
from usenet_indexer.wire.held import Held

GROUP = "alt.binaries.claimed"
DEAD = "d0d0" * 8  # the dead child's claim tag
SIBLING = "5151" * 8  # a live sibling's, on the same node
TAKEOVER = "7a7e" * 8  # the sibling's next request
LANE = "1a1e" * 8  # the dead child's earlier request, for its lane (a tag names one request)


@pytest.fixture
def group_id(services: Services) -> int:
    services.groups.add(GROUP)
    services.groups.plan(GROUP, 1, 2_999)  # three history ranges
    return int(query(services.db, "SELECT id FROM groups WHERE name = :n", {"n": GROUP})[0]["id"])


def live_ranges(services: Services) -> list[tuple[int, int, str | None]]:
    rows = query(services.db, "SELECT id, epoch, claim FROM ranges WHERE status = 'leased' ORDER BY id")
    return [(int(r["id"]), int(r["epoch"]), r["claim"]) for r in rows]


def check_audit(services: Services) -> None:
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    assert report.problems == []


def test_a_grant_that_arrives_while_the_revoke_is_between_statements_is_refused(
    services: Services, script: Interleaving, node: int, group_id: int
) -> None:
    """The child's lease request reaches the coordinator only after its supervisor began the revoke
    (a request slow on the wire): it waits for the revoke and then grants nothing."""
    revoke = script.spawn("supervisor", services.claims.revoke, node, DEAD)
    script.run(revoke, until="claim_revoke")  # the tag's lock taken (SQLite: the write lock)
    grant = script.spawn("dead child's request", services.ranges.lease, node, DEAD)
    script.run(grant)
    assert grant.state == "blocked"  # on the tag's lock (SQLite: on the write lock)
    script.free(revoke)
    assert revoke.outcome() == Held()
    script.free(grant)
    assert grant.outcome() is None
    assert live_ranges(services) == []
    # A lane and a lane's next range under the revoked tag: nothing either.
    assert services.lanes.lease(node, "history", DEAD) is None
    lane = services.lanes.lease(node, "history", SIBLING)
    assert lane is not None
    assert services.lanes.next(group_id, node, "history", lane.epoch, DEAD) is None
    check_audit(services)


@pytest.mark.parametrize("grant_kind", ["lane", "lane's next range"])
def test_a_grant_in_flight_when_the_revoke_comes_commits_first_and_is_given_back(
    services: Services, script: Interleaving, node: int, group_id: int, grant_kind: str
) -> None:
    """The child asked and was killed while the coordinator was granting: the revoke waits for the
    grant's commit, finds it, and the give-back ends it — at once, not after the TTL."""
    if grant_kind == "lane":
        grant = script.spawn("dead child's request", services.lanes.lease, node, "history", DEAD)
    else:
        lane = services.lanes.lease(node, "history", LANE)
        assert lane is not None
        grant = script.spawn(
            "dead child's request", services.lanes.next, group_id, node, "history", lane.epoch, DEAD
        )
    script.run(grant, until="COMMIT")  # granted, not committed: the tag's lock held
    revoke = script.spawn("supervisor", services.claims.revoke, node, DEAD)
    script.run(revoke)
    assert revoke.state == "blocked"  # it reads nothing before the grant is decided
    granted = script.finish(grant)
    assert granted is not None
    script.free(revoke)
    found = revoke.outcome()
    lanes = query(
        services.db,
        "SELECT group_id, lane, epoch FROM group_leases WHERE claim = :c AND node_id IS NOT NULL",
        {"c": DEAD},
    )
    assert found.lanes == {(int(r["group_id"]), str(r["lane"]), int(r["epoch"])) for r in lanes}
    assert found.ranges == {(r, e) for r, e, _ in live_ranges(services)}
    assert found  # the grant in flight was found
    for range_id, epoch in found.ranges:
        assert services.ranges.release(range_id, node, epoch, reclaim=True, claim=DEAD) == "released"
    for gid, lane_name, epoch in found.lanes:
        services.lanes.release(gid, node, lane_name, epoch, reclaim=True, claim=DEAD)
    assert live_ranges(services) == []
    ends = query(services.db, "SELECT end_reason FROM lane_log WHERE claim = :c", {"c": DEAD}) + query(
        services.db, "SELECT end_reason FROM lease_log"
    )
    assert {str(r["end_reason"]) for r in ends} == {"reclaimed"}
    check_audit(services)


def test_a_range_grant_in_flight_on_the_write_lock_commits_before_the_revoke_reads(
    services: Services, script: Interleaving, node: int, group_id: int
) -> None:
    """A plain range grant stopped between its statements (on PostgreSQL ``lease_take`` is one
    statement, so it is stopped before it: the revoke that comes first is the test above)."""
    grant = script.spawn("dead child's request", services.ranges.lease, node, DEAD)
    if services.db.dialect == "sqlite":
        script.run(grant, until="COMMIT")
    revoke = script.spawn("supervisor", services.claims.revoke, node, DEAD)
    if services.db.dialect == "sqlite":
        script.run(revoke)
        assert revoke.state == "blocked"
    granted = script.finish(grant)
    assert granted is not None
    found = script.free(revoke).outcome()
    assert found == Held(frozenset({(granted.range_id, granted.epoch)}))
    outcome = services.ranges.release(granted.range_id, node, granted.epoch, reclaim=True, claim=DEAD)
    assert outcome == "released"
    check_audit(services)


def test_a_siblings_leases_on_the_same_node_are_never_given_back(
    services: Services, script: Interleaving, node: int, group_id: int
) -> None:
    """``edge --processes``: one node token. The sibling's lease, under its own tag or under none (an
    older worker), is not found by the dead child's tag, and a give-back naming its epoch with the
    dead child's tag is refused; a takeover by the sibling between the revoke and the give-back
    makes the give-back refused too."""
    sibling = services.ranges.lease(node, SIBLING)
    dead = services.ranges.lease(node, DEAD)
    services.groups.add(f"{GROUP}.other")  # the first group is at its cap of two live leases
    services.groups.plan(f"{GROUP}.other", 1, 999)
    untagged = services.ranges.lease(node)  # a sibling that is an older worker
    assert sibling and untagged and dead
    found = services.claims.revoke(node, DEAD)
    assert found == Held(frozenset({(dead.range_id, dead.epoch)}))
    with pytest.raises(LeaseLost, match="not granted under this claim tag"):
        services.ranges.release(sibling.range_id, node, sibling.epoch, reclaim=True, claim=DEAD)
    with pytest.raises(LeaseLost, match="not granted under this claim tag"):
        services.ranges.release(untagged.range_id, node, untagged.epoch, reclaim=True, claim=DEAD)
    # The dead child's grant lapses before the give-back comes (a supervisor slow to act), and the
    # sibling takes it over in between.
    backdate(services.db, dead.range_id, TTL + 1)
    give_back = script.spawn(
        "supervisor", services.ranges.release, dead.range_id, node, dead.epoch, reclaim=True, claim=DEAD
    )  # stopped before its first statement
    takeover = script.spawn("sibling", services.ranges.lease, node, TAKEOVER)
    taken = script.finish(takeover)
    assert taken is not None and (taken.range_id, taken.epoch) == (dead.range_id, dead.epoch + 1)
    script.free(give_back)
    with pytest.raises(LeaseLost, match="taken over"):
        give_back.outcome()
    rows = query(services.db, "SELECT status, epoch, claim FROM ranges WHERE id = :r", {"r": taken.range_id})
    assert (rows[0]["status"], rows[0]["epoch"], rows[0]["claim"]) == ("leased", taken.epoch, TAKEOVER)
    for lease in (taken, sibling, untagged):  # the siblings' leases untouched
        services.ranges.heartbeat(lease.range_id, node, lease.epoch)
    check_audit(services)


def test_a_slow_holder_cannot_write_after_its_grant_was_given_back_by_tag(
    services: Services, script: Interleaving, node: int, other_node: int, group_id: int
) -> None:
    """A batch under the claimed grant in flight when the give-back comes is stored first and the
    give-back releases after it; one that reads the range after the give-back is refused (the epoch
    fence), before and after the next grant."""
    dead = services.ranges.lease(node, DEAD)
    assert dead is not None
    found = services.claims.revoke(node, DEAD)
    assert found.ranges == {(dead.range_id, dead.epoch)}
    batch = script.spawn(
        "slow batch",
        services.ranges.commit_batch,
        dead.range_id,
        node,
        dead.epoch,
        dead.next,
        dead.next + 99,
        100,
    )
    script.run(batch, until="range_advance")  # the range read and locked
    give_back = script.spawn(
        "supervisor", services.ranges.release, dead.range_id, node, dead.epoch, reclaim=True, claim=DEAD
    )
    script.run(give_back)
    assert give_back.state == "blocked"
    script.finish(batch)
    script.free(give_back)
    assert give_back.outcome() == "released"
    late = script.spawn(
        "late batch",
        services.ranges.commit_batch,
        dead.range_id,
        node,
        dead.epoch,
        dead.next + 100,
        dead.next + 199,
        100,
    )
    script.free(late)
    with pytest.raises(StaleBatch, match="released"):
        late.outcome()
    again = services.ranges.lease(other_node)
    assert again is not None and (again.range_id, again.next) == (dead.range_id, dead.next + 100)
    with pytest.raises(StaleBatch, match="taken over"):
        services.ranges.commit_batch(dead.range_id, node, dead.epoch, dead.next + 100, dead.next + 199, 100)
    check_audit(services)


def test_an_old_worker_without_a_tag_is_granted_as_before(
    services: Services, node: int, group_id: int
) -> None:
    untagged = services.ranges.lease(node)
    assert untagged is not None
    assert services.claims.revoke(node, DEAD) == Held()
    assert services.ranges.release(untagged.range_id, node, untagged.epoch) == "released"
    lane = services.lanes.lease(node, "history")
    assert lane is not None
    step = services.lanes.next(group_id, node, "history", lane.epoch)
    assert step is not None
    services.lanes.release(group_id, node, "history", lane.epoch)
    check_audit(services)


def test_the_audit_sees_a_grant_made_under_a_tag_after_its_revoke(
    services: Services, node: int, group_id: int
) -> None:
    """Audit 8 can fail: a grant logged under a revoked tag after the revoke (what the tag's lock
    prevents) is reported."""
    services.claims.revoke(node, DEAD)
    granted = services.ranges.lease(node, SIBLING)
    assert granted is not None
    check_audit(services)
    query(
        services.db, "UPDATE lease_log SET claim = :c WHERE range_id = :r", {"c": DEAD, "r": granted.range_id}
    )
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    assert [p for p in report.problems if "under claim" in p] == [
        f"range {granted.range_id} epoch {granted.epoch} granted to node {node} at "
        f"{float(query(services.db, 'SELECT granted_at FROM lease_log')[0]['granted_at']):.3f} "
        f"under claim {DEAD}, revoked at "
        f"{float(query(services.db, 'SELECT revoked_at FROM claims_revoked')[0]['revoked_at']):.3f}"
    ]
