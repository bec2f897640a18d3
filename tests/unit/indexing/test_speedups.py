"""The C accelerator (_speedups.c) against its pure-Python twins, and the shim that picks one.

The batches must be the same on both paths whatever the input: generated postings (many files at once,
duplicates, parts out of order, resume points), garbage, every malformed kind (test_indexer.py), and the
pieces alone (the clean-chunk check, a file's columns).
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import zlib
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from usenet_indexer import accelerator
from usenet_indexer.indexing import indexer as indexer_module
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.fragment import (
    Batch,
    FileFragment,
    FileSummary,
    PackedFiles,
    int_array,
    summarize,
)
from usenet_indexer.indexing.indexer import IndexerError, RangeIndexer, _FileAcc, _FileInfo, _ReleaseInfo
from usenet_indexer.indexing.merge import (
    SegmentBlobError,
    checked_segments,
    pack_segments,
    posted_files,
    segment_blob,
    unpack_segments,
)
from usenet_indexer.indexing.naming import FileKind
from usenet_indexer.indexing.overview import OverviewFormat, chunk_is_clean, parse_date, split_lines
from usenet_indexer.indexing.rules import default_rules

from .conftest import NATIVE, needs_native
from .drive import GROUP, scenario

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(
    chunks: list[tuple[int, bytes]],
    first: int,
    last: int,
    native: bool,
    resume: int | None = None,
    takes: frozenset[int] = frozenset(),
    fmt: OverviewFormat | None = None,
) -> list[Batch]:
    """Index (end, text) chunks of [first, last]; a take after the chunks in ``takes`` and at the end."""
    extra = {} if fmt is None else {"fmt": fmt}
    ix = RangeIndexer(
        GROUP, first, last, first if resume is None else resume, default_rules(), native=native, **extra
    )
    out = []
    for k, (end, text) in enumerate(chunks):
        ix.add_text(text, end + 1)
        if k in takes or k == len(chunks) - 1:
            out.append(ix.take())
    return out


def both(chunks: list[tuple[int, bytes]], first: int, last: int, **kwargs: object) -> list[Batch]:
    native = run(chunks, first, last, True, **kwargs)  # type: ignore[arg-type]
    pure = run(chunks, first, last, False, **kwargs)  # type: ignore[arg-type]
    assert native == pure
    return native


def posting_chunks(
    seed: int, size: int, respell: float = 0.0, noise: float = 0.0, **post: float
) -> tuple[int, int, list[tuple[int, bytes]]]:
    """A generated posting as (end, text) chunks. ``respell``: the share of lines whose subject gets
    another spelling that reads as the same file (a blank more before the file name), so that the scan
    meets one file under two heads. ``noise``: the share of lines of quoted subjects wrapped in tags
    and text that posting tools add (issue 16), chosen per line."""
    rng = random.Random(seed)
    plan = sample.plan(rng, 30, GROUP, max_parts=40)
    posting = sample.post(plan, rng, **post)  # type: ignore[arg-type]
    chunks = []
    for _, end, text in sample.chunks(posting, size):
        lines = [
            line.replace(b' - "', b'  - "', 1) if rng.random() < respell else line
            for line in text.split(b"\r\n")
        ]
        lines = [noisy(line, rng) if rng.random() < noise else line for line in lines]
        chunks.append((end, b"\r\n".join(lines)))
    return posting.first, posting.last, chunks


NOISE_PREFIXES = (b"[PRiVATE]-[WtFnZb]-", b"[FULL] - ", b"{{pw}} ", b"[#a.b.x@EFNet]-[REPOST]-", b"- [] ")
NOISE_SUFFIXES = (b"", b" 104857600", b" [95.37 MB]", b" (95.37 MB)", b" {{pw}}")


def noisy(line: bytes, rng: random.Random) -> bytes:
    """``line`` with tags before its subject and text after it, when the subject quotes a file name
    (without quotes, nothing says where noise ends and the file name begins)."""
    fields = line.split(b"\t")
    if len(fields) < 2 or b'"' not in fields[1] or re.match(rb"\[\d{3,}\]", fields[1]):
        # Request posts ("[123456]-...") are a form of their own; tags before them hide the request id.
        return line
    fields[1] = rng.choice(NOISE_PREFIXES) + fields[1] + rng.choice(NOISE_SUFFIXES)
    return b"\t".join(fields)


# ---- whole batches ------------------------------------------------------------------------------------


@pytest.mark.fuzz
@needs_native
@PROPS
@given(
    st.integers(0, 10**6),
    st.sampled_from([1, 6, 40]),  # files posted at once: 40 is more than the scan keeps pending (32)
    st.sampled_from([7, 150, 5000]),
    st.floats(0, 0.5),
    st.floats(0, 0.2),
    st.sets(st.integers(0, 30), max_size=5),
    st.integers(0, 100),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from([0.0, 0.2, 1.0]),
)
def test_generated_postings_give_the_same_batches(
    seed: int,
    concurrent: int,
    size: int,
    shuffle: float,
    duplicate: float,
    takes: set[int],
    resume: int,
    respell: float,
    noise: float,
) -> None:
    first, last, chunks = posting_chunks(
        seed, size, respell, noise, concurrent=concurrent, shuffle=shuffle, duplicate=duplicate
    )
    # A resume point inside the first chunk: the lines before it are skipped by both.
    resume_at = min(first + resume, last)
    chunks = [(end, text) for end, text in chunks if end >= resume_at]
    batches = both(chunks, first, last, resume=resume_at, takes=frozenset(takes))
    assert sum(b.headers for b in batches) > 0


@needs_native
@needs_native
@pytest.mark.parametrize("seed", range(4))
def test_noise_around_subjects_gives_the_releases_of_the_bare_posting(seed: int) -> None:
    """Tags and text around every quoted subject (a different choice per line): the fast loop, the
    careful loop and the C accelerator give one batch, and it holds the bare posting's releases, files
    and segments (issue 16)."""
    first, last, bare = posting_chunks(seed, 500, concurrent=6, shuffle=0.2)
    _, _, wrapped = posting_chunks(seed, 500, noise=1.0, concurrent=6, shuffle=0.2)
    assert wrapped != bare

    def shape(batches: list[Batch]) -> list[tuple[str, str, tuple[tuple[str, list[int], bytes], ...]]]:
        (batch,) = batches
        return [
            (r.key, r.name, tuple((f.name, f.parts.tolist(), f.message_ids) for f in r.files))
            for r in batch.fragments
        ]

    with mock.patch.object(indexer_module, "chunk_is_clean", return_value=False):
        careful = run(wrapped, first, last, False)  # every line through the careful loop
    expected = shape(both(bare, first, last))
    assert shape(both(wrapped, first, last)) == expected
    assert shape(careful) == expected


def test_more_files_at_once_than_the_scan_keeps_pending() -> None:
    first, last, chunks = posting_chunks(3, 10**6, concurrent=80, shuffle=0.3, duplicate=0.05)
    (batch,) = both(chunks, first, last)
    assert len(batch.fragments) == 30
    assert batch.malformed == {}


_FIELD = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from(
        [
            b"",
            b"-1",
            b"0",
            b"7",
            b"+7",
            b" 7",
            b"7_0",
            b"99999999999999999999",
            b"(1/2)",
            b"<>",
            b"<a@b>",
            b"\xff",
        ]
    ),
    st.sampled_from(
        [
            b'"x.par2" yEnc (1/2)',
            b'"x.par2" yEnc (2/2)',
            b'"x.par2" yEnc ( 2/2)',
            b'[1/2] - "y.rar" yEnc (0/3)',
            b'[1/2] - "y.rar" yEnc (1/3)',
            b'"z.nfo" yEnc (9/2)',
            b"a (x/y)",
            b"no counter",
        ]
    ),
    st.sampled_from([b"p@x", b"q@x"]),
)
_LINE = st.lists(_FIELD, min_size=1, max_size=10).map(b"\t".join)
_NUMBERED = st.tuples(st.integers(0, 45), st.lists(_FIELD, min_size=0, max_size=9)).map(
    lambda t: b"\t".join([str(t[0]).encode(), *t[1]])
)


@pytest.mark.fuzz
@needs_native
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(_LINE, _NUMBERED), max_size=12), min_size=1, max_size=4), st.booleans())
def test_garbage_chunks_give_the_same_batches(chunks: list[list[bytes]], crlf: bool) -> None:
    step = 40 // len(chunks)
    eol = b"\r\n" if crlf else b"\n"
    spans = [
        (40 if k == len(chunks) - 1 else (k + 1) * step - 1, eol.join(lines))
        for k, lines in enumerate(chunks)
    ]
    both(spans, 0, 40)


@needs_native
@pytest.mark.parametrize(
    "names",
    [
        ("From:", "Subject:", "Message-ID:", "Date:", ":bytes", "Xref:full"),  # another order
        ("Subject:", "From:", "Date:", "Message-ID:", "References:", "Bytes:", "Lines:"),  # no Xref
        (
            *(f"X-Extra-{k}:" for k in range(70)),
            "Subject:",
            "From:",
            "Date:",
            "Message-ID:",
            ":bytes",
        ),  # too many
    ],
)
def test_other_overview_formats(names: tuple[str, ...]) -> None:
    fmt = OverviewFormat.from_fmt(names)
    s = scenario(4, releases=6, max_parts=10)
    lines = []
    for n in sorted(s.lines):
        f = s.lines[n].split(b"\t")
        by_name = {
            "subject": f[1],
            "from": f[2],
            "date": f[3],
            "message-id": f[4],
            "bytes": f[6],
            "xref": f[8],
        }
        row = [f[0]]
        for name in names:
            key = name.strip(":").lower().removesuffix(":full").removeprefix(":")
            row.append(by_name.get(key, b"x"))
        lines.append(b"\t".join(row))
    text = b"\r\n".join(lines) + b"\r\n"
    (batch,) = both([(s.posting.last, text)], s.posting.first, s.posting.last, fmt=fmt)
    assert batch.headers == len(lines)
    assert RangeIndexer(GROUP, 0, 1, 0, default_rules(), fmt, native=True).native == (fmt.need <= 64)


# ---- the pieces ---------------------------------------------------------------------------------------

_UTF8_EDGES = [
    b"\xc2\x80",
    b"\xc1\xbf",  # overlong
    b"\xe0\x9f\xbf",  # overlong
    b"\xe0\xa0\x80",
    b"\xed\x9f\xbf",
    b"\xed\xa0\x80",  # a surrogate
    b"\xef\xbf\xbf",
    b"\xf0\x8f\xbf\xbf",  # overlong
    b"\xf0\x90\x80\x80",
    b"\xf4\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80",  # past U+10FFFF
    b"\xf5\x80\x80\x80",
    b"\xff",
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
]


@needs_native
@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=20),
            st.sampled_from(_UTF8_EDGES),
            st.text(max_size=10).map(lambda t: t.encode("utf-8", "surrogatepass")),
            st.sampled_from([b"\n", b"\r\n", b"\0", b"a" * 8190, b"a" * 8193]),
        ),
        max_size=12,
    ).map(b"".join)
)
def test_clean_chunk_check_matches_python(data: bytes) -> None:
    assert NATIVE is not None
    assert NATIVE.chunk_is_clean(data) == chunk_is_clean(data, split_lines(data))


@needs_native
@pytest.mark.parametrize("longest", [8191, 8192, 8193])
def test_clean_chunk_line_limit(longest: int) -> None:
    assert NATIVE is not None
    data = b"a\n" + b"b" * longest + b"\r\nc"
    assert NATIVE.chunk_is_clean(data) == chunk_is_clean(data, split_lines(data)) == (longest + 1 <= 8192)


_GOOD_ID = st.from_regex(rb"\A<[a-z0-9.$%]{1,40}@[a-z]{1,8}>\Z")
_ODD_ID = st.one_of(
    st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"").replace(b"\t", b"")),
    st.sampled_from(
        [
            b"",
            b"<>",
            b"<<a@b>>",
            b"a@b",
            b"<a b@c>",
            b"<a@b>\r",
            b"<a\x0b@b>",
            b"<a\x0c@b>",
            b" <a@b>",
            b"<a@b",
        ]
    ),
)
# A segment as the loops leave it: mostly valid; a few with a bad part, size or message-id.
_SEGMENT = st.one_of(
    st.tuples(st.integers(1, 12), st.integers(0, 10**6), st.integers(0, 10**12), _GOOD_ID),
    st.tuples(st.integers(1, 12), st.integers(0, 10**6), st.integers(0, 10**12), _GOOD_ID),
    st.tuples(st.integers(1, 12), st.integers(0, 10**6), st.integers(0, 10**12), _GOOD_ID),
    st.tuples(
        st.integers(-2, 14), st.one_of(st.integers(0, 10**6), st.just(-1)), st.integers(0, 10**12), _ODD_ID
    ),
)


def _acc(segments: list[tuple[int, int, int]], ids: list[bytes]) -> _FileAcc:
    """A file as the loops leave it."""
    release = _ReleaseInfo("k", "name", "poster", 1, None)
    info = _FileInfo(release, "file.rar", 1, 0, FileKind.OTHER, ("k", "file.rar", 0))
    acc = _FileAcc(info, segments[0][2], b"", (), b"", 1)
    for (part, size, article), mid in zip(segments, ids, strict=True):
        acc.segs += struct.pack("=3q", part, size, article)
        acc.mids += mid + b"\n"
    return acc


@pytest.mark.fuzz
@needs_native
@settings(max_examples=400, deadline=None)
@given(
    st.lists(_SEGMENT, min_size=1, max_size=40),
    st.sampled_from([0, 12, 14]),
    st.booleans(),
    # the subject as the loops keep it: raw bytes, perhaps not UTF-8 (decoded with "replace" in C too)
    st.one_of(st.binary(max_size=24), st.text(max_size=24).map(str.encode)),
)
def test_file_columns_match_python(
    segments: list[tuple[int, int, int, bytes]], total: int, unique_articles: bool, subject: bytes
) -> None:
    if unique_articles:  # as the loops make them: an article is read once per batch
        segments = [(p, s, 10**6 + k * 7 + a % 5, i) for k, (p, s, a, i) in enumerate(segments)]
    triples = [(p, s, a) for p, s, a, _ in segments]
    ids = [i for *_, i in segments]
    native = RangeIndexer(GROUP, 0, 1, 0, default_rules(), native=True)
    pure = RangeIndexer(GROUP, 0, 1, 0, default_rules(), native=False)
    if all(1 <= p <= (total or p) and s >= 0 for p, s, _ in triples):
        event("every part and size valid")
    counted_native: Counter[str] = Counter()
    counted_pure: Counter[str] = Counter()
    acc = _acc(triples, ids)
    acc.info = acc.info._replace(parts_total=total)
    acc.subject = subject
    got = native._file_fragment(acc, counted_native)
    want = pure._file_fragment(acc, counted_pure)
    assert got == want
    assert got is None or type(got) is FileFragment
    assert counted_native == counted_pure
    event("walked" if counted_pure else "columns in C")


@needs_native
def test_columns_of_a_long_file_in_reverse_order() -> None:
    """Past the insertion sort's budget the columns are sorted by qsort: the same order."""
    assert NATIVE is not None
    n = 5000
    segs = int_array(v for k in range(n) for v in (n - k, 100 + k, 10**6 + k))
    ids = b"".join(b"<%d@x>\n" % k for k in range(n))
    built = NATIVE.columns(segs, ids, n)
    assert built is not None
    parts, sizes, articles, clean = built
    assert list(parts) == list(range(1, n + 1))
    assert list(sizes) == [100 + n - p for p in parts]
    assert list(articles) == [10**6 + n - p for p in parts]
    assert clean.split(b"\n")[:2] == [b"%d@x" % (n - 1), b"%d@x" % (n - 2)]


