"""The worker's take and encode against main's before branch i17-take's changes (issue 17): the same
batches, and the same bytes to the coordinator.

The digests below were taken from main's tree at 85d58a9 (docs/PERFORMANCE.md "Session 14"). A body is
digested inflated (its head's JSON and every segment blob), so the pin holds whichever deflate the
machine has; the compressed bytes come from the same call at the same level as before."""

from __future__ import annotations

import copy
import hashlib
import random
import struct
import zlib
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing import sample
from usenet_indexer.indexing.fragment import FileFragment, ReleaseFragment
from usenet_indexer.indexing.indexer import RangeIndexer, _FileAcc
from usenet_indexer.indexing.naming import FileKind, count_kinds, file_kind, looks_obfuscated
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.wire.batch import MAGIC, encode_batch

from .conftest import needs_native

GROUP = "alt.binaries.test"
_LENGTH = struct.Struct("<I")


def body_digest(body: bytes) -> str:
    """SHA-256 of a body's head and blobs, each inflated and prefixed by its inflated length."""
    assert body[:4] == MAGIC
    digest = hashlib.sha256()
    at = 4
    while at < len(body):
        (length,) = _LENGTH.unpack_from(body, at)
        at += _LENGTH.size
        inflated = zlib.decompress(body[at : at + length])
        digest.update(_LENGTH.pack(len(inflated)) + inflated)
        at += length
    return digest.hexdigest()


def bodies(seed: int, native: bool) -> list[bytes]:
    """Every body a worker posts for 120 of the sample's releases (every scheme: named, obfuscated,
    requests, noise), in 2,000-line chunks, taking every ~10,000 articles."""
    rng = random.Random(seed)
    posting = sample.post(sample.plan(rng, 120, GROUP, max_parts=60), rng, first=1, concurrent=6)
    indexer = RangeIndexer(GROUP, 1, posting.last, 1, default_rules(), native=native)
    out = []
    since = 0
    for first, high, text in sample.chunks(posting, 2_000):
        indexer.add_text(text, high + 1)
        since += high - first + 1
        if high == posting.last:
            indexer.finish()
        if high == posting.last or since >= 10_000:
            since = 0
            out.append(encode_batch(indexer.take(), 3, 7))
    return out


# main's bodies at 85d58a9 (both paths gave these), by the sample's seed
MAIN_DIGESTS = {
    1: "a39a16fd9b1093afcd03e9329eaab8b1a4945beb0ac32f13e9ce644a1e1fd5f3",
    2: "a15e026112be13c2aefb5ab725c2182a461b854d602bddba8d8450b10266f6d6",
    3: "4ffcadfbc9cecee223351c106d421880622b40743f6dbcb7a3190601c5f0c4c9",
}


@pytest.mark.parametrize("native", [pytest.param(True, marks=needs_native), False], ids=["native", "pure"])
@pytest.mark.parametrize("seed", sorted(MAIN_DIGESTS))
def test_the_bodies_are_mains(seed: int, native: bool) -> None:
    posted = bodies(seed, native)
    assert len(posted) == 2
    joined = "".join(body_digest(body) for body in posted)
    assert hashlib.sha256(joined.encode()).hexdigest() == MAIN_DIGESTS[seed]


# ---- _release_fragment: the shared reading and groups, and the files that differ ------------------


def main_release_fragment(
    indexer: RangeIndexer, files: Sequence[tuple[_FileAcc, FileFragment]]
) -> ReleaseFragment:
    """RangeIndexer._release_fragment as main had it (85d58a9): min() and set() over the files."""
    accs = [acc for acc, _ in files]
    first_acc = min(accs, key=lambda a: a.first)
    last_acc = max(accs, key=lambda a: a.last)
    releases = [acc.info.release for acc in accs]
    name = min(r.name for r in releases)
    requests = [r.request_id for r in releases if r.request_id is not None]
    distinct = {acc.groups for acc in accs}
    groups = distinct.pop() if len(distinct) == 1 else tuple(sorted({g for gs in distinct for g in gs}))
    head = releases[0]
    return ReleaseFragment(
        key=head.key,
        name=name,
        poster=min(r.poster for r in releases),
        groups=groups,
        file_total=head.file_total,
        first_article=first_acc.first,
        first_date=indexer._date(first_acc.first_date),
        last_article=last_acc.last,
        last_date=indexer._date(last_acc.last_date),
        obfuscated=looks_obfuscated(name),
        request_id=min(requests) if requests else None,
        files=tuple(sorted([b for _, b in files], key=lambda f: (f.name, f.parts_total))),
        collection=head.collection,
    )


