"""Ownership leases (seed 004): compare-and-set claims, epochs, TTL >= 3 x renew, an injectable clock."""

from __future__ import annotations

import threading

import pytest

from tests.support.interleave import Interleaving
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


def test_a_holder_proven_gone_is_taken_over_at_once_and_fenced(db: Database) -> None:
    clock = Clock()
    a = OwnershipLeases(db, "host:101:aaaaaa", ttl_seconds=30, renew_seconds=10, clock=clock)
    b = OwnershipLeases(db, "host:202:bbbbbb", ttl_seconds=30, renew_seconds=10, clock=clock)
    asked: list[str] = []

    def gone(holder: str) -> bool:
        asked.append(holder)
        return holder == "host:101:aaaaaa"

    assert a.acquire("planner", gone=gone).ok
    assert asked == []  # a free lease is claimed without asking
    assert not b.acquire("planner", gone=lambda holder: False).ok  # not proven gone: the TTL decides
    taken = b.acquire("planner", gone=gone)
    assert (taken.ok, taken.epoch, taken.holder) == (True, 2, "host:202:bbbbbb")
    assert asked == ["host:101:aaaaaa"]
    assert a.renew_all() == ["planner"]  # a's epoch is stale: it stops its loop
    # The live holder is never taken from, however its name reads.
    assert not a.acquire("planner", gone=lambda holder: False).ok
    assert not b.acquire("planner", gone=gone).ok  # b's own live lease: never "gone", not claimed twice
    assert asked == ["host:101:aaaaaa"]
    assert b.holdings() == {"planner": 2}


def test_a_takeover_from_a_gone_holder_loses_to_a_claim_in_between(db: Database) -> None:
    """Another coordinator claims the lease (its TTL ran out) between the read of the gone holder and
    the takeover: the takeover's compare-and-set names that holder and epoch, and changes nothing. On
    SQLite the claim cannot come in between (the takeover's transaction holds the write lock from its
    start): it waits, and finds the lease taken."""
    a = OwnershipLeases(db, "host:101:aaaaaa", ttl_seconds=30, renew_seconds=10)
    b = OwnershipLeases(db, "host:202:bbbbbb", ttl_seconds=30, renew_seconds=10)
    c = OwnershipLeases(db, "host:303:cccccc", ttl_seconds=30, renew_seconds=10)
    assert a.acquire("planner").ok
    script = Interleaving(db)
    try:
        taking = script.spawn("B", b.acquire, "planner", gone=lambda holder: holder == "host:101:aaaaaa")
        script.run(taking, until="ownership_claim", occurrence=2)  # its claim of the gone holder
        db.move_clock(31.0)  # a's lease expires: c may claim it the ordinary way
        claiming = script.spawn("C", c.acquire, "planner")
        script.run(claiming)
        if db.dialect == "postgresql":
            assert claiming.done and claiming.outcome().ok
            script.free(taking)
            lost = taking.outcome()
            assert (lost.ok, lost.holder) == (False, "host:303:cccccc")
            winner, epoch = c, 2
        else:
            assert claiming.state == "blocked"
            script.free(taking)
            assert taking.outcome().ok
            script.free(claiming)
            assert not claiming.outcome().ok
            winner, epoch = b, 2
    finally:
        script.close()
    assert winner.holdings() == {"planner": epoch}
    assert not a.renew("planner")
    assert [o.holder for o in a.mine()] == []