@needs_native
def test_columns_read_an_unaligned_buffer() -> None:
    assert NATIVE is not None
    triples = struct.pack("=6q", 2, 20, 200, 1, 10, 100)
    unaligned = memoryview(b"x" + triples)[1:]
    assert NATIVE.columns(unaligned, b"<b>\n<a>\n", 2) == NATIVE.columns(triples, b"<b>\n<a>\n", 2)  # type: ignore[arg-type]
    assert NATIVE.columns(triples, b"<b>\n<a>\n", 2) == (
        int_array([1, 2]),
        int_array([10, 20]),
        int_array([100, 200]),
        b"a\nb",
    )


@needs_native
def test_columns_want_every_message_id_ended() -> None:
    """The message-ids as a _FileAcc holds them, each followed by LF; anything else is left to Python."""
    assert NATIVE is not None
    triples = struct.pack("=3q", 1, 10, 100)
    assert NATIVE.columns(triples, b"<a>\n", 1) is not None
    assert NATIVE.columns(triples, b"<a>", 1) is None
    assert NATIVE.columns(triples, b"", 1) is None
    assert NATIVE.columns(triples, b"<a>\n<b>\n", 1) is None


@needs_native
def test_bad_arguments_are_refused() -> None:
    assert NATIVE is not None
    with pytest.raises(ValueError, match="whole"):
        NATIVE.columns(array("i", [1, 2, 3]), b"a\n", 0)
    with pytest.raises(ValueError, match="whole"):
        NATIVE.file_fragment(array("i", [1, 2, 3]), b"a\n", 0, "f", 1, b"s", FileFragment)
    with pytest.raises(TypeError):
        NATIVE.file_fragment(b"", b"", 0, "f", 1, "not bytes", FileFragment)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        NATIVE.file_fragment(b"", b"", 0, b"not str", 1, b"s", FileFragment)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="field positions"):
        NATIVE.scan(b"", {}, lambda f, n: None, 0, 1, (3, 1, 2, 3, 4, 5))
    with pytest.raises(TypeError):
        NATIVE.scan(b"", [], lambda f, n: None, 0, 1, (7, 1, 2, 3, 4, 6))  # type: ignore[arg-type]


