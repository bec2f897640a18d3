"""Golden tests: generated postings in, exactly the planned releases out."""

from __future__ import annotations

import itertools

import pytest

from usenet_indexer.indexing.categories import categorize
from usenet_indexer.indexing.fragment import ReleaseFragment
from usenet_indexer.indexing.merge import is_complete, totals

from .drive import GROUP, Expected, catalog, expected, run_range, scenario, single_run

# Each test runs on the C accelerator and on the pure-Python path (conftest.py).
pytestmark = pytest.mark.usefixtures("indexing_path")


def _check(found: dict[str, ReleaseFragment], want: dict[str, Expected]) -> None:
    assert set(found) == set(want)
    for key, w in want.items():
        r = found[key]
        assert r.name == w.name
        assert r.poster == w.poster
        assert r.groups == w.groups
        assert r.file_total == w.file_total
        assert r.first_date == w.first_date
        assert r.last_date == w.last_date
        assert {f.name for f in r.files} == set(w.files)
        assert {f.name: f.subject for f in r.files} == w.subjects  # as posted, at part 1
        for f in r.files:
            parts = w.files[f.name]
            assert list(f.parts) == sorted(parts)
            assert [(s.size, s.message_id, s.article) for s in f.segments()] == [
                parts[p] for p in sorted(parts)
            ]


@pytest.mark.parametrize("seed", range(6))
def test_one_batch_gives_the_planned_releases(seed: int) -> None:
    s = scenario(seed, releases=14)
    batches = single_run(s)
    assert len(batches) == 1
    batch = batches[0]
    assert batch.from_id == s.posting.first
    assert batch.to_id == s.posting.last
    assert batch.headers == len(s.posting.articles)
    assert batch.gaps == (s.posting.last - s.posting.first + 1) - len(s.posting.articles)
    assert batch.malformed == {}
    assert batch.unmatched == 0
    assert batch.undated == 0
    _check(catalog(batches), expected(s))


@pytest.mark.parametrize("seed", range(4))
def test_releases_spanning_ranges_and_batches_merge_into_one(seed: int) -> None:
    s = scenario(seed, releases=10)
    first, last = s.posting.first, s.posting.last
    third = (last - first) // 3
    bounds = [first, first + third, first + 2 * third, last + 1]
    cuts = list(range(first + 97, last, 131))
    batches = []
    for start, stop in itertools.pairwise(bounds):
        batches += run_range(s, start, stop - 1, cuts, set(cuts[::3]))
    assert len(batches) > 3
    assert sum(b.headers for b in batches) == len(s.posting.articles)
    _check(catalog(batches), expected(s))


def test_par2_volumes_nfo_and_sfv_join_their_release() -> None:
    s = scenario(11, releases=20, missing=0.0)
    found = catalog(single_run(s))
    assert len(found) == len(s.plan)
    want = expected(s)
    volumes = 0
    for key, w in want.items():
        members = {name for name in w.files if name.endswith((".par2", ".nfo", ".sfv"))}
        assert members <= {f.name for f in found[key].files}
        volumes += sum(".vol" in name for name in members)
    assert volumes > 0
    # No release consists only of par2 files: they always travel with their set.
    for r in found.values():
        assert not all(f.name.endswith(".par2") for f in r.files), r.name


def test_obfuscated_releases_become_probe_candidates_with_their_par2() -> None:
    s = scenario(3, releases=40, missing=0.0)
    batch = single_run(s)[0]
    obfuscated = {r.key for r in batch.fragments if r.obfuscated}
    assert obfuscated, "the plan holds obfuscated releases"
    naming = [c for c in batch.candidates if c.archive_message_id is None]
    assert {c.key for c in naming} == obfuscated
    want = expected(s)
    for c in naming:
        files = want[c.key].files
        par2 = next(name for name in files if name.endswith(".par2") and ".vol" not in name)
        assert c.par2_message_id == files[par2][1][1]
    # The others: a password probe for each release of rar volumes, naming the first volume's first
    # article; none for a release without archives.
    passwords = {c.key: c for c in batch.candidates if c.archive_message_id is not None}
    assert passwords and not passwords.keys() & obfuscated
    for r in batch.fragments:
        if r.obfuscated:
            continue
        files = want[r.key].files
        first = next((n for n in sorted(files) if n.endswith((".part01.rar", ".part1.rar"))), None)
        if first is None:
            assert r.key not in passwords, r.name
        else:
            assert passwords[r.key].archive_message_id == files[first][1][1]
            assert passwords[r.key].par2_message_id == ""


def test_missing_and_duplicated_parts() -> None:
    s = scenario(5, releases=12, missing=0.05, duplicate=0.05, shuffle=0.3)
    found = catalog(single_run(s))
    _check(found, expected(s))
    incomplete = [r for r in found.values() if not is_complete(r)]
    assert incomplete, "with 5% of parts missing some release is incomplete"
    for r in incomplete:
        t = totals(r)
        assert t.parts_seen < t.parts_expected
        assert 0 < t.completion < 100
        assert not t.complete


def test_complete_release_totals() -> None:
    s = scenario(9, releases=6, missing=0.0, duplicate=0.0)
    found = catalog(single_run(s))
    for r in found.values():
        t = totals(r)
        assert t.complete, r.name
        assert t.completion == 100.0
        assert t.size == sum(size for f in r.files for size in f.sizes) > 0
        assert t.first_date is not None
        assert t.last_date is not None
        assert t.first_date <= t.last_date


EXPECTED_CATEGORIES = {
    "movie": {2030, 2040, 2045},
    "single": {2040},
    "tv": {5030, 5040, 5045},
    "music": {3010, 3040},
    "book": {7010, 7020, 7030},
    "pc": {4000},
    "obfuscated": {8000},
}


def test_categories_of_generated_releases() -> None:
    s = scenario(21, releases=60)
    found = catalog(single_run(s))
    by_name: dict[str, str] = {}
    for release in s.plan:
        by_name.setdefault(release.collection, release.kind)
    seen_kinds = set()
    for r in found.values():
        kind = next(k for name, k in by_name.items() if r.name == name or r.name.startswith(name))
        category = categorize(r.name, [f.name for f in r.files])
        assert category.id in EXPECTED_CATEGORIES[kind], (r.name, category)
        seen_kinds.add(kind)
    assert seen_kinds == set(EXPECTED_CATEGORIES)


def test_group_is_recorded() -> None:
    s = scenario(2, releases=8)
    for r in catalog(single_run(s)).values():
        assert GROUP in r.groups
