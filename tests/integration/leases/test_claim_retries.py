"""A lease request is idempotent under its claim tag (issue 17, leases/claims.py), on both dialects.

A worker's request whose grant committed and whose answer was lost is retried under the same tag: the
retry is answered with that grant (same range or lane, same epoch), not a second one. A worker whose
request failed for good revokes the tag and gives back what the revoke found. At statement
boundaries: a retry that arrives while its first try is still granting waits for the commit and
finds the grant; a revoke that comes while a retry is answering waits for it and finds the grant; a
retry that comes while the revoke holds the tag's lock waits and is answered with nothing. The audit
is the oracle (9: never two live grants under one tag).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.interleave import Interleaving, stopped_inside, waits_on
from tests.support.store import TTL, backdate, query
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.audit import audit
from usenet_indexer.wire.held import Held

GROUP = "alt.binaries.retried"
TAG = "7e7e" * 8  # the request retried
LANE = "1a1e" * 8  # the request that got the lane, read (for a lane's next range)
OTHER = "0f0f" * 8  # another request of the same node


@pytest.fixture
def group_id(services: Services) -> int:
    services.groups.add(GROUP)
    services.groups.plan(GROUP, 1, 2_999)  # three history ranges; two live leases at most
    return int(query(services.db, "SELECT id FROM groups WHERE name = :n", {"n": GROUP})[0]["id"])


def check_audit(services: Services) -> None:
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    assert report.problems == []


def live(services: Services) -> Held:
    ranges = query(services.db, "SELECT id, epoch FROM ranges WHERE status = 'leased'")
    lanes = query(services.db, "SELECT group_id, lane, epoch FROM group_leases WHERE node_id IS NOT NULL")
    return Held(
        frozenset((int(r["id"]), int(r["epoch"])) for r in ranges),
        frozenset((int(r["group_id"]), str(r["lane"]), int(r["epoch"])) for r in lanes),
    )


KINDS = ["range", "lane", "lane's next range"]


def request_of(services: Services, node: int, group_id: int, kind: str) -> Callable[[str], Any]:
    """The lease request of ``kind`` under a tag; for a lane's next range, a lane is held first."""
    if kind == "range":
        return lambda claim: services.ranges.lease(node, claim)
    if kind == "lane":
        return lambda claim: services.lanes.lease(node, "history", claim)
    lane = services.lanes.lease(node, "history", LANE)
    assert lane is not None
    return lambda claim: services.lanes.next(group_id, node, "history", lane.epoch, claim)


def identity(granted: Any) -> tuple[Any, ...]:
    if hasattr(granted, "range_id"):
        return (granted.range_id, granted.epoch)
    return (granted.group_id, granted.lane, granted.epoch)


@pytest.mark.parametrize("kind", KINDS)
def test_a_retried_request_is_answered_with_the_grant_its_first_try_made(
    services: Services, node: int, group_id: int, kind: str
) -> None:
    """The same tag again: the same grant, replayed, nothing written; another tag: a new grant. Once
    the grant has ended, the tag's retry is a request like any (granted anew)."""
    ask = request_of(services, node, group_id, kind)
    first = ask(TAG)
    assert first is not None
    before = live(services)
    again = ask(TAG)
    assert again is not None and identity(again) == identity(first)
    assert live(services) == before
    assert again.replayed and not first.replayed
    if kind == "range":  # what a grant answers is answered again
        assert (again.group, again.start, again.end, again.next) == (
            first.group,
            first.start,
            first.end,
            first.next,
        )
        other = ask(OTHER)
        assert other is not None and other.range_id != first.range_id  # the group's second lease
    check_audit(services)
    # The grant ended (lapsed): the tag's next request is granted anew.
    if kind == "lane":
        query(services.db, "UPDATE group_leases SET heartbeat_at = heartbeat_at - :s", {"s": TTL + 1})
    else:
        backdate(services.db, first.range_id, TTL + 1)
    fresh = ask(TAG)
    assert fresh is not None and not fresh.replayed and identity(fresh) != identity(first)
    check_audit(services)


@pytest.mark.parametrize("kind", KINDS)
def test_a_revoked_tags_grant_is_given_back_and_its_retry_gets_nothing(
    services: Services, node: int, group_id: int, kind: str
) -> None:
    """A request answered twice (the first answer lost) and then given up: the revoke finds the one
    grant, the give-back under the tag ends it, and a retry still on the wire gets nothing."""
    ask = request_of(services, node, group_id, kind)
    first = ask(TAG)
    assert first is not None
    assert ask(TAG) is not None  # the retry, its answer lost too
    found = services.claims.revoke(node, TAG)
    assert found == (
        Held(lanes=frozenset({identity(first)})) if kind == "lane" else Held(frozenset({identity(first)}))
    )
    for range_id, epoch in found.ranges:
        assert services.ranges.release(range_id, node, epoch, claim=TAG) == "released"
    for gid, lane, epoch in found.lanes:
        services.lanes.release(gid, node, lane, epoch, claim=TAG)
    assert ask(TAG) is None
    assert identity(first) not in (live(services).ranges | live(services).lanes)
    check_audit(services)


