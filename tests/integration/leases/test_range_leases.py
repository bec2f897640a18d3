"""Every rule of seed 000 plus fencing, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.store import TTL, backdate, query
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.errors import LeaseLost, RangeError, StaleBatch
from usenet_indexer.leases.ranges import RangeLeases


def plan(services: Services, name: str, low: int, high: int) -> int:
    services.groups.add(name)
    services.groups.plan(name, low, high)
    return int(services.groups.get(name)["id"])


def ranges(services: Services) -> dict[int, dict[str, Any]]:
    return {int(r["id"]): r for r in query(services.db, "SELECT * FROM ranges")}


def test_lease_takes_spooled_ranges_first_then_by_priority_then_id(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 25_000)  # history ranges, eras of 10,000 articles
    by_start = {int(r["start_id"]): int(r["id"]) for r in ranges(services).values()}
    # Nothing spooled: the oldest era (priority 0) first, by id.
    first = services.ranges.lease(node)
    assert first is not None
    assert first.priority == 0
    # A later era's range with chunks spooled jumps the queue.
    spooled = by_start[20_000]
    query(services.db, "UPDATE ranges SET spooled_chunks = 3 WHERE id = :id", {"id": spooled})
    second = services.ranges.lease(node)
    assert second is not None
    assert second.range_id == spooled
    assert second.priority == 2


def test_tail_ranges_come_before_history(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 5_000)
    services.groups.plan("alt.binaries.a", 1, 7_500)  # the group grew: a tail range
    lease = services.ranges.lease(node)
    assert lease is not None
    assert (lease.start, lease.end, lease.lane) == (5_001, 5_999, "tail")


def test_lease_records_rule_version_attempts_epoch_and_last_seen(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    query(services.db, "INSERT INTO rule_sets (version, rules, created_at) VALUES (7, '[]', 0)")
    lease = services.ranges.lease(node)
    assert lease is not None
    assert lease.rule_version == 7
    assert lease.epoch == 1
    row = ranges(services)[lease.range_id]
    assert (row["status"], row["attempts"], row["node_id"], row["rule_version"]) == ("leased", 1, node, 7)
    seen = query(services.db, "SELECT last_seen_at FROM nodes WHERE id = :id", {"id": node})[0]
    assert seen["last_seen_at"] is not None


def test_a_heartbeat_keeps_the_lease_alive_and_marks_its_node_seen(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    old = "UPDATE {table} SET {column} = {column} - 30 WHERE id = :id"  # within the TTL
    query(services.db, old.format(table="ranges", column="heartbeat_at"), {"id": lease.range_id})
    query(services.db, old.format(table="nodes", column="last_seen_at"), {"id": node})
    before = ranges(services)[lease.range_id]["heartbeat_at"]
    services.ranges.heartbeat(lease.range_id, node, lease.epoch)
    beat = float(ranges(services)[lease.range_id]["heartbeat_at"])
    assert beat > float(before) + 29
    seen = query(services.db, "SELECT last_seen_at FROM nodes WHERE id = :id", {"id": node})[0]
    assert float(seen["last_seen_at"]) > beat - 1
    # Seen again within 5 s: not written again (a node's row is not rewritten on every heartbeat).
    services.ranges.heartbeat(lease.range_id, node, lease.epoch)
    again = query(services.db, "SELECT last_seen_at FROM nodes WHERE id = :id", {"id": node})[0]
    assert again["last_seen_at"] == seen["last_seen_at"]


def test_no_range_left_means_none(services: Services, node: int) -> None:
    assert services.ranges.lease(node) is None
    plan(services, "alt.binaries.a", 1, 999)
    assert services.ranges.lease(node) is not None
    assert services.ranges.lease(node) is None


def test_silent_lease_is_taken_over_and_resumes_at_next_id(
    services: Services, node: int, other_node: int
) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    first = services.ranges.lease(node)
    assert first is not None
    services.ranges.commit_batch(first.range_id, node, first.epoch, first.next, first.next + 99, 100)
    # Not silent long enough: nothing to take over.
    backdate(services.db, first.range_id, TTL - 5)
    assert services.ranges.lease(other_node) is None
    backdate(services.db, first.range_id, 10)
    second = services.ranges.lease(other_node)
    assert second is not None
    assert second.range_id == first.range_id
    assert second.took_over
    assert second.epoch == first.epoch + 1
    assert second.next == first.next + 100
    assert ranges(services)[first.range_id]["attempts"] == 2
    with pytest.raises(LeaseLost, match="taken over"):
        services.ranges.heartbeat(first.range_id, node, first.epoch)
    with pytest.raises(StaleBatch, match="taken over"):
        services.ranges.commit_batch(first.range_id, node, first.epoch, second.next, second.next, 1)
    services.ranges.heartbeat(second.range_id, other_node, second.epoch)


def test_silent_holder_loses_its_lease_even_before_a_takeover(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    backdate(services.db, lease.range_id, TTL + 1)
    with pytest.raises(LeaseLost, match="expired"):
        services.ranges.heartbeat(lease.range_id, node, lease.epoch)
    with pytest.raises(StaleBatch, match="expired"):
        services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.next, 1)


def test_at_most_two_live_leases_per_group(services: Services, node: int, other_node: int) -> None:
    group_a = plan(services, "alt.binaries.a", 1, 4_999)
    group_b = plan(services, "alt.binaries.b", 1, 999)
    leases = [services.ranges.lease(node) for _ in range(3)]
    assert [lease.group_id for lease in leases if lease] == [group_a, group_a, group_b]
    assert services.ranges.lease(other_node) is None  # a has two live, b has nothing left
    # One of a's goes quiet past the TTL: no longer live, so a third may be granted — its own takeover.
    assert leases[0] is not None
    backdate(services.db, leases[0].range_id, TTL + 1)
    taken = services.ranges.lease(other_node)
    assert taken is not None
    assert taken.range_id == leases[0].range_id


def test_catalog_at_cap_leases_only_negative_priorities(database_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.store import services_for

    services = services_for(database_url, tmp_path, catalog_cap_bytes=1)
    try:
        node, _ = services.nodes.add("w")
        plan(services, "alt.binaries.a", 1, 2_999)
        assert services.ranges.lease(node) is None  # history only, and the catalog is "full"
        services.groups.plan("alt.binaries.a", 1, 3_500)
        lease = services.ranges.lease(node)
        assert lease is not None
        assert lease.priority < 0
    finally:
        services.close()


def test_heartbeat_with_bad_names(services: Services, node: int, other_node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    before = ranges(services)
    with pytest.raises(LeaseLost, match="unknown range 999"):
        services.ranges.heartbeat(999, node, 1)
    with pytest.raises(LeaseLost, match="no lease epoch 5"):
        services.ranges.heartbeat(lease.range_id, node, 5)
    with pytest.raises(LeaseLost, match="not leased to this node|taken over"):
        services.ranges.heartbeat(lease.range_id, other_node, lease.epoch)
    with pytest.raises(LeaseLost, match="unknown range"):
        services.ranges.release(424242, node, 1)
    assert ranges(services) == before


def test_finish_only_past_the_end(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.end - 1, 10)
    before = ranges(services)
    with pytest.raises(RangeError, match="not past its end"):
        services.ranges.finish(lease.range_id, node, lease.epoch)
    assert ranges(services) == before
    services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.end, lease.end, 1)
    done = services.ranges.finish(lease.range_id, node, lease.epoch)
    assert (done.headers, done.lane) == (11, "history")
    row = ranges(services)[lease.range_id]
    assert row["status"] == "done"
    assert row["done_at"] is not None
    group = query(services.db, "SELECT headers_history, headers_tail FROM groups")[0]
    assert (group["headers_history"], group["headers_tail"]) == (11, 0)
    with pytest.raises(LeaseLost, match="finished"):
        services.ranges.heartbeat(lease.range_id, node, lease.epoch)


def test_finish_abandoned_takes_only_quiet_ranges_read_to_their_end(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 1_999)
    read = services.ranges.lease(node)
    half = services.ranges.lease(node)
    assert read is not None and half is not None
    services.ranges.commit_batch(read.range_id, node, read.epoch, read.next, read.end, 5)
    services.ranges.commit_batch(half.range_id, node, half.epoch, half.next, half.next + 10, 5)
    assert services.ranges.finish_abandoned() == []  # both still live
    backdate(services.db, read.range_id, TTL + 1)
    backdate(services.db, half.range_id, TTL + 1)
    done = services.ranges.finish_abandoned()
    assert [d.range_id for d in done] == [read.range_id]
    assert ranges(services)[read.range_id]["status"] == "done"
    assert ranges(services)[half.range_id]["status"] == "leased"  # taken over by the next lease instead


def test_release_puts_the_range_back_at_its_resume_point(
    services: Services, node: int, other_node: int
) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.next + 49, 50)
    services.ranges.release(lease.range_id, node, lease.epoch)
    assert ranges(services)[lease.range_id]["status"] == "planned"
    with pytest.raises(LeaseLost, match="released"):
        services.ranges.heartbeat(lease.range_id, node, lease.epoch)
    again = services.ranges.lease(other_node)
    assert again is not None
    assert (again.range_id, again.next, again.took_over) == (lease.range_id, lease.next + 50, False)


def test_a_range_given_back_on_a_dead_workers_behalf(services: Services, node: int, other_node: int) -> None:
    """Issue 17: the supervisor's release is logged as reclaimed; one read to its end is finished,
    never planned past its end (nothing leases or finishes such a range: it stayed planned for good)."""
    plan(services, "alt.binaries.a", 1, 1_999)
    half = services.ranges.lease(node)
    read = services.ranges.lease(node)
    assert half is not None and read is not None
    services.ranges.commit_batch(half.range_id, node, half.epoch, half.next, half.next + 9, 10)
    services.ranges.commit_batch(read.range_id, node, read.epoch, read.next, read.end, 7)
    assert services.ranges.release(half.range_id, node, half.epoch, reclaim=True) == "released"
    assert services.ranges.release(read.range_id, node, read.epoch, reclaim=True) == "finished"
    rows = ranges(services)
    assert (rows[half.range_id]["status"], rows[half.range_id]["next_id"]) == ("planned", half.next + 10)
    assert rows[read.range_id]["status"] == "done"
    ends = {
        int(r["range_id"]): r["end_reason"]
        for r in query(services.db, "SELECT range_id, end_reason FROM lease_log")
    }
    assert ends == {half.range_id: "reclaimed", read.range_id: "finished"}
    group = query(services.db, "SELECT headers_history FROM groups")[0]
    assert group["headers_history"] == 7  # the finished range's headers counted once
    with pytest.raises(LeaseLost, match="released"):
        services.ranges.release(half.range_id, node, half.epoch, reclaim=True)  # twice: refused
    again = services.ranges.lease(other_node)
    assert again is not None and (again.range_id, again.next) == (half.range_id, half.next + 10)


def test_corrupt_chunk_replans_then_fails_after_a_plain_fetch(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    with pytest.raises(RangeError, match="outside range"):
        services.ranges.corrupt(lease.range_id, node, lease.epoch, 5_000)
    first = services.ranges.corrupt(lease.range_id, node, lease.epoch, 100)
    assert not first.failed
    assert services.ranges.plain_chunks(lease.range_id) == [100]
    assert ranges(services)[lease.range_id]["status"] == "planned"
    # Reported again before any plain copy was fetched (the compressed one was in flight): replanned.
    second_lease = services.ranges.lease(node)
    assert second_lease is not None
    second = services.ranges.corrupt(second_lease.range_id, node, second_lease.epoch, 100)
    assert not second.failed
    services.ranges.mark_fetched_plain(lease.range_id, 100)
    third_lease = services.ranges.lease(node)
    assert third_lease is not None
    third = services.ranges.corrupt(third_lease.range_id, node, third_lease.epoch, 100)
    assert third.failed
    row = ranges(services)[lease.range_id]
    assert row["status"] == "failed"
    assert row["error"] == "chunk 100 doesn't inflate, also fetched plain"
    assert services.ranges.lease(node) is None


def test_a_report_on_the_copy_before_the_plain_one_does_not_fail_the_range(
    services: Services, node: int
) -> None:
    """Issue 14.8: the prefetcher stored the plain copy between a worker's stream of the compressed
    one and its report; the report failed a good range. A report names its copy by CRC-32."""
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    assert not services.ranges.corrupt(lease.range_id, node, lease.epoch, 100, crc=111).failed
    again = services.ranges.lease(node)
    assert again is not None
    services.ranges.mark_fetched_plain(lease.range_id, 100, crc=222)  # while `again` streams copy 111
    late = services.ranges.corrupt(again.range_id, node, again.epoch, 100, crc=111)
    assert not late.failed
    assert ranges(services)[lease.range_id]["status"] == "planned"
    last = services.ranges.lease(node)
    assert last is not None
    assert services.ranges.corrupt(last.range_id, node, last.epoch, 100, crc=222).failed


def test_corrupt_chunk_of_a_captured_range_is_no_longer_stored(services: Services, node: int) -> None:
    services.groups.add("alt.binaries.c", capture=True)
    services.groups.plan("alt.binaries.c", 1, 999)
    query(services.db, "UPDATE ranges SET stored_at = 1")
    lease = services.ranges.lease(node)
    assert lease is not None
    outcome = services.ranges.corrupt(lease.range_id, node, lease.epoch, 1)
    assert outcome.capture
    assert ranges(services)[lease.range_id]["stored_at"] is None


def test_batches_move_the_resume_point_once(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    calls: list[int] = []

    def store(tx: object, row: object) -> dict[str, int]:
        calls.append(1)
        return {"releases": 3}

    receipt = services.ranges.commit_batch(
        lease.range_id, node, lease.epoch, lease.next, lease.next + 9, 10, store
    )
    assert (receipt.next_id, receipt.result, receipt.replayed) == (lease.next + 10, {"releases": 3}, False)
    # The same batch again (its reply was lost): the stored result, nothing stored twice.
    again = services.ranges.commit_batch(
        lease.range_id, node, lease.epoch, lease.next, lease.next + 9, 10, store
    )
    assert (again.result, again.replayed) == ({"releases": 3}, True)
    assert len(calls) == 1
    assert ranges(services)[lease.range_id]["headers"] == 10


@pytest.mark.parametrize(
    ("offset_from", "offset_to", "error", "match"),
    [
        (-5, 20, StaleBatch, "resume point"),  # overlaps the stored batch
        (15, 20, StaleBatch, "resume point"),  # skips articles
        (10, 5_000, RangeError, "runs past"),  # past the range's end
        (10, 5, RangeError, "from <= to"),
    ],
)
def test_batches_that_do_not_fit_store_nothing(
    services: Services, node: int, offset_from: int, offset_to: int, error: type[Exception], match: str
) -> None:
    plan(services, "alt.binaries.a", 1, 1_999)  # the first lease is 1000–1999
    lease = services.ranges.lease(node)
    assert lease is not None
    services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.next + 9, 10)
    before = (ranges(services), query(services.db, "SELECT count(*) AS n FROM batch_log"))
    with pytest.raises(error, match=match):
        services.ranges.commit_batch(
            lease.range_id,
            node,
            lease.epoch,
            lease.next + offset_from,
            lease.next + offset_to,
            1,
            lambda tx, row: pytest.fail("a refused batch must not reach the store"),
        )
    assert (ranges(services), query(services.db, "SELECT count(*) AS n FROM batch_log")) == before


def test_batch_with_more_headers_than_articles_is_refused(services: Services, node: int) -> None:
    plan(services, "alt.binaries.a", 1, 999)
    lease = services.ranges.lease(node)
    assert lease is not None
    with pytest.raises(RangeError, match="cannot hold 11 headers"):
        services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.next + 9, 11)


def test_ttl_must_be_positive(services: Services) -> None:
    with pytest.raises(ValueError, match="positive"):
        RangeLeases(services.db, ttl_seconds=0)