@needs_native
def test_an_error_in_the_slow_line_propagates() -> None:
    assert NATIVE is not None
    line = b"5\tsubject (1/2)\tp@x\tdate\t<a@b>\t\t100\t1\tXref: h g:5"

    def slow(fields: list[bytes], number: int) -> None:
        assert fields == (line + b"\r").split(b"\t")  # the CR stays on the last field, as in Python
        assert number == 5
        raise RuntimeError("from the slow line")

    with pytest.raises(RuntimeError, match="from the slow line"):
        NATIVE.scan(line + b"\r\n", {}, slow, 0, 10, (7, 1, 2, 3, 4, 6))


# ---- the shim -----------------------------------------------------------------------------------------


def _path_in_child(**env: str) -> str:
    code = "from usenet_indexer import accelerator; print(accelerator.PATH, '|', accelerator.REASON)"
    child = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return child.stdout.strip()


def test_pure_path_on_request() -> None:
    assert _path_in_child(USENET_INDEXER_PURE="1").startswith("pure | USENET_INDEXER_PURE is set")
    built = importlib.util.find_spec("usenet_indexer.accelerator._speedups") is not None
    assert _path_in_child(USENET_INDEXER_PURE="0").split()[0] == ("native" if built else "pure")


def test_native_required_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accelerator, "speedups", None)
    with pytest.raises(IndexerError, match="native accelerator is not available"):
        RangeIndexer(GROUP, 0, 1, 0, default_rules(), native=True)
    assert not RangeIndexer(GROUP, 0, 1, 0, default_rules()).native


