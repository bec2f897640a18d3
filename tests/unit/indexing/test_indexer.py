"""The range indexer: its two loops agree, bad lines are counted, and its contract is enforced."""

from __future__ import annotations

import itertools
import random
import re
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing import indexer as indexer_module
from usenet_indexer.indexing.fragment import Batch
from usenet_indexer.indexing.indexer import IndexerError, RangeIndexer
from usenet_indexer.indexing.overview import OverviewFormat, xref_groups
from usenet_indexer.indexing.rules import default_rules

from .conftest import NATIVE
from .drive import GROUP, scenario

S = scenario(17, releases=8, max_parts=12)
LINES = [S.lines[n] for n in sorted(S.lines)]


def corrupt(line: bytes, how: int, rng: random.Random) -> list[bytes]:
    fields = line.split(b"\t")
    if len(fields) < 9 and how not in (1, 2, 12, 13, 14, 15, 29, 36):
        return [line]  # a line damaged already, too short for this
    if how == 0:
        return [b"\t".join(fields[:4])]  # missing fields
    if how == 1:
        return [b"n" + line]  # non-numeric number
    if how == 2:
        return [line, line]  # the same article twice
    if how == 3:
        fields[6] = b"-5"  # negative size
    elif how == 4:
        fields[4] = b"<>"  # no message-id
    elif how == 5:
        fields[1] = fields[1].rsplit(b"(", 1)[0] + b"(0/9)"  # part 0
    elif how == 6 and fields[0].isdigit():
        fields[0] = str(int(fields[0]) + 10**9).encode()  # out of span
    elif how == 7:
        fields[1] = b"Re: a question"  # no rule reads it
    elif how == 8:
        fields[6] = b""  # size missing
    elif how == 9:
        fields[1] = fields[1] + b"\xff"  # invalid UTF-8: the chunk goes careful
    elif how == 10:
        fields[6] = str(2**64).encode()  # size beyond int64
    elif how == 11:
        fields[1] = fields[1].rsplit(b"(", 1)[0] + b"(%d/9)" % 2**70  # part beyond int64
    # Numbers that Python's int() reads and the C accelerator leaves to the Python code (it reads only
    # 1 to 18 plain digits): both paths must still agree.
    elif how == 12:
        fields[0] = b"+" + fields[0]
    elif how == 13:
        fields[0] = b"0000000000" + fields[0]  # more than 18 digits, the same number
    elif how == 14:
        fields[0] = fields[0][:3] + b"_" + fields[0][3:]
    elif how == 15:
        fields[0] = fields[0] + b" "
    elif how == 16:
        fields[6] = b" " + fields[6]
    elif how == 17:
        fields[6] = b"+" + fields[6]
    elif how == 18:
        fields[6] = b"1" + b"0" * 18  # 19 digits, still an int64
    elif how == 19:
        fields[6] = fields[6][:2] + b"_" + fields[6][2:]
    elif how == 20:
        head, _, tail = fields[1].rpartition(b"(")
        fields[1] = head + b"( " + tail  # part " p"
    elif how == 21:
        head, _, tail = fields[1].rpartition(b"(")
        fields[1] = head + b"(000" + tail  # part "000p"
    elif how == 22:
        head, _, tail = fields[1].rpartition(b"(")
        part, _, total = tail.partition(b"/")
        fields[1] = head + b"(" + part + b"/1" + total  # another part total: another file, or none
    elif how == 23:
        fields[1] = fields[1].rpartition(b"(")[0].rstrip()  # no part counter
    elif how == 24:
        fields[2] = b"someone.else@example.com"  # the same subject from another poster
    elif how == 25:
        fields[1] = "é ".encode() + fields[1]  # valid UTF-8: the chunk stays clean
    elif how == 26:
        fields[4] = fields[4].replace(b"@", b"\r@")  # a blank inside the message-id
    elif how == 27:
        fields[4] = fields[4].strip(b"<>")  # no angle brackets
    elif how == 28:
        fields[4] = b"<" + fields[4] + b">"  # two pairs
    elif how == 29:
        return [line, b""]  # an empty line
    elif how == 30:
        fields[1] = b"x" * (8 * 1024) + fields[1]  # a subject too long: the chunk goes careful
    elif how == 31:
        fields[3] = fields[3][:5] + b"\0" + fields[3][5:]  # NUL: the chunk goes careful
    elif how == 32:
        fields[2] = fields[2] + b"\xed\xa0\x80"  # an encoded surrogate is not UTF-8
    elif how == 33:
        fields[4] = fields[4] + b" "  # a trailing blank on the message-id
    elif how == 34:
        del fields[7:]  # no Xref (and no Lines): still enough fields
    elif how == 35:
        fields[3] = b"yesterday"  # an unreadable date
    elif how == 36:
        return [b"\t" * 9]
    elif how == 37:
        fields[6] = b"0"
    elif how == 38:
        fields[1] = fields[1].replace(b"(", b"(/", 1) if b"(" in fields[1] else fields[1]
    elif how == 39:
        fields[1] = fields[1] + b" (x/y)"  # the last "(" is not the part counter
    elif how == 40:
        # another spelling of the same file's subject (a blank more before the file name): the file is
        # met under two heads
        fields[1] = fields[1].replace(b' - "', b'  - "', 1)
    return [b"\t".join(fields)]


