"""Loose files (per-file random names, issue 16) joined into releases: the pure rules, and the property
that the catalog ends the same whatever the ranges, batches and order the articles arrive in."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Protocol

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.obfuscated import RandomFile, RandomPosting, RandomRelease, plan_random, post_random
from usenet_indexer.indexing import RangeIndexer, default_rules
from usenet_indexer.indexing.fragment import Batch, ReleaseFragment
from usenet_indexer.indexing.grouping import (
    GAP_ARTICLES,
    GAP_SECONDS,
    LaneState,
    LooseFile,
    RangeState,
    Retention,
    Settled,
    bursts,
    group_key,
    group_loose,
    split,
)
from usenet_indexer.indexing.merge import merge
from usenet_indexer.indexing.sample import chunk_text, overview_line

GROUP = "alt.binaries.random"
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Catalog:
    """The batch store and the grouping loop, in memory: fragments merged by key (aliases followed),
    loose releases joined where ``Settled`` says their bursts are final."""

    def __init__(self) -> None:
        self.releases: dict[str, ReleaseFragment] = {}
        self.aliases: dict[str, str] = {}
        self.alone: set[str] = set()

    def store(self, batch: Batch) -> None:
        for fragment in batch.fragments:
            key = self.aliases.get(fragment.key, fragment.key)
            moved = replace(fragment, key=key)
            held = self.releases.get(key)
            self.releases[key] = moved if held is None else merge(held, moved)

    def group(self, settled: Settled | None) -> None:
        grouping = group_loose([r for k, r in self.releases.items() if k not in self.alone], settled)
        for joined in grouping.joined:
            assert joined.release.key not in self.releases
            self.releases[joined.release.key] = joined.release
            for member in joined.members:
                self.aliases[member] = joined.release.key
                del self.releases[member]
        self.alone.update(grouping.alone)

    def found(self) -> list[frozenset[str]]:
        out = [frozenset(m for f in r.files for m in f.message_id_list()) for r in self.releases.values()]
        return sorted(out, key=sorted)


def index(posting: RandomPosting, start: int, end: int, cuts: list[int]) -> list[Batch]:
    """Articles ``start``..``end`` indexed as one range, a batch taken at each cut."""
    lines = {a.number: overview_line(a) for a in posting.posting.articles}
    indexer = RangeIndexer(GROUP, start, end, start, default_rules())
    batches = []
    at = start
    for cut in sorted({c for c in cuts if start <= c < end} | {end}):
        indexer.add_text(chunk_text([lines[n] for n in range(at, cut + 1) if n in lines]), cut + 1)
        at = cut + 1
        if at > end:
            indexer.finish()
        batches.append(indexer.take())
    return batches


def scenario(
    seed: int, releases: int = 14, lost_files: float = 0.0, lost_parts: float = 0.0
) -> RandomPosting:
    rng = random.Random(seed)
    return post_random(
        plan_random(rng, releases), rng, group=GROUP, lost_files=lost_files, lost_parts=lost_parts
    )


def end_of(posting: RandomPosting) -> int:
    # The group goes on past the posting: a burst at its end is final once GAP_ARTICLES more are read.
    return posting.posting.last + GAP_ARTICLES + 10


def one_run(posting: RandomPosting) -> list[frozenset[str]]:
    catalog = Catalog()
    for batch in index(posting, posting.posting.first, end_of(posting), []):
        catalog.store(batch)
    catalog.group(None)
    return catalog.found()


SCENARIOS = [scenario(seed) for seed in (3, 4, 5)]
# Files and parts lost on the way: the plan may not be recoverable (a release missing its last files
# followed by one missing its first), but the result is still the same whatever the cuts.
LOSSY = [scenario(seed, 18, lost_files=0.15, lost_parts=0.05) for seed in (6, 7)]


@pytest.mark.parametrize("s", SCENARIOS, ids=["3", "4", "5"])
def test_one_uninterrupted_run_finds_every_release_once(s: RandomPosting) -> None:
    assert one_run(s) == s.expected()
    assert len(s.expected()) == len(s.releases)


@PROPS
@given(
    st.sampled_from([0, 1, 2, 3, 4]),
    st.randoms(use_true_random=False),
    st.integers(0, 6),
    st.integers(0, 30),
)
def test_any_ranges_batches_and_order_end_in_the_same_releases(
    which: int, rng: random.Random, n_ranges: int, n_cuts: int
) -> None:
    """Ranges indexed a batch at a time in a random interleaving, the grouping run after every batch
    with what is settled then: the catalog ends as one uninterrupted run's, which is the plan's."""
    s = (SCENARIOS + LOSSY)[which]
    first, last = s.posting.first, end_of(s)
    bounds = [first, *sorted(rng.sample(range(first + 1, last), n_ranges)), last + 1]
    ranges = [(bounds[i], bounds[i + 1] - 1) for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]
    cuts = sorted(rng.sample(range(first, last), n_cuts))
    pending = {i: index(s, a, b, cuts) for i, (a, b) in enumerate(ranges)}
    catalog = Catalog()
    store_interleaved(catalog, ranges, pending, rng)
    assert catalog.found() == one_run(s)
    if s in SCENARIOS:
        assert catalog.found() == s.expected()


@PROPS
@given(st.sampled_from([0, 1, 2]), st.randoms(use_true_random=False))
def test_the_grouping_is_a_function_of_the_set(which: int, rng: random.Random) -> None:
    s = SCENARIOS[which]
    catalog = Catalog()
    for batch in index(s, s.posting.first, end_of(s), []):
        catalog.store(batch)
    releases = list(catalog.releases.values())
    reference = group_loose(releases)
    rng.shuffle(releases)
    assert group_loose(releases) == reference
    files = [
        LooseFile(r.key, r.poster, r.file_total, r.first_article, r.last_article, r.first_date, r.last_date)
        for r in releases
    ]
    shuffled = files[:]
    rng.shuffle(shuffled)
    assert bursts(shuffled) == bursts(files)


# ---- the rules, one at a time ----------------------------------------------------------------------


def loose(
    key: str, index: int, first: int, last: int, date: int, *, total: int = 4, poster: str = "p"
) -> LooseFile:
    return LooseFile(key, poster, total, first, last, date, date + (last - first), index)


def keys(releases: list[tuple[LooseFile, ...]]) -> list[list[str]]:
    return [[f.key for f in r] for r in releases]


def test_two_releases_of_one_poster_minutes_apart_stay_two() -> None:
    """Same poster, same file total, 2 minutes apart (within both gaps): one burst, cut where k = 1
    comes back."""
    first = [loose(f"a{k}", k, 100 * k, 100 * k + 50, 1_000 + 60 * k) for k in range(1, 5)]
    second = [loose(f"b{k}", k, 500 + 100 * k, 500 + 100 * k + 50, 1_400 + 60 * k) for k in range(1, 5)]
    (burst,) = bursts(first + second)
    assert keys(split(burst)) == [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]]


def test_a_release_missing_files_is_cut_where_a_k_comes_back() -> None:
    first = [loose(f"a{k}", k, 100 * k, 100 * k + 50, 1_000) for k in (1, 2, 4)]  # file 3 never posted
    second = [loose(f"b{k}", k, 500 + 100 * k, 500 + 100 * k + 50, 1_000) for k in (2, 3, 4)]  # file 1 lost
    (burst,) = bursts(first + second)
    assert keys(split(burst)) == [["a1", "a2", "a4"], ["b2", "b3", "b4"]]


def test_an_nfo_numbered_0_belongs_to_its_release() -> None:
    """Posting tools number an NFO [0/N]: N + 1 files, each k once."""
    first = [loose(f"a{k}", k, 100 * k + 100, 100 * k + 150, 1_000, total=2) for k in (0, 1, 2)]
    second = [loose(f"b{k}", k, 500 + 100 * k, 500 + 100 * k + 50, 1_000, total=2) for k in (0, 1, 2)]
    (burst,) = bursts(first + second)
    assert keys(split(burst)) == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]


def test_a_pause_or_a_stretch_of_other_articles_is_a_new_burst() -> None:
    a = [loose(f"a{k}", k, 100 * k, 100 * k + 50, 1_000) for k in (1, 2)]
    late = [loose("b3", 3, 400, 450, 1_000 + 250 + GAP_SECONDS + 1)]
    far = [loose("c4", 4, 451 + GAP_ARTICLES, 500 + GAP_ARTICLES, 1_100)]
    assert sorted(keys(bursts(a + late + far))) == [["a1", "a2"], ["b3"], ["c4"]]


def test_posters_and_file_totals_never_mix() -> None:
    files = [
        loose("a1", 1, 100, 150, 1_000, poster="p"),
        loose("b2", 2, 200, 250, 1_000, poster="q"),
        loose("c2", 2, 300, 350, 1_000, poster="p", total=5),
    ]
    assert sorted(keys(bursts(files))) == [["a1"], ["b2"], ["c2"]]


def test_a_joined_release_is_keyed_by_its_smallest_message_id() -> None:
    s = SCENARIOS[0]
    catalog = Catalog()
    for batch in index(s, s.posting.first, end_of(s), []):
        catalog.store(batch)
    joined = group_loose(catalog.releases.values()).joined
    assert joined
    for j in joined:
        assert j.release.key == group_key(j.release)
        numbered_0 = any(f.index == 0 for f in j.release.files)  # an NFO posted as [0/N]
        assert len(j.release.files) == len(j.members) == j.release.file_total + numbered_0
        assert j.release.key not in j.members


def test_the_catalog_groups_only_what_is_settled() -> None:
    release = RandomRelease("p", tuple(RandomFile(f"{k:032x}", k, 2) for k in range(1, 4)), 0)
    rng = random.Random(1)
    s = post_random([release], rng, group=GROUP, first=1)
    last = s.posting.last
    catalog = Catalog()
    for batch in index(s, 1, last, []):
        catalog.store(batch)
    catalog.group(Settled([RangeState(1, last, last + 1, "done")]))  # nothing planned past it yet
    assert len(catalog.releases) == 3
    catalog.group(
        Settled([RangeState(1, last, last + 1, "done"), RangeState(last + 1, 10**6, last + 1, "leased")])
    )
    assert len(catalog.releases) == 3  # the next range is leased but not read
    upto = last + GAP_ARTICLES
    catalog.group(
        Settled([RangeState(1, last, last + 1, "done"), RangeState(last + 1, 10**6, upto + 1, "leased")])
    )
    assert catalog.found() == s.expected()


# ---- Settled ---------------------------------------------------------------------------------------


def test_settled_reads_ranges_backfill_and_the_unplanned_tail() -> None:
    settled = Settled(
        [
            RangeState(1_000, 1_999, 2_000, "done"),
            RangeState(2_000, 2_999, 2_500, "leased"),
            RangeState(3_000, 3_999, 3_000, "failed"),
        ]
    )
    assert settled.covers(0, 999)  # below the backfill: never to be indexed
    assert settled.covers(500, 2_499)
    assert not settled.covers(2_400, 2_500)
    assert settled.covers(3_000, 3_999)  # retired: nothing will come
    assert not settled.covers(3_999, 4_000)  # past the planned span
    assert not Settled([]).covers(0, 1)


def test_settled_waits_for_a_lanes_window() -> None:
    ranges = [
        RangeState(1_000, 1_999, 2_000, "done", "history"),
        RangeState(2_000, 9_999, 5_000, "leased", "history"),
    ]
    open_window = Settled(ranges, {"history": LaneState(5_000, flushed=False)}, horizon=3_000)
    assert open_window.covers(1_000, 1_999)  # 5,000 - 3,000: posted past the horizon
    assert not open_window.covers(1_999, 2_000)
    flushed = Settled(ranges[:1], {"history": LaneState(2_000, flushed=True)}, horizon=3_000)
    assert flushed.covers(1_000, 1_999)
    kept = Settled(ranges[:1], {"history": LaneState(2_000, flushed=False)}, horizon=3_000)
    assert not kept.covers(1_000, 1_000)  # given up with releases open in its snapshot


def test_a_burst_at_the_groups_end_is_final_once_quiet() -> None:
    burst = (loose("a1", 1, 900, 950, 10_000), loose("a2", 2, 960, 990, 10_100))
    ranges = [RangeState(1, 1_000, 1_001, "done")]
    latest = 10_100 + 30  # a2's last date
    assert not Settled(ranges).final(burst)  # no watermark: more may be planned
    assert not Settled(ranges, high_water=1_000, quiet_before=latest - 1).final(burst)  # too recent
    assert Settled(ranges, high_water=1_000, quiet_before=latest).final(burst)
    assert not Settled(ranges, high_water=1_200, quiet_before=latest).final(burst)  # posted, not planned
    leased = [RangeState(1, 1_000, 500, "leased")]
    assert not Settled(leased, high_water=1_000, quiet_before=latest).final(burst)  # not read yet


class Grouped(Protocol):
    def store(self, batch: Batch) -> None: ...
    def group(self, settled: Settled) -> None: ...


def store_interleaved(
    target: Grouped, ranges: list[tuple[int, int]], pending: dict[int, list[Batch]], rng: random.Random
) -> None:
    """``pending``'s batches (per range) stored into ``target`` in a random interleaving of the ranges,
    grouped after every batch with what is settled then, and once more with every range done."""
    resume = {i: a for i, (a, _) in enumerate(ranges)}
    while pending:
        i = rng.choice(sorted(pending))
        batch = pending[i].pop(0)
        target.store(batch)
        resume[i] = batch.to_id + 1
        if not pending[i]:
            del pending[i]
        states = [
            RangeState(a, b, resume[i], "done" if resume[i] > b else "leased")
            for i, (a, b) in enumerate(ranges)
        ]
        target.group(Settled(states))
    target.group(Settled([RangeState(a, b, b + 1, "done") for a, b in ranges]))


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("final", [False, True])
def test_retention_lets_a_burst_go_only_whole_and_past_its_bound(full: bool, final: bool) -> None:
    """Retention: every article below the low watermark, final or not. The cap: not final, and every
    article more than the horizon below the high watermark. One article at or past a bound keeps all."""
    rules = Retention(low_water=1_000, high_water=10_000, full=full, horizon=4_000)

    def burst(last: int) -> tuple[LooseFile, ...]:
        return (loose("a", 0, 400, 500, 0), loose("b", 0, last - 10, last, 60))

    assert rules.lets_go(burst(999), final)
    for last in (1_000, 5_999):  # not expired, below the cap's bound
        assert rules.lets_go(burst(last), final) == (full and not final)
    assert not rules.lets_go(burst(6_000), final)
    assert not Retention(low_water=None, high_water=None, full=True).lets_go(burst(999), final)
