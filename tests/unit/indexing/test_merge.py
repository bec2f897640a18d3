"""Merging is commutative and associative; the segment blob round-trips and refuses garbage."""

from __future__ import annotations

import random
import zlib
from dataclasses import replace
from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing.fragment import FileFragment, ReleaseFragment, int_array
from usenet_indexer.indexing.merge import (
    MergeError,
    SegmentBlobError,
    merge,
    merge_all,
    merge_files,
    pack_segments,
    totals,
    unpack_segments,
)

# A segment: (file, part, article, size, message-id number, date)
# A segment: (file name, part, size, article, file index, date or None), as fragment() takes it.
Segment = tuple[str, int, int, int, int, int | None]
segment = st.tuples(
    st.sampled_from(["a.part1.rar", "a.part2.rar", "a.par2"]),
    st.integers(1, 12),
    st.integers(1, 500),
    st.integers(0, 10_000),
    st.integers(0, 3),
    st.one_of(st.none(), st.integers(1_600_000_000, 1_600_000_100)),
)


def fragment(segments: list[tuple[str, int, int, int, int, int | None]], name: str = "a") -> ReleaseFragment:
    by_file: dict[str, dict[int, tuple[int, int, str]]] = {}
    for file, part, article, size, mid, _ in segments:
        held = by_file.setdefault(file, {}).get(part)
        candidate = (article, size, f"{file}-{part}-{mid}@x")
        if held is None or candidate < held:
            by_file[file][part] = candidate
    files = []
    for file in sorted(by_file):
        parts = sorted(by_file[file])
        chosen = [by_file[file][p] for p in parts]
        files.append(
            FileFragment(
                name=file,
                index=0 if file.endswith("par2") else 1,
                parts_total=12,
                parts=int_array(parts),
                sizes=int_array(c[1] for c in chosen),
                articles=int_array(c[0] for c in chosen),
                message_ids="\n".join(c[2] for c in chosen).encode(),
                # Spellings that differ between fragments (or none): merging must pick one in any order.
                subject="" if chosen[0][1] % 3 == 0 else f'tag{chosen[0][1] % 5} "{file}" yEnc (1/12)',
            )
        )
    first = min(segments, key=lambda s: (s[2], s[5] is None, s[5] or 0))
    last = max(segments, key=lambda s: (s[2], s[5] is not None, -(s[5] or 0)))
    return ReleaseFragment(
        key="k",
        name=name,
        poster="p@x",
        groups=("alt.binaries.test",),
        file_total=3,
        first_article=first[2],
        first_date=first[5],
        last_article=last[2],
        last_date=last[5],
        obfuscated=False,
        request_id=None,
        files=tuple(files),
    )


@pytest.mark.fuzz
@settings(max_examples=200, deadline=None)
@given(st.lists(segment, min_size=3, max_size=40), st.randoms(use_true_random=False))
def test_merge_is_commutative_and_associative(segments: list[Segment], rng: random.Random) -> None:
    k = rng.randint(1, min(5, len(segments)))
    rng.shuffle(segments)
    pieces = [segments[i::k] for i in range(k)]
    fragments = [fragment(p, name=rng.choice(["a", "A", "a "])) for p in pieces if p]
    whole = fragment(segments, name=min(f.name for f in fragments))
    left = reduce(merge, fragments)
    shuffled = list(fragments)
    rng.shuffle(shuffled)
    right = reduce(lambda acc, f: merge(f, acc), shuffled)
    assert left == right
    # Same segments, any grouping: the same release as one fragment of everything, and each file the
    # smallest of the subjects its pieces knew.
    assert [replace(f, subject="") for f in left.files] == [replace(f, subject="") for f in whole.files]
    for f in left.files:
        known = [g.subject for p in fragments for g in p.files if g.name == f.name and g.subject]
        assert f.subject == min(known, default="")
    assert (left.first_article, left.first_date, left.last_article, left.last_date) == (
        whole.first_article,
        whole.first_date,
        whole.last_article,
        whole.last_date,
    )
    if len(fragments) >= 3:
        a, b, c = fragments[:3]
        assert merge(merge(a, b), c) == merge(a, merge(b, c))
        assert merge(a, b) == merge(b, a)


def test_merging_a_fragment_with_itself_changes_nothing() -> None:
    f = fragment([("a.par2", 1, 5, 100, 0, None), ("a.part1.rar", 2, 6, 100, 0, 1_600_000_000)])
    assert merge(f, f) == f


def test_different_keys_refused() -> None:
    f = fragment([("a.par2", 1, 5, 100, 0, None)])
    other = ReleaseFragment(**{**{s: getattr(f, s) for s in f.__slots__}, "key": "other"})
    with pytest.raises(MergeError):
        merge(f, other)
    assert set(merge_all([f, other])) == {"k", "other"}