HOWS = 41


def index(
    lines: list[bytes], cuts: list[int], takes: set[int], path: str, eol: bytes = b"\r\n"
) -> list[Batch]:
    """Index ``lines`` (one chunk per slice between cuts) over the posting's span.

    ``path``: "native" (the C accelerator), "fast" (the pure-Python loops) or "careful" (the pure-Python
    careful loop for every line)."""
    first, last = S.posting.first, S.posting.last
    ix = RangeIndexer(GROUP, first, last, first, default_rules(), native=path == "native")
    out = []
    bounds = sorted({c for c in cuts if 0 < c < len(lines)} | {0, len(lines)})
    ends = [first + (last - first) * k // (len(bounds) - 1) for k in range(1, len(bounds))]
    ends[-1] = last
    careful = path == "careful"
    with mock.patch.object(indexer_module, "chunk_is_clean", return_value=False) if careful else _null():
        for k, (a, b) in enumerate(itertools.pairwise(bounds)):
            ix.add_text(eol.join(lines[a:b]) + eol, ends[k] + 1)
            if k in takes or k == len(ends) - 1:
                out.append(ix.take())
    return out


PATHS = ["fast", "careful", *(["native"] if NATIVE is not None else [])]


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


def _lines_in_number_order_within(lines: list[bytes]) -> list[bytes]:
    return lines


@pytest.mark.fuzz
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.randoms(use_true_random=False),
    st.lists(st.tuples(st.integers(0, len(LINES) - 1), st.integers(0, HOWS - 1)), max_size=12),
    st.integers(0, 6),
    st.integers(0, 6),
    st.sampled_from([b"\r\n", b"\n"]),
)
def test_native_fast_and_careful_loops_agree(
    rng: random.Random, damage: list[tuple[int, int]], swaps: int, n_cuts: int, eol: bytes
) -> None:
    lines = list(LINES)
    for at, how in sorted(damage, reverse=True):
        lines[at : at + 1] = corrupt(lines[at], how, rng)
    for _ in range(swaps):
        k = rng.randrange(len(lines) - 1)
        lines[k], lines[k + 1] = lines[k + 1], lines[k]
    # Chunks must hold the numbers they claim: cut only where the number order allows (the span
    # assignment in index() is by position, so lines that end up out of their chunk's span are counted
    # as out_of_span by both loops alike).
    cuts = sorted(rng.sample(range(1, len(lines)), min(n_cuts, len(lines) - 1)))
    takes = set(rng.sample(range(len(cuts) + 1), rng.randint(0, len(cuts) + 1)))
    results = {path: index(lines, cuts, takes, path, eol) for path in PATHS}
    assert results["fast"] == results["careful"]
    if "native" in results:
        assert results["native"] == results["fast"]


@pytest.mark.parametrize("seed", range(3))
def test_loops_agree_on_noisy_subjects(seed: int) -> None:
    """Tags and text around the subjects (issue 16), a different choice per line, with cuts and takes:
    the fast loop, the careful loop and the C accelerator give the same batches."""
    from .test_speedups import noisy

    rng = random.Random(seed)
    lines = [noisy(line, rng) if rng.random() < 0.7 else line for line in LINES]
    assert lines != list(LINES)
    cuts = sorted(rng.sample(range(1, len(lines)), 4))
    results = {path: index(lines, cuts, {1, 3}, path) for path in PATHS}
    assert results["fast"] == results["careful"]
    assert sum(len(b.fragments) for b in results["fast"]) > 0
    if "native" in results:
        assert results["native"] == results["fast"]