def test_the_accelerator_is_built_where_a_compiler_is() -> None:
    """CI has gcc and the headers: a build that silently fell back to pure Python fails here."""
    if os.environ.get("USENET_INDEXER_PURE", "").strip() not in ("", "0"):
        pytest.skip("USENET_INDEXER_PURE is set")
    cc = (sysconfig.get_config_var("CC") or "").split()
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if not cc or shutil.which(cc[0]) is None or not headers.is_file():
        pytest.skip("no C compiler or Python headers here")
    assert accelerator.PATH == "native", accelerator.REASON


@needs_native
@pytest.mark.parametrize("order", ["ababababa", "abbaabbab", "abababbaa", "abaaaaaab"])
def test_two_spellings_of_one_file_in_one_chunk(order: str) -> None:
    """Two subjects that differ before the part counter but read as the same file: the scan meets
    the file under two heads, and its segments must still be written in line order."""
    spellings = {"a": '[01/03] - "x.part1.rar" yEnc (%d/9)', "b": '[01/03]  - "x.part1.rar" yEnc (%d/9)'}
    lines = []
    for k in range(9):
        subject = spellings[order[k]] % (k + 1)
        lines.append(
            f"{100 + k}\t{subject}\tp@x\tSat, 30 Nov 2024 14:22:{k:02d} +0000\t<m{k}@x>\t\t{1000 + k}\t1\t"
            f"Xref: h {GROUP}:{100 + k}".encode()
        )
    (batch,) = both([(108, b"\r\n".join(lines) + b"\r\n")], 100, 108)
    (release,) = batch.fragments
    assert release.last_article == 108
    assert list(release.files[0].parts) == list(range(1, 10))


def _line(number: int, subject: str, poster: str = "p@x") -> bytes:
    return (
        f"{number}\t{subject}\t{poster}\td{number}\t<m{number}@x>\t\t{1000 + number}\t1\t"
        f"Xref: h {GROUP}:{number}"
    ).encode()


def _scan_file(poster: bytes) -> _FileAcc:
    """A _FileAcc as _line_file leaves a new file the scan may look up: its part total and poster set."""
    acc = _acc([(1, 0, 0)], [b"x"])
    acc.release_columns()
    acc.ts, acc.poster = b"3)", poster
    return acc


@needs_native
def test_the_scan_appends_the_slow_lines_segment_after_the_pending_ones() -> None:
    """The slow line names a file and a segment (RangeIndexer._line_file); the scan appends it, in line
    order with the segments it holds pending for that file (issue 17: they are no longer written out
    before each call into Python)."""
    assert NATIVE is not None
    acc = _scan_file(b"p@x")
    calls: list[int] = []

    def slow(fields: list[bytes], number: int) -> tuple[_FileAcc, int, int] | None:
        calls.append(number)
        return (acc, 7, 70) if number == 2 else None  # another spelling of acc's file; then nothing

    lines = [_line(1, "name (1/3)"), _line(2, "other (1/3)"), _line(3, "x y"), _line(4, "name (2/3)")]
    chunk = b"\n".join(lines)
    assert NATIVE.scan(chunk + b"\n", {b"name ": acc}, slow, 1, 4, (8, 1, 2, 3, 4, 6)) == (4, 4)
    assert calls == [2, 3]
    assert list(struct.iter_unpack("=3q", acc.segs)) == [(1, 1001, 1), (7, 70, 2), (2, 1004, 4)]
    assert acc.mids == b"<m1@x>\n<m2@x>\n<m4@x>\n"
    assert (acc.last, acc.last_date) == (4, b"d4")


