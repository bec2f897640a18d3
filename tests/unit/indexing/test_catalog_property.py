"""The same overview, split into any ranges and batches, processed in any order, gives the same catalog;
and a group lane with takeovers from snapshots at random points gives the same again."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing.merge import merge_all
from usenet_indexer.indexing.window import Window, WindowError

from .drive import GROUP, catalog, lane, run_range, scenario, single_run

# Each test runs on the C accelerator and on the pure-Python path (conftest.py).
pytestmark = pytest.mark.usefixtures("indexing_path")

SCENARIOS = [
    scenario(seed, releases=9, max_parts=15, duplicate=0.03, missing=0.03, shuffle=0.2) for seed in (1, 2)
]
REFERENCE = [catalog(single_run(s)) for s in SCENARIOS]
PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _points(rng: random.Random, first: int, last: int, count: int) -> list[int]:
    return sorted(rng.sample(range(first, last), min(count, last - first)))


@PROPS
@given(st.sampled_from([0, 1]), st.randoms(use_true_random=False), st.integers(0, 5), st.integers(1, 30))
def test_any_ranges_batches_and_order_give_the_same_catalog(
    which: int, rng: random.Random, n_ranges: int, n_cuts: int
) -> None:
    s = SCENARIOS[which]
    first, last = s.posting.first, s.posting.last
    bounds = [first, *_points(rng, first + 1, last, n_ranges), last + 1]
    cuts = _points(rng, first, last, n_cuts)
    takes = set(rng.sample(cuts, rng.randint(0, len(cuts))))
    ranges = list(itertools.pairwise(bounds))
    rng.shuffle(ranges)  # leased and stored in any order
    batches = [b for start, stop in ranges for b in run_range(s, start, stop - 1, cuts, takes)]
    rng.shuffle(batches)
    assert catalog(batches) == REFERENCE[which]


@PROPS
@given(
    st.sampled_from([0, 1]),
    st.randoms(use_true_random=False),
    st.integers(0, 4),
    st.integers(1, 25),
    st.sampled_from([50, 400, 10**9]),
)
def test_lane_with_takeovers_from_snapshots_ends_as_an_uninterrupted_run(
    which: int, rng: random.Random, n_ranges: int, n_cuts: int, horizon: int
) -> None:
    s = SCENARIOS[which]
    first, last = s.posting.first, s.posting.last
    bounds = [first, *_points(rng, first + 1, last, n_ranges), last + 1]
    cuts = _points(rng, first, last, n_cuts)
    takes = set(rng.sample(cuts, rng.randint(0, len(cuts))))
    stops = {c + 1 for c in takes} | {b for b in bounds[1:]}
    interrupt = set(rng.sample(sorted(stops), rng.randint(1, len(stops))))
    calm, calm_window = lane(s, bounds, cuts, takes, set(), horizon)
    stormy, stormy_window = lane(s, bounds, cuts, takes, interrupt, horizon)
    assert stormy == calm
    assert stormy_window == calm_window
    assert stormy_window.snapshot() == calm_window.snapshot()
    # And the catalog: what the lane posted, plus what it still holds, is the catalog of one batch.
    assert merge_all([*(f for b in stormy for f in b.fragments), *stormy_window.flush()]) == REFERENCE[which]


def test_lane_posts_complete_releases_and_keeps_open_ones() -> None:
    s = SCENARIOS[0]
    first, last = s.posting.first, s.posting.last
    posted, window = lane(s, [first, last + 1], [], set(), set(), horizon=10**9)
    emitted = [f for b in posted for f in b.fragments]
    assert emitted, "some release of the plan is complete"
    assert window.open_releases, "and some is not (missing parts)"
    assert not set(window.open_releases) & {f.key for f in emitted}


def test_snapshot_round_trip_and_refusals() -> None:
    s = SCENARIOS[1]
    posted, window = lane(s, [s.posting.first, s.posting.last + 1], [], set(), set(), horizon=10**9)
    again = Window.restore(window.snapshot())
    assert again == window
    with pytest.raises(WindowError, match="not gzip"):
        Window.restore(b"nope")
    with pytest.raises(WindowError, match="inflates past"):
        Window.restore(window.snapshot(), max_inflated=100)
    with pytest.raises(WindowError, match="truncated"):
        Window.restore(window.snapshot()[:-12])
    with pytest.raises(WindowError, match="behind the window"):
        window.absorb(posted[0])


def test_window_refuses_a_bad_horizon() -> None:
    with pytest.raises(WindowError):
        Window(GROUP, horizon=0)
