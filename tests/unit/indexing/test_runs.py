"""Loose articles (fully random subjects, issue 16): the indexer keeps binary-sized lines no rule reads
as runs, the same whatever the batch cuts; the wire carries them (version 3) and the coordinator's
checks hold them to the lease; the grouping joins them into bursts whatever the ranges, batches and
order, never splitting a release nor mixing posters."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.obfuscated import RandomPosting, plan_random, post_random
from tests.unit.indexing.test_grouping import store_interleaved
from usenet_indexer import accelerator
from usenet_indexer.indexing import RangeIndexer, default_rules
from usenet_indexer.indexing.fragment import Batch, ReleaseFragment
from usenet_indexer.indexing.grouping import (
    GAP_ARTICLES,
    LooseFile,
    RangeState,
    Settled,
    bursts,
    join_runs,
)
from usenet_indexer.indexing.merge import merge
from usenet_indexer.indexing.runs import LOOSE_MIN_BYTES, RUN_ARTICLES, article_file, run_key, worth_joining
from usenet_indexer.indexing.sample import Article, chunk_text, overview_line
from usenet_indexer.wire.batch import BatchError, check_authority, decode_batch, encode_batch

GROUP = "alt.binaries.random"
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fully_random(posting: RandomPosting, seed: int) -> RandomPosting:
    """The posting with every article under a random subject of its own (no [k/N], no (p/P))."""
    rng = random.Random(seed)
    articles = [
        replace(a, subject="".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789-_", k=24)))
        for a in posting.posting.articles
    ]
    posting.posting.articles[:] = articles
    return posting


def scenario(seed: int, releases: int = 10) -> RandomPosting:
    rng = random.Random(seed)
    return fully_random(post_random(plan_random(rng, releases), rng, group=GROUP), seed)


SCENARIOS = [scenario(seed) for seed in (11, 12, 13)]


def index(
    articles: list[Article], start: int, end: int, cuts: list[int], native: bool | None = None
) -> list[Batch]:
    lines = {a.number: overview_line(a) for a in articles}
    indexer = RangeIndexer(GROUP, start, end, start, default_rules(), native=native)
    out = []
    at = start
    for cut in sorted({c for c in cuts if start <= c < end} | {end}):
        indexer.add_text(chunk_text([lines[n] for n in range(at, cut + 1) if n in lines]), cut + 1)
        at = cut + 1
        if at > end:
            indexer.finish()
        out.append(indexer.take())
    return out


def end_of(posting: RandomPosting) -> int:
    return posting.posting.last + GAP_ARTICLES + 10


def merged_runs(batches: list[Batch]) -> dict[str, ReleaseFragment]:
    runs: dict[str, ReleaseFragment] = {}
    for batch in batches:
        for run in batch.runs:
            held = runs.get(run.key)
            # merge() judges ``obfuscated`` from the name, which a run has none of: the store keeps it true.
            runs[run.key] = run if held is None else replace(merge(held, run), obfuscated=True)
    return runs


# ---- the indexer ------------------------------------------------------------------------------------


@pytest.mark.parametrize("native", [False, True])
def test_binary_sized_lines_no_rule_reads_become_runs(native: bool) -> None:
    if native and accelerator.speedups is None:
        pytest.skip(f"the C accelerator is not built: {accelerator.REASON}")
    base = SCENARIOS[0].posting.articles[:40]
    text = Article(
        base[-1].number + 1, "a text post", "talker@x", base[-1].date, "t1@x", 900, (GROUP,), 0, 0, 1
    )
    articles = [*base, text]
    (batch,) = index(articles, base[0].number, text.number, [], native=native)
    assert batch.fragments == ()
    assert batch.unmatched == len(articles)  # still counted: no rule reads them
    kept = {f.name for run in batch.runs for f in run.files}
    assert kept == {a.message_id for a in base}  # every binary-sized one, not the text post
    assert all(a.size >= LOOSE_MIN_BYTES for a in base) and text.size < LOOSE_MIN_BYTES
    for run in batch.runs:
        block = run.first_article // RUN_ARTICLES
        assert run.key == run_key(run.poster, GROUP, block)
        assert all(f.articles[0] // RUN_ARTICLES == block for f in run.files)
        assert all(f.subject for f in run.files)  # the subject posted, for the NZB


def test_the_native_and_the_python_loops_make_the_same_runs() -> None:
    if accelerator.speedups is None:
        pytest.skip(f"the C accelerator is not built: {accelerator.REASON}")
    s = SCENARIOS[1]
    a = index(s.posting.articles, s.posting.first, s.posting.last, [s.posting.first + 57], native=True)
    b = index(s.posting.articles, s.posting.first, s.posting.last, [s.posting.first + 57], native=False)
    assert [x.runs for x in a] == [x.runs for x in b]


@PROPS
@given(st.sampled_from([0, 1, 2]), st.lists(st.integers(0, 10**6), max_size=25))
def test_runs_are_the_same_whatever_the_batch_cuts(which: int, cuts: list[int]) -> None:
    s = SCENARIOS[which]
    first, last = s.posting.first, s.posting.last
    whole = merged_runs(index(s.posting.articles, first, last, []))
    cut = merged_runs(index(s.posting.articles, first, last, [first + c % (last - first) for c in cuts]))
    assert cut == whole


# ---- the wire and the coordinator's checks ----------------------------------------------------------


def one_batch() -> tuple[Batch, int, int]:
    s = SCENARIOS[0]
    (batch,) = index(s.posting.articles, s.posting.first, s.posting.last, [])
    return batch, s.posting.first, s.posting.last


def test_runs_round_trip_on_the_wire() -> None:
    batch, low, high = one_batch()
    assert batch.runs
    wire = decode_batch(encode_batch(batch, 7, 2))
    assert wire.batch == batch
    assert check_authority(wire.batch, group=GROUP, low=low, high=high) == batch


def test_a_version_2_body_is_refused_saying_to_upgrade() -> None:
    batch, _, _ = one_batch()
    body = b"UIB2" + encode_batch(batch, 7, 2)[4:]
    with pytest.raises(BatchError, match="wire version 2.*upgrade the worker"):
        decode_batch(body)


def forged(batch: Batch, **change: object) -> Batch:
    return replace(batch, runs=(replace(batch.runs[0], **change), *batch.runs[1:]))  # type: ignore[arg-type]


def test_a_run_under_a_key_it_does_not_make_is_refused() -> None:
    batch, low, high = one_batch()
    other = run_key("someone else", GROUP, batch.runs[0].first_article // RUN_ARTICLES)
    with pytest.raises(BatchError, match=r"runs\[0\].*key"):
        check_authority(forged(batch, key=other), group=GROUP, low=low, high=high)
    with pytest.raises(BatchError, match=r"runs\[0\].*key"):
        check_authority(batch, group="alt.binaries.elsewhere", low=low, high=high)


def test_a_run_of_articles_outside_the_lease_is_refused() -> None:
    batch, _, high = one_batch()
    run = batch.runs[0]
    with pytest.raises(BatchError, match="outside this lease"):
        check_authority(batch, group=GROUP, low=run.first_article + 1, high=high)


def test_a_run_whose_files_are_not_its_articles_is_refused() -> None:
    batch, low, high = one_batch()
    run = batch.runs[0]
    f = run.files[0]
    renamed = replace(f, name="Popular.Release.part01.rar")
    with pytest.raises(BatchError, match="one article named by its message-id"):
        check_authority(forged(batch, files=(renamed, *run.files[1:])), group=GROUP, low=low, high=high)
    far = article_file(run.last_article + 5, 700_000, "far@x", "s")
    with pytest.raises(BatchError, match="outside the run's articles"):
        check_authority(
            forged(batch, files=tuple(sorted([*run.files, far], key=lambda x: x.name))),
            group=GROUP,
            low=low,
            high=high,
        )


# ---- grouping: bursts of runs --------------------------------------------------------------------------


def files_of(runs: dict[str, ReleaseFragment]) -> list[LooseFile]:
    return [
        LooseFile(r.key, r.poster.casefold(), 0, r.first_article, r.last_article, r.first_date, r.last_date)
        for r in runs.values()
    ]


class Runs:
    """The batch store's runs and the grouping loop's bursts, in memory."""

    def __init__(self) -> None:
        self.runs: dict[str, ReleaseFragment] = {}
        self.joined: dict[str, ReleaseFragment] = {}
        self.aliases: set[str] = set()

    def store(self, batch: Batch) -> None:
        for run in batch.runs:
            if run.key in self.aliases:
                continue
            held = self.runs.get(run.key)
            self.runs[run.key] = run if held is None else merge(held, run)

    def group(self, settled: Settled) -> None:
        for burst in bursts(files_of(self.runs)):
            if not settled.final(burst):
                continue
            members = [self.runs.pop(f.key) for f in burst]
            self.aliases.update(f.key for f in burst)
            sizes = [s for r in members for f in r.files for s in f.sizes]
            if worth_joining(len(sizes), max(sizes)):
                release = join_runs(members)
                self.joined[release.key] = release

    def found(self) -> list[frozenset[str]]:
        return sorted(
            (frozenset(m for f in r.files for m in f.message_id_list()) for r in self.joined.values()),
            key=sorted,
        )


def one_run(s: RandomPosting) -> list[frozenset[str]]:
    runs = Runs()
    for batch in index(s.posting.articles, s.posting.first, end_of(s), []):
        runs.store(batch)
    runs.group(Settled([RangeState(s.posting.first, end_of(s), end_of(s) + 1, "done")]))
    return runs.found()


@pytest.mark.parametrize("s", SCENARIOS, ids=["11", "12", "13"])
def test_a_burst_is_whole_releases_of_one_poster(s: RandomPosting) -> None:
    poster_of = {m: s.releases[r].poster for r, ids in s.message_ids.items() for m in ids}
    release_of = {m: r for r, ids in s.message_ids.items() for m in ids}
    found = one_run(s)
    assert sorted(m for burst in found for m in burst) == sorted(poster_of)  # every article, once
    for burst in found:
        assert len({poster_of[m] for m in burst}) == 1
        for r in {release_of[m] for m in burst}:
            assert s.message_ids[r] <= burst  # never a release split between bursts
    # Releases of one poster are joined in one burst when nothing parts them in the overview (a pause
    # within one block of RUN_ARTICLES is not seen: a run keeps its first and last dates): the probe
    # tells them apart by their PAR2 (indexing/bursts.py, test_bursts.py).


@PROPS
@given(
    st.sampled_from([0, 1, 2]),
    st.randoms(use_true_random=False),
    st.integers(0, 6),
    st.integers(0, 30),
)
def test_any_ranges_batches_and_order_end_in_the_same_bursts(
    which: int, rng: random.Random, n_ranges: int, n_cuts: int
) -> None:
    s = SCENARIOS[which]
    first, last = s.posting.first, end_of(s)
    bounds = [first, *sorted(rng.sample(range(first + 1, last), n_ranges)), last + 1]
    ranges = [(bounds[i], bounds[i + 1] - 1) for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]
    cuts = sorted(rng.sample(range(first, last), n_cuts))
    pending = {i: index(s.posting.articles, a, b, cuts) for i, (a, b) in enumerate(ranges)}
    runs = Runs()
    store_interleaved(runs, ranges, pending, rng)
    assert runs.found() == one_run(s)