@needs_native
def test_the_scan_follows_a_head_the_slow_line_points_at_a_new_file() -> None:
    """One subject head, two posters: the slow line points the head at the second poster's file and the
    scan takes that file's next lines without calling into Python again, while the first file's
    pending segment is kept and written first."""
    assert NATIVE is not None
    first, second = _scan_file(b"p@x"), _scan_file(b"q@y")
    accs = {b"name ": first}
    calls: list[int] = []

    def slow(fields: list[bytes], number: int) -> tuple[_FileAcc, int, int]:
        calls.append(number)
        accs[b"name "] = second  # what _line_file does for a new file read from its counter
        return second, 1, 5

    lines = [_line(1, "name (1/3)"), _line(2, "name (1/3)", "q@y"), _line(3, "name (2/3)", "q@y")]
    assert NATIVE.scan(b"\n".join(lines), accs, slow, 1, 3, (8, 1, 2, 3, 4, 6)) == (3, 3)
    assert calls == [2]
    assert list(struct.iter_unpack("=3q", first.segs)) == [(1, 1001, 1)]
    assert list(struct.iter_unpack("=3q", second.segs)) == [(1, 5, 2), (2, 1003, 3)]
    assert (second.last, second.last_date) == (3, b"d3")


@needs_native
@pytest.mark.parametrize("order", ["abababab", "aabbabba", "abbbbaaa"])
def test_one_head_two_posters_in_one_chunk(order: str) -> None:
    """A generic subject posted by two posters at once, a third file in between: the head moves from one
    file to the other at each change of poster while the scan holds the third's segments pending."""
    lines = []
    parts = {"a": 0, "b": 0}
    for k, who in enumerate(order):
        parts[who] += 1
        lines.append(_line(100 + 2 * k, f'Generic - "x.part1.rar" yEnc ({parts[who]}/9)', f"{who}@x"))
        lines.append(_line(101 + 2 * k, f'[01/02] - "other.rar" yEnc ({k + 1}/16)'))
    last = 99 + len(lines)
    (batch,) = both([(last, b"\r\n".join(lines) + b"\r\n")], 100, last)
    files = {(r.poster, f.name): list(f.parts) for r in batch.fragments for f in r.files}
    assert files == {
        ("a@x", "x.part1.rar"): list(range(1, order.count("a") + 1)),
        ("b@x", "x.part1.rar"): list(range(1, order.count("b") + 1)),
        ("p@x", "other.rar"): list(range(1, len(order) + 1)),
    }


@needs_native
def test_a_slow_line_answer_that_is_not_a_segment_is_refused() -> None:
    assert NATIVE is not None
    with pytest.raises(TypeError):
        NATIVE.scan(_line(1, "name (1/3)") + b"\n", {}, lambda f, n: 5, 1, 1, (8, 1, 2, 3, 4, 6))  # type: ignore[arg-type,return-value]


# ---- checked segment blobs (merge.checked_segments) ------------------------------------------------


@st.composite
def sound_file(draw: st.DrawFn) -> FileFragment:
    n = draw(st.integers(0, 5))
    mid = st.text(min_size=1, max_size=10).map(str.encode).filter(lambda b: b"\n" not in b) | st.just(b"p@x")
    return FileFragment(
        name=draw(st.text(min_size=1, max_size=6)),
        index=draw(st.integers(0, 2**63 - 1)),
        parts_total=draw(st.integers(0, 2**63 - 1)),
        parts=int_array(
            sorted(draw(st.lists(st.integers(1, 2**63 - 1), min_size=n, max_size=n, unique=True)))
        ),
        sizes=int_array(draw(st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n))),
        articles=int_array(draw(st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n))),
        message_ids=b"\n".join(draw(st.lists(mid, min_size=n, max_size=n))),
        subject=draw(st.text(max_size=8)),
    )


DAMAGE: dict[str, Callable[[FileFragment, st.DrawFn], FileFragment]] = {
    "subject": lambda f, d: replace(f, subject=d(st.sampled_from(["x" * 8193, "é" * 8193]))),
    "name": lambda f, d: replace(f, name=d(st.sampled_from(["", "x" * 8193, "é" * 8192]))),
    "index": lambda f, d: replace(f, index=d(st.integers(-5, -1))),
    "parts_total": lambda f, d: replace(f, parts_total=-1),
    "parts": lambda f, d: replace(
        f, parts=int_array(d(st.lists(st.integers(-2, 4), min_size=len(f.parts), max_size=len(f.parts))))
    ),
    "sizes": lambda f, d: replace(f, sizes=int_array([-1] * len(f.sizes))),
    "articles": lambda f, d: replace(
        f, articles=int_array([*f.articles[:-1], -7]) if f.articles else f.articles
    ),
    "ids": lambda f, d: replace(
        f, message_ids=d(st.sampled_from([b"\xff", b"\n", b"a\n\nb", b"a\n", b"\na", b""]))
    ),
}


@st.composite
def loose_files(draw: st.DrawFn) -> list[FileFragment]:
    """Sound files, one of them perhaps broken in one way check_file refuses (the packer writes any)."""
    files = draw(st.lists(sound_file(), max_size=3))
    if len(files) > 0 and draw(st.booleans()):
        at = draw(st.integers(0, len(files) - 1))
        damage = draw(st.sampled_from(sorted(DAMAGE)))
        event(f"damaged: {damage}")
        files[at] = DAMAGE[damage](files[at], draw)
    return files