@pytest.mark.parametrize("how", range(HOWS))
@pytest.mark.parametrize("where", [0, 5, 41, len(LINES) - 1])
def test_each_kind_of_damage_alone(how: int, where: int) -> None:
    """Every corruption, at the start, inside and at the end of a chunk, on every path."""
    lines = list(LINES)
    lines[where : where + 1] = corrupt(lines[where], how, random.Random(how))
    results = {path: index(lines, [len(lines) // 2], {0}, path) for path in PATHS}
    assert results["fast"] == results["careful"]
    if "native" in results:
        assert results["native"] == results["fast"]


def test_every_malformed_reason_is_counted_by_the_indexer() -> None:
    rng = random.Random(1)
    lines = list(LINES[:40])
    expected = {
        0: "missing_fields",
        1: "bad_number",
        2: "duplicate_article",
        3: "bad_bytes",
        4: "no_message_id",
        5: "bad_part",
        6: "out_of_span",
        8: "bad_bytes",
    }
    for how, reason in expected.items():
        damaged = list(lines)
        damaged[10:11] = corrupt(damaged[10], how, rng)
        first = int(lines[0].split(b"\t")[0])
        last = int(lines[-1].split(b"\t")[0])
        ix = RangeIndexer(GROUP, first, last, first, default_rules())
        ix.add_text(b"\r\n".join(damaged) + b"\r\n", last + 1)
        batch = ix.take()
        assert batch.malformed == {reason: 1}, (how, batch.malformed)
        assert batch.headers == len(damaged)


def test_unmatched_subjects_are_counted_not_malformed() -> None:
    lines = list(LINES[:20])
    lines[3] = corrupt(lines[3], 7, random.Random(0))[0]
    first, last = int(lines[0].split(b"\t")[0]), int(lines[-1].split(b"\t")[0])
    ix = RangeIndexer(GROUP, first, last, first, default_rules())
    ix.add_text(b"\n".join(lines), last + 1)
    batch = ix.take()
    assert batch.unmatched == 1
    assert batch.malformed == {}


def test_resume_inside_a_chunk_skips_what_was_stored() -> None:
    first = S.posting.first
    numbers = sorted(S.lines)
    end = numbers[59]
    whole = RangeIndexer(GROUP, first, end, first, default_rules())
    whole.add_text(b"\n".join(S.lines[n] for n in numbers[:60]), end + 1)
    one = whole.take()
    resume = numbers[30]
    part = RangeIndexer(GROUP, first, end, resume, default_rules())
    part.add_text(b"\n".join(S.lines[n] for n in numbers[:60]), end + 1)
    batch = part.take()
    assert batch.from_id == resume
    assert batch.headers == 30
    assert batch.malformed == {}
    assert sum(f.segment_count for f in batch.fragments) == 30
    assert sum(f.segment_count for f in one.fragments) == 60


def test_contract() -> None:
    with pytest.raises(IndexerError, match="outside range"):
        RangeIndexer(GROUP, 10, 20, 25, default_rules())
    ix = RangeIndexer(GROUP, 10, 20, 10, default_rules())
    with pytest.raises(IndexerError, match="nothing read"):
        ix.take()
    with pytest.raises(IndexerError, match="by the range's end"):
        ix.add_text(b"", 30)
    with pytest.raises(IndexerError, match="before the range's end"):
        ix.finish()
    ix.add_text(b"", 21)
    ix.finish()
    batch = ix.take()
    assert (batch.from_id, batch.to_id, batch.gaps, batch.headers) == (10, 20, 11, 0)
    with pytest.raises(IndexerError, match="after finish"):
        ix.add_text(b"", 21)


_FIELD = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")),
    st.sampled_from(
        [b"", b"-1", b"0", b"7", b"99999999999999999999", b"(1/2)", b"<>", b"<a@b>", b"\xff", b"\0"]
    ),
    st.sampled_from(
        [b'"x.par2" yEnc (1/2)', b'[1/2] - "y.rar" yEnc (0/3)', b'"z.nfo" yEnc (9/2)', b"a (x/y)"]
    ),
)
_LINE = st.lists(_FIELD, min_size=1, max_size=10).map(b"\t".join)


@pytest.mark.fuzz
@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_LINE, max_size=12), min_size=1, max_size=4), st.booleans())
def test_nothing_raises_on_garbage_chunks(chunks: list[list[bytes]], crlf: bool) -> None:
    ix = RangeIndexer(GROUP, 0, 40, 0, default_rules())
    step = 40 // len(chunks)
    for k, lines in enumerate(chunks):
        end = 40 if k == len(chunks) - 1 else (k + 1) * step - 1
        ix.add_text((b"\r\n" if crlf else b"\n").join(lines), end + 1)
    ix.finish()
    batch = ix.take()
    assert batch.headers <= sum(map(len, chunks))
    assert 0 <= batch.gaps <= 41
    for fragment in batch.fragments:
        for f in fragment.files:
            assert list(f.parts) == sorted(set(f.parts))
            assert len(f.message_id_list()) == len(f.parts)