def test_blob_round_trip() -> None:
    f = fragment(
        [
            (n, p, p * 7 + i, 700_000 + p, 0, None)
            for i, n in enumerate(["a.part1.rar", "a.par2"])
            for p in range(1, 13)
        ]
    )
    blob = pack_segments(f.files)
    assert unpack_segments(blob) == f.files
    assert len(blob) < sum(len(x.message_ids) + 24 * len(x.parts) for x in f.files)
    assert unpack_segments(pack_segments(())) == ()


@pytest.mark.parametrize(
    ("blob", "match"),
    [
        (b"not zlib", "does not inflate"),
        (zlib.compress(b"XXXX\x00\x00\x00\x00"), "not a segment blob"),
        (zlib.compress(b"UIS1\x01\x00\x00\x00\x01"), "truncated"),
    ],
)
def test_bad_blobs(blob: bytes, match: str) -> None:
    with pytest.raises(SegmentBlobError, match=match):
        unpack_segments(blob)


def test_truncated_blob_columns() -> None:
    f = fragment([("a.par2", 1, 5, 100, 0, None), ("a.par2", 2, 6, 100, 0, None)])
    raw = zlib.decompress(pack_segments(f.files))
    for cut in (10, 30, len(raw) - 3):
        with pytest.raises(SegmentBlobError):
            unpack_segments(zlib.compress(raw[:cut]))
    with pytest.raises(SegmentBlobError, match="after its last file"):
        unpack_segments(zlib.compress(raw + b"junk"))


def test_totals_estimate_missing_files() -> None:
    f = fragment([("a.part1.rar", p, p, 100, 0, None) for p in range(1, 13)])
    t = totals(f)  # file_total 3, one file of 12 parts seen
    assert (t.files_seen, t.files_expected, t.parts_seen, t.parts_expected) == (1, 3, 12, 36)
    assert t.completion == pytest.approx(33.33)
    assert not t.complete


def test_a_cross_post_indexed_in_two_groups_merges_into_one_release() -> None:
    """Issue 16: the same articles in two groups (other numbers, one Xref naming both), each group
    indexed by a worker of its own: one key per release, both groups, every segment once."""
    from tests.support.crosspost import cross_post

    post = cross_post(("alt.binaries.a", "alt.binaries.b"))
    one = [f for b in post.index("alt.binaries.a") for f in b.fragments]
    other = [f for b in post.index("alt.binaries.b", batch_articles=37) for f in b.fragments]
    assert {f.key for f in one} == {f.key for f in other}
    merged = merge_all([*one, *other])
    alone = merge_all(one)
    assert merged.keys() == alone.keys()
    posted = {a.message_id for a in post.articles}
    seen: list[str] = []
    for key, release in merged.items():
        assert release.groups == ("alt.binaries.a", "alt.binaries.b")
        assert [(f.name, f.parts.tolist(), f.message_ids) for f in release.files] == [
            (f.name, f.parts.tolist(), f.message_ids) for f in alone[key].files
        ]
        # The lowest article number of each part: the first group's, whose numbers are the lower.
        assert [f.articles.tolist() for f in release.files] == [f.articles.tolist() for f in alone[key].files]
        seen += [mid for f in release.files for mid in f.message_id_list()]
    assert sorted(seen) == sorted(posted)  # every article once, none twice


def test_the_dict_form_carries_subjects_and_reads_snapshots_without_them() -> None:
    """Window snapshots written before issue 16 have no file subjects: read as "". A subject that is
    not a string, or longer than a name may be, is refused."""
    from usenet_indexer.indexing.fragment import FormatError, file_from_dict, file_to_dict

    f = FileFragment("a.rar", 1, 2, int_array([1, 2]), int_array([5, 6]), int_array([7, 8]), b"x@y\nz@y", "s")
    assert file_from_dict(file_to_dict(f)) == f
    old = file_to_dict(f)
    del old["subject"]
    assert file_from_dict(old).subject == ""
    for bad in (7, None, "é" * 8193):
        with pytest.raises(FormatError, match="subject"):
            file_from_dict({**file_to_dict(f), "subject": bad})


def test_merged_files_keep_the_smallest_known_subject() -> None:
    f = FileFragment("a.rar", 1, 4, int_array([1, 2]), int_array([5, 6]), int_array([7, 8]), b"a@y\nb@y", "")
    g = FileFragment(
        "a.rar", 1, 4, int_array([3, 4]), int_array([5, 6]), int_array([9, 10]), b"c@y\nd@y", "t"
    )
    h = FileFragment("a.rar", 1, 4, int_array([2, 3]), int_array([5, 6]), int_array([8, 9]), b"b@y\nc@y", "s")
    assert merge_files(f, g).subject == merge_files(g, f).subject == "t"  # a known one over none
    assert merge_files(g, h).subject == merge_files(h, g).subject == "s"