def both_ways(call: Callable[[], object], refusals: tuple[type[Exception], ...]) -> tuple[object, object]:
    """``call()`` on the C accelerator, then on the pure path: its result, or "refused"."""
    results: list[object] = []
    for path in ("native", "pure"):
        with pytest.MonkeyPatch().context() as patch:
            if path == "pure":
                patch.setattr(accelerator, "speedups", None)
            try:
                results.append(call())
            except refusals:
                results.append("refused")
    return results[0], results[1]


def checked_both_ways(data: bytes) -> tuple[object, object]:
    return both_ways(lambda: checked_segments(data), (SegmentBlobError,))


@needs_native
@PROPS
@given(loose_files())
def test_checked_segments_native_and_pure_agree(files: list[FileFragment]) -> None:
    data = zlib.decompress(pack_segments(files))
    native, pure = checked_both_ways(data)
    event("refused" if pure == "refused" else "accepted")
    assert native == pure


@needs_native
@PROPS
@given(loose_files(), st.data())
def test_checked_segments_agree_on_damaged_blobs(files: list[FileFragment], data: st.DataObject) -> None:
    raw = bytearray(zlib.decompress(pack_segments(files)))
    for _ in range(data.draw(st.integers(1, 3))):
        if raw and data.draw(st.booleans()):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        else:
            del raw[data.draw(st.integers(0, len(raw))) :]
    native, pure = checked_both_ways(bytes(raw))
    assert native == pure


def v1_blob(files: list[FileFragment]) -> bytes:
    """``files`` in the segment blob's first version (before issue 16: no subjects), as written then."""
    out = [b"UIS1", struct.pack("<I", len(files))]
    for f in files:
        name = f.name.encode()
        out += [struct.pack("<HqqI", len(name), f.index, f.parts_total, len(f.parts)), name]
        out += [f.parts.tobytes(), f.sizes.tobytes(), f.articles.tobytes()]
        out += [struct.pack("<I", len(f.message_ids)), f.message_ids]
    return b"".join(out)


@needs_native
@PROPS
@given(st.lists(sound_file(), max_size=3))
def test_blobs_of_the_first_version_are_read_still(files: list[FileFragment]) -> None:
    """Catalogs and windows hold version 1 blobs, and old workers post them: both paths read them, each
    file with no subject; what they write is version 2."""
    native, pure = checked_both_ways(v1_blob(files))
    assert native == pure == tuple(replace(f, subject="") for f in files)
    assert unpack_segments(zlib.compress(v1_blob(files))) == tuple(replace(f, subject="") for f in files)
    assert segment_blob(files)[:4] == b"UIS2"
    assert checked_segments(segment_blob(files)) == tuple(files)


@needs_native
def test_subjects_past_the_limit_are_refused_on_both_paths() -> None:
    base = FileFragment("f.rar", 1, 1, int_array([1]), int_array([10]), int_array([5]), b"a@b")
    fits = replace(base, subject="é" * 8192)
    assert checked_both_ways(segment_blob([fits])) == ((fits,), (fits,))
    assert checked_both_ways(segment_blob([replace(fits, subject="é" * 8193)])) == ("refused", "refused")
    raw = bytearray(segment_blob([replace(base, subject="ab")]))
    at = raw.index(b"f.rarab") + 5
    raw[at] = 0xFF  # not UTF-8
    assert checked_both_ways(bytes(raw)) == ("refused", "refused")
    for cut in range(8, at + 2):  # truncated in a file's head, its name or its subject
        assert checked_both_ways(bytes(raw[:cut])) == ("refused", "refused")
    with pytest.raises(ValueError, match="65536 bytes cannot be packed"):
        segment_blob([replace(base, subject="x" * 0x10000)])


# ---- packed segment blobs (merge.segment_blob) ----------------------------------------------------


def blob_both_ways(files: list[FileFragment]) -> tuple[object, object]:
    return both_ways(lambda: segment_blob(files), (ValueError, OverflowError, struct.error))


@needs_native
@PROPS
@given(loose_files())
def test_segment_blob_native_and_pure_write_the_same_bytes(files: list[FileFragment]) -> None:
    native, pure = blob_both_ways(files)
    assert native == pure


@needs_native
def test_segment_blob_refuses_a_name_past_the_limit_and_takes_lists_through_python() -> None:
    long_name = FileFragment("x" * 0x10000, 1, 1, int_array([1]), int_array([10]), int_array([5]), b"a@b")
    with pytest.raises(ValueError, match="65536 bytes cannot be packed"):
        segment_blob([long_name])
    with pytest.MonkeyPatch().context() as patch:
        patch.setattr(accelerator, "speedups", None)
        with pytest.raises(ValueError, match="65536 bytes cannot be packed"):
            segment_blob([long_name])
    # A column that is a list, not an int64 array: the Python path converts it, same bytes.
    listed = FileFragment("f.rar", 1, 2, [1, 2], [10, 20], [5, 6], b"a@b\nc@d")  # type: ignore[arg-type]
    arrays = FileFragment(
        "f.rar", 1, 2, int_array([1, 2]), int_array([10, 20]), int_array([5, 6]), b"a@b\nc@d"
    )
    assert segment_blob([listed]) == segment_blob([arrays])


@needs_native
@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=300))
def test_column_range_native_and_pure_agree(values: list[int]) -> None:
    """check_authority's articles bounds (issue 17): one C pass, the same as min() and max()."""
    from usenet_indexer.indexing.merge import column_range

    native = accelerator.speedups
    assert native is not None
    column = int_array(values)
    assert native.column_range(column) == column_range(values) == (min(values), max(values))  # type: ignore[arg-type]
    assert column_range(column) == (min(values), max(values))


