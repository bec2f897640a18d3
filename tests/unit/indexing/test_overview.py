"""The overview parser: field orders, dates, gaps, and every malformed line counted by its reason."""

from __future__ import annotations

import calendar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing.overview import (
    DEFAULT_FORMAT,
    REASONS,
    OverviewFormat,
    _unix,
    parse_date,
    parse_overview,
    xref_groups,
)

GOOD = (
    b'%d\t[1/2] - "a.rar" yEnc (1/3)\tposter@example.com (P)\tSat, 30 Nov 2024 14:22:01 +0000\t'
    b"<abc%d@example>\t\t1234\t10\tXref: news.example.com alt.binaries.test:%d alt.binaries.misc:7"
)


def good(n: int) -> bytes:
    return GOOD % (n, n, n)


def test_a_good_line() -> None:
    out = parse_overview(good(5) + b"\r\n", 5, 5)
    assert out.malformed == {}
    assert out.gaps == 0
    (seg,) = out.segments
    assert seg.number == 5
    assert seg.subject == '[1/2] - "a.rar" yEnc (1/3)'
    assert seg.poster == "poster@example.com (P)"
    assert seg.date == 1732976521
    assert seg.message_id == "abc5@example"
    assert seg.size == 1234
    assert seg.groups == ("alt.binaries.misc", "alt.binaries.test")


def test_lf_only_and_missing_last_newline() -> None:
    out = parse_overview(good(1) + b"\n" + good(2), 1, 2)
    assert [s.number for s in out.segments] == [1, 2]


def test_gaps_are_numbers_without_a_line() -> None:
    out = parse_overview(good(10) + b"\n" + good(14) + b"\n", 10, 20)
    assert out.gaps == 9


MALFORMED = {
    "missing_fields": b"7\tsubject only\tposter",
    "bad_number": b"x7\t" + good(7).split(b"\t", 1)[1],
    "bad_bytes": good(7).replace(b"\t1234\t", b"\tmany\t"),
    "nul_byte": good(7).replace(b"poster", b"pos\0ter"),
    "invalid_utf8": good(7).replace(b"poster", b"pos\xff\xfeter"),
    "line_too_long": good(7) + b"x" * (64 * 1024),
    "subject_too_long": good(7).replace(b"[1/2]", b"s" * (8 * 1024 + 1)),
    "no_message_id": good(7).replace(b"<abc7@example>", b"<>"),
    "out_of_span": good(99),
}


@pytest.mark.parametrize("reason", sorted(MALFORMED))
def test_each_malformed_line_is_counted_by_its_reason(reason: str) -> None:
    assert reason in REASONS
    out = parse_overview(good(6) + b"\n" + MALFORMED[reason] + b"\n" + good(8) + b"\n", 6, 8)
    assert out.malformed == {reason: 1}
    assert [s.number for s in out.segments] == [6, 8]


def test_negative_numbers_and_duplicates() -> None:
    text = b"\n".join([good(6), b"-7\t" + good(7).split(b"\t", 1)[1], good(6), good(8)]) + b"\n"
    out = parse_overview(text, 6, 8)
    assert out.malformed == {"bad_number": 1, "duplicate_article": 1}
    assert out.gaps == 1  # 7 came back unreadable: its number is not known


def test_number_above_int64_is_bad() -> None:
    out = parse_overview(b"%d\t" % 2**63 + good(1).split(b"\t", 1)[1], 1, 1)
    assert out.malformed == {"bad_number": 1}


def test_unparsable_date_keeps_the_line() -> None:
    out = parse_overview(good(3).replace(b"Sat, 30 Nov 2024 14:22:01 +0000", b"yesterday"), 3, 3)
    assert out.undated == 1
    assert out.segments[0].date is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"Sat, 30 Nov 2024 14:22:01 +0000", 1732976521),
        (b"30 Nov 2024 14:22:01 +0000", 1732976521),
        (b"Sat, 30 Nov 2024 15:22:01 +0100", 1732976521),
        (b"Sat, 30 Nov 2024 14:22 +0000", 1732976520),
        (b"Sat, 30 Nov 2024 14:22:01 GMT", 1732976521),
        (b"Sat, 30 Nov 24 14:22:01 GMT", 1732976521),
        (b"Sat, 30 Nov 2024 09:22:01 EST", 1732976521),
        (b"  Sat,  30 Nov 2024 14:22:01 -0000", 1732976521),
    ],
)
def test_dates(text: bytes, expected: int) -> None:
    assert parse_date(text) == expected