def _read_releases() -> tuple[RangeIndexer, list[list[tuple[_FileAcc, FileFragment]]]]:
    rng = random.Random(5)
    posting = sample.post(sample.plan(rng, 24, GROUP, max_parts=12), rng, first=1, concurrent=6)
    indexer = RangeIndexer(GROUP, 1, posting.last, 1, default_rules(), native=False)
    indexer.add_text(sample.chunk_text([sample.overview_line(a) for a in posting.articles]), posting.last + 1)
    by_key: dict[str, list[tuple[_FileAcc, FileFragment]]] = {}
    for acc in indexer._files.values():
        built = indexer._file_fragment(acc, indexer._counts.malformed)
        assert built is not None
        by_key.setdefault(acc.info.release.key, []).append((acc, built))
    return indexer, [by_key[k] for k in sorted(by_key)]


INDEXER, RELEASES = _read_releases()
_TEXT = st.sampled_from(["", "a", "A", "b", "Show.S01E01", "show.s01e01", "zz", "Z"])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, len(RELEASES) - 1),
    st.lists(
        st.tuples(
            st.booleans(),  # this file keeps its release's reading
            _TEXT,  # else: its name
            _TEXT,  # poster
            st.none() | _TEXT,  # request id
            st.none() | st.lists(st.sampled_from(["a.b.x", "a.b.y", "alt.binaries.test"]), unique=True),
            st.integers(-3, 3),  # its first and last articles moved
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_a_release_of_files_read_alike_or_not_is_as_main_made_it(
    which: int, changes: list[tuple[bool, str, str, str | None, list[str] | None, int]]
) -> None:
    """The files of a release that share one reading and one groups tuple (the usual case, taken from
    the first file) and files read otherwise (other spellings of the name or poster, requests, groups):
    both as main's min() and set() made them."""
    files = []
    for index, (acc, built) in enumerate(RELEASES[which]):
        keep, name, poster, request, groups, shift = changes[index % len(changes)]
        acc = copy.copy(acc)
        if not keep:
            release = acc.info.release._replace(name=name, poster=poster, request_id=request)
            acc.info = acc.info._replace(release=release)
        if groups is not None:
            acc.groups = tuple(sorted(groups))
        acc.first += shift
        acc.last += abs(shift)
        files.append((acc, built))
    want = main_release_fragment(INDEXER, files)
    got, undated = INDEXER._release_fragment([a for a, _ in files], [b for _, b in files])
    assert got == want
    assert undated == (want.first_date is None) + (want.last_date is None)


# ---- the content files' kinds (categorize) -------------------------------------------

_NAME_PIECES = st.sampled_from(
    [
        "x",
        "Show.S01E02",
        ".",
        "..",
        "mkv",
        "MKV",
        "flac",
        "epub",
        "cbz",
        "par2",
        "vol00+01",
        "part01",
        "rar",
        "r00",
        "7z",
        "001",
        "exe",
        "iso",
        "jpg",
        "nfo",
        " ",
        "ſ",
        "K",
        "İ",
        "\u0663",
        "-",
    ]
)
_CONTENT = frozenset({FileKind.VIDEO, FileKind.AUDIO, FileKind.BOOK, FileKind.DISC, FileKind.PROGRAM})


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.lists(_NAME_PIECES, max_size=6).map("".join), max_size=8))
def test_count_kinds_counts_as_file_kind(names: list[str]) -> None:
    for kinds in (_CONTENT, frozenset({FileKind.VIDEO}), frozenset({FileKind.NFO, FileKind.IMAGE})):
        want: dict[FileKind, int] = {}
        for kind in map(file_kind, names):
            if kind in kinds:
                want[kind] = want.get(kind, 0) + 1
        assert count_kinds(names, kinds) == want


def test_count_kinds_refuses_kinds_the_extension_alone_does_not_name() -> None:
    for kind in (FileKind.PAR2, FileKind.PAR2_VOLUME, FileKind.RAR, FileKind.OTHER):
        with pytest.raises(ValueError, match="extension alone"):
            count_kinds(["x.par2"], frozenset({FileKind.VIDEO, kind}))