@needs_native
def test_column_range_refuses_what_is_not_a_column() -> None:
    native = accelerator.speedups
    assert native is not None
    with pytest.raises(ValueError, match="empty"):
        native.column_range(int_array())
    with pytest.raises(TypeError, match="array"):
        native.column_range(array("i", [1]))
    with pytest.raises(TypeError):
        native.column_range(b"\0" * 8)  # type: ignore[arg-type]


# Dates of the form the C reads and of the forms it leaves to the Python, with the pieces that sit on
# the edges: blanks other than spaces, one- and three-digit fields, invalid days, times and zones, years
# at 1970 and 2100, a leap day, trailing text, and noise.
_DATE_PIECES = st.tuples(
    st.sampled_from(["", " ", "  ", "\t"]),
    st.sampled_from(["", "Tue, ", "Tue,", "tue,  ", "Tuesday, ", "Tu, ", "T1e, "]),
    st.sampled_from(["1", "01", "9", "28", "29", "30", "31", "32", "0", "00", "123", "٣"]),
    st.sampled_from([" ", "  ", "\t", ""]),
    st.sampled_from(["Jan", "feb", "FEB", "Mar", "Dec", "Xyz", "Ja", "Janu", "Fe b"]),
    st.sampled_from([" ", "  ", "\t"]),
    st.sampled_from(["1970", "1969", "2000", "2023", "2024", "2100", "2101", "1900", "99", "20245"]),
    st.sampled_from([" ", "  ", "\t", ""]),
    st.sampled_from(["00:00", "23:59", "24:00", "12:60", "1:00", "09:05", "ab:cd"]),
    st.sampled_from([":00", ":59", ":60", ":61", "", ":5", ":", ":x1"]),
    st.sampled_from([" ", "  ", "\t", ""]),
    st.sampled_from(["+0000", "-0000", "+0130", "-1200", "+2359", "+9999", "0000", "+00", "+0a00", "GMT"]),
    st.sampled_from(["", " (UTC)", "1", "\r", " +0000"]),
).map(lambda pieces: "".join(pieces).encode())


