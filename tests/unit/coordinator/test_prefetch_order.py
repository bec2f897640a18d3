"""The order the prefetcher fetches chunks in: ranges taking turns, a chunk each (issue 17)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from usenet_indexer.coordinator.loops.prefetcher import in_turn


def test_leased_ranges_all_take_turns() -> None:
    ranges = [["a1", "a2", "a3"], ["b1", "b2"], ["c1"]]
    assert in_turn(ranges, len(ranges)) == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_planned_ranges_two_at_a_time_the_next_taking_a_finished_ones_place() -> None:
    """Two workers lease the first two planned ranges at once: both find a first chunk at the start,
    where the second used to wait for the whole first range."""
    ranges = [["a1", "a2", "a3"], ["b1"], ["c1", "c2"], ["d1"]]
    assert in_turn(ranges, 2) == ["a1", "b1", "a2", "c1", "a3", "c2", "d1"]


def test_one_at_a_time_is_range_after_range() -> None:
    assert in_turn([["a1", "a2"], [], ["c1"]], 1) == ["a1", "a2", "c1"]


@given(st.lists(st.lists(st.integers(), max_size=6), max_size=8), st.integers(0, 10))
def test_every_chunk_once_each_range_in_its_own_order(ranges: list[list[int]], width: int) -> None:
    tagged = [[(i, k, v) for k, v in enumerate(jobs)] for i, jobs in enumerate(ranges)]
    order = in_turn(tagged, width)
    assert sorted(order) == sorted(job for jobs in tagged for job in jobs)
    for i in range(len(tagged)):
        assert [k for r, k, _ in order if r == i] == list(range(len(tagged[i])))
