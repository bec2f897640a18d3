"""The planning primitive: watermarks in, ranges out, every article planned exactly once."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.articles import aligned
from usenet_indexer.leases.planning import (
    MAX_PLANNED_RANGES,
    TAIL_PRIORITY,
    PlanCursor,
    PlannedRange,
    PlanSizes,
    cut,
    plan_ranges,
)

SIZES = PlanSizes(range_articles=1000, era_articles=10_000, tail_min_articles=10)


def covered(ranges: list[PlannedRange]) -> list[int]:
    return sorted(a for r in ranges for a in range(r.start, r.end + 1))


def test_first_plan_is_history_down_to_the_low_watermark() -> None:
    planned, cursor = plan_ranges(PlanCursor(), 1, 2_500, None, SIZES)
    assert [(r.start, r.end) for r in planned] == [(2000, 2500), (1000, 1999), (1, 999)]
    assert all(r.priority == 0 for r in planned)
    assert cursor == PlanCursor(tail_next=2501, history_low=1)


@pytest.mark.parametrize(
    ("cursor", "low", "high"),
    [(PlanCursor(), 0, 2**62), (PlanCursor(), 1, 10**15), (PlanCursor(5001, 1), 1, 2**62)],
)
def test_watermarks_calling_for_too_many_ranges_are_refused_at_once(
    cursor: PlanCursor, low: int, high: int
) -> None:
    """A plan of 1-4611686018427387904 (typed in the admin form) built ranges for hours."""
    started = time.monotonic()
    with pytest.raises(ValueError, match="ranges of 1,000 articles, more than 100,000 at once"):
        plan_ranges(cursor, low, high, None, SIZES)
    assert time.monotonic() - started < 0.1


def test_the_largest_plan_allowed() -> None:
    top = MAX_PLANNED_RANGES * 1000 - 1  # ranges 0-999, …: exactly the cap
    planned, _ = plan_ranges(PlanCursor(), 0, top, None, SIZES)
    assert len(planned) == MAX_PLANNED_RANGES
    with pytest.raises(ValueError, match="100,001 ranges"):
        plan_ranges(PlanCursor(), 0, top + 1, None, SIZES)


def test_backfill_limits_history_to_the_newest_articles() -> None:
    planned, cursor = plan_ranges(PlanCursor(), 1, 25_000, 1_500, SIZES)
    assert [(r.start, r.end) for r in planned] == [(25_000, 25_000), (24_000, 24_999), (23_501, 23_999)]
    assert cursor.history_low == 23_501


def test_history_priorities_are_eras_oldest_first() -> None:
    planned, _ = plan_ranges(PlanCursor(), 1, 35_000, None, SIZES)
    by_start = {r.start: r.priority for r in planned}
    assert by_start[1] == 0
    assert by_start[10_000] == 1
    assert by_start[35_000] == 3


def test_tail_follows_the_high_watermark_and_waits_for_enough_articles() -> None:
    _, cursor = plan_ranges(PlanCursor(), 1, 1_000, None, SIZES)
    planned, after = plan_ranges(cursor, 1, 1_005, None, SIZES)
    assert planned == []  # 5 new articles: fewer than tail_min_articles
    assert after == cursor
    planned, after = plan_ranges(cursor, 1, 2_100, None, SIZES)
    assert [(r.start, r.end, r.priority) for r in planned] == [
        (1_001, 1_999, TAIL_PRIORITY),
        (2_000, 2_100, TAIL_PRIORITY),
    ]
    assert after.tail_next == 2_101


def test_empty_group_plans_nothing_until_articles_arrive() -> None:
    planned, cursor = plan_ranges(PlanCursor(), 5, 4, None, SIZES)
    assert planned == []
    planned, _ = plan_ranges(cursor, 5, 100, None, SIZES)
    assert covered(planned) == list(range(5, 101))


@settings(max_examples=200, deadline=None)
@given(
    low=st.integers(0, 50_000),
    steps=st.lists(st.tuples(st.integers(0, 20_000), st.integers(0, 3_000)), min_size=1, max_size=6),
    backfill=st.one_of(st.none(), st.integers(0, 60_000)),
)
def test_every_article_is_planned_at_most_once_and_tail_is_contiguous(
    low: int, steps: list[tuple[int, int]], backfill: int | None
) -> None:
    cursor = PlanCursor()
    everything: list[PlannedRange] = []
    high = low - 1
    for growth, backfill_growth in steps:
        high += growth
        if backfill is not None:
            backfill += backfill_growth
        planned, cursor = plan_ranges(cursor, low, high, backfill, SIZES)
        everything += planned
    articles = covered(everything)
    assert len(articles) == len(set(articles)), "an article planned twice"
    for r in everything:
        assert r.start <= r.end
        assert r.end - r.start < SIZES.range_articles
        assert (r.start // SIZES.range_articles) == (r.end // SIZES.range_articles)  # aligned
    if articles:
        assert articles == list(range(articles[0], articles[-1] + 1)), "a hole between planned ranges"
        assert articles[-1] <= high
        assert articles[0] >= low


# -- ranges cut for the workers (issue 17) ----------------------------------------------------------

RUN_SIZES = PlanSizes(1_000_000, 10_000_000, 10_000, chunk_articles=20_000, spread=8)


def test_a_group_smaller_than_its_workers_ranges_is_shared_among_them() -> None:
    """At the defaults a 1,000,000-article group made a range of 999,999 and one of a single article:
    one of two workers indexed everything. Cut for `run`'s two workers, it makes eight of a size."""
    planned, cursor = plan_ranges(PlanCursor(), 1, 1_000_000, None, RUN_SIZES)
    spans = sorted((r.start, r.end) for r in planned)
    assert spans == [
        (1, 119_999),
        (120_000, 239_999),
        (240_000, 379_999),
        (380_000, 499_999),
        (500_000, 619_999),
        (620_000, 759_999),
        (760_000, 879_999),
        (880_000, 1_000_000),
    ]
    assert cursor == PlanCursor(tail_next=1_000_001, history_low=1)
    assert [r.start for r in planned] == sorted((r.start for r in planned), reverse=True)  # newest first