def in_flight(services: Services, kind: str) -> bool:
    """Whether a request of ``kind`` can be stopped between its statements: PostgreSQL grants a range
    in one statement (``lease_take``), whose tag lock is taken and released inside it; that one is
    stopped inside the function instead (``stopped_inside``)."""
    return not (kind == "range" and services.db.dialect == "postgresql")


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_arriving_while_its_first_try_grants_waits_and_gets_that_grant(
    services: Services, script: Interleaving, node: int, group_id: int, kind: str
) -> None:
    """The first try is slow (the worker's timeout fired while it was granting) and its retry arrives:
    the retry waits on the tag's lock (SQLite: the write lock) and answers the grant once committed.
    PostgreSQL's range grant is one statement: its first try is stopped inside it, granted and not
    committed."""
    ask = request_of(services, node, group_id, kind)
    if in_flight(services, kind):
        first = script.spawn("first try", ask, TAG)
        script.run(first, until="COMMIT")  # granted, not committed: the tag's lock held
        retry = script.spawn("retry", ask, TAG)
        script.run(retry)
        assert retry.state == "blocked"
        granted = script.finish(first)
    else:
        with stopped_inside(services.db, node, "after the grant"):
            first = script.run(script.spawn("first try", ask, TAG))
            assert first.state == "blocked" and waits_on(services.db, first) == "transactionid"
            retry = script.run(script.spawn("retry", ask, TAG))
            assert retry.state == "blocked" and waits_on(services.db, retry) == "advisory"
        granted = script.free(first).outcome()
    answered = script.free(retry).outcome()
    assert granted is not None and answered is not None
    assert identity(answered) == identity(granted)
    assert answered.replayed
    check_audit(services)


@pytest.mark.parametrize("order", ["retry first", "revoke first"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_revoke_racing_a_retry_finds_the_one_grant_and_gives_it_back(
    services: Services, script: Interleaving, node: int, group_id: int, kind: str, order: str
) -> None:
    """The worker gave up on its request (every answer lost) and revokes the tag while a retry of it
    is still at the coordinator. Retry first (its tag's lock held): the revoke waits, the retry is
    answered with the first try's grant, not a second one, and the revoke finds that one grant.
    Revoke first: the retry waits, then is answered with nothing; the revoke found the one grant the
    earlier tries made. Either way the give-back under the tag ends it."""
    ask = request_of(services, node, group_id, kind)
    first = ask(TAG)  # committed; its answer lost
    assert first is not None
    if order == "retry first" and in_flight(services, kind):
        retry = script.spawn("retry", ask, TAG)
        script.run(retry, until="COMMIT")  # answered, not committed: the tag's lock held
        revoke = script.spawn("worker's revoke", services.claims.revoke, node, TAG)
        script.run(revoke)
        assert revoke.state == "blocked"
        answered = script.finish(retry)
        assert answered is not None and identity(answered) == identity(first)
        found = script.free(revoke).outcome()
    elif order == "retry first":  # PostgreSQL's range grant, one statement: the retry stopped inside
        with stopped_inside(services.db, node, "at the revoked check"):
            retry = script.run(script.spawn("retry", ask, TAG))  # the tag's lock held
            assert retry.state == "blocked" and waits_on(services.db, retry) == "relation"
            revoke = script.run(script.spawn("worker's revoke", services.claims.revoke, node, TAG))
            assert revoke.state == "blocked" and waits_on(services.db, revoke) == "advisory"
        answered = script.free(retry).outcome()
        assert answered is not None and identity(answered) == identity(first) and answered.replayed
        found = script.free(revoke).outcome()
    else:
        again = ask(TAG)  # a retry, its answer lost too
        assert again is not None and identity(again) == identity(first)
        revoke = script.spawn("worker's revoke", services.claims.revoke, node, TAG)
        script.run(revoke, until="claim_revoke")  # the tag's lock taken (SQLite: the write lock)
        retry = script.spawn("last retry", ask, TAG)
        script.run(retry)
        assert retry.state == "blocked"
        found = script.free(revoke).outcome()
        assert script.free(retry).outcome() is None
    assert (found.ranges | found.lanes) == {identity(first)}
    for range_id, epoch in found.ranges:
        assert services.ranges.release(range_id, node, epoch, claim=TAG) == "released"
    for gid, lane, epoch in found.lanes:
        services.lanes.release(gid, node, lane, epoch, claim=TAG)
    assert ask(TAG) is None  # another retry, after the revoke
    assert identity(first) not in (live(services).ranges | live(services).lanes)
    check_audit(services)


def test_the_audit_sees_two_live_grants_under_one_tag(services: Services, node: int, group_id: int) -> None:
    """Audit 9 can fail: a second grant logged under a tag while the first was live (what answering
    the retry with the first prevents) is reported."""
    first = services.ranges.lease(node, TAG)
    second = services.ranges.lease(node, OTHER)
    assert first is not None and second is not None
    check_audit(services)
    query(
        services.db, "UPDATE lease_log SET claim = :c WHERE range_id = :r", {"c": TAG, "r": second.range_id}
    )
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    (problem,) = [p for p in report.problems if "same tag" in p]
    assert problem.startswith(
        f"node {node} claim {TAG}: range {second.range_id} epoch {second.epoch} granted"
    )
    assert f"while range {first.range_id} epoch {first.epoch}, granted under the same tag" in problem