# The usual form with numbers drawn across their ranges and past them (most of these the C reads).
_USUAL_DATE = st.builds(
    "{}{} {} {} {:02d}:{:02d}{} {}{:02d}{:02d}{}".format,
    st.sampled_from(["", "Sat, ", "sun,"]),
    st.integers(0, 32).map(lambda d: f"{d:02d}" if d % 3 else str(d)),
    st.sampled_from(["Jan", "Feb", "mar", "APR", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    st.integers(1968, 2102),
    st.integers(0, 25),
    st.integers(0, 61),
    st.one_of(st.just(""), st.integers(0, 62).map(lambda n: f":{n:02d}")),
    st.sampled_from(["+", "-"]),
    st.integers(0, 99),
    st.integers(0, 99),
    st.sampled_from(["", " (CET)"]),
).map(str.encode)


@needs_native
@settings(max_examples=3000, deadline=None)
@given(st.one_of(_USUAL_DATE, _DATE_PIECES, st.binary(max_size=40)))
def test_parse_date_native_agrees_with_the_python(raw: bytes) -> None:
    """Where the C reads a date (anything but False), it is what overview.parse_date reads."""
    assert NATIVE is not None
    native = NATIVE.parse_date(raw)
    event("native" if native is not False else "left to the Python")
    if native is not False:
        assert native == parse_date(raw), raw


@needs_native
def test_parse_date_native_reads_the_usual_forms() -> None:
    assert NATIVE is not None
    for raw in (
        b"Tue, 14 Nov 2023 22:13:21 -0000",
        b"14 Nov 2023 22:13 +0130",
        b"Thu, 29 Feb 2024 23:59:60 -1200 (UTC)",
        b"Thu, 1 Jan 1970 00:00:00 +0000",
        b"Fri, 1 Jan 2100 00:00:00 +0000",
    ):
        assert NATIVE.parse_date(raw) == parse_date(raw) is not None, raw
    assert NATIVE.parse_date(b"Thu, 29 Feb 2023 23:59:59 +0000") is False  # not a day: the Python's None


# ---- posted segment blobs, summed without their files (merge.posted_files) -------------------------
#
# The batch route checks a release new to the catalog from its blob's summary (segment_summary), never
# building its files (issue 17). The fast path must refuse exactly what segment_files refuses, with the
# same message, and read exactly what the files hold: each figure below is computed a third way here,
# from the files the pure path parses, so a slip in the C pass or in its Python twin (summarize) shows.


def reference_summary(files: tuple[FileFragment, ...]) -> FileSummary:
    """The summary spelled out from its definition (not summarize's loop)."""
    articles = [a for f in files for a in f.articles]
    order = [(f.name, f.parts_total) for f in files]
    return FileSummary(
        files=len(files),
        parts_seen=sum(len(f.parts) for f in files),
        parts_known=sum(f.parts_total or len(f.parts) for f in files),
        size=sum(sum(f.sizes) for f in files),
        articles=(min(articles), max(articles)) if articles else None,
        in_order=order == sorted(set(order)),
    )


@st.composite
def crowded_file(draw: st.DrawFn) -> FileFragment:
    """A sound file from few names and totals (ties and files out of order are common), small or huge
    numbers (sums past int64 and parts_total 0 are common), parts perhaps none."""
    n = draw(st.integers(0, 4))
    number = st.integers(0, 3) | st.integers(2**62, 2**63 - 1)
    mid = st.sampled_from([b"a@x", b"ab@x", b"b@x", "é@x".encode(), b"a@xa@x"])
    return FileFragment(
        name=draw(st.sampled_from(["a", "b", "ab", "é", "z" * 3])),
        index=draw(number),
        parts_total=draw(number),
        parts=int_array(sorted(draw(st.sets(st.integers(1, 2**63 - 1), min_size=n, max_size=n)))),
        sizes=int_array(draw(st.lists(number, min_size=n, max_size=n))),
        articles=int_array(draw(st.lists(number, min_size=n, max_size=n))),
        message_ids=b"\n".join(draw(st.lists(mid, min_size=n, max_size=n))),
        subject=draw(st.sampled_from(["", "s"])),
    )


def posted_both_ways(data: bytes) -> tuple[object, object]:
    """posted_files(data) on the C accelerator and checked_segments(data) on it: the files, or the
    refusal's message (the same reader, so the same words)."""
    results: list[object] = []
    for call in (posted_files, checked_segments):
        try:
            results.append(call(data))
        except SegmentBlobError as error:
            results.append(f"refused: {error}")
    return results[0], results[1]


def assert_posted_agrees(data: bytes) -> None:
    posted, checked = posted_both_ways(data)
    _native, pure = checked_both_ways(data)
    note = event if currently_in_test_context() else lambda _: None
    if isinstance(checked, str):
        note("refused")
        assert posted == checked
        assert pure == "refused"
        return
    note("accepted, in order" if reference_summary(checked).in_order else "accepted, out of order")  # type: ignore[arg-type]
    assert isinstance(posted, PackedFiles)
    assert isinstance(pure, tuple)
    assert posted.summary == reference_summary(pure) == summarize(pure)
    assert len(posted) == len(pure)
    assert posted._files is None  # nothing built for the summary, nor for len()
    ids = {mid for f in pure for mid in f.message_ids.split(b"\n") if f.message_ids}
    for needle in (b"a@x", b"ab@x", b"b@x", "é@x".encode(), b"a@xa@x", b"@x", b"a@", b"x", b"b", b"xa@x"):
        assert posted.has_message_id(needle) == (needle in ids), needle
    assert posted == pure  # built on first use: the same files
    assert posted.unpacked() == pure and posted[0:] == pure
    assert posted.has_message_id(b"zz@x") is False


@needs_native
@PROPS
@given(st.lists(crowded_file(), max_size=5) | loose_files())
def test_posted_files_read_what_the_files_hold(files: list[FileFragment]) -> None:
    assert_posted_agrees(zlib.decompress(pack_segments(files)))


@needs_native
@PROPS
@given(st.lists(crowded_file(), min_size=1, max_size=4), st.data())
def test_posted_files_refuse_what_the_files_refuse(files: list[FileFragment], data: st.DataObject) -> None:
    """Damaged blobs (bytes changed, cut, or added): the fast path refuses each exactly as
    segment_files does, and reads the same from any it takes."""
    raw = bytearray(zlib.decompress(pack_segments(files)))
    for _ in range(data.draw(st.integers(1, 3))):
        what = data.draw(st.sampled_from(["byte", "cut", "append"]))
        if what == "byte" and raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(
                st.sampled_from([0, 1, 0x0A, 0x80, 0xFF])
            )
        elif what == "cut":
            del raw[data.draw(st.integers(0, len(raw))) :]
        else:
            raw += data.draw(st.binary(min_size=1, max_size=3))
    assert_posted_agrees(bytes(raw))


@needs_native
@PROPS
@given(st.lists(sound_file(), max_size=3))
def test_posted_files_of_the_first_version(files: list[FileFragment]) -> None:
    assert_posted_agrees(v1_blob(files))


@needs_native
def test_posted_files_sum_past_int64_exactly() -> None:
    """Sizes and part totals whose sums pass 2**63 (no real release; a hostile one): the C pass carries
    them into a Python int, as Python's sum does."""
    big = 2**63 - 1
    files = [
        FileFragment(f"f{i}", 0, big, int_array([1, 2]), int_array([big, big]), int_array([7, 3]), b"a\nb")
        for i in range(3)
    ]
    posted = posted_files(segment_blob(files))
    assert isinstance(posted, PackedFiles)
    assert posted.summary == FileSummary(3, 6, 3 * big, 6 * big, (3, 7), True)


@needs_native
def test_a_message_id_is_searched_whole() -> None:
    native = accelerator.speedups
    assert native is not None
    ids = b"ab\nb\nabc"
    data = segment_blob(
        [FileFragment("f", 1, 3, int_array([1, 2, 3]), int_array([1] * 3), int_array([1] * 3), ids)]
    )
    found = [native.segment_has_id(data, m) for m in (b"ab", b"b", b"abc", b"a", b"bc", b"c", b"abcx")]
    assert found == [True, True, True, False, False, False, False]
    for bad in (b"", b"a\n"):
        with pytest.raises(ValueError, match="not empty"):
            native.segment_has_id(data, bad)


@needs_native
@pytest.mark.parametrize(
    "order",
    [
        [("a", 1), ("ab", 0)],
        [("ab", 0), ("a", 1)],  # a name before its own prefix: out of order whatever the totals
        [("a", 1), ("a", 1)],
        [("a", 2), ("a", 1)],
        [("a", 1), ("a", 2)],
        [("z", 0), ("é", 0)],
        [("é", 0), ("z", 0)],
        [("\uffff", 0), ("\U0001f600", 0)],  # UTF-8's byte order is the code points' order
        [("\U0001f600", 0), ("\uffff", 0)],
        [("b", 0), ("a", 5), ("c", 0)],
    ],
)
def test_the_file_order_is_pythons(order: list[tuple[str, int]]) -> None:
    files = [
        FileFragment(name, 0, total, int_array([1]), int_array([1]), int_array([1]), b"m@x")
        for name, total in order
    ]
    assert_posted_agrees(segment_blob(files))
    posted = posted_files(segment_blob(files))
    assert isinstance(posted, PackedFiles)
    assert posted.summary.in_order == (order == sorted(set(order)))
