"""The range indexer: its two loops agree, bad lines are counted, and its contract is enforced."""

from __future__ import annotations

import itertools
import random
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing import indexer as indexer_module
from usenet_indexer.indexing.fragment import Batch
from usenet_indexer.indexing.indexer import IndexerError, RangeIndexer
from usenet_indexer.indexing.rules import default_rules

from .drive import GROUP, scenario

S = scenario(17, releases=8, max_parts=12)
LINES = [S.lines[n] for n in sorted(S.lines)]


def corrupt(line: bytes, how: int, rng: random.Random) -> list[bytes]:
    fields = line.split(b"\t")
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
    elif how == 6:
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
    return [b"\t".join(fields)]


def index(lines: list[bytes], cuts: list[int], takes: set[int], careful: bool) -> list[Batch]:
    """Index ``lines`` (one chunk per slice between cuts) over the posting's span."""
    first, last = S.posting.first, S.posting.last
    ix = RangeIndexer(GROUP, first, last, first, default_rules())
    out = []
    bounds = sorted({c for c in cuts if 0 < c < len(lines)} | {0, len(lines)})
    ends = [first + (last - first) * k // (len(bounds) - 1) for k in range(1, len(bounds))]
    ends[-1] = last
    with mock.patch.object(indexer_module, "chunk_is_clean", return_value=False) if careful else _null():
        for k, (a, b) in enumerate(itertools.pairwise(bounds)):
            ix.add_text(b"\r\n".join(lines[a:b]) + b"\r\n", ends[k] + 1)
            if k in takes or k == len(ends) - 1:
                out.append(ix.take())
    return out


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


def _lines_in_number_order_within(lines: list[bytes]) -> list[bytes]:
    return lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.randoms(use_true_random=False),
    st.lists(st.tuples(st.integers(0, len(LINES) - 1), st.integers(0, 11)), max_size=12),
    st.integers(0, 6),
    st.integers(0, 6),
)
def test_fast_and_careful_loops_agree(
    rng: random.Random, damage: list[tuple[int, int]], swaps: int, n_cuts: int
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
    fast = index(lines, cuts, takes, careful=False)
    careful = index(lines, cuts, takes, careful=True)
    assert fast == careful


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