_XREF_WORD = st.one_of(
    st.sampled_from([b"alt.binaries.test", b"a.b.c", b"x", b"", b"news.example.com"]),
    st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"")),
)
_XREF = st.tuples(
    st.sampled_from([b"Xref: ", b"xref:", b"XREF: ", b"", b"Xre: ", b" "]),
    st.lists(
        st.tuples(
            _XREF_WORD,
            st.sampled_from([b":", b"", b"::", b": "]),
            st.sampled_from([b"1", b"42", b"007", b"x", b"5:6", b"3a"]),
        ),
        max_size=4,
    ),
    st.sampled_from([b"", b" ", b"\r", b"9"]),
    st.sampled_from([b" ", b"\t", b"  "]),  # between words
).map(lambda t: t[0] + t[3].join(w + c + n for w, c, n in t[1]) + t[2])


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(st.lists(_XREF, max_size=8), st.booleans())
@example([b"xref:42 a.b.c:1 x:1"], True)  # "xref:" is no word's: its number is a word of its own
@example([b"Xref: h a.b1:5 x:6", b"Xref: h a.b2:5 x:6"], False)  # digits in a group's name
def test_xref_groups_kept_by_prefix_are_the_groups(xrefs: list[bytes], full: bool) -> None:
    """The indexer keeps the groups of an Xref by everything before its article number, and by its text
    without the numbers after a ":" (a cross-post); it must give what reading each one would."""
    names = ("Subject:", "From:", "Date:", "Message-ID:", ":bytes", "Xref:full" if full else "Xref:")
    ix = RangeIndexer(GROUP, 0, 1, 0, default_rules(), OverviewFormat.from_fmt(names))
    # Each also with its digits changed and dropped: the Xrefs that share what the indexer keys them by.
    variants = [v for x in xrefs for v in (x, re.sub(rb"[0-9]+", b"7", x), re.sub(rb"[0-9]+", b"", x))]
    for xref in [*variants, *variants]:  # the second time from what the first kept
        assert ix._groups(xref) == tuple(sorted({GROUP, *xref_groups(xref, full)})), xref


def _line(number: int, subject: str, mid: str) -> bytes:
    return (
        f"{number}\t{subject}\tposter@example.test\tTue, 14 Nov 2023 22:13:20 -0000\t<{mid}>\t\t"
        f"700000\t5000\tXref: news.example.com {GROUP}:{number}"
    ).encode()


@pytest.mark.parametrize("path", PATHS)
def test_files_carry_the_subject_of_their_first_part_as_posted(path: str) -> None:
    """Issue 16: a file's subject is the one it was posted under, with the part counter of part 1 (what
    NZB files show), whichever part came first and however the poster spelled the counter; where the
    subject's last "(" is not the part counter, the subject of the lowest part read."""
    tags = "[PRiVATE]-[WtFnZb]-[Name]-"
    posted = [
        (f'{tags}[1/3] - "Name.part1.rar" yEnc (037/100) 104857600', "a37"),
        (f'{tags}[1/3] - "Name.part1.rar" yEnc (002/100) 104857600', "a2"),
        (f'{tags}[2/3] - "Name.part2.rar" yEnc (5/100)', "b5"),
        (f'{tags}[2/3] - "Name.part2.rar" yEnc (1/100)', "b1"),
        ('[3/3] - "Name.par2" yEnc (2/2) (1.2 MB)', "c2"),
        ('[3/3] - "Name.par2" yEnc (1/2) (1.2 MB)', "c1"),
    ]
    lines = [_line(1000 + k, subject, f"{mid}@x") for k, (subject, mid) in enumerate(posted)]
    ix = RangeIndexer(GROUP, 1000, 1000 + len(lines) - 1, 1000, default_rules(), native=path == "native")
    with (
        mock.patch.object(indexer_module, "chunk_is_clean", return_value=False)
        if path == "careful"
        else _null()
    ):
        ix.add_text(b"\r\n".join(lines) + b"\r\n", 1000 + len(lines))
    (release,) = ix.take().fragments
    assert {f.name: f.subject for f in release.files} == {
        "Name.part1.rar": f'{tags}[1/3] - "Name.part1.rar" yEnc (001/100) 104857600',
        "Name.part2.rar": f'{tags}[2/3] - "Name.part2.rar" yEnc (1/100)',
        "Name.par2": '[3/3] - "Name.par2" yEnc (1/2) (1.2 MB)',  # the lowest part's, as read
    }
