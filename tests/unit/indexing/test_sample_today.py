"""The sample's postings in today's styles (``sample.Today``, issue 16): the styles in their stated shares,
deterministic, cross-posts numbered in both groups, subjects as each style's tools write them, and a
poster posting one release at a time."""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict

import pytest

from usenet_indexer.indexing import sample

GROUPS = [
    ("alt.binaries.a", 1_000_001, 12_000),
    ("alt.binaries.b", 5_000_000_001, 9_000),
    ("alt.binaries.c", 7, 6_000),
]
COUNTER = re.compile(r"\[(\d+)/(\d+)\]")
PARTS = re.compile(r"yEnc \((\d+)/(\d+)\)")


def posted(seed: int = 5) -> tuple[sample.Today, list[sample.Placed]]:
    today = sample.Today(GROUPS, seed=seed, start_time=1_700_000_000, releases_per_plan=20)
    return today, list(today.articles())


@pytest.fixture(scope="module")
def made() -> tuple[sample.Today, list[sample.Placed]]:
    return posted()


def test_every_style_in_its_share(made: tuple[sample.Today, list[sample.Placed]]) -> None:
    today, _ = made
    assert sum(sample.STYLES.values()) == sample.DECK
    for releases in today.releases:
        decks = len(releases) // sample.DECK
        assert decks >= 2
        whole = releases[: decks * sample.DECK]
        # Exact in every whole deck: 20 % named, 10 % noisy, 20 % par2, 25 % per-file, 25 % fully random.
        assert Counter(r.scheme for r in whole) == {s: n * decks for s, n in sample.STYLES.items()}
        assert sum(len(r.groups) == 2 for r in whole) == sample.CROSS_POSTED_PER_DECK * decks
        # Obfuscated releases are of the kinds whose name their file names carry.
        assert {r.kind for r in whole if r.scheme in sample.OBFUSCATED} <= {"movie", "tv", "pc", "single"}


@pytest.mark.slow
def test_the_same_seed_posts_the_same_articles(made: tuple[sample.Today, list[sample.Placed]]) -> None:
    _, articles = made
    _, again = posted()
    assert again == articles
    _, other = posted(seed=6)
    assert [a.subject for a, _, _ in other[:500]] != [a.subject for a, _, _ in articles[:500]]


def test_cross_posts_take_a_number_in_both_groups(made: tuple[sample.Today, list[sample.Placed]]) -> None:
    today, articles = made
    names = today.names
    last: dict[str, int] = {name: first - 1 for name, first, _ in GROUPS}
    crossed = 0
    for article, home, numbers in articles:
        assert article.groups[0] == names[home] and len(numbers) == len(article.groups)
        assert len(set(article.groups)) == len(article.groups) and set(article.groups) <= set(names)
        for group, number in zip(article.groups, numbers, strict=True):
            assert number > last[group]  # each group's numbers go up, gaps are cancelled articles
            last[group] = number
        if len(numbers) > 1:
            crossed += 1
            line = sample.overview_line(article, "x@y", number=numbers[1], numbers=numbers).decode()
            fields = line.split("\t")
            assert fields[0] == str(numbers[1])
            assert fields[8] == "Xref: news.example.com " + " ".join(
                f"{g}:{n}" for g, n in zip(article.groups, numbers, strict=True)
            )
    assert crossed > 1000
    # Each group holds at least its own share (and the cross-posts it received on top).
    own = Counter(home for _, home, _ in articles)
    for g, (_, _, at_least) in enumerate(GROUPS):
        assert own[g] >= at_least