@pytest.mark.parametrize(
    "text", [b"", b"yesterday", b"Sat, 31 Feb 2024 14:22:01 +0000", b"1 Jan 1900 00:00 +0000"]
)
def test_bad_dates(text: bytes) -> None:
    assert parse_date(text) is None


@given(st.binary(max_size=64))
def test_dates_never_raise(raw: bytes) -> None:
    value = parse_date(raw)
    assert value is None or 0 <= value <= 4_102_444_800


def calendar_unix(year: int, month: int, day: int, hh: int, mm: int, ss: int, offset: int) -> int | None:
    """overview._unix as it was, with calendar's functions: what the month tables must give."""
    if not (1970 <= year <= 2100 and 1 <= month <= 12 and hh < 24 and mm < 60 and ss <= 60):
        return None
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    value = calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0)) - offset
    return value if 0 <= value <= 4_102_444_800 else None


@settings(max_examples=3000)
@given(
    st.integers(1960, 2110),
    st.integers(-1, 14),
    st.integers(-1, 33),
    st.integers(-3, 25),
    st.integers(-3, 61),
    st.integers(-3, 62),
    st.integers(-14 * 3600, 14 * 3600),
)
def test_unix_seconds_as_calendar_counts_them(
    year: int, month: int, day: int, hh: int, mm: int, ss: int, offset: int
) -> None:
    assert _unix(year, month, day, hh, mm, ss, offset) == calendar_unix(year, month, day, hh, mm, ss, offset)


@pytest.mark.parametrize(("year", "month"), [(1970, 1), (2000, 2), (2024, 2), (2100, 2), (2100, 12)])
def test_unix_seconds_at_month_ends(year: int, month: int) -> None:
    last = calendar.monthrange(year, month)[1]
    for day in (1, last, last + 1):
        for hh, mm, ss in ((0, 0, 0), (23, 59, 60)):
            assert _unix(year, month, day, hh, mm, ss, 0) == calendar_unix(year, month, day, hh, mm, ss, 0)


def test_custom_overview_fmt_order() -> None:
    fmt = OverviewFormat.from_fmt(["From:", "Subject:", "Message-ID:", "Date:", "Bytes:", "Lines:", "Xref:"])
    line = b"4\tp@x\tsubj yEnc (1/1)\t<m@x>\tSat, 30 Nov 2024 14:22:01 +0000\t99\t1\thost alt.bin.a:4"
    out = parse_overview(line, 4, 4, fmt)
    (seg,) = out.segments
    assert (seg.poster, seg.subject, seg.message_id, seg.size, seg.groups) == (
        "p@x",
        "subj yEnc (1/1)",
        "m@x",
        99,
        ("alt.bin.a",),
    )


def test_fmt_without_a_needed_field_says_so() -> None:
    with pytest.raises(ValueError, match="lacks bytes"):
        OverviewFormat.from_fmt(["Subject:", "From:", "Date:", "Message-ID:"])


def test_default_format_positions() -> None:
    assert (DEFAULT_FORMAT.subject, DEFAULT_FORMAT.size, DEFAULT_FORMAT.xref, DEFAULT_FORMAT.xref_full) == (
        1,
        6,
        8,
        True,
    )


def test_xref_without_prefix_or_with_junk() -> None:
    assert xref_groups(b"Xref: host a.b:1 c.d:2", True) == ("a.b", "c.d")
    assert xref_groups(b"host a.b:1", False) == ("a.b",)
    assert xref_groups(b"garbage", True) == ()


@given(st.lists(st.binary(max_size=120), max_size=30), st.integers(0, 50), st.integers(0, 50))
def test_nothing_raises_on_garbage(lines: list[bytes], first: int, width: int) -> None:
    out = parse_overview(b"\n".join(lines), first, first + width)
    assert out.gaps >= 0
    assert sum(out.malformed.values()) + len(out.segments) <= len(b"\n".join(lines).split(b"\n"))
