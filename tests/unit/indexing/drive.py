"""Driving the indexer the ways workers do, and what the plan says the catalog must hold."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from usenet_indexer.indexing import sample
from usenet_indexer.indexing.fragment import Batch, ReleaseFragment
from usenet_indexer.indexing.indexer import RangeIndexer, release_key
from usenet_indexer.indexing.merge import merge_all
from usenet_indexer.indexing.naming import clean_name
from usenet_indexer.indexing.rules import RuleSet, default_rules
from usenet_indexer.indexing.window import Window

GROUP = "alt.binaries.test"


@dataclass(frozen=True)
class Scenario:
    plan: list[sample.PlannedRelease]
    posting: sample.Posting
    lines: dict[int, bytes]  # article number -> overview line


def scenario(seed: int, releases: int = 12, max_parts: int = 20, **post: float) -> Scenario:
    rng = random.Random(seed)
    plan = sample.plan(rng, releases, GROUP, max_parts=max_parts)
    posting = sample.post(plan, rng, **post)  # type: ignore[arg-type]
    return Scenario(plan, posting, {a.number: sample.overview_line(a) for a in posting.articles})


def chunk(s: Scenario, start: int, end: int) -> bytes:
    return sample.chunk_text([s.lines[n] for n in range(start, end + 1) if n in s.lines])


def run_range(
    s: Scenario,
    start: int,
    end: int,
    cuts: list[int],
    takes: set[int],
    rules: RuleSet | None = None,
    resume_at: int | None = None,
) -> list[Batch]:
    """Index [start, end] with chunks ending at each of ``cuts`` (and at end), taking after ``takes``."""
    indexer = RangeIndexer(
        GROUP, start, end, start if resume_at is None else resume_at, rules or default_rules()
    )
    batches = []
    at = indexer.next_article
    for cut in sorted({c for c in cuts if at <= c < end} | {end}):
        indexer.add_text(chunk(s, at, cut), cut + 1)
        at = cut + 1
        if at > end:
            indexer.finish()
        if cut in takes or at > end:
            batches.append(indexer.take())
    return batches


def catalog(batches: list[Batch]) -> dict[str, ReleaseFragment]:
    return merge_all(f for b in batches for f in b.fragments)


def single_run(s: Scenario) -> list[Batch]:
    return run_range(s, s.posting.first, s.posting.last, [], set())


@dataclass(frozen=True)
class Expected:
    key: str
    name: str
    poster: str
    groups: tuple[str, ...]
    file_total: int
    # file name -> {part: (size, message_id, article)}
    files: dict[str, dict[int, tuple[int, str, int]]]
    first_date: int
    last_date: int
    # file name -> the subject its part 1 was (or would have been) posted under (issue 16)
    subjects: dict[str, str]


def expected(s: Scenario) -> dict[str, Expected]:
    """The catalog the plan and posting call for, computed without the indexer's code paths."""
    out: dict[str, Expected] = {}
    by_release: dict[int, list[sample.Article]] = {}
    for a in s.posting.articles:
        by_release.setdefault(a.release, []).append(a)
    for r, articles in by_release.items():
        release = s.plan[r]
        files: dict[str, dict[int, tuple[int, str, int]]] = {}
        for a in sorted(articles, key=lambda a: a.number):
            parts = files.setdefault(release.files[a.file].name, {})
            parts.setdefault(a.part, (a.size, a.message_id, a.number))  # a repost: the first article wins
        first = min(articles, key=lambda a: a.number)
        last = max(articles, key=lambda a: a.number)
        key = release_key(release.poster, release.collection, release.file_total)
        out[key] = Expected(
            key=key,
            name=clean_name(release.collection),
            poster=release.poster,
            groups=tuple(sorted({GROUP, *release.groups})),
            file_total=release.file_total,
            files=files,
            first_date=first.date,
            last_date=last.date,
            subjects={
                release.files[a.file].name: sample.subject(release, release.files[a.file], 1)
                for a in articles
            },
        )
    return out


def lane(
    s: Scenario, bounds: list[int], cuts: list[int], takes: set[int], interrupt: set[int], horizon: int
) -> tuple[list[Batch], Window]:
    """A group lane over ranges [bounds[k], bounds[k+1]-1], with a takeover from the snapshot after each
    batch that ends just before an article in ``interrupt``."""
    window = Window(GROUP, horizon=horizon)
    posted: list[Batch] = []
    for start, stop in itertools.pairwise(bounds):
        end = stop - 1
        indexer = RangeIndexer(GROUP, start, end, start, default_rules())
        at = start
        for cut in sorted({c for c in cuts if start <= c < end} | {end}):
            indexer.add_text(chunk(s, at, cut), cut + 1)
            at = cut + 1
            if at > end:
                indexer.finish()
            if cut in takes or at > end:
                posted.append(window.absorb(indexer.take()))
                if at in interrupt:
                    # The worker dies here; the next holder restores the snapshot and resumes at `at`.
                    window = Window.restore(window.snapshot())
                    resumed = RangeIndexer(GROUP, start, end, at, default_rules())
                    if at <= end:
                        indexer = resumed
    return posted, window