def test_a_big_stretch_keeps_its_aligned_ranges_and_a_tiny_one_is_one_chunk() -> None:
    planned, _ = plan_ranges(PlanCursor(), 1, 20_000_000, None, RUN_SIZES)
    assert len(planned) == 21  # as without a spread: 8 or more ranges already
    assert all(r.start // 1_000_000 == r.end // 1_000_000 for r in planned)
    planned, _ = plan_ranges(PlanCursor(), 1, 15_000, None, RUN_SIZES)
    assert [(r.start, r.end) for r in planned] == [(1, 15_000)]  # one chunk: nothing to share
    planned, _ = plan_ranges(PlanCursor(), 1, 99_999, None, RUN_SIZES)
    assert sorted((r.start, r.end) for r in planned) == [(1, 39_999), (40_000, 99_999)]  # 2 chunks each


@settings(max_examples=300, deadline=None)
@given(
    first=st.integers(0, 3_000),
    length=st.integers(1, 12_000),
    chunk=st.sampled_from([1, 7, 50, 100]),
    per_range=st.integers(1, 20),
    spread=st.integers(1, 12),
)
def test_cut_covers_its_stretch_once_in_whole_chunks(
    first: int, length: int, chunk: int, per_range: int, spread: int
) -> None:
    sizes = PlanSizes(chunk * per_range, 10**9, 1, chunk_articles=chunk, spread=spread)
    last = first + length - 1
    spans = cut(first, last, sizes)
    assert spans[0][0] == first and spans[-1][1] == last
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans)), "a hole or an overlap"
    chunks = aligned(first, last, chunk)
    edges = {c[0] for c in chunks}
    assert all(start in edges for start, _ in spans), "a range that starts inside a chunk"
    assert all(end - start < sizes.range_articles for start, end in spans)
    assert len(spans) >= min(spread, len(chunks) // 2)
    if len(spans) > len(aligned(first, last, sizes.range_articles)):
        # Shared out: the ranges' chunk counts differ by one at most.
        counts = [sum(1 for c in chunks if start <= c[0] <= end) for start, end in spans]
        assert max(counts) - min(counts) <= 1


def test_plan_sizes_refuse_ranges_that_are_not_whole_chunks() -> None:
    with pytest.raises(ValueError, match="multiple of chunk_articles"):
        PlanSizes(1_000, 10_000, 10, chunk_articles=300)
    with pytest.raises(ValueError, match="spread"):
        PlanSizes(1_000, 10_000, 10, spread=0)
