"""Ownership leases (seed 004): compare-and-set claims, epochs, TTL >= 3 x renew, an injectable clock."""

from __future__ import annotations

import threading

import pytest

from usenet_indexer.db import Database
from usenet_indexer.leases.ownership import OwnershipLeases


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_ttl_must_be_at_least_three_renew_intervals(db: Database) -> None:
    with pytest.raises(ValueError, match=r"at least 3 × the renew interval"):
        OwnershipLeases(db, "a", ttl_seconds=29, renew_seconds=10)
    OwnershipLeases(db, "a", ttl_seconds=30, renew_seconds=10)


def test_one_holder_until_expiry_then_takeover_fences_the_first(db: Database) -> None:
    clock = Clock()
    a = OwnershipLeases(db, "coordinator-a", ttl_seconds=30, renew_seconds=10, clock=clock)
    b = OwnershipLeases(db, "coordinator-b", ttl_seconds=30, renew_seconds=10, clock=clock)
    first = a.acquire("planner", {"version": 1})
    assert first.ok
    assert first.epoch == 1
    refused = b.acquire("planner")
    assert not refused.ok
    assert refused.holder == "coordinator-a"
    clock.now += 20
    assert a.renew("planner")
    clock.now += 29
    assert not b.acquire("planner").ok  # renewed 29 s ago: still live
    clock.now += 2
    assert [o.name for o in b.expired()] == ["planner"]
    assert b.expired()[0].meta == {"version": 1}
    second = b.acquire("planner")
    assert second.ok
    assert second.epoch == 2
    # a's epoch is stale: its renewal fails and it must stop its loop.
    assert a.renew_all() == ["planner"]
    assert a.holdings() == {}
    assert not a.release("planner")
    assert b.holdings() == {"planner": 2}


def test_release_frees_at_once_and_refresh_corrects_local_state(db: Database) -> None:
    clock = Clock()
    a = OwnershipLeases(db, "a", ttl_seconds=30, renew_seconds=10, clock=clock)
    b = OwnershipLeases(db, "b", ttl_seconds=30, renew_seconds=10, clock=clock)
    assert a.acquire("prefetcher").ok
    assert [o.name for o in a.mine()] == ["prefetcher"]
    assert a.release("prefetcher")
    assert b.acquire("prefetcher").ok
    record = a.refresh("prefetcher")
    assert record is not None
    assert (record.holder, record.epoch) == ("b", 2)
    assert not a.renew("prefetcher")
    assert b.refresh("prefetcher") is not None
    assert b.holdings() == {"prefetcher": 2}


def test_expired_holder_cannot_renew(db: Database) -> None:
    clock = Clock()
    a = OwnershipLeases(db, "a", ttl_seconds=30, renew_seconds=10, clock=clock)
    assert a.acquire("planner").ok
    clock.now += 31
    assert not a.renew("planner")
    assert a.acquire("planner").ok  # free again for whoever claims it, a included


def test_database_clock_by_default(db: Database) -> None:
    a = OwnershipLeases(db, "a", ttl_seconds=30, renew_seconds=10)
    b = OwnershipLeases(db, "b", ttl_seconds=30, renew_seconds=10)
    assert a.acquire("loop").ok
    assert not b.acquire("loop").ok
    assert a.renew("loop")
    assert a.expired() == []


def test_concurrent_claims_have_exactly_one_winner(db: Database) -> None:
    holders = [OwnershipLeases(db, f"h{i}", ttl_seconds=30, renew_seconds=10) for i in range(8)]
    results: list[bool] = []
    barrier = threading.Barrier(len(holders))

    def claim(lease: OwnershipLeases) -> None:
        barrier.wait()
        results.append(lease.acquire("contended").ok)

    threads = [threading.Thread(target=claim, args=(h,)) for h in holders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