def test_subjects_as_each_style_writes_them(made: tuple[sample.Today, list[sample.Placed]]) -> None:
    today, articles = made
    subjects: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for article, home, _ in articles:
        release = today.releases[home][article.release]
        f = release.files[article.file]
        style = release.scheme
        text = article.subject
        subjects[style].append(text)
        if style == "fully_random":
            # Nothing but random text: no counter, no yEnc, no name; a random yEnc name per file.
            assert re.fullmatch(r"[A-Za-z0-9_-]{24}", text), text
            assert f.name == "" and f.yenc != f.real and f.real.startswith(release.real)
            continue
        counter, parts = COUNTER.search(text), PARTS.search(text)
        assert parts is not None and int(parts.group(2)) == f.parts_total
        if style == "per_file_random":
            assert re.fullmatch(r'\[\d+/\d+\] - "[0-9a-f]{32}" yEnc \(\d+/\d+\)', text), text
            assert f.yenc == f.real != f.name and f.real.startswith(release.real)
        elif style == "par2_obfuscated":
            assert f'"{f.name}"' in text and release.collection in f.name and release.real not in text
            assert f.yenc == f.name and f.real == release.real + f.name[len(release.collection) :]
        elif style == "noisy":
            assert f'"{f.real}"' in text and counter is not None and f.yenc == f.real
            assert not text.startswith(("[1", "[0", '"')), text  # text before the counter
            seen.add(release.style)
            if release.style != "noisy_private":
                assert not text.endswith(")"), text  # and text after "yEnc (p/P)"
        else:
            assert f.real in text and f.yenc == f.real
    assert set(subjects) == set(sample.STYLES)
    assert seen == {"noisy_private", "noisy_tagged", "noisy_site"}
    assert any(t.startswith("[PRiVATE]-[") for t in subjects["noisy"])
    assert len(set(subjects["fully_random"])) == len(subjects["fully_random"])  # one of its own each


def test_equal_part_sizes_within_a_file_and_a_shorter_last_part(
    made: tuple[sample.Today, list[sample.Placed]],
) -> None:
    today, articles = made
    for article, home, _ in articles:
        f = today.releases[home][article.release].files[article.file]
        # The overview's Bytes: the part's size and up to 400 bytes of yEnc escaping and headers.
        if article.part < f.parts_total:
            assert f.part_size <= article.size <= f.part_size + 400
        else:
            assert article.size <= f.part_size // 3 + 400 < f.part_size


def test_a_poster_posts_one_release_at_a_time(made: tuple[sample.Today, list[sample.Placed]]) -> None:
    today, articles = made
    spans: dict[tuple[int, int], list[int]] = {}
    for article, home, numbers in articles:
        span = spans.setdefault((home, article.release), [numbers[0], numbers[0]])
        span[1] = numbers[0]
    by_poster: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    for (home, r), (first, last) in spans.items():
        by_poster[(home, today.releases[home][r].poster)].append((first, last))
    shared = 0
    for spans_of_poster in by_poster.values():
        spans_of_poster.sort()
        shared += len(spans_of_poster) > 1
        for (_, end), (start, _) in itertools.pairwise(spans_of_poster):
            assert end < start  # the next release after the previous one's last article
    assert shared >= 5  # posters do post several releases, of several styles
    styles_by_poster: dict[str, set[str]] = defaultdict(set)
    for releases in today.releases:
        for planned in releases:
            styles_by_poster[planned.poster].add(planned.scheme)
    assert max(len(s) for s in styles_by_poster.values()) == len(sample.STYLES)


def test_missing_parts_are_counted(made: tuple[sample.Today, list[sample.Placed]]) -> None:
    today, articles = made
    seen: dict[tuple[int, int], set[tuple[int, int]]] = defaultdict(set)
    for article, home, _ in articles:
        seen[(home, article.release)].add((article.file, article.part))
    for g, releases in enumerate(today.releases):
        assert len(today.missing[g]) == len(releases)
        for r, release in enumerate(releases):
            total = sum(f.parts_total for f in release.files)
            assert total - len(seen[(g, r)]) == today.missing[g][r]
    assert 0 < sum(map(sum, today.missing)) < 0.01 * len(articles)


@pytest.mark.slow
def test_plan_and_post_are_what_they_were() -> None:
    """Golden tests compare the indexer with plan() and post(): their output must not move."""
    import hashlib
    import random

    digest = hashlib.sha256()
    for seed in range(40):
        rng = random.Random(seed)
        plan = sample.plan(rng, 30, "alt.binaries.test", max_parts=40)
        for a in sample.post(plan, rng).articles:
            digest.update(sample.overview_line(a))
        for r in plan:
            files = [
                (f.name, f.index, f.parts_total, f.part_size, sample.unobfuscated_file(r, f)) for f in r.files
            ]
            digest.update(
                repr(
                    (
                        r.collection,
                        r.poster,
                        r.style,
                        r.groups,
                        r.kind,
                        r.request_id,
                        files,
                        sample.unobfuscated(r),
                    )
                ).encode()
            )
    assert digest.hexdigest() == "e2f5236464a90a780f27ab7657d78d1292fb2e3b22b87912b47df77937cfd346"
